//! Ranking measures of PAMIR §5 (Baeza-Yates & Ribeiro-Neto 1999): for one query, a ranking of
//! documents (best first) and its set of relevant documents.
//!
//! - **AvgP**: the mean over relevant documents of the precision at the rank of each.
//! - **BEP** (break-even point, R-precision): the precision at rank |R(q)|.
//! - **P10**: the precision at rank 10 (a ranking shorter than 10 counts as 10 positions).
//!
//! All are 0 for a query with no relevant document (callers leave such queries out).

/// The ranks (0-based) of `ranking` best first; `relevant(doc)` says if a document is
/// relevant; `n_relevant` = |R(q)| (relevant documents missing from the ranking count as
/// never retrieved).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct RankingMetrics {
    /// Average precision.
    pub avgp: f64,
    /// Break-even point (R-precision).
    pub bep: f64,
    /// Precision at 10.
    pub p10: f64,
}

impl RankingMetrics {
    /// The measures of one ranking.
    pub fn of<T>(ranking: &[T], relevant: impl Fn(&T) -> bool, n_relevant: usize) -> Self {
        if n_relevant == 0 {
            return RankingMetrics::default();
        }
        let (mut hits, mut sum_p, mut at_r, mut at_10) = (0usize, 0.0f64, 0usize, 0usize);
        for (i, d) in ranking.iter().enumerate() {
            if relevant(d) {
                hits += 1;
                sum_p += hits as f64 / (i + 1) as f64;
            }
            if i + 1 == n_relevant {
                at_r = hits;
            }
            if i + 1 == 10 {
                at_10 = hits;
            }
        }
        if ranking.len() < n_relevant {
            at_r = hits;
        }
        if ranking.len() < 10 {
            at_10 = hits;
        }
        RankingMetrics {
            avgp: sum_p / n_relevant as f64,
            bep: at_r as f64 / n_relevant as f64,
            p10: at_10 as f64 / 10.0,
        }
    }

    /// The mean of each measure over `all` (zeros when empty).
    pub fn mean(all: &[RankingMetrics]) -> RankingMetrics {
        let n = all.len().max(1) as f64;
        RankingMetrics {
            avgp: all.iter().map(|m| m.avgp).sum::<f64>() / n,
            bep: all.iter().map(|m| m.bep).sum::<f64>() / n,
            p10: all.iter().map(|m| m.p10).sum::<f64>() / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_rankings() {
        // Relevant at ranks 1, 3 and 6 of 10; |R| = 4 (one never retrieved).
        let ranking: Vec<u32> = (0..10).collect();
        let rel = |d: &u32| [0, 2, 5].contains(d);
        let m = RankingMetrics::of(&ranking, rel, 4);
        let avgp = (1.0 + 2.0 / 3.0 + 3.0 / 6.0) / 4.0;
        assert!((m.avgp - avgp).abs() < 1e-12);
        assert_eq!(m.bep, 2.0 / 4.0);
        assert_eq!(m.p10, 0.3);
        let perfect = RankingMetrics::of(&ranking, |d| *d < 2, 2);
        assert_eq!((perfect.avgp, perfect.bep, perfect.p10), (1.0, 1.0, 0.2));
        assert_eq!(
            RankingMetrics::of(&ranking, rel, 0),
            RankingMetrics::default()
        );
    }
}
