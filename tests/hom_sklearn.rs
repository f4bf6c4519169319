//! The `hom:chi2` stage against scikit-learn's `AdditiveChi2Sampler(sample_steps=2,
//! sample_interval=0.5)`, and `hom:inter` against a numpy reference of its formula, on the
//! same 64 rows: reference maps written by `python3 tools/compare_hom.py --write-golden`.
//! codedb computes each feature in f64 and stores f32, so every value must agree within
//! 1e-6 absolute (values are below 1.1; f32 rounding alone is ≤ 6e-8), and the layout
//! ([ψ₀ | cos | sin], d columns each) must be scikit-learn's. Also: a model trained with
//! `hom:chi2` first maps exactly so, and negative input is refused naming the row and column.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::{Path, PathBuf};

use codedb::model::{Hom, HomKernel, Model, PipelineSpec, Stage, TrainOptions};
use common::npy::load_vectors;
use ndarray::Array2;

const TOLERANCE: f64 = 1e-6;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hom")
}

/// A reference map as f64 (load_vectors would round it to f32).
fn f64_rows(name: &str) -> (Vec<usize>, Vec<f64>) {
    common::npy::read_any(root().join(name))
}

fn check(kernel: HomKernel, period: f64, file: &str) {
    let x = load_vectors(root().join("input.npy"));
    let (shape, want) = f64_rows(file);
    assert_eq!(shape, vec![x.nrows(), 3 * x.ncols()], "{file}: shape");
    let h = Hom::new(x.ncols(), kernel, 1, period).unwrap();
    let model = Model::new(vec![
        Stage::Hom(h),
        Stage::Float(codedb::model::FloatStage::new(3 * x.ncols(), false).unwrap()),
    ])
    .unwrap();
    let got = model.project(x.view()).unwrap();
    let mut worst = 0f64;
    for (g, w) in got.iter().zip(&want) {
        worst = worst.max((f64::from(*g) - w).abs());
    }
    assert!(worst <= TOLERANCE, "{file}: max difference {worst:e}");
}

#[test]
fn chi2_map_equals_scikit_learn_additive_chi2_sampler() {
    check(HomKernel::Chi2, 0.5, "chi2.npy");
}

#[test]
fn intersection_map_equals_its_numpy_reference() {
    check(HomKernel::Intersection, 0.8, "inter.npy");
}

#[test]
fn trained_hom_chi2_stage_is_the_sampler_map_and_refuses_negative_input() {
    let x = load_vectors(root().join("input.npy"));
    let spec = PipelineSpec::parse("hom:chi2,float").unwrap();
    let (model, _) = Model::train(&spec, x.view(), &TrainOptions::default()).unwrap();
    let mf = model.to_model_file();
    let back = Model::from_model_file(&mf).unwrap();
    assert_eq!(back, model);
    let got = back.project(x.view()).unwrap();
    let (_, want) = f64_rows("chi2.npy");
    for (g, w) in got.iter().zip(&want) {
        assert!((f64::from(*g) - w).abs() <= TOLERANCE);
    }
    let mut bad: Array2<f32> = x.clone();
    bad[(3, 7)] = -0.5;
    for err in [
        back.encode(bad.view()).unwrap_err().to_string(),
        back.project(bad.view()).unwrap_err().to_string(),
        Model::train(&spec, bad.view(), &TrainOptions::default())
            .unwrap_err()
            .to_string(),
    ] {
        assert!(
            err.contains("row 3, column 7") && err.contains("hom:chi2") && err.contains("-0.5"),
            "{err}"
        );
    }
}
