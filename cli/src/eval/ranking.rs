//! Turning scores into rankings with a documented, deterministic tie rule: equal scores are
//! ordered by the smaller index. Hamming distances produce many ties, and AP or precision@k
//! depend on how they are broken, so every caller breaks them the same way.

use crate::error::{EvalError, EvalResult as Result};

/// Whether the best item has the smallest score (distances) or the largest (similarities).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Ascending,
    Descending,
}

fn check_scores<S: PartialOrd + Copy>(scores: &[S]) -> Result<()> {
    if scores.len() > u32::MAX as usize {
        return Err(EvalError::TooLarge {
            what: "scores",
            rows: scores.len(),
        });
    }
    if let Some(i) = scores.iter().position(|s| s.partial_cmp(s).is_none()) {
        return Err(EvalError::InvalidArgument {
            argument: "scores",
            detail: format!("score {i} is NaN and cannot be ranked"),
        });
    }
    Ok(())
}

fn compare<S: PartialOrd + Copy>(scores: &[S], order: Order, a: u32, b: u32) -> std::cmp::Ordering {
    let (sa, sb) = (scores[a as usize], scores[b as usize]);
    let by_score = match order {
        Order::Ascending => sa.partial_cmp(&sb),
        Order::Descending => sb.partial_cmp(&sa),
    };
    // NaN was refused by `check_scores`, so the comparison is always defined.
    by_score
        .unwrap_or(std::cmp::Ordering::Equal)
        .then(a.cmp(&b))
}

/// Indices of `scores` sorted best first by (score, index): the full ranking.
pub fn rank_by_score<S: PartialOrd + Copy>(scores: &[S], order: Order) -> Result<Vec<u32>> {
    check_scores(scores)?;
    let mut idx: Vec<u32> = (0..scores.len() as u32).collect();
    idx.sort_unstable_by(|&a, &b| compare(scores, order, a, b));
    Ok(idx)
}

/// The best `k` indices by (score, index), best first — the same prefix as
/// [`rank_by_score`] in O(n + k log k).
pub fn top_k_by_score<S: PartialOrd + Copy>(
    scores: &[S],
    order: Order,
    k: usize,
) -> Result<Vec<u32>> {
    check_scores(scores)?;
    if k == 0 || k > scores.len() {
        return Err(EvalError::InvalidArgument {
            argument: "k",
            detail: format!("k = {k}, must be between 1 and {}", scores.len()),
        });
    }
    let mut idx: Vec<u32> = (0..scores.len() as u32).collect();
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, |&a, &b| compare(scores, order, a, b));
        idx.truncate(k);
    }
    idx.sort_unstable_by(|&a, &b| compare(scores, order, a, b));
    Ok(idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_smaller_index() {
        let hamming = [3u32, 1, 3, 0, 1];
        assert_eq!(
            rank_by_score(&hamming, Order::Ascending).unwrap(),
            vec![3, 1, 4, 0, 2]
        );
        assert_eq!(
            rank_by_score(&hamming, Order::Descending).unwrap(),
            vec![0, 2, 1, 4, 3]
        );
        assert_eq!(
            top_k_by_score(&hamming, Order::Ascending, 3).unwrap(),
            vec![3, 1, 4]
        );
        assert_eq!(
            top_k_by_score(&hamming, Order::Ascending, 5).unwrap(),
            vec![3, 1, 4, 0, 2]
        );
    }

    #[test]
    fn refuses_nan_and_bad_k() {
        assert!(rank_by_score(&[1.0f32, f32::NAN], Order::Ascending).is_err());
        assert!(top_k_by_score(&[1.0f32, 2.0], Order::Ascending, 0).is_err());
        assert!(top_k_by_score(&[1.0f32, 2.0], Order::Ascending, 3).is_err());
    }
}
