//! Text → image search (PAMIR): training on a generated set whose tags are a function of the
//! class, the text score over every code kind through the shared kernels against a dense
//! reference `uᵀp` on decoded codes, storage of the text head, and the errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::ListAssignment;
use codedb::format::{ModelFile, VectorDType};
use codedb::model::{
    MarginPolicy, PamirOptions, PamirStop, RankingMetrics, TextHead, Vocabulary, tokenize,
    train_pamir,
};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{BuildOptions, Index};
use codedb::{Hit, SearchError, SearchMode, SearchParams};
use ndarray::{Array2, ArrayView2};

/// Tags of each class; "warm" and "cool" are shared by two classes each.
const CLASSES: [&str; 4] = [
    "red apple warm",
    "green car warm",
    "blue sky ocean cool",
    "yellow sun cool",
];
const N: usize = 800;
const D: usize = 16;

fn class_of(r: usize) -> usize {
    (r * 7 + r / 5) % 4
}

/// Rows near one of four class centres (seeded arithmetic, no RNG), 16-D.
fn rows() -> Array2<f32> {
    Array2::from_shape_fn((N, D), |(r, j)| {
        let c = class_of(r);
        let centre = if j % 4 == c { 3.0 } else { 0.0 } + (j as f32 * 0.1);
        let h = ((r * 2654435761 + j * 40503) % 1000) as f32 / 1000.0 - 0.5;
        centre + 1.2 * h
    })
}

/// Captions: the tags of the row's class.
fn captions() -> Vec<Vec<String>> {
    (0..N).map(|r| tokenize(CLASSES[class_of(r)])).collect()
}

/// The classes a word tags.
fn tagged(word: &str) -> Vec<usize> {
    (0..4)
        .filter(|&c| tokenize(CLASSES[c]).iter().any(|w| w == word))
        .collect()
}

fn quick_options() -> PamirOptions {
    PamirOptions {
        iterations: 20_000,
        c_grid: vec![0.1, 1.0],
        ..PamirOptions::default()
    }
}

fn model_with_head(spec: &str) -> Model {
    let x = rows();
    let (m, _) = train(
        &PipelineSpec::parse(spec).unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    let p = m.project(x.view()).unwrap();
    let (head, _) = train_pamir(p.view(), &captions(), &quick_options()).unwrap();
    m.with_text_head(head).unwrap()
}

#[test]
fn training_reduces_the_loss_and_ranks_the_tagged_class_first() {
    let x = rows();
    let caps = captions();
    for margin in [MarginPolicy::Constant, MarginPolicy::Caption] {
        let opts = PamirOptions {
            margin,
            epsilon: if margin == MarginPolicy::Caption {
                0.1
            } else {
                1.0
            },
            ..quick_options()
        };
        let (head, report) = train_pamir(x.view(), &caps, &opts).unwrap();
        assert_eq!(report.trials.len(), 2);
        assert!(report.validation_rows > 100 && report.validation_queries >= 4);
        // Every word ranks the rows of the classes it tags first: AvgP over all rows near 1,
        // far above chance (0.2 to 0.6 here; W = 0 ties every row).
        for words in CLASSES {
            for w in tokenize(words) {
                let classes = tagged(&w);
                let q = head.query(&w).unwrap();
                let mut s: Vec<(f32, usize)> = (0..N)
                    .map(|r| (head.score(&q.vector, x.row(r).as_slice().unwrap()), r))
                    .collect();
                s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let is_rel = |r: &usize| classes.contains(&class_of(*r));
                let rel = (0..N).filter(is_rel).count();
                let m = RankingMetrics::of(&s, |(_, r)| is_rel(r), rel);
                assert!(m.avgp > 0.95, "{margin:?} {w}: AvgP {}", m.avgp);
            }
        }
    }
}

#[test]
fn training_is_deterministic_for_a_seed() {
    let x = rows();
    let a = train_pamir(x.view(), &captions(), &quick_options()).unwrap();
    let b = train_pamir(x.view(), &captions(), &quick_options()).unwrap();
    assert_eq!(a, b);
}

/// `uᵀp` for every row, `p` the decoded code (±1 bits, PQ reconstruction, stored floats).
fn reference(m: &Model, x: ArrayView2<f32>, u: &[f32]) -> Vec<f32> {
    let p = m.decode(&m.encode(x).unwrap()).unwrap();
    p.rows()
        .into_iter()
        .map(|r| r.iter().zip(u).map(|(a, b)| a * b).sum())
        .collect()
}

/// `hits` are the top k of `reference` (up to f32 rounding of near ties) with its scores.
fn assert_top_k(hits: &[Hit], reference: &[f32], k: usize, what: &str) {
    assert_eq!(hits.len(), k, "{what}");
    let tol = 1e-3 * reference.iter().fold(1.0f32, |a, b| a.max(b.abs()));
    for h in hits {
        let want = reference[h.id as usize];
        assert!(
            (h.score - want).abs() <= tol,
            "{what}: id {} score {} vs {want}",
            h.id,
            h.score
        );
    }
    let worst = hits
        .iter()
        .map(|h| reference[h.id as usize])
        .fold(f32::INFINITY, f32::min);
    let best_left = (0..reference.len() as u64)
        .filter(|id| !hits.iter().any(|h| h.id == *id))
        .map(|id| reference[id as usize])
        .fold(f32::NEG_INFINITY, f32::max);
    assert!(worst >= best_left - tol, "{what}: {worst} < {best_left}");
    for w in hits.windows(2) {
        assert!(w[0].score >= w[1].score, "{what}: not best first");
    }
}

#[test]
fn text_scores_on_every_code_kind_equal_a_dense_reference_on_decoded_codes() {
    let x = rows();
    let labels: Vec<u32> = (0..N).map(|r| class_of(r) as u32).collect();
    for spec in [
        "pca-itq:8",
        "pca:8,pq:4x8",
        "pca:8,pq4:4",
        "float",
        "float16",
    ] {
        let m = model_with_head(spec);
        let dir = tempfile::tempdir().unwrap();
        let opts = BuildOptions {
            labels: Some(&labels),
            lists: Some(ListAssignment::Label),
            store_vectors: Some(VectorDType::F32),
            ..BuildOptions::default()
        };
        let index = Index::build(dir.path(), &m, x.view(), &opts, &mut |_| {}).unwrap();
        let snap = index.snapshot();
        let mode = SearchMode::default_for(m.code_kind());
        let texts = ["red apple", "blue", "ocean sky warm", "zebra sun"];
        let qs = snap.text_queries(&texts).unwrap();
        assert_eq!(qs[3].vector.unknown, ["zebra"]);
        let hits = snap
            .search_text(&texts, &SearchParams::new(25, mode))
            .unwrap();
        for (q, h) in qs.iter().zip(&hits) {
            let r = reference(&m, x.view(), &q.u);
            assert_top_k(h, &r, 25, &format!("{spec} {:?}", q.text));
        }
        // The class of the words comes first.
        assert!(
            hits[0].iter().all(|h| class_of(h.id as usize) == 0),
            "{spec}"
        );
        // Re-ranking with stored vectors: uᵀ project(v) over the candidates.
        let rr = snap
            .search_text(&texts[..1], &SearchParams::new(5, mode).rerank(50))
            .unwrap();
        let p = m.project(x.view()).unwrap();
        let exact: Vec<f32> = p
            .rows()
            .into_iter()
            .map(|r| r.iter().zip(&qs[0].u).map(|(a, b)| a * b).sum())
            .collect();
        for h in &rr[0] {
            assert!(
                (h.score - exact[h.id as usize]).abs() < 1e-3,
                "{spec} rerank"
            );
        }
        // Lists restrict: only rows of class 2.
        let l = snap
            .search_text(&texts[..1], &SearchParams::new(10, mode).lists(vec![2]))
            .unwrap();
        assert!(
            l[0].iter().all(|h| class_of(h.id as usize) == 2),
            "{spec} lists"
        );
        // nprobe 1 probes the class whose mean scores best: the apples.
        let np = snap
            .search_text(&texts[..1], &SearchParams::new(10, mode).nprobe(1))
            .unwrap();
        assert_eq!(np[0], hits[0][..10].to_vec(), "{spec} nprobe");
    }
}

#[test]
fn the_text_head_is_stored_and_reloaded_byte_identically_and_is_optional() {
    let m = model_with_head("pca-itq:8");
    let mf = m.to_model_file();
    let bytes = mf.to_bytes().unwrap();
    let back =
        Model::from_model_file(&ModelFile::from_bytes(&bytes, "m".as_ref()).unwrap()).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.to_model_file().to_bytes().unwrap(), bytes);
    // The head is the last stage, OPTIONAL, kind 9.
    let last = mf.stages.last().unwrap();
    assert_eq!((last.kind, last.required), (9, false));
    // Without it the model encodes the same and its file is the old layout.
    let bare = m.clone().without_text_head();
    let x = rows();
    assert_eq!(bare.encode(x.view()).unwrap(), m.encode(x.view()).unwrap());
    assert_eq!(bare.to_model_file().stages.len(), mf.stages.len() - 1);
    // A reader that does not know kind 9 skips it: simulate with an unknown optional kind.
    let mut unknown = mf.clone();
    unknown.stages.last_mut().unwrap().kind = 200;
    let read = ModelFile::from_bytes(&unknown.to_bytes().unwrap(), "u".as_ref()).unwrap();
    assert_eq!(read.skipped_stages, [200]);
    assert_eq!(
        Model::from_model_file(&read).unwrap(),
        bare.clone().with_id(m.id())
    );
}

#[test]
fn bad_heads_and_queries_are_refused_with_clear_errors() {
    let m = model_with_head("pca-itq:8");
    let head = m.text_head().unwrap().clone();
    // NaN in W, stored: refused on load naming the tensor.
    let mut mf = m.to_model_file();
    let rec = mf.stages.last_mut().unwrap();
    let w = rec.tensors.iter_mut().find(|t| t.name == "weight").unwrap();
    if let codedb::format::TensorData::F32(v) = &mut w.data {
        v[3] = f32::NAN;
    }
    let bytes = mf.to_bytes().unwrap();
    let e = Model::from_model_file(&ModelFile::from_bytes(&bytes, "m".as_ref()).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("text") && e.contains("weight") && e.contains("non-finite"),
        "{e}"
    );
    // NaN given to the constructor.
    let mut wv = head.weight().to_vec();
    wv[0] = f32::INFINITY;
    assert!(TextHead::new(head.vocabulary().clone(), head.dim(), wv).is_err());
    // Wrong dimension for the model.
    let small = TextHead::new(
        head.vocabulary().clone(),
        3,
        vec![0.0; 3 * head.vocabulary().len()],
    )
    .unwrap();
    let e = m.clone().with_text_head(small).unwrap_err().to_string();
    assert!(e.contains("3-D") && e.contains("8 dimensions"), "{e}");
    // Vocabulary limit: words × dimensions above 2^28 weights.
    let words: Vec<String> = (1..=40).map(|i| "a".repeat(i)).collect();
    let vocab = Vocabulary::new(words, vec![1.0; 40]).unwrap();
    let e = TextHead::new(vocab, 1 << 23, vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("268435456"), "{e}");
    // Queries.
    for (q, want) in [
        ("", "has no word"),
        (" 42 !", "has no word"),
        (
            "zebra unicorn",
            "no word of the query is in the model's vocabulary",
        ),
    ] {
        let e = head.query(q).unwrap_err().to_string();
        assert!(
            e.contains(want) && e.contains(&format!("{q:?}")),
            "{q:?}: {e}"
        );
    }
    // A model without a head.
    let x = rows();
    let dir = tempfile::tempdir().unwrap();
    let bare = m.clone().without_text_head();
    let index = Index::build(
        dir.path(),
        &bare,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let e = index
        .snapshot()
        .search_text(&["red"], &SearchParams::new(3, SearchMode::Hamming))
        .unwrap_err();
    assert!(matches!(e, SearchError::NoTextHead), "{e}");
    // Exact modes and empty query lists.
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
    assert!(
        snap.search_text(&[], &SearchParams::new(3, SearchMode::Hamming))
            .is_err()
    );
    let e = snap
        .search_text(&["red"], &SearchParams::new(3, SearchMode::ExactDot))
        .unwrap_err()
        .to_string();
    assert!(e.contains("exact-ip"), "{e}");
}

/// A seeded pseudo-random number in [0, 1) (SplitMix64 of `i`), for generated sets.
fn unit(i: u64) -> f32 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
}

/// A standard normal (Box-Muller of two `unit`s).
fn normal(i: u64) -> f32 {
    let (a, b) = (unit(2 * i).max(1e-7), unit(2 * i + 1));
    (-2.0 * a.ln()).sqrt() * (std::f32::consts::TAU * b).cos()
}

/// `words` words, each with a random direction in 16-D; each row carries one word (row % words)
/// and lies at its direction plus unit noise. A word's row of W sees one update per about
/// `words` iterations, so with 1,000 words the validation AvgP keeps rising long after 100,000
/// iterations (the former fixed default).
fn slow_set(words: usize, rows: usize) -> (Array2<f32>, Vec<Vec<String>>) {
    let dirs = Array2::from_shape_fn((words, D), |(w, j)| normal((w * D + j) as u64));
    let x = Array2::from_shape_fn((rows, D), |(r, j)| {
        0.5 * dirs[(r % words, j)] + normal((1 << 32) + (r * D + j) as u64)
    });
    // Word names of letters only: "wab" for word 1 ("w" + base-26 digits).
    let name = |mut w: usize| {
        let mut s = String::from("w");
        loop {
            s.push(char::from(b'a' + (w % 26) as u8));
            w /= 26;
            if w == 0 {
                return s;
            }
        }
    };
    let caps = (0..rows).map(|r| vec![name(r % words)]).collect();
    (x, caps)
}

/// The iterations `PamirOptions` defaulted to before the patience rule: a fixed count.
const FORMER_FIXED_CAP: usize = 100_000;

#[test]
fn patience_trains_past_the_former_fixed_cap_and_reports_why_it_stopped() {
    let (x, caps) = slow_set(1000, 40_000);
    let opts = PamirOptions {
        c_grid: vec![0.001],
        validation: 0.2,
        ..PamirOptions::default()
    };
    let (_, report) = train_pamir(x.view(), &caps, &opts).unwrap();
    let t = &report.trials[0];
    let curve: Vec<(usize, f64)> = t
        .checkpoints
        .iter()
        .map(|k| (k.iterations, k.avgp))
        .collect();
    // The validation AvgP still rose by more than the tolerance after the former cap, so the
    // best checkpoint lies past it, and the run stopped by patience well below the cap.
    let before = curve
        .iter()
        .filter(|c| c.0 <= FORMER_FIXED_CAP)
        .map(|c| c.1)
        .fold(0.0, f64::max);
    assert!(t.iterations > FORMER_FIXED_CAP, "{curve:?}");
    assert!(t.validation.avgp > before * 1.02, "{before} -> {curve:?}");
    assert_eq!(t.stopped, PamirStop::Patience);
    assert_eq!(report.stopped, Some(PamirStop::Patience));
    assert!(t.iterations < t.iterations_run && t.iterations_run < opts.iterations);
    assert_eq!(curve.last().unwrap().0, t.iterations_run);
    // Stopped because the last `patience` checkpoints gained less than 0.5 % over the best
    // before them.
    let k = curve.len() - opts.patience;
    let level = curve[..k].iter().map(|c| c.1).fold(0.0, f64::max);
    assert!(curve[k..].iter().all(|c| c.1 <= level * 1.005), "{curve:?}");
    // The final run on all rows visits each captioned row as often as the chosen run did on
    // the training split (a fifth of the rows held out).
    let ratio = report.iterations as f64 / t.iterations as f64;
    assert!((ratio - 1.25).abs() < 0.01, "{ratio}");
    assert_eq!(report.selected_iterations, t.iterations);
    assert!(report.cap_note().is_none());

    // The same run under a cap it cannot converge by says so.
    let capped = PamirOptions {
        iterations: 20_000,
        ..opts
    };
    let (_, r) = train_pamir(x.view(), &caps, &capped).unwrap();
    assert_eq!(r.trials[0].stopped, PamirStop::Cap);
    assert_eq!(r.trials[0].iterations_run, 20_000);
    let note = r.cap_note().unwrap();
    assert!(
        note.contains("still rising") && note.contains("20000"),
        "{note}"
    );
}

/// Items of five near-identical rows sharing one random word: the word says nothing a new
/// item's features could show, so an honest validation AvgP is near chance, while a split
/// with an item's duplicates on both sides lets the head match duplicates.
#[test]
fn grouped_validation_keeps_items_on_one_side_and_does_not_reward_duplicates() {
    // 100 items in 64-D: few enough that a linear score per word can single out its items.
    let (items, copies, words, dim) = (100, 5, 10, 64);
    let n = items * copies;
    let item = |r: usize| r / copies;
    let x = Array2::from_shape_fn((n, dim), |(r, j)| {
        normal((item(r) * dim + j) as u64) + 0.05 * normal((1 << 33) + (r * dim + j) as u64)
    });
    let word = |i: usize| {
        let w = (unit((1 << 34) + i as u64) * words as f32) as usize;
        format!("w{}", char::from(b'a' + w as u8))
    };
    let caps: Vec<Vec<String>> = (0..n).map(|r| vec![word(item(r))]).collect();
    let groups: Vec<i64> = (0..n).map(|r| item(r) as i64).collect();
    let base = PamirOptions {
        c_grid: vec![0.1],
        iterations: 200_000,
        ..PamirOptions::default()
    };
    let (_, plain) = train_pamir(x.view(), &caps, &base).unwrap();
    let grouped_opts = PamirOptions {
        validation_groups: Some(groups.clone()),
        ..base.clone()
    };
    let (_, grouped) = train_pamir(x.view(), &caps, &grouped_opts).unwrap();
    assert_eq!(plain.validation_groups, None);
    assert_eq!(grouped.validation_groups, Some(items));
    // Whole items held out: a multiple of the copies, about a fifth of the rows.
    assert_eq!(grouped.validation_rows % copies, 0);
    assert!((grouped.validation_rows as f64 / n as f64 - 0.2).abs() < 0.01);
    let (p, g) = (
        plain.trials[0].validation.avgp,
        grouped.trials[0].validation.avgp,
    );
    assert!(p > 0.5 && g < 0.25 && p > 2.0 * g, "plain {p}, grouped {g}");
    // One group id per row, or a typed error naming the argument.
    let bad = PamirOptions {
        validation_groups: Some(groups[1..].to_vec()),
        ..base
    };
    let e = train_pamir(x.view(), &caps, &bad).unwrap_err().to_string();
    assert!(e.contains("validation_groups") && e.contains("499"), "{e}");
}
