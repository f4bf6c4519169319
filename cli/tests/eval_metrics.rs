//! Ranked-retrieval, hash-lookup and classification metrics on tiny examples computed by hand
//! (the arithmetic is in the comments), plus property tests.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb_cli::eval::{
    EvalError, GroundTruth, Order, class_label_map, class_label_precision_at_k, hamming_ball,
    hamming_balls, mean_average_precision, mean_precision_at_k, rank_by_score, recall_at_r,
    top_k_by_score, top_k_error,
};
use ndarray::array;
use proptest::prelude::*;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

/// Six database items; query 0 has relevant {0, 2, 5}, query 1 has {1}, query 2 has none.
fn sets() -> GroundTruth {
    GroundTruth::from_neighbour_sets(vec![vec![5, 0, 2], vec![1], vec![]], 6).unwrap()
}

#[test]
fn average_precision_by_hand() {
    let gt = sets();
    // Ranking 2 1 0 3 5 4: relevant at ranks 1, 3, 5 → precisions 1/1, 2/3, 3/5;
    // AP = (1 + 2/3 + 3/5) / 3 = (15 + 10 + 9) / 45 = 34/45.
    let r0 = [2u32, 1, 0, 3, 5, 4];
    close(gt.average_precision(0, &r0).unwrap().unwrap(), 34.0 / 45.0);
    // A truncated ranking 2 1 0: hits at 1 and 3, but R = 3 → (1 + 2/3) / 3 = 5/9.
    close(
        gt.average_precision(0, &r0[..3]).unwrap().unwrap(),
        5.0 / 9.0,
    );
    // Query 1: relevant item at rank 2 → AP = 1/2.
    let r1 = [0u32, 1, 2, 3, 4, 5];
    close(gt.average_precision(1, &r1).unwrap().unwrap(), 0.5);
    // Query 2 has no relevant item: AP undefined.
    assert_eq!(gt.average_precision(2, &r1).unwrap(), None);
    // mAP over queries 0 and 1, query 2 skipped: (34/45 + 1/2) / 2 = 113/180.
    let m = mean_average_precision(&gt, &[r0.to_vec(), r1.to_vec(), r1.to_vec()]).unwrap();
    close(m.mean, 113.0 / 180.0);
    assert_eq!((m.evaluated, m.skipped), (2, 1));
}

#[test]
fn precision_at_k_by_hand() {
    let gt = sets();
    let r0 = [2u32, 1, 0, 3, 5, 4];
    // Top 2 = {2, 1}: one relevant → 1/2.  Top 5 = {2, 1, 0, 3, 5}: three → 3/5.
    close(gt.precision_at_k(0, &r0, 2).unwrap(), 0.5);
    close(gt.precision_at_k(0, &r0, 5).unwrap(), 0.6);
    // Mean over all three queries at k = 1 (query 2 counts with precision 0):
    // q0 top {2} → 1, q1 top {0} → 0, q2 → 0 → 1/3.
    let r1 = vec![0u32, 1, 2, 3, 4, 5];
    let m = mean_precision_at_k(&gt, &[r0.to_vec(), r1.clone(), r1], 1).unwrap();
    close(m.mean, 1.0 / 3.0);
    assert_eq!((m.evaluated, m.skipped), (3, 0));
}

#[test]
fn class_label_metrics_by_hand() {
    // Database labels 0 1 0 2 1 0; query labels 0 and 1.
    let db = [0i64, 1, 0, 2, 1, 0];
    let q = [0i64, 1];
    // q0 relevant {0, 2, 5}, ranking 2 1 0 3 5 4 → 34/45 (as above).
    // q1 relevant {1, 4}, ranking 4 0 1 2 3 5 → hits at ranks 1 and 3 → (1 + 2/3) / 2 = 5/6.
    let rankings = vec![vec![2u32, 1, 0, 3, 5, 4], vec![4, 0, 1, 2, 3, 5]];
    let m = class_label_map(&db, &q, &rankings).unwrap();
    close(m.mean, (34.0 / 45.0 + 5.0 / 6.0) / 2.0);
    // P@2: q0 {2, 1} → 1/2; q1 {4, 0} → 1/2.  P@3: q0 {2, 1, 0} → 2/3; q1 {4, 0, 1} → 2/3.
    close(
        class_label_precision_at_k(&db, &q, &rankings, 2)
            .unwrap()
            .mean,
        0.5,
    );
    close(
        class_label_precision_at_k(&db, &q, &rankings, 3)
            .unwrap()
            .mean,
        2.0 / 3.0,
    );
    // A query label absent from the database has no relevant item.
    let m = class_label_map(&db, &[0, 7], &rankings).unwrap();
    close(m.mean, 34.0 / 45.0);
    assert_eq!(m.skipped, 1);
    let gt = GroundTruth::from_labels(db.to_vec(), q.to_vec()).unwrap();
    assert_eq!(gt.relevant_items(1).unwrap(), vec![1, 4]);
    assert_eq!(gt.relevant_count(0).unwrap(), 3);
}

#[test]
fn recall_at_r_by_hand() {
    // True 1-NN is item 1 for all three queries.
    // R = 1: only query 2 ranks it first → 1/3.  R = 2: queries 0 and 2 → 2/3.  R = 3: all.
    let rankings = vec![vec![3u32, 1, 2], vec![0, 2, 1], vec![1, 0, 2]];
    let nn = [1u32, 1, 1];
    close(recall_at_r(&rankings, &nn, 1).unwrap(), 1.0 / 3.0);
    close(recall_at_r(&rankings, &nn, 2).unwrap(), 2.0 / 3.0);
    close(recall_at_r(&rankings, &nn, 3).unwrap(), 1.0);
    assert!(matches!(
        recall_at_r(&rankings, &nn, 4),
        Err(EvalError::TooShort { required: 4, .. })
    ));
    assert!(matches!(
        recall_at_r(&rankings, &nn[..2], 1),
        Err(EvalError::LengthMismatch { .. })
    ));
    assert!(recall_at_r(&rankings, &nn, 0).is_err());
}

#[test]
fn hash_lookup_by_hand() {
    let gt = sets();
    // q0 retrieves {0, 1}: 1 hit of 2 → precision 1/2, recall 1/3.
    // q1 retrieves nothing: precision 0 (empty lookup counts as 0), recall 0.
    // q2 retrieves {3}: precision 0; no relevant item, so it is left out of the recall.
    // precision = (1/2 + 0 + 0) / 3 = 1/6;  recall = (1/3 + 0) / 2 = 1/6;
    // pooled precision = 1 hit / 3 retrieved;  pooled recall = 1 hit / 4 relevant.
    let s = gt.lookup_scores(&[vec![0u32, 1], vec![], vec![3]]).unwrap();
    close(s.precision, 1.0 / 6.0);
    close(s.recall, 1.0 / 6.0);
    close(s.pooled_precision, 1.0 / 3.0);
    close(s.pooled_recall, 0.25);
    assert_eq!((s.empty_lookups, s.no_relevant), (1, 1));
    close(s.mean_retrieved, 1.0);
    assert!(matches!(
        gt.lookup_scores(&[vec![0u32, 0], vec![], vec![]]),
        Err(EvalError::DuplicateIndex {
            query: 0,
            index: 0,
            ..
        })
    ));
    assert!(matches!(
        gt.lookup_scores(&[vec![0u32]]),
        Err(EvalError::LengthMismatch { .. })
    ));
}

#[test]
fn hamming_ball_by_hand() {
    // One-byte codes 00000000, 00000001, 00000011, 11111111; query 00000000.
    let codes = array![[0b0000_0000u8], [0b0000_0001], [0b0000_0011], [0b1111_1111]];
    assert_eq!(hamming_ball(codes.view(), &[0], 0).unwrap(), vec![0]);
    assert_eq!(hamming_ball(codes.view(), &[0], 1).unwrap(), vec![0, 1]);
    assert_eq!(hamming_ball(codes.view(), &[0], 2).unwrap(), vec![0, 1, 2]);
    assert_eq!(hamming_ball(codes.view(), &[0xff], 1).unwrap(), vec![3]);
    // Two-byte codes: distance counts bits across both bytes.
    let codes = array![[0x01u8, 0x01], [0x00, 0x00], [0x03, 0x00]];
    assert_eq!(
        hamming_ball(codes.view(), &[0x00, 0x01], 1).unwrap(),
        vec![0, 1]
    );
    assert_eq!(
        hamming_balls(codes.view(), array![[0x00u8, 0x01], [0x03, 0x00]].view(), 1).unwrap(),
        vec![vec![0, 1], vec![2]]
    );
    assert!(matches!(
        hamming_ball(codes.view(), &[0], 1),
        Err(EvalError::DimensionMismatch { .. })
    ));
}

#[test]
fn top_k_error_by_hand() {
    // Truth 1 1 1 5. Top-1 predictions 1 2 3 0 → only sample 0 right → error 3/4.
    // Top-2 {1,2} {2,1} {3,1} {0,1} → samples 0-2 right → error 1/4.
    let preds = vec![
        vec![1i64, 2, 3],
        vec![2, 1, 3],
        vec![3, 1, 2],
        vec![0, 1, 2],
    ];
    let truth = [1i64, 1, 1, 5];
    close(top_k_error(&preds, &truth, 1).unwrap(), 0.75);
    close(top_k_error(&preds, &truth, 2).unwrap(), 0.25);
    close(top_k_error(&preds, &truth, 3).unwrap(), 0.25);
    assert!(matches!(
        top_k_error(&preds, &truth, 4),
        Err(EvalError::TooShort { .. })
    ));
    assert!(top_k_error(&preds, &truth[..3], 1).is_err());
    assert!(top_k_error(&preds, &truth, 0).is_err());
}

#[test]
fn invalid_rankings_are_errors() {
    let gt = sets();
    assert!(matches!(
        gt.average_precision(0, &[0, 7]),
        Err(EvalError::IndexOutOfRange { index: 7, .. })
    ));
    assert!(matches!(
        gt.average_precision(0, &[1, 1]),
        Err(EvalError::DuplicateIndex { index: 1, .. })
    ));
    assert!(gt.average_precision(3, &[0]).is_err());
    assert!(matches!(
        gt.precision_at_k(0, &[0, 1], 3),
        Err(EvalError::TooShort {
            len: 2,
            required: 3,
            ..
        })
    ));
    assert!(gt.precision_at_k(0, &[0, 1], 0).is_err());
    assert!(matches!(
        mean_average_precision(&gt, &[vec![0u32]]),
        Err(EvalError::LengthMismatch {
            expected: 3,
            found: 1,
            ..
        })
    ));
    let none = GroundTruth::from_neighbour_sets(vec![vec![], vec![]], 4).unwrap();
    assert!(matches!(
        mean_average_precision(&none, &[vec![0u32], vec![1]]),
        Err(EvalError::NoRelevant { .. })
    ));
    assert!(GroundTruth::from_neighbour_sets(vec![vec![4]], 4).is_err());
    assert!(GroundTruth::from_labels(vec![], vec![1]).is_err());
}

#[test]
fn rankings_from_scores_break_ties_by_index() {
    // Hamming distances 2 0 2 1 0: ascending → 1 4 3 0 2.
    let d = [2u32, 0, 2, 1, 0];
    assert_eq!(
        rank_by_score(&d, Order::Ascending).unwrap(),
        vec![1, 4, 3, 0, 2]
    );
    // Similarities, best (largest) first, ties by index: 0.5 0.9 0.5 → 1 0 2.
    assert_eq!(
        rank_by_score(&[0.5f32, 0.9, 0.5], Order::Descending).unwrap(),
        vec![1, 0, 2]
    );
    assert!(rank_by_score(&[0.5f32, f32::NAN], Order::Descending).is_err());
}

/// Random relevance over `n` items for one query and a random permutation ranking.
fn relevance_and_ranking() -> impl Strategy<Value = (usize, Vec<u32>, Vec<u32>)> {
    (1usize..60).prop_flat_map(|n| {
        (
            Just(n),
            proptest::sample::subsequence((0..n as u32).collect::<Vec<_>>(), 0..=n),
            Just((0..n as u32).collect::<Vec<_>>()).prop_shuffle(),
        )
    })
}

proptest! {
    #[test]
    fn ap_is_a_probability_and_perfect_ranking_scores_one((n, rel, ranking) in relevance_and_ranking()) {
        let gt = GroundTruth::from_neighbour_sets(vec![rel.clone()], n).unwrap();
        match gt.average_precision(0, &ranking).unwrap() {
            None => prop_assert!(rel.is_empty()),
            Some(ap) => {
                prop_assert!((0.0..=1.0).contains(&ap));
                // Relevant items first gives AP = 1, relevant items last gives the minimum
                // (1/R) Σ_j j / (n − R + j), and every ranking lies in between.
                let mut perfect = rel.clone();
                perfect.extend((0..n as u32).filter(|i| !rel.contains(i)));
                prop_assert_eq!(gt.average_precision(0, &perfect).unwrap(), Some(1.0));
                let mut worst: Vec<u32> = (0..n as u32).filter(|i| !rel.contains(i)).collect();
                worst.extend(&rel);
                let r = rel.len() as f64;
                let min: f64 = (1..=rel.len()).map(|j| j as f64 / (n - rel.len() + j) as f64).sum::<f64>() / r;
                let w = gt.average_precision(0, &worst).unwrap().unwrap();
                prop_assert!((w - min).abs() < 1e-12);
                prop_assert!(ap >= w - 1e-12);
                // A prefix of the ranking never scores higher than the whole ranking.
                let half = gt.average_precision(0, &ranking[..n / 2]).unwrap().unwrap();
                prop_assert!(half <= ap + 1e-12);
                // Precision over the whole database is R / n.
                let p = gt.precision_at_k(0, &ranking, n).unwrap();
                prop_assert!((p - r / n as f64).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn lookup_scores_are_probabilities((n, rel, ranking) in relevance_and_ranking(), cut in 0usize..60) {
        let gt = GroundTruth::from_neighbour_sets(vec![rel.clone()], n).unwrap();
        let retrieved = &ranking[..cut.min(n)];
        let s = gt.lookup_scores(&[retrieved]).unwrap();
        for v in [s.precision, s.recall, s.pooled_precision, s.pooled_recall] {
            prop_assert!((0.0..=1.0).contains(&v));
        }
        // Retrieving everything recalls every relevant item.
        let all = gt.lookup_scores(&[&ranking[..]]).unwrap();
        if !rel.is_empty() {
            prop_assert_eq!(all.recall, 1.0);
        }
        prop_assert!((all.precision - rel.len() as f64 / n as f64).abs() < 1e-12);
    }

    #[test]
    fn top_k_is_the_prefix_of_the_full_ranking(scores in proptest::collection::vec(0u32..5, 1..80), k in 1usize..80) {
        let full = rank_by_score(&scores, Order::Ascending).unwrap();
        // Sorted by (score, index).
        for w in full.windows(2) {
            let (a, b) = (w[0] as usize, w[1] as usize);
            prop_assert!((scores[a], a) < (scores[b], b));
        }
        if k <= scores.len() {
            prop_assert_eq!(top_k_by_score(&scores, Order::Ascending, k).unwrap(), full[..k].to_vec());
        }
    }
}
