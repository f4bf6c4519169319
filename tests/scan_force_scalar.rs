//! `CODEDB_FORCE_SCALAR=1` makes `Dispatch::Auto` run the scalar kernels. The variable is read
//! once per process, so the test re-runs itself in a child process with the variable set.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod force_scalar_support;

use codedb::kernels::{CodeRows, Dispatch, Isa, ScanOptions, detected_isa, hamming_topk_batch};

const NAME: &str = "force_scalar_env_makes_auto_scalar";

#[test]
fn force_scalar_env_makes_auto_scalar() {
    if force_scalar_support::in_forced_scalar_child() {
        assert_eq!(detected_isa(), "scalar");
        assert_eq!(Dispatch::Auto.resolve().unwrap(), Isa::Scalar);
        // Explicit requests still get what they ask for (scalar always exists).
        assert_eq!(Dispatch::Scalar.resolve().unwrap(), Isa::Scalar);
        let codes = [0u8, 1, 3, 7];
        let ids = [10u64, 11, 12, 13];
        let rows = CodeRows::new(&codes, 1, &ids, None).unwrap();
        let got = hamming_topk_batch(&rows, &[0], 2, ScanOptions::default()).unwrap();
        assert_eq!(got, vec![vec![(0, 10), (1, 11)]]);
        return;
    }
    force_scalar_support::rerun_forced_scalar(NAME, &[]);
}

const ENCODE_NAME: &str = "encoding_is_identical_on_the_scalar_path";

/// Trains and encodes with every stage kind that computes dot products, and prints a digest of
/// the codes; the parent compares its digest (best kernels) with the child's (scalar twins).
fn encode_digest() -> String {
    use codedb::model::{PipelineSpec, TrainOptions, train};
    use ndarray::Array2;
    let (n, d) = (600usize, 24usize);
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        let v = ((i * 7919 + j * 104_729) % 1000) as f32 / 1000.0 - 0.5;
        v * (1.0 + (j % 5) as f32)
    });
    let mut digest = String::new();
    for spec in [
        "pca-itq:16",
        "lsh:32",
        "sklsh:24",
        "kpca-itq:16",
        "pca:8,pq:2x8",
    ] {
        let opts = TrainOptions {
            seed: 5,
            itq_iterations: 10,
            ..TrainOptions::default()
        };
        let (model, _) = train(&PipelineSpec::parse(spec).unwrap(), x.view(), &opts).unwrap();
        let codes = model.encode(x.view()).unwrap();
        let h = codes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        digest.push_str(&format!("{spec}={h:016x};"));
    }
    digest
}

#[test]
fn encoding_is_identical_on_the_scalar_path() {
    if force_scalar_support::in_forced_scalar_child() {
        println!("DIGEST {}", encode_digest());
        return;
    }
    let stdout = force_scalar_support::rerun_forced_scalar(ENCODE_NAME, &["--nocapture"]);
    let child = stdout
        .lines()
        .find_map(|l| l.split_once("DIGEST ").map(|(_, d)| d.trim()))
        .unwrap_or_else(|| panic!("child printed no digest:\n{stdout}"));
    assert_eq!(
        child,
        encode_digest(),
        "scalar-path codes differ from best-kernel codes"
    );
}
