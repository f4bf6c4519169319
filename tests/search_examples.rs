//! Query by examples (PiCoDes, Bergamo et al. NIPS 2011): the SVM learned at query time on the
//! examples' codes scores every live row through the LUT-8 / ADC / dense kernels, and each
//! score equals the dense reference `b + wᵀ decode(h)` computed from the row's code, on binary,
//! PQ8, PQ4 and float codes; re-ranking, lists, probing and the errors.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use codedb::format::VectorDType;
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{
    AddOptions, BuildOptions, CodeClassifier, ExampleParams, Index, ListAssignment, Negatives,
    SearchError, SearchMode, SearchParams, Snapshot,
};
use ndarray::{Array2, Axis};

const SPECS: [&str; 5] = [
    "pca-itq:32",
    "pca:16,pq:8x8",
    "pca:16,pq4:8",
    "pca:16,float",
    "float16",
];

fn model(spec: &str, x: &Array2<f32>) -> Model {
    let spec = PipelineSpec::parse(spec).unwrap();
    train(&spec, x.view(), &TrainOptions::default()).unwrap().0
}

/// The digits in a segment (the first 1,500 rows) and a log batch (the rest), ids = row
/// numbers, labels = digits, lists by label, stored vectors, a class table; every 11th row
/// deleted.
fn index(dir: &std::path::Path, m: &Model, x: &Array2<f32>, y: &[u32]) -> Index {
    let opts = BuildOptions {
        labels: Some(&y[..1500]),
        lists: Some(ListAssignment::Label),
        store_vectors: Some(VectorDType::F32),
        classes_from_labels: true,
        ..BuildOptions::default()
    };
    let head = x.slice(ndarray::s![..1500, ..]);
    let index = Index::build(dir, m, head, &opts, &mut |_| {}).unwrap();
    let ids: Vec<u64> = (1500..x.nrows() as u64).collect();
    let add = AddOptions {
        ids: Some(&ids),
        labels: Some(&y[1500..]),
        lists: Some(ListAssignment::Label),
        ..AddOptions::default()
    };
    index.add(x.slice(ndarray::s![1500.., ..]), &add).unwrap();
    let gone: Vec<u64> = (0..x.nrows() as u64).step_by(11).collect();
    index.delete(&gone).unwrap();
    index.commit().unwrap();
    assert!(index.snapshot().blocks().count() >= 2);
    index
}

fn rows_of(x: &Array2<f32>, y: &[u32], digit: u32, n: usize) -> Array2<f32> {
    let r: Vec<usize> = (0..y.len()).filter(|&i| y[i] == digit).take(n).collect();
    x.select(Axis(0), &r)
}

/// `b + wᵀ decode(h)` for every live row, in f64, by id.
fn dense_reference(snap: &Snapshot, c: &CodeClassifier) -> Vec<(u64, f64)> {
    let m = snap.model().unwrap();
    snap.rows()
        .unwrap()
        .map(|r| {
            let h = m.decode(r.code).unwrap();
            let s: f64 = h
                .iter()
                .zip(&c.weights)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            (r.id, s + f64::from(c.bias))
        })
        .collect()
}

#[test]
fn every_row_scores_the_dense_reference_on_every_code_kind() {
    let (x, y) = common::npy::digits();
    let pos = rows_of(&x, &y, 3, 5);
    for spec in SPECS {
        let m = model(spec, &x);
        let dir = tempfile::tempdir().unwrap();
        let snap = index(dir.path(), &m, &x, &y).snapshot();
        let live = snap.live_rows() as usize;
        let mode = SearchMode::default_for(m.code_kind());
        let params = ExampleParams::new(SearchParams::new(live + 5, mode));
        let neg = Negatives::Sampled {
            count: 300,
            seed: 9,
        };
        let c = snap.train_examples(pos.view(), neg, &params).unwrap();
        assert_eq!((c.positives, c.negatives), (5, 300));
        let hits = snap.search_examples(pos.view(), neg, &params).unwrap();
        assert_eq!(hits.len(), live, "{spec}: every live row");
        let reference: std::collections::HashMap<u64, f64> =
            dense_reference(&snap, &c.codes).into_iter().collect();
        for h in &hits {
            let want = reference[&h.id];
            let got = f64::from(h.score);
            assert!(
                (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "{spec}: row {}: LUT {got} vs dense {want}",
                h.id
            );
        }
        for w in hits.windows(2) {
            assert!(
                w[0].score > w[1].score || (w[0].score == w[1].score && w[0].id < w[1].id),
                "{spec}: not best first"
            );
        }
        // The classifier finds the category: the top 50 hold at least 3× the threes chance gives.
        let threes = hits[..50].iter().filter(|h| y[h.id as usize] == 3).count();
        eprintln!("{spec}: {threes}/50 threes in the top 50");
        assert!(threes >= 15, "{spec}: {threes}/50 threes (chance: 5)");
        // The same classifier given explicitly scores the same.
        let again = snap.search_classifier(&c.codes, &params.search).unwrap();
        assert_eq!(again, hits, "{spec}: --classifier");
    }
}

#[test]
fn rerank_lists_and_probing() {
    let (x, y) = common::npy::digits();
    let pos = rows_of(&x, &y, 7, 10);
    let neg = rows_of(&x, &y, 1, 40);
    for spec in SPECS {
        let m = model(spec, &x);
        let dir = tempfile::tempdir().unwrap();
        let snap = index(dir.path(), &m, &x, &y).snapshot();
        let mode = SearchMode::default_for(m.code_kind());
        let given = Negatives::Given(neg.view());
        let params = ExampleParams::new(SearchParams::new(10, mode).rerank(100));
        let c = snap.train_examples(pos.view(), given, &params).unwrap();
        let hits = snap.search_examples(pos.view(), given, &params).unwrap();
        assert_eq!(hits.len(), 10);
        // Re-ranked scores: the stored vectors' projections through the re-ranking classifier
        // (a second SVM on binary codes, the same one otherwise).
        let r = match &c.projected {
            Some(p) => {
                assert_eq!(m.code_kind(), codedb::format::CodeKind::Binary);
                p.clone()
            }
            None => c.codes.clone(),
        };
        let p = m.project(x.view()).unwrap();
        for h in &hits {
            let want: f32 = p
                .row(h.id as usize)
                .iter()
                .zip(&r.weights)
                .map(|(a, b)| a * b)
                .sum::<f32>()
                + r.bias;
            assert!(
                (h.score - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "{spec} rerank"
            );
        }
        // Lists restrict.
        let l = ExampleParams::new(SearchParams::new(20, mode).lists(vec![7, 2]));
        let lh = snap.search_examples(pos.view(), given, &l).unwrap();
        assert!(
            lh.iter().all(|h| [7, 2].contains(&y[h.id as usize])),
            "{spec}"
        );
        // Probing every class is the full search.
        let full = ExampleParams::new(SearchParams::new(20, mode));
        let all = ExampleParams::new(SearchParams::new(20, mode).nprobe(10));
        assert_eq!(
            snap.search_examples(pos.view(), given, &all).unwrap(),
            snap.search_examples(pos.view(), given, &full).unwrap(),
            "{spec} nprobe"
        );
        let one = ExampleParams::new(SearchParams::new(20, mode).nprobe(1));
        let oh = snap.search_examples(pos.view(), given, &one).unwrap();
        let first = y[oh[0].id as usize];
        assert!(
            oh.iter().all(|h| y[h.id as usize] == first),
            "{spec} nprobe 1"
        );
    }
}

fn argument(e: SearchError) -> String {
    match e {
        SearchError::InvalidArgument { argument, .. } => argument,
        e => panic!("not an argument error: {e}"),
    }
}

#[test]
fn one_positive_is_allowed_and_bad_input_names_the_argument() {
    let (x, y) = common::npy::digits();
    let m = model("pca-itq:32", &x);
    let dir = tempfile::tempdir().unwrap();
    let snap = index(dir.path(), &m, &x, &y).snapshot();
    let p = ExampleParams::new(SearchParams::new(10, SearchMode::Hamming));
    let neg = Negatives::Sampled { count: 50, seed: 1 };
    let one = rows_of(&x, &y, 0, 1);
    let hits = snap.search_examples(one.view(), neg, &p).unwrap();
    assert_eq!(hits.len(), 10);
    assert!(hits.iter().filter(|h| y[h.id as usize] == 0).count() >= 5);
    // Sampling is seeded.
    assert_eq!(hits, snap.search_examples(one.view(), neg, &p).unwrap());

    let narrow = Array2::<f32>::zeros((3, 10));
    let e = snap.search_examples(narrow.view(), neg, &p).unwrap_err();
    assert_eq!(argument(e), "examples");
    let mut nan = rows_of(&x, &y, 0, 3);
    nan[[1, 5]] = f32::NAN;
    let e = snap.search_examples(nan.view(), neg, &p).unwrap_err();
    assert!(e.to_string().contains("row 1, column 5 is NaN"), "{e}");
    assert_eq!(argument(e), "examples");
    let e = snap
        .search_examples(one.view(), Negatives::Given(nan.view()), &p)
        .unwrap_err();
    assert_eq!(argument(e), "negatives");
    let too_many = Negatives::Sampled {
        count: 5000,
        seed: 1,
    };
    let e = snap.search_examples(one.view(), too_many, &p).unwrap_err();
    assert!(e.to_string().contains("live rows"), "{e}");
    assert_eq!(argument(e), "negatives");
    let short = CodeClassifier::from_values(&[0.5; 32]);
    let e = snap.search_classifier(&short, &p.search).unwrap_err();
    assert!(e.to_string().contains("32 values"), "{e}");
    assert_eq!(argument(e), "classifier");
    let ok = CodeClassifier::from_values(&[0.5; 33]);
    let e = snap
        .search_classifier(&ok, &SearchParams::new(10, SearchMode::Hamming).rerank(20))
        .unwrap_err();
    assert_eq!(argument(e), "rerank");
    let e = snap
        .search_classifier(&ok, &SearchParams::new(10, SearchMode::ExactL2))
        .unwrap_err();
    assert_eq!(argument(e), "mode");
}
