//! The search entry points, every `impl Snapshot` of the search room: k-NN search (with the
//! snapshot's stored vectors, or vectors kept elsewhere, for re-ranking), radius lookup, the
//! IVF probe sets and list coverage, NCM classification (Mensink et al., TPAMI 2013, eq. 1
//! in the bias form of eq. 9-11: the query rows projected with the snapshot's model and
//! scored against its class means, [`ClassMeans::classify`]), text search ([`super::text`])
//! and query by examples ([`super::examples`]). Each uses the snapshot's own model
//! ([`Snapshot::model`]) and hands its queries to the kind's file; none is called back by
//! them. To search an [`crate::storage::Index`], search its newest committed version:
//! `index.snapshot().search(…)`.

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::classes::{ClassError, ClassMeans, ClassRef, ClassScore};
use crate::format::CodeKind;
#[cfg(doc)]
use crate::model::Model;
use crate::model::TextQuery;
use crate::storage::Snapshot;

use super::error::{SearchError, invalid};
use super::examples::{
    CodeClassifier, ExampleClassifier, ExampleParams, ExampleSet, Negatives, check_examples,
    in_set, train_balanced,
};
use super::execute::{passing_rows, plan_counts, search_planned, search_rows, search_snapshot};
use super::filter::RowFilter;
use super::ivf_filter::{ListCounts, QueryPlan};
use super::list_scope::{ListCoverage, list_coverage};
use super::probe;
use super::query::{Hit, Queries, SearchParams};
use super::radius::radius_snapshot;
use super::vectors::{RowRef, SnapshotVectors, VectorSource};

/// The list id no row is filed under (`u32::MAX`: a row without a list), never a class.
const NO_LIST: u32 = u32::MAX;

impl Snapshot {
    /// The `params.k` best live rows of this snapshot for each query row (raw descriptors of
    /// the model's input dimension), best first, ties by smaller id. Re-ranking and the exact
    /// modes read the vectors stored in the index and fail with [`SearchError::NoVectors`]
    /// when some rows have none.
    pub fn search(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_snapshot(self, queries, params, None)
    }

    /// [`Snapshot::search`] reading the full vectors for re-ranking and the exact modes from
    /// `vectors` (kept outside the index, e.g. [`super::MemoryVectors`]) instead of the index.
    pub fn search_with_vectors(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
        vectors: &dyn VectorSource,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_snapshot(self, queries, params, Some(vectors))
    }

    /// The filtered IVF plan's counts for `queries` (docs/filtering.md, "IVF"): per query its
    /// lists in probe order — the `nprobe` nearest, then the others by centroid distance
    /// (Jégou et al., TPAMI 2011, §III-A) — with each list's live rows the filter passes and
    /// its live rows, from position `start[q]` on (`start` empty: from the first). `count`
    /// lists per query (fewer at the end of the order), or with `None` as many as this
    /// snapshot's own plan reads before deciding. `None` when a search with `params` does not
    /// run the plan (not a probed ADC search of an IVF model under a filter).
    ///
    /// With [`crate::ivf_probe_decision`] over counts summed across snapshots and
    /// [`Snapshot::search_ivf_planned`], a driver of a sharded index makes the decision one
    /// index holding every row makes, once per query, and has every shard follow it.
    pub fn ivf_list_counts(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
        start: &[usize],
        count: Option<usize>,
    ) -> Result<Option<Vec<ListCounts>>, SearchError> {
        plan_counts(self, queries, params, start, count)
    }

    /// The live rows `filter` passes: what the plans of a filtered probed search decide by
    /// ([`crate::ivf_filter_scans_passing`]; summed over the shards of a sharded index).
    pub fn passing_rows(&self, filter: &RowFilter) -> Result<u64, SearchError> {
        passing_rows(self, filter)
    }

    /// [`Snapshot::search`] of a probed search of an IVF model under a filter, following
    /// `plan` (one [`QueryPlan`] per query: the lists to scan, or the flat search over the
    /// passing rows) instead of this snapshot's own rules: by ADC the filtered IVF plan's scan,
    /// re-ranking and flat search over the lists a driver decided from every shard's counts;
    /// in an exact mode the exact scan of each query's lists, or of every passing row.
    pub fn search_ivf_planned(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
        plan: &[QueryPlan],
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_planned(self, queries, params, plan)
    }

    /// Every live row within Hamming `radius` (≤ 2) of each query's code, sorted by distance
    /// then id: a hash-table lookup for binary codes of at most 32 bits (ITQ §4.5). Builds the
    /// table on each call; keep a [`super::HammingTable`] to look up many batches.
    pub fn search_radius(
        &self,
        queries: ArrayView2<f32>,
        radius: u32,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        radius_snapshot(self, queries, radius, None)
    }

    /// [`Snapshot::search_radius`] over the rows `filter` passes only (the table holds only
    /// them, so the result is the unfiltered one without the rows the filter rejects).
    pub fn search_radius_filtered(
        &self,
        queries: ArrayView2<f32>,
        radius: u32,
        filter: &RowFilter,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        radius_snapshot(self, queries, radius, Some(filter))
    }

    /// The ids of the `nprobe` inverted lists a search with [`SearchParams::nprobe`] scans for
    /// each query (the classes of the nearest projected class means), ascending per query.
    pub fn probe_lists(
        &self,
        queries: ArrayView2<f32>,
        nprobe: usize,
    ) -> Result<Vec<Vec<u32>>, SearchError> {
        probe::probe_lists(self, queries, nprobe)
    }

    /// The list ids of `classes` for a list-restricted search ([`SearchParams::lists`]): the
    /// one place a front end's class names become list ids (the CLI's `--classes`, Python's
    /// `classes=`). A [`ClassRef::Name`] is a class name of this version's class table, or
    /// else a decimal class id; a [`ClassRef::Id`] an id. With a class table an id must be one
    /// of its classes; without one (rows filed under lists by label alone) classes are given
    /// by id, unchecked. A class that cannot be resolved is [`SearchError::InvalidArgument`]
    /// for `classes`, its detail starting with the class as given.
    pub fn class_ids(&self, classes: &[ClassRef]) -> Result<Vec<u32>, SearchError> {
        let table = self.classes();
        let known = |id: u32| table.is_none_or(|t| t.classes.iter().any(|c| c.id == id));
        classes
            .iter()
            .map(|class| {
                let (item, id) = match class {
                    ClassRef::Name(name) => {
                        if let Some(c) =
                            table.and_then(|t| t.classes.iter().find(|c| c.name == *name))
                        {
                            return Ok(c.id);
                        }
                        match name.parse::<u32>() {
                            Ok(id) if id != NO_LIST => (name.clone(), id),
                            _ => {
                                return Err(invalid(
                                    "classes",
                                    format!(
                                        "{name}: {}",
                                        if table.is_some() {
                                            "no class has this name (and it is not a class id)"
                                        } else {
                                            "the index has no class table, so classes are \
                                             given by id"
                                        }
                                    ),
                                ));
                            }
                        }
                    }
                    ClassRef::Id(id) => (id.to_string(), *id),
                };
                if id == NO_LIST || !known(id) {
                    return Err(invalid(
                        "classes",
                        format!("{item}: no class has this name or id"),
                    ));
                }
                Ok(id)
            })
            .collect()
    }

    /// How many live rows have a list id and how many have none (a list-restricted search
    /// scans the latter whatever lists it names; see [`super::list_coverage`]).
    pub fn list_coverage(&self) -> Result<ListCoverage, SearchError> {
        Ok(list_coverage(self)?)
    }

    /// The `top` best classes of each row of `x` (raw descriptors of the index's model input
    /// dimension) by NCM over this version's class table, best first, ties by smaller class
    /// id. The projected class means are built on the first call and kept
    /// ([`Snapshot::class_means`]).
    pub fn classify(
        &self,
        x: ArrayView2<f32>,
        top: usize,
    ) -> Result<Vec<Vec<ClassScore>>, ClassError> {
        let means: &ClassMeans = self.class_means()?;
        means.classify(self.model()?, x, top)
    }

    /// The `params.k` best live rows for each text query (see [`crate::model::TextHead`]), best
    /// first by the text score `uᵀp` (larger is better), ties by smaller id. The index's model
    /// must have a text head ([`SearchError::NoTextHead`]); a query with no word the head
    /// knows is refused naming it. `params.mode` must apply to the codes and not be exact.
    pub fn search_text(
        &self,
        queries: &[&str],
        params: &SearchParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        let prepared = self.text_queries(queries)?;
        self.search_text_prepared(&prepared, params, None)
    }

    /// [`Snapshot::search_text`] reading the vectors for re-ranking from `vectors`.
    pub fn search_text_with_vectors(
        &self,
        queries: &[&str],
        params: &SearchParams,
        vectors: &dyn VectorSource,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        let prepared = self.text_queries(queries)?;
        self.search_text_prepared(&prepared, params, Some(vectors))
    }

    /// Each query through the model's text head: its tf-idf-norm vector (with the words it
    /// ignored, [`crate::model::TextVector::unknown`]) and `u`. Errors as
    /// [`Snapshot::search_text`].
    pub fn text_queries(&self, queries: &[&str]) -> Result<Vec<TextQuery>, SearchError> {
        let head = self.model()?.text_head().ok_or(SearchError::NoTextHead)?;
        if queries.is_empty() {
            return Err(invalid("queries", "no text query"));
        }
        Ok(queries
            .iter()
            .map(|q| head.query(q))
            .collect::<Result<_, _>>()?)
    }

    /// [`Snapshot::search_text`] for queries already made by [`Snapshot::text_queries`].
    pub fn search_text_prepared(
        &self,
        queries: &[TextQuery],
        params: &SearchParams,
        vectors: Option<&dyn VectorSource>,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        let model = self.model()?;
        let d = model.project_dim();
        if queries.is_empty() {
            return Err(invalid("queries", "no text query"));
        }
        let mut flat = Vec::with_capacity(queries.len() * d);
        for q in queries {
            if q.u.len() != d {
                return Err(invalid(
                    "queries",
                    format!(
                        "{:?}: u has {} values, the model projects to {d}",
                        q.text,
                        q.u.len()
                    ),
                ));
            }
            flat.extend_from_slice(&q.u);
        }
        let u = Array2::from_shape_vec((queries.len(), d), flat).map_err(|e| {
            crate::model::ModelError::Shape {
                what: "text queries".into(),
                source: e,
            }
        })?;
        search_rows(self, Queries::Text(u.view()), params, vectors)
    }

    /// The `params.search.k` live rows the SVM trained on `positives` against `negatives`
    /// scores highest (see the module doc), best first, ties by smaller id; scores are
    /// `b + wᵀ decode(h)`. Errors name the argument: `examples` / `negatives` of the wrong
    /// width, non-finite or empty, more sampled negatives than live rows, a mode that is
    /// exact or does not apply to the codes, then the search's errors.
    pub fn search_examples(
        &self,
        positives: ArrayView2<f32>,
        negatives: Negatives<'_>,
        params: &ExampleParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let c = self.train_examples(positives, negatives, params)?;
        self.search_trained(&c, &params.search)
    }

    /// Several queries by examples in one call, for evaluation and serving: result `i` is
    /// what [`Snapshot::search_examples`] returns for `sets[i]` with the same `params` (the
    /// same seed for every set, as separate calls with that seed). The SVMs train in
    /// parallel, then each set is scanned. Every set is checked and trained before any scan;
    /// an error names the set (`example set i: …`).
    pub fn search_examples_batch(
        &self,
        sets: &[ExampleSet<'_>],
        params: &ExampleParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        use rayon::prelude::*;
        let trained: Vec<ExampleClassifier> = sets
            .par_iter()
            .enumerate()
            .map(|(i, set)| {
                self.train_examples(set.positives, set.negatives, params)
                    .map_err(|e| in_set(i, e))
            })
            .collect::<Result<_, _>>()?;
        trained
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.search_trained(c, &params.search)
                    .map_err(|e| in_set(i, e))
            })
            .collect()
    }

    /// The search of [`Snapshot::search_examples`] with classifiers already trained by
    /// [`Snapshot::train_examples`] (with the same `rerank` setting).
    pub fn search_trained(
        &self,
        c: &ExampleClassifier,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let binary = self.model()?.code_kind() == CodeKind::Binary;
        if params.rerank.is_some() && binary && c.projected.is_none() {
            return Err(invalid(
                "rerank",
                "these classifiers were trained without re-ranking (train with rerank set)",
            ));
        }
        let rerank = c.projected.as_ref().unwrap_or(&c.codes);
        self.scan_linear(&c.codes, Some(rerank), params)
    }

    /// The classifiers [`Snapshot::search_examples`] trains, without searching.
    pub fn train_examples(
        &self,
        positives: ArrayView2<f32>,
        negatives: Negatives<'_>,
        params: &ExampleParams,
    ) -> Result<ExampleClassifier, SearchError> {
        let model = self.model()?;
        check_examples(model, "examples", positives)?;
        let rerank_bits = params.search.rerank.is_some() && model.code_kind() == CodeKind::Binary;
        let (neg_codes, neg_vectors) = match negatives {
            Negatives::Given(n) => {
                check_examples(model, "negatives", n)?;
                (model.encode(n)?, rerank_bits.then(|| n.to_owned()))
            }
            Negatives::Sampled { count, seed } => self.sample_rows(count, seed, rerank_bits)?,
        };
        let pos = model.decode(&model.encode(positives)?)?;
        let neg = model.decode(&neg_codes)?;
        let svm = train_balanced(pos.view(), neg.view(), &params.svm)?;
        let projected = match neg_vectors {
            Some(v) if rerank_bits => {
                let (p, n) = (model.project(positives)?, model.project(v.view())?);
                Some(CodeClassifier::from_svm(&train_balanced(
                    p.view(),
                    n.view(),
                    &params.svm,
                )?))
            }
            _ => None,
        };
        Ok(ExampleClassifier {
            codes: CodeClassifier::from_svm(&svm),
            projected,
            positives: pos.nrows(),
            negatives: neg.nrows(),
            iterations: svm.iterations,
            converged: svm.converged,
        })
    }

    /// The `params.k` live rows `classifier` scores highest, best first, ties by smaller id.
    /// Re-ranking applies the same classifier to the stored vectors' projections, so it is
    /// refused on binary codes (the weights are over bits). Errors: `classifier` of the wrong
    /// length ([`Model::project_dim`] weights) or non-finite; then as
    /// [`Snapshot::search_examples`].
    pub fn search_classifier(
        &self,
        classifier: &CodeClassifier,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let model = self.model()?;
        if params.rerank.is_some() && model.code_kind() == CodeKind::Binary {
            return Err(invalid(
                "rerank",
                "a classifier over the bits of binary codes does not apply to the stored \
                 vectors; re-ranking needs a query by examples (a second SVM is trained on \
                 their projections)",
            ));
        }
        self.scan_linear(classifier, Some(classifier), params)
    }

    /// Scans with `codes` (and re-ranks with `rerank` when asked), adding the bias.
    fn scan_linear(
        &self,
        codes: &CodeClassifier,
        rerank: Option<&CodeClassifier>,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let model = self.model()?;
        let d = model.project_dim();
        for (c, what) in [
            (Some(codes), "classifier"),
            (rerank, "classifier (re-ranking)"),
        ] {
            let Some(c) = c else { continue };
            if c.weights.len() != d {
                return Err(invalid(
                    "classifier",
                    format!(
                        "{what}: {} values, the index's codes need {} (D = {d} weights, then \
                         the bias)",
                        c.weights.len() + 1,
                        d + 1
                    ),
                ));
            }
            if c.weights.iter().chain([&c.bias]).any(|v| !v.is_finite()) {
                return Err(invalid("classifier", format!("{what}: non-finite value")));
            }
        }
        let row = |c: &CodeClassifier| Array2::from_shape_vec((1, d), c.weights.clone());
        let shape = |e| crate::model::ModelError::shape("classifier", e);
        let u = row(codes).map_err(shape)?;
        let r = rerank.map(row).transpose().map_err(shape)?;
        let q = Queries::Linear(u.view(), r.as_ref().map(Array2::view));
        let hits = search_rows(self, q, params, None)?;
        let bias = match (params.rerank, rerank) {
            (Some(_), Some(r)) => r.bias,
            _ => codes.bias,
        };
        Ok(hits
            .into_iter()
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(|h| Hit {
                id: h.id,
                score: h.score + bias,
            })
            .collect())
    }

    /// The codes of `count` live rows drawn with `seed` (positions sorted by block and row),
    /// and their stored vectors when `vectors`.
    fn sample_rows(
        &self,
        count: usize,
        seed: u64,
        vectors: bool,
    ) -> Result<(Vec<u8>, Option<Array2<f32>>), SearchError> {
        let live = self.live_rows() as usize;
        if count == 0 {
            return Err(invalid(
                "negatives",
                "0 random negatives: ask for at least 1",
            ));
        }
        if count > live {
            return Err(invalid(
                "negatives",
                format!(
                    "{count} random negatives asked for, the index has {live} live rows; give \
                     negatives, or ask for fewer"
                ),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut picks = rand::seq::index::sample(&mut rng, live, count).into_vec();
        picks.sort_unstable();
        let source = if vectors {
            Some(SnapshotVectors::new(self)?)
        } else {
            None
        };
        let dim = source.as_ref().map_or(0, |s| s.dim());
        let mut codes = Vec::with_capacity(count * self.code_bytes());
        let mut out = Vec::with_capacity(count * dim);
        let mut buf = vec![0f32; dim];
        let (mut seen, mut next) = (0usize, picks.iter().peekable());
        for (b, block) in self.blocks().enumerate() {
            for i in 0..block.rows() {
                if block.is_deleted(i) {
                    continue;
                }
                if next.peek() == Some(&&seen) {
                    next.next();
                    codes.extend_from_slice(block.code(i)?);
                    if let Some(s) = &source {
                        let id = block.ids()?.get(i).copied().unwrap_or(u64::MAX);
                        if !s.vector(
                            RowRef {
                                block: b,
                                row: i,
                                id,
                            },
                            &mut buf,
                        )? {
                            return Err(SearchError::NoVectors {
                                detail: format!("sampled negative row {id} has no stored vector"),
                            });
                        }
                        out.extend_from_slice(&buf);
                    }
                }
                seen += 1;
            }
        }
        if codes.len() != count * self.code_bytes() {
            return Err(invalid(
                "negatives",
                format!(
                    "found {} of the {count} sampled live rows",
                    codes.len() / self.code_bytes().max(1)
                ),
            ));
        }
        let v =
            if vectors {
                Some(Array2::from_shape_vec((count, dim), out).map_err(|e| {
                    crate::model::ModelError::shape("sampled negatives' vectors", e)
                })?)
            } else {
                None
            };
        Ok((codes, v))
    }
}
