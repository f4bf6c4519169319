//! An error raised below codedb (zstd, ndarray, a classifier) stays the typed
//! [`source`](std::error::Error::source) of the error that reports it, also through the umbrella
//! `codedb::Error`: nothing is flattened into text (issue 14).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

#[allow(dead_code)] // only fix_checksums is needed here
#[path = "../fuzz/src/checksums.rs"]
mod checksums;

use std::error::Error as _;
use std::path::Path;

use codedb::format::{Codec, Container, ContainerWriter, FileId, FileKind, TensorData};
use codedb::model::ClassifyError;
use codedb::model::{Linear, PipelineSpec, TrainOptions, train};
use ndarray::{Array2, array};

/// A zstd section whose stored bytes are garbage with valid checksums (a buggy or hostile
/// writer): only the decoder can tell, and its `io::Error` is the source.
#[test]
fn undecodable_zstd_section_keeps_the_decoder_error() {
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, FileId::ZERO, Path::new("z")).unwrap();
    let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
    w.section_zstd(6, true, &raw, 3).unwrap();
    let mut bytes = w.finish().unwrap();
    let e = Container::from_slice(&bytes, Path::new("z"), None)
        .unwrap()
        .entries()[0];
    assert_eq!(e.codec, Codec::Zstd);
    let (at, len) = (e.offset as usize, e.stored_len as usize);
    bytes[at..at + len].fill(0xa5);
    checksums::fix_checksums(&mut bytes);

    let c = Container::from_slice(&bytes, Path::new("z"), None).unwrap();
    let err = c.decoded(0).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("z: corrupt "), "{text}");
    assert!(text.contains("zstd data does not decode: "), "{text}");
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>());
    let io = io.unwrap_or_else(|| panic!("no io::Error source under {text:?}"));
    assert!(text.ends_with(&io.to_string()), "{text}");

    let err = codedb::Error::from(err);
    assert!(
        err.source().is_some_and(|s| s.is::<std::io::Error>()),
        "{err}"
    );
}

/// A hand-built stage record whose tensor data does not fill its declared shape: ndarray's
/// `ShapeError` is the source, and the message still names the stage and tensor.
#[test]
fn tensor_that_does_not_fill_its_shape_keeps_the_shape_error() {
    let lin = Linear::new(array![[1.0f32, 2.0], [3.0, 4.0]], None).unwrap();
    let mut rec = lin.to_record();
    let weight = rec.tensors.iter_mut().find(|t| t.name == "weight").unwrap();
    weight.data = TensorData::F32(vec![1.0, 2.0, 3.0]);

    let err = Linear::from_record(&rec).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("model stage linear: tensor \"weight\": "),
        "{text}"
    );
    let shape = err
        .source()
        .and_then(|s| s.downcast_ref::<ndarray::ShapeError>());
    let shape = shape.unwrap_or_else(|| panic!("no ShapeError source under {text:?}"));
    assert!(text.ends_with(&shape.to_string()), "{text}");

    let err = codedb::Error::from(err);
    assert!(
        err.source().is_some_and(|s| s.is::<ndarray::ShapeError>()),
        "{err}"
    );
}

/// Training an NCMML step on one class: the classifier's own error is kept whole under the
/// model error that names the step, not turned into its message.
#[test]
fn ncmml_step_keeps_the_classifier_error() {
    let x = Array2::from_shape_fn((40, 16), |(i, j)| ((i * 7 + j * 3) % 11) as f32);
    let opts = TrainOptions {
        labels: Some(vec![3i64; 40].into()),
        ..TrainOptions::default()
    };
    let spec = PipelineSpec::parse("ncmml:8,bits").unwrap();
    let err = train(&spec, x.view(), &opts).unwrap_err();

    let inner = err.source().and_then(|s| s.downcast_ref::<ClassifyError>());
    let inner = inner.unwrap_or_else(|| panic!("no ClassifyError source under {err:?}"));
    assert!(
        matches!(
            inner,
            ClassifyError::TooFewClasses {
                needed: 2,
                got: 1,
                ..
            }
        ),
        "{inner:?}"
    );
    assert_eq!(err.to_string(), format!("ncmml:8: {inner}"));

    let err = codedb::Error::from(err);
    assert!(
        err.source().is_some_and(|s| s.is::<ClassifyError>()),
        "{err}"
    );
}
