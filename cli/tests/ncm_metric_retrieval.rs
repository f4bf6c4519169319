//! The NCM metric for retrieval (Mensink et al. TPAMI 2013, §6, Table 8): `retrieval_eval`
//! trains a supervised pipeline (`ncmml:32,itq,bits`) with the database rows' labels, and its
//! class-level mAP / precision@k are at least level with `pca-itq:32` at the same code length
//! on the digits
//! (tests/data/digits, 1,797 × 64). A supervised pipeline without labels is refused with an
//! error naming it.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::model::PipelineSpec;
use codedb_cli::Error;
use codedb_cli::eval::{EvalError, RetrievalData, RetrievalOptions, retrieval_eval};

mod cli_support;
use cli_support::{LABELS, PIXELS};

fn opts() -> RetrievalOptions {
    RetrievalOptions {
        queries: 300,
        runs: 1,
        seed: 11,
        precision_k: 100,
        ..RetrievalOptions::default()
    }
}

#[test]
fn ncmml_itq_is_level_with_pca_itq_on_class_map_at_32_bits() {
    let x = codedb_cli::io::load_vectors(PIXELS).unwrap();
    let y = codedb_cli::io::load_labels(LABELS).unwrap();
    let specs = PipelineSpec::parse_list("pca-itq:32; ncmml:32,itq,bits").unwrap();
    let r = retrieval_eval(
        RetrievalData {
            vectors: x.view(),
            labels: Some(&y),
            split: None,
        },
        &specs,
        &opts(),
        &mut |_| {},
    )
    .unwrap()
    .pipelines;
    let (pca, ncm) = (&r[0], &r[1]);
    assert_eq!((pca.bits, ncm.bits), (32, 32));
    let (mp, mn) = (pca.map_class.unwrap(), ncm.map_class.unwrap());
    let (pp, pn) = (pca.precision_at_k.unwrap(), ncm.precision_at_k.unwrap());
    eprintln!("class mAP: pca-itq:32 {mp:.4}, ncmml:32,itq,bits {mn:.4}");
    eprintln!("class P@100: pca-itq:32 {pp:.4}, ncmml:32,itq,bits {pn:.4}");
    // Measured (seed 11, 300 queries): mAP 0.6550 vs 0.6567, P@100 0.7078 vs 0.7059 — the
    // NCM metric is level with PCA here (1,497 training rows, ~1 SGD step per epoch), not the
    // gain of Table 8; the test holds it to "no worse" and docs/classification.md reports the numbers.
    assert!(mn > mp - 0.01, "ncmml {mn} vs pca {mp}");
    assert!(pn > pp - 0.01, "ncmml P@k {pn} vs pca {pp}");
    assert!(ncm.canonical.starts_with("ncmml:32"), "{}", ncm.canonical);
}

#[test]
fn supervised_pipeline_without_labels_is_an_error_naming_it() {
    let x = codedb_cli::io::load_vectors(PIXELS).unwrap();
    let specs = PipelineSpec::parse_list("pca-itq:16; ncmml:16,itq,bits").unwrap();
    let e = retrieval_eval(
        RetrievalData {
            vectors: x.view(),
            labels: None,
            split: None,
        },
        &specs,
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Eval(EvalError::InvalidArgument { argument: "labels", detail })
                if detail.contains("ncmml:16,itq,bits")
        ),
        "{e}"
    );
}
