//! Which database items are relevant to which query, under the two protocols of ITQ (Gong et
//! al., TPAMI 2013, §4.2): Euclidean neighbours within a radius (sets of database indices per
//! query), or same class label.

use std::collections::HashMap;

use crate::error::{EvalError, EvalResult as Result};

#[derive(Debug, Clone, PartialEq)]
enum Relevance {
    /// Sorted, duplicate-free database indices per query.
    Sets(Vec<Vec<u32>>),
    /// Relevant iff same label; `counts` is the number of database items per label.
    Labels {
        database: Vec<i64>,
        queries: Vec<i64>,
        counts: HashMap<i64, usize>,
    },
}

/// Relevance judgements for a set of queries against a database of `n_database` items.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruth {
    relevance: Relevance,
    n_database: usize,
}

impl GroundTruth {
    /// Relevance given as a list of relevant database indices per query (any order; duplicates
    /// are merged). Indices must be below `n_database`.
    pub fn from_neighbour_sets(mut sets: Vec<Vec<u32>>, n_database: usize) -> Result<Self> {
        if sets.is_empty() {
            return Err(EvalError::Empty {
                what: "neighbour sets",
            });
        }
        if n_database == 0 {
            return Err(EvalError::Empty { what: "database" });
        }
        for (q, set) in sets.iter_mut().enumerate() {
            if let Some(&bad) = set.iter().find(|&&i| i as usize >= n_database) {
                return Err(EvalError::IndexOutOfRange {
                    what: "neighbour sets",
                    query: q,
                    index: u64::from(bad),
                    n_database,
                });
            }
            set.sort_unstable();
            set.dedup();
        }
        Ok(GroundTruth {
            relevance: Relevance::Sets(sets),
            n_database,
        })
    }

    /// Relevance by class label: database item i is relevant to query q iff their labels are
    /// equal (ITQ §4.2, the "class label ground truth").
    pub fn from_labels(database_labels: Vec<i64>, query_labels: Vec<i64>) -> Result<Self> {
        if database_labels.is_empty() {
            return Err(EvalError::Empty {
                what: "database labels",
            });
        }
        if query_labels.is_empty() {
            return Err(EvalError::Empty {
                what: "query labels",
            });
        }
        let mut counts = HashMap::new();
        for &l in &database_labels {
            *counts.entry(l).or_insert(0usize) += 1;
        }
        Ok(GroundTruth {
            n_database: database_labels.len(),
            relevance: Relevance::Labels {
                database: database_labels,
                queries: query_labels,
                counts,
            },
        })
    }

    pub fn n_queries(&self) -> usize {
        match &self.relevance {
            Relevance::Sets(s) => s.len(),
            Relevance::Labels { queries, .. } => queries.len(),
        }
    }

    pub fn n_database(&self) -> usize {
        self.n_database
    }

    /// Number of relevant database items for query `q` (< `n_queries()`).
    pub fn relevant_count(&self, q: usize) -> Result<usize> {
        self.check_query(q)?;
        Ok(self.count_unchecked(q))
    }

    /// The relevant database indices of query `q`, in increasing order.
    pub fn relevant_items(&self, q: usize) -> Result<Vec<u32>> {
        self.check_query(q)?;
        Ok(match &self.relevance {
            Relevance::Sets(s) => s[q].clone(),
            Relevance::Labels {
                database, queries, ..
            } => (0..database.len() as u32)
                .filter(|&i| database[i as usize] == queries[q])
                .collect(),
        })
    }

    pub(crate) fn check_query(&self, q: usize) -> Result<()> {
        if q >= self.n_queries() {
            return Err(EvalError::InvalidArgument {
                argument: "query",
                detail: format!("query {q} out of range ({} queries)", self.n_queries()),
            });
        }
        Ok(())
    }

    /// Checks that `n` per-query lists were given, one per query.
    pub(crate) fn check_query_count(&self, what: &'static str, n: usize) -> Result<()> {
        if n != self.n_queries() {
            return Err(EvalError::LengthMismatch {
                what,
                expected: self.n_queries(),
                found: n,
            });
        }
        Ok(())
    }

    pub(crate) fn count_unchecked(&self, q: usize) -> usize {
        match &self.relevance {
            Relevance::Sets(s) => s[q].len(),
            Relevance::Labels {
                queries, counts, ..
            } => counts.get(&queries[q]).copied().unwrap_or(0),
        }
    }

    /// Relevance of database item `i` (< n_database) to query `q` (< n_queries).
    pub(crate) fn is_relevant_unchecked(&self, q: usize, i: u32) -> bool {
        match &self.relevance {
            Relevance::Sets(s) => s[q].binary_search(&i).is_ok(),
            Relevance::Labels {
                database, queries, ..
            } => database[i as usize] == queries[q],
        }
    }
}

/// Validates one query's list of database indices (a ranking or a retrieved set): every index
/// below `n_database` and none repeated.
pub(crate) fn check_index_list(
    what: &'static str,
    query: usize,
    list: &[u32],
    n_database: usize,
) -> Result<()> {
    let mut seen = vec![false; n_database];
    for &i in list {
        let slot = seen.get_mut(i as usize).ok_or(EvalError::IndexOutOfRange {
            what,
            query,
            index: u64::from(i),
            n_database,
        })?;
        if *slot {
            return Err(EvalError::DuplicateIndex {
                what,
                query,
                index: i,
            });
        }
        *slot = true;
    }
    Ok(())
}
