//! The model pipeline: save/load round trips encode byte-identically, codes do not depend on
//! batching, bad input and corrupt model files give errors naming what is wrong.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use codedb::format::{ModelFile, TensorData};
use codedb::model::{
    Binarize, Center, FloatStage, Model, ModelError, PipelineSpec, Stage, TrainEvent, TrainOptions,
    train,
};
use ndarray::{Array2, s};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::{Arc, Mutex};

fn data(n: usize, d: usize, seed: u64) -> Array2<f32> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((n, d), |(_, j)| {
        let g: f64 = StandardNormal.sample(&mut r);
        (g * (1.0 + (j % 5) as f64) + 0.5) as f32
    })
}

const SPECS: &[&str] = &[
    "lsh:32",
    "pca-direct:16",
    "pca-rr:16",
    "pca-itq:16",
    "sklsh:24",
    "kpca-itq:16",
    "pq:4x8",
    "pq4:8",
    "opq:4x8",
    "float",
    "float16",
    "pca:16,pq:2x8",
    "center,rr,bits",
    "rff:64,pca:8,rr,bits",
];

fn quick() -> TrainOptions {
    TrainOptions {
        seed: 3,
        opq_iterations: 2,
        itq_iterations: 10,
        ..TrainOptions::default()
    }
}

#[test]
fn save_load_round_trip_encodes_byte_identically() {
    let x = data(400, 32, 1);
    let queries = data(50, 32, 2);
    for spec in SPECS {
        let (m, _) = train(&PipelineSpec::parse(spec).unwrap(), x.view(), &quick()).unwrap();
        let bytes = m.to_model_file().to_bytes().unwrap();
        let mf = ModelFile::from_bytes(&bytes, Path::new("<memory>")).unwrap();
        let back = Model::from_model_file(&mf).unwrap();
        assert_eq!(back, m, "{spec}: stages differ after the round trip");
        assert_eq!(back.id(), m.id());
        let (a, b) = (
            m.encode(queries.view()).unwrap(),
            back.encode(queries.view()).unwrap(),
        );
        assert_eq!(a, b, "{spec}: codes differ after save/load");
        assert_eq!(a.len(), 50 * m.code_bytes());
        assert_eq!(mf.code_kind, m.code_kind());
        assert_eq!(mf.input_dim, 32);
    }
}

#[test]
fn codes_do_not_depend_on_batching() {
    let x = data(700, 32, 3);
    for spec in SPECS {
        let (m, _) = train(&PipelineSpec::parse(spec).unwrap(), x.view(), &quick()).unwrap();
        let all = m.encode(x.view()).unwrap();
        let cb = m.code_bytes();
        for i in [0usize, 255, 256, 699] {
            let one = m.encode(x.slice(s![i..i + 1, ..])).unwrap();
            assert_eq!(
                one,
                &all[i * cb..(i + 1) * cb],
                "{spec}: row {i} alone differs"
            );
        }
        // A strided (column-major) view gives the same codes.
        let fortran = x.t().to_owned();
        let strided = fortran.t();
        assert_eq!(
            m.encode(strided).unwrap(),
            all,
            "{spec}: strided input differs"
        );
        // Projections agree with the codes for binary models.
        if m.code_kind() == codedb::format::CodeKind::Binary {
            let p = m.project(x.view()).unwrap();
            for i in 0..x.nrows() {
                for j in 0..m.code_bits() {
                    let bit = codedb::model::get_bit(&all[i * cb..], j);
                    assert_eq!(bit, p[(i, j)] > 0.0, "{spec}: row {i} bit {j}");
                }
            }
        }
    }
}

#[test]
fn bad_input_is_refused_with_clear_errors() {
    let x = data(300, 16, 4);
    let (m, _) = train(
        &PipelineSpec::parse("pca-itq:8").unwrap(),
        x.view(),
        &quick(),
    )
    .unwrap();
    let mut bad = data(5, 16, 5);
    bad[(2, 7)] = f32::NAN;
    let err = m.encode(bad.view()).unwrap_err();
    assert!(
        matches!(err, ModelError::NonFinite { row: 2, col: 7, .. }),
        "{err}"
    );
    bad[(2, 7)] = f32::INFINITY;
    assert!(
        m.project(bad.view())
            .unwrap_err()
            .to_string()
            .contains("row 2, column 7")
    );
    let err = m.encode(data(5, 15, 6).view()).unwrap_err().to_string();
    assert!(err.contains("expected 16 columns, got 15"), "{err}");
    let err = m
        .encode(Array2::<f32>::zeros((0, 16)).view())
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty"), "{err}");
    // Training data too.
    let mut tx = data(100, 16, 7);
    tx[(99, 0)] = f32::NEG_INFINITY;
    let err = train(&PipelineSpec::parse("lsh:8").unwrap(), tx.view(), &quick())
        .unwrap_err()
        .to_string();
    assert!(err.contains("row 99, column 0"), "{err}");
    let err = train(
        &PipelineSpec::parse("lsh:8").unwrap(),
        Array2::<f32>::zeros((0, 4)).view(),
        &quick(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("empty"), "{err}");
    // float16 refuses values it cannot represent.
    let (f16, _) = train(&PipelineSpec::parse("float16").unwrap(), x.view(), &quick()).unwrap();
    let mut big = data(3, 16, 8);
    big[(1, 4)] = 1e6;
    let err = f16.encode(big.view()).unwrap_err().to_string();
    assert!(
        err.contains("row 1, column 4") && err.contains("float16"),
        "{err}"
    );
}

#[test]
fn corrupt_model_files_name_the_stage_and_tensor() {
    let x = data(300, 16, 9);
    let (m, _) = train(
        &PipelineSpec::parse("pca-itq:8").unwrap(),
        x.view(),
        &quick(),
    )
    .unwrap();
    let good = m.to_model_file();
    // Stage order: 0 center, 1 linear, 2 rotation, 3 binarize.
    let mut mf = good.clone();
    mf.stages[2].tensors[0].data = TensorData::F32(vec![0.5; 64]);
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(
        err.contains("stage 2 (rotation)") && err.contains("not orthogonal"),
        "{err}"
    );
    let mut mf = good.clone();
    mf.stages[1].tensors[0].shape = vec![8, 8, 2];
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(
        err.contains("stage 1 (linear)") && err.contains("\"weight\""),
        "{err}"
    );
    let mut mf = good.clone();
    if let TensorData::F32(v) = &mut mf.stages[0].tensors[0].data {
        v[3] = f32::NAN;
    }
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(
        err.contains("stage 0 (center)") && err.contains("non-finite"),
        "{err}"
    );
    let mut mf = good.clone();
    mf.stages[3].tensors[0].name = "threshold".into();
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(err.contains("stage 3 (binarize)"), "{err}");
    // Meta disagreeing with the stages.
    let mut mf = good.clone();
    mf.input_dim = 17;
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(err.contains("input dimension 17"), "{err}");
    let mut mf = good.clone();
    mf.code_bits = 16;
    mf.code_bytes = 2;
    assert!(Model::from_model_file(&mf).is_err());
    // Stage order: a quantiser in the middle, or a dimension mismatch.
    let mut mf = good.clone();
    mf.stages.swap(2, 3);
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(err.contains("quantiser"), "{err}");
    let mut mf = good;
    mf.stages.remove(1);
    let err = Model::from_model_file(&mf).unwrap_err().to_string();
    assert!(
        err.contains("outputs 16 dimensions") && err.contains("takes 8"),
        "{err}"
    );
}

#[test]
fn hand_built_models_are_checked() {
    let err = Model::new(vec![]).unwrap_err().to_string();
    assert!(err.contains("at least one stage"), "{err}");
    let err = Model::new(vec![Stage::Center(Center::new(vec![0.0; 4]).unwrap())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("must be a quantiser"), "{err}");
    let m = Model::new(vec![
        Stage::Center(Center::new(vec![1.0; 4]).unwrap()),
        Stage::Float(FloatStage::new(4, false).unwrap()),
    ])
    .unwrap();
    let y = m
        .decode(&m.encode(Array2::<f32>::ones((2, 4)).view()).unwrap())
        .unwrap();
    assert!(y.iter().all(|&v| v == 0.0));
    // 12 bits: any bit count is storable, padded to whole bytes.
    let m = Model::new(vec![Stage::Binarize(Binarize::zeros(12).unwrap())]).unwrap();
    assert_eq!((m.code_bits(), m.code_bytes()), (12, 2));
}

#[test]
fn progress_and_verbose_messages_are_reported() {
    let x = data(500, 16, 10);
    let events: Arc<Mutex<Vec<TrainEvent>>> = Arc::default();
    let sink = events.clone();
    let opts = TrainOptions {
        verbose: true,
        itq_iterations: 5,
        progress: Some(Arc::new(move |e: &TrainEvent| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.clone());
            }
        })),
        ..TrainOptions::default()
    };
    let (_, report) = train(&PipelineSpec::parse("pca-itq:8").unwrap(), x.view(), &opts).unwrap();
    let ev = events.lock().unwrap();
    let itq_lines = ev
        .iter()
        .filter(|e| matches!(e, TrainEvent::Message(m) if m.contains("itq iteration")))
        .count();
    assert_eq!(itq_lines, 6, "one loss line per iteration, plus the start");
    assert!(
        ev.iter()
            .any(|e| matches!(e, TrainEvent::Progress { step, .. } if step == "pca:8"))
    );
    assert_eq!(report.itq_loss.len(), 6);
    assert_eq!(report.canonical, "pca:8,itq,bits");
    assert_eq!(report.training_rows, 500);
    let pca = report.pca.unwrap();
    assert_eq!(pca.eigenvalues.len(), 8);
    // Without `verbose`, no messages.
    let quiet: Arc<Mutex<usize>> = Arc::default();
    let q2 = quiet.clone();
    let opts = TrainOptions {
        progress: Some(Arc::new(move |e: &TrainEvent| {
            if matches!(e, TrainEvent::Message(_))
                && let Ok(mut n) = q2.lock()
            {
                *n += 1;
            }
        })),
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse("pca-itq:8").unwrap(), x.view(), &opts).unwrap();
    assert_eq!(*quiet.lock().unwrap(), 0);
}

#[test]
fn training_sample_is_seeded_and_capped() {
    let x = data(1000, 16, 11);
    let opts = TrainOptions {
        sample: Some(300),
        ..TrainOptions::default()
    };
    let spec = PipelineSpec::parse("pca-itq:8").unwrap();
    let (a, ra) = train(&spec, x.view(), &opts).unwrap();
    let (b, _) = train(&spec, x.view(), &opts).unwrap();
    assert_eq!(ra.training_rows, 300);
    assert_eq!(ra.input_rows, 1000);
    assert_eq!(a.encode(x.view()).unwrap(), b.encode(x.view()).unwrap());
    let err = train(
        &spec,
        x.view(),
        &TrainOptions {
            sample: Some(0),
            ..opts
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("sample"), "{err}");
}
