//! The pipeline SPEC grammar: presets expand as in the paper, explicit lists parse, and every
//! kind of bad token gets its own error naming the token.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::model::{ModelError, PipelineSpec, QuantizerSpec, StepSpec};

fn canon(s: &str) -> String {
    PipelineSpec::parse(s).unwrap().canonical()
}

#[test]
fn presets_expand_to_the_paper_pipelines() {
    assert_eq!(canon("lsh:64"), "center,proj:64,bits");
    assert_eq!(canon("pca-direct:64"), "pca:64,bits");
    assert_eq!(canon("pca-rr:64"), "pca:64,rr,bits");
    assert_eq!(canon("pca-itq:64"), "pca:64,itq,bits");
    assert_eq!(canon("kpca-itq:64"), "rff:3000,pca:64,itq,bits");
    assert_eq!(canon("sklsh:64"), "sklsh:64");
    assert_eq!(canon("pq:16x8"), "pq:16x8");
    assert_eq!(canon("pq4:32"), "pq:32x4");
    assert_eq!(canon("opq:16x8"), "opq:16x8");
    assert_eq!(canon("float"), "float");
    assert_eq!(canon("float32"), "float");
    assert_eq!(canon("float16"), "float16");
}

#[test]
fn explicit_lists_parse() {
    let p = PipelineSpec::parse(" PCA:128 , pq:16x8 ").unwrap();
    assert_eq!(p.steps, vec![StepSpec::Pca(128)]);
    assert_eq!(p.quantizer, QuantizerSpec::Pq { m: 16, nbits: 8 });
    assert_eq!(p.text, "PCA:128 , pq:16x8");
    assert_eq!(canon("pca:64,itq,bits"), "pca:64,itq,bits");
    assert_eq!(canon("rff,pca:256,rr,bits"), "rff:3000,pca:256,rr,bits");
    assert_eq!(canon("center,proj:1024,bits"), "center,proj:1024,bits");
    assert_eq!(canon("pca:64,sklsh:128"), "pca:64,sklsh:128");
    assert_eq!(canon("pca:32,float16"), "pca:32,float16");
    assert_eq!(
        "pca-itq:32".parse::<PipelineSpec>().unwrap().to_string(),
        "pca-itq:32"
    );
    for bits in [8, 16, 32, 64, 128, 256, 1024] {
        assert!(PipelineSpec::parse(&format!("lsh:{bits}")).is_ok());
    }
    let list = PipelineSpec::parse_list("lsh:64; pca-itq:64; pca-rr:64; pq:8x8;").unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[3].quantizer, QuantizerSpec::Pq { m: 8, nbits: 8 });
}

/// Parses `spec`, expecting a `BadSpec` error whose token is `token` and whose detail
/// contains `needle`.
fn bad(spec: &str, token: &str, needle: &str) {
    match PipelineSpec::parse(spec) {
        Err(ModelError::BadSpec {
            token: t, detail, ..
        }) => {
            assert_eq!(t, token, "{spec}: wrong token blamed ({detail})");
            assert!(
                detail.contains(needle),
                "{spec}: {detail:?} lacks {needle:?}"
            );
        }
        other => panic!("{spec}: expected a BadSpec error, got {other:?}"),
    }
}

#[test]
fn every_bad_token_gets_its_own_error() {
    bad("", "", "empty pipeline");
    bad("pca:64,,bits", "", "empty stage");
    bad("pca:64,bits,", "", "empty stage");
    bad("foo:3", "foo:3", "unknown stage");
    bad("pca:64,hash", "hash", "unknown stage");
    bad("pca", "pca", "needs an argument");
    bad("pca:abc,bits", "pca:abc", "not a positive integer");
    bad("pca:0,bits", "pca:0", "between 1 and");
    bad("pca:-4,bits", "pca:-4", "not a positive integer");
    bad("pca:99999999,bits", "pca:99999999", "between 1 and");
    bad("center:3,bits", "center:3", "takes no argument");
    bad("bits:8", "bits:8", "takes no argument");
    bad("pq:16", "pq:16", "expected MxBITS");
    bad("pq:16x6", "pq:16x6", "8 or 4");
    bad("pq:0x8", "pq:0x8", "between 1 and");
    bad("pq:ax8", "pq:ax8", "not a positive integer");
    bad("opq:16", "opq:16", "expected MxBITS");
    bad("pq4:x", "pq4:x", "not a positive integer");
    bad("lsh:60", "lsh:60", "multiple of 8");
    bad("pca-itq:2048", "pca-itq:2048", "multiple of 8");
    bad("sklsh:12", "sklsh:12", "multiple of 8");
    bad("pca:60,itq,bits", "pca:60", "multiple of 8");
    bad("rff,bits", "rff", "multiple of 8");
    bad("pca:64", "pca:64", "must end with a quantiser");
    bad("pca:64,bits,rr", "rr", "after the quantiser");
    bad("pq:8x8,bits", "bits", "after the quantiser");
    bad("pca:64,itq", "itq", "right before bits");
    bad("pca:64,itq,pq:8x8", "itq", "right before bits");
    bad("itq,bits", "itq", "zero-centred");
    bad("rff,itq,bits", "itq", "zero-centred");
    bad(
        "pca:64,lsh:64",
        "lsh:64",
        "preset must be the whole pipeline",
    );
    bad(
        "pca-itq:64,bits",
        "pca-itq:64",
        "preset must be the whole pipeline",
    );
    assert!(matches!(
        PipelineSpec::parse_list(" ; ;"),
        Err(ModelError::BadSpec { .. })
    ));
    // In a list, the error names the bad item's token.
    bad_list("lsh:64; pca-itq:6x", "pca-itq:6x");
}

fn bad_list(list: &str, token: &str) {
    match PipelineSpec::parse_list(list) {
        Err(ModelError::BadSpec { token: t, .. }) => assert_eq!(t, token),
        other => panic!("expected BadSpec, got {other:?}"),
    }
}
