//! The query words the engine says once for every front end: class names → list ids
//! (`Snapshot::class_ids`), margin names and their ε, stored-vector types, the direction of a
//! mode's scores, and training a text head (`Model::with_trained_text_head`).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use codedb::format::VectorDType;
use codedb::model::{
    MARGIN_NAMES, MarginPolicy, Model, PamirOptions, PipelineSpec, TrainOptions, tokenize, train,
    train_pamir,
};
use codedb::{
    BuildOptions, ClassRef, Index, ListAssignment, MODE_NAMES, SearchError, SearchMode,
    SearchParams,
};
use common::npy::digits;
use ndarray::{ArrayView2, s};

fn model(x: ArrayView2<f32>) -> Model {
    let opts = TrainOptions {
        seed: 3,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse("pca-itq:32").unwrap(), x, &opts)
        .unwrap()
        .0
}

fn detail(e: SearchError) -> String {
    match e {
        SearchError::InvalidArgument { argument, detail } => {
            assert_eq!(argument, "classes");
            detail
        }
        other => panic!("expected InvalidArgument for classes, got {other:?}"),
    }
}

#[test]
fn class_ids_resolve_names_ids_and_refuse_the_rest() {
    let (x, y) = digits();
    let m = model(x.view());
    let dir = tempfile::tempdir().unwrap();
    let index = Index::build(
        dir.path(),
        &m,
        x.view(),
        &BuildOptions {
            labels: Some(&y),
            lists: Some(ListAssignment::Label),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let snap = index.snapshot();
    // A labelled build names each class by its label; a name, a decimal id and an id agree.
    let by_name = snap
        .class_ids(&[ClassRef::from("3"), ClassRef::from("5")])
        .unwrap();
    assert_eq!(by_name, vec![3, 5]);
    assert_eq!(
        snap.class_ids(&[ClassRef::Id(3), ClassRef::Id(5)]).unwrap(),
        by_name
    );
    assert_eq!(snap.class_ids(&[]).unwrap(), Vec::<u32>::new());
    let e = detail(snap.class_ids(&[ClassRef::from("sneaker")]).unwrap_err());
    assert_eq!(
        e,
        "sneaker: no class has this name (and it is not a class id)"
    );
    let e = detail(snap.class_ids(&[ClassRef::from("42")]).unwrap_err());
    assert_eq!(e, "42: no class has this name or id");
    let e = detail(snap.class_ids(&[ClassRef::Id(42)]).unwrap_err());
    assert_eq!(e, "42: no class has this name or id");
    let e = detail(snap.class_ids(&[ClassRef::Id(u32::MAX)]).unwrap_err());
    assert_eq!(e, "4294967295: no class has this name or id");
    // The ids restrict a search to those classes' rows.
    let params = SearchParams::new(20, SearchMode::Hamming).lists(by_name);
    for hit in snap
        .search(x.slice(s![0..5, ..]), &params)
        .unwrap()
        .concat()
    {
        assert!([3, 5].contains(&y[hit.id as usize]), "row {}", hit.id);
    }
}

#[test]
fn class_ids_without_a_class_table_take_ids_only() {
    let (x, _) = digits();
    let m = model(x.view());
    let dir = tempfile::tempdir().unwrap();
    let index = Index::build(
        dir.path(),
        &m,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let snap = index.snapshot();
    assert!(snap.classes().is_none());
    assert_eq!(
        snap.class_ids(&[ClassRef::from("7"), ClassRef::Id(9)])
            .unwrap(),
        vec![7, 9]
    );
    let e = detail(snap.class_ids(&[ClassRef::from("shoe")]).unwrap_err());
    assert_eq!(
        e,
        "shoe: the index has no class table, so classes are given by id"
    );
}

#[test]
fn margins_parse_by_name_with_their_default_epsilon() {
    for (name, m) in MARGIN_NAMES {
        assert_eq!(name.parse::<MarginPolicy>().unwrap(), m);
        assert_eq!(m.name(), name);
    }
    assert_eq!(MarginPolicy::Constant.default_epsilon(), 1.0);
    assert_eq!(MarginPolicy::Caption.default_epsilon(), 0.1);
    let e = "hinge".parse::<MarginPolicy>().unwrap_err();
    assert_eq!(
        e.to_string(),
        r#""hinge": expected "constant" or "caption""#
    );
    let o = PamirOptions::default().with_margin(MarginPolicy::Caption, None);
    assert_eq!((o.margin, o.epsilon), (MarginPolicy::Caption, 0.1));
    let o = PamirOptions::default().with_margin(MarginPolicy::Constant, Some(0.5));
    assert_eq!((o.margin, o.epsilon), (MarginPolicy::Constant, 0.5));
}

#[test]
fn vector_types_parse_by_name() {
    for t in [VectorDType::F32, VectorDType::F16] {
        assert_eq!(VectorDType::parse(t.name()), Some(t));
    }
    for bad in ["f64", "F32", "", "float32"] {
        assert_eq!(VectorDType::parse(bad), None, "{bad}");
    }
}

#[test]
fn larger_is_better_is_the_modes_direction() {
    let larger: Vec<&str> = MODE_NAMES
        .iter()
        .filter(|(_, m)| m.larger_is_better())
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(larger, ["adc-ip", "float-ip", "exact-ip"]);
    for (_, m) in MODE_NAMES {
        assert_eq!(
            m.larger_is_better(),
            m.direction() == codedb::kernels::Direction::LargerIsBetter
        );
    }
}

#[test]
fn a_trained_text_head_is_the_head_trained_on_the_projection() {
    let (x, y) = digits();
    let x = x.slice(s![0..400, ..]);
    let m = model(x);
    let captions: Vec<Vec<String>> = y
        .iter()
        .take(400)
        .map(|&v| tokenize(if v < 5 { "small digit" } else { "large digit" }))
        .collect();
    let opts = PamirOptions {
        iterations: 2000,
        c_grid: vec![1.0],
        validation: 0.0,
        ..PamirOptions::default()
    };
    let (with_head, report) = m
        .clone()
        .with_trained_text_head(x, &captions, &opts)
        .unwrap();
    let p = m.project(x).unwrap();
    let (head, direct) = train_pamir(p.view(), &captions, &opts).unwrap();
    assert_eq!(report.iterations, direct.iterations);
    let by_hand = m.with_text_head(head).unwrap();
    assert!(with_head.text_head().is_some());
    assert_eq!(with_head.text_head(), by_hand.text_head());
    let short = captions[..10].to_vec();
    assert!(m_fails(&with_head, x, &short));
}

/// Captions that do not match the rows are refused (an error, not a panic).
fn m_fails(m: &Model, x: ArrayView2<f32>, captions: &[Vec<String>]) -> bool {
    m.clone()
        .without_text_head()
        .with_trained_text_head(x, captions, &PamirOptions::default())
        .is_err()
}
