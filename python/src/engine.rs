//! Every call from the binding into the engine crate, in one place: when the engine's public
//! API moves, this file is what changes. Plain Rust in, plain Rust out — no Python here.

use std::path::Path;
use std::sync::Arc;

use ndarray::ArrayView2;

pub use codedb::model::CcaRho;
pub use codedb::{ClassRef, Error, Index, MihChoice, Model, ProbeDecision, RowFilter, Snapshot};
// The filtered IVF plan's rules, called by the binding's functions of the same names as they
// are (docs/filtering.md, "IVF").
pub use codedb::{IdSelector, ivf_filter_scans_passing, ivf_probe_decision};

use codedb::format::VectorDType;
use codedb::model::PamirReport;
use codedb::model::{Cancel, ProgressFn};
use codedb::{
    ClassSource, CompactionPolicy, Config, CreateOptions, NewClass, PipelineSpec, SearchMode,
    SearchParams, TrainOptions, TrainReport,
};

type Result<T> = std::result::Result<T, Error>;

/// One query's results: (id, score) best first.
pub type Hits = Vec<Vec<(u64, f32)>>;

/// What supervised training learns from besides the rows: class labels, instance groups
/// (the CLI's `--groups`) and CCA's ρ (`--cca-rho`; `None`: the engine's default).
#[derive(Default)]
pub struct Supervision {
    pub labels: Option<Vec<i64>>,
    pub groups: Option<Vec<i64>>,
    pub cca_rho: Option<CcaRho>,
}

/// Trains `spec` on `x` (labels, groups and ρ for supervised stages).
pub fn train(
    x: ArrayView2<f32>,
    spec: &str,
    sup: Supervision,
    seed: u64,
    sample: Option<usize>,
    cancel: &Cancel,
    progress: Option<ProgressFn>,
) -> Result<(Model, TrainReport)> {
    let spec = PipelineSpec::parse(spec)?;
    let opts = TrainOptions {
        seed,
        sample,
        labels: sup.labels.map(Arc::from),
        groups: sup.groups.map(Arc::from),
        supervised: codedb::model::SupervisedOptions {
            cca_rho: sup.cca_rho,
            ..Default::default()
        },
        cancel: cancel.clone(),
        progress,
        ..TrainOptions::default()
    };
    Ok(Model::train(&spec, x, &opts)?)
}

/// `cca_rho=` as a string: the engine's word (`CcaRho::from_str`), its error as the argument's.
pub fn parse_cca_rho(s: &str) -> Result<CcaRho> {
    s.parse()
        .map_err(|e: codedb::model::CcaRhoError| Error::InvalidArgument {
            argument: "cca_rho".into(),
            detail: e.to_string(),
        })
}

/// `cca_rho=` as a number or a list of numbers, checked as the engine checks the word.
pub fn cca_rho_values(values: Vec<f64>, one: bool) -> Result<CcaRho> {
    let r = if one {
        CcaRho::fixed(values[0])
    } else {
        CcaRho::grid(values)
    };
    r.map_err(|e| Error::InvalidArgument {
        argument: "cca_rho".into(),
        detail: e.to_string(),
    })
}

/// A text head to train on top of a model (the CLI's `train --captions`).
pub struct TextTrain {
    /// One caption per row of the training data, as words ([`codedb::model::tokenize`]).
    pub captions: Vec<Vec<String>>,
    /// "constant" or "caption".
    pub margin: String,
    /// ε (constant) or its floor (caption); `None`: 1 or 0.1.
    pub epsilon: Option<f32>,
    pub c_grid: Vec<f32>,
    pub iterations: usize,
    pub patience: usize,
    pub validation: f64,
    /// One group id per row for the validation split, or `None`.
    pub validation_groups: Option<Vec<i64>>,
    pub max_words: usize,
}

/// The words of a caption (a string, or the words of each of its tags).
pub fn caption_words<'a>(parts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    parts
        .into_iter()
        .flat_map(codedb::model::tokenize)
        .collect()
}

/// `model` with a PAMIR text head trained on the projection of `x` and `t.captions` (the
/// engine calls the CLI's `train --captions` makes), and what the training did.
pub fn attach_text_head(
    model: Model,
    x: ArrayView2<f32>,
    t: &TextTrain,
    seed: u64,
) -> Result<(Model, PamirReport)> {
    use codedb::model::{MarginPolicy, PamirOptions};
    let margin: MarginPolicy = t
        .margin
        .parse()
        .map_err(|e: codedb::model::UnknownMargin| Error::InvalidArgument {
            argument: "margin".into(),
            detail: e.to_string(),
        })?;
    let opts = PamirOptions {
        c_grid: t.c_grid.clone(),
        iterations: t.iterations,
        patience: t.patience,
        validation: t.validation,
        validation_groups: t.validation_groups.clone(),
        max_words: t.max_words,
        seed,
        ..PamirOptions::default()
    }
    .with_margin(margin, t.epsilon);
    Ok(model.with_trained_text_head(x, &t.captions, &opts)?)
}

/// What training did, as JSON (`Model.report`): the pipeline's steps (`train`) and the text
/// head's (`text`, or null).
pub fn train_report_json(train: &TrainReport, text: Option<&PamirReport>) -> Result<String> {
    // The text head's report with the CLI's `cap_note` (null when the run converged).
    let text = text.map(|t| {
        let mut v = serde_json::to_value(t).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("cap_note".into(), t.cap_note().into());
        }
        v
    });
    json(&serde_json::json!({ "train": train, "text": text }))
}

/// The model's shape: (input dimension, code bits, code bytes, code kind name).
pub fn model_shape(m: &Model) -> (usize, usize, usize, &'static str) {
    (
        m.input_dim(),
        m.code_bits(),
        m.code_bytes(),
        m.code_kind().name(),
    )
}

pub fn encode(m: &Model, x: ArrayView2<f32>, cancel: &Cancel) -> Result<Vec<u8>> {
    Ok(m.encode_cancellable(x, cancel)?)
}

/// The model file's bytes (the CLI's `codedb train --out` format).
pub fn model_bytes(m: &Model) -> Result<Vec<u8>> {
    Ok(m.to_model_file().to_bytes()?)
}

pub fn load_model(path: &Path) -> Result<Model> {
    let mf = codedb::format::ModelFile::open(path)?;
    Ok(Model::from_model_file(&mf)?)
}

fn vector_dtype(store_vectors: Option<&str>) -> Result<Option<VectorDType>> {
    store_vectors
        .map(|name| {
            VectorDType::parse(name).ok_or_else(|| Error::InvalidArgument {
                argument: "store_vectors".into(),
                detail: format!("{name:?}: expected \"f32\", \"f16\" or None"),
            })
        })
        .transpose()
}

fn list_assignment(lists: Option<&str>) -> Result<Option<codedb::ListAssignment>> {
    lists
        .map(|l| {
            codedb::ListAssignment::parse(l).ok_or_else(|| Error::InvalidArgument {
                argument: "lists".into(),
                detail: format!("{l:?}: expected \"label\", \"nearest\" or None"),
            })
        })
        .transpose()
}

/// An empty index in `dir` encoding with `model` (committed as version 1).
pub fn create(
    dir: &Path,
    model: &Model,
    store_vectors: Option<&str>,
    schema: Option<&str>,
) -> Result<Index> {
    let spec = vector_dtype(store_vectors)?
        .map(|t| codedb::format::VectorSpec::new(t, model.input_dim() as u32));
    let opts = CreateOptions {
        store_vectors: spec,
        attributes: parse_schema(schema)?.unwrap_or_default(),
    };
    Ok(Index::create_with(
        dir,
        &model.to_model_file(),
        &opts,
        Config::default(),
    )?)
}

/// The index's attribute columns from `name:type,…` (the CLI's `--schema`).
fn parse_schema(spec: Option<&str>) -> Result<Option<codedb::format::Schema>> {
    spec.map(|s| {
        codedb::format::Schema::parse(s).map_err(|e| Error::InvalidArgument {
            argument: "schema".into(),
            detail: e.to_string(),
        })
    })
    .transpose()
}

/// Adds attribute column `name` of type `type_name` (`int`, `float`, `timestamp`, `bool`,
/// `string`, `tags`) with `default` (the type's zero when `None`), visible at the next commit.
pub fn add_column(
    index: &Index,
    name: &str,
    type_name: &str,
    default: Option<codedb::Value>,
) -> Result<()> {
    let t = codedb::ColumnType::parse(type_name).ok_or_else(|| Error::InvalidArgument {
        argument: "type".into(),
        detail: format!("{type_name:?}: expected int, float, timestamp, bool, string or tags"),
    })?;
    let default = default.unwrap_or_else(|| codedb::Value::zero(t));
    Ok(index.add_column(name, t, default)?)
}

/// Options of [`build`] beyond the data.
pub struct Build<'a> {
    pub ids: Option<&'a [u64]>,
    pub labels: Option<&'a [u32]>,
    pub store_vectors: Option<&'a str>,
    pub lists: Option<&'a str>,
    /// The rows' attribute columns.
    pub attributes: Option<&'a codedb::Attributes>,
    /// The index's schema (`name:type,…`); default: the columns of `attributes`.
    pub schema: Option<&'a str>,
}

/// An index built from `x` in one commit, with the class table of `labels`.
pub fn build(
    dir: &Path,
    model: &Model,
    x: ArrayView2<f32>,
    b: &Build<'_>,
    cancel: &Cancel,
    progress: &mut dyn FnMut(usize),
) -> Result<Index> {
    let schema = parse_schema(b.schema)?;
    let opts = codedb::BuildOptions {
        schema: schema.as_ref(),
        ids: b.ids,
        labels: b.labels,
        store_vectors: vector_dtype(b.store_vectors)?,
        lists: list_assignment(b.lists)?,
        cancel: Some(cancel),
        attributes: b.attributes,
        ..codedb::BuildOptions::default()
    };
    Ok(Index::build(dir, model, x, &opts, progress)?)
}

pub fn open(dir: &Path) -> Result<Index> {
    Ok(Index::open(dir, Config::default())?)
}

/// The index's model, decoded (the index decodes it once and shares it with its snapshots).
pub fn index_model(index: &Index) -> Result<Model> {
    Ok(index.model()?.clone())
}

/// What an add or upsert stores besides the descriptors, and who hears its progress.
pub struct Adding<'a> {
    pub ids: Option<&'a [u64]>,
    pub labels: Option<&'a [u32]>,
    pub lists: Option<&'a str>,
    pub keep_class_stats: bool,
    /// The rows' attribute columns (a column left out takes its default).
    pub attributes: Option<&'a codedb::Attributes>,
    /// Rows encoded so far.
    pub progress: &'a (dyn Fn(usize) + Sync),
}

impl Adding<'_> {
    fn options<'a>(&'a self, cancel: &'a Cancel) -> Result<codedb::AddOptions<'a>> {
        Ok(codedb::AddOptions {
            ids: self.ids,
            labels: self.labels,
            lists: list_assignment(self.lists)?,
            class_stats: class_stats(self.keep_class_stats),
            cancel: Some(cancel),
            progress: Some(self.progress),
            attributes: self.attributes,
        })
    }
}

/// Stages the rows of `x`; returns their ids.
pub fn add(index: &Index, x: ArrayView2<f32>, a: &Adding<'_>, cancel: &Cancel) -> Result<Vec<u64>> {
    Ok(index.add(x, &a.options(cancel)?)?)
}

/// Stages the rows of `x` replacing the live rows of their ids; returns how many were replaced.
pub fn upsert(index: &Index, x: ArrayView2<f32>, a: &Adding<'_>, cancel: &Cancel) -> Result<u64> {
    Ok(index.upsert(x, &a.options(cancel)?)?.1)
}

pub fn commit(index: &Index) -> Result<u64> {
    Ok(index.commit()?)
}

/// Where a new class's mean comes from.
pub enum Source<'a> {
    Images(ArrayView2<'a, f32>),
    Mean(&'a [f32]),
    None,
}

/// A class by name or by id.
pub enum Parent {
    Name(String),
    Id(u32),
}

/// Stages a class; returns its id (visible at the next commit).
pub fn add_class(
    index: &Index,
    name: &str,
    source: Source<'_>,
    parent: Option<Parent>,
    id: Option<u32>,
    prior_weight: Option<u64>,
) -> Result<u32> {
    let source = match source {
        Source::Images(x) => ClassSource::Images(x),
        Source::Mean(m) => ClassSource::Mean(m),
        Source::None => ClassSource::None,
    };
    let mut c = NewClass::new(name, source);
    match parent {
        Some(Parent::Name(p)) => c = c.with_parent(ClassRef::from(p.as_str())),
        Some(Parent::Id(p)) => c = c.with_parent(ClassRef::from(p)),
        None => {}
    }
    c.id = id;
    if let Some(w) = prior_weight {
        c.prior_weight = w;
    }
    let planned = index.add_new_classes(&[c])?;
    Ok(planned.first().map_or(u32::MAX, |p| p.record.id))
}

pub fn snapshot(index: &Index) -> Snapshot {
    index.snapshot()
}

pub fn version(snap: &Snapshot) -> u64 {
    snap.version()
}

pub fn live_rows(snap: &Snapshot) -> u64 {
    snap.live_rows()
}

pub fn input_dim(snap: &Snapshot) -> Result<usize> {
    Ok(snap.model()?.input_dim())
}

/// The snapshot's classes: (id, name, parent id).
pub fn classes(snap: &Snapshot) -> Vec<(u32, String, Option<u32>)> {
    snap.classes().map_or_else(Vec::new, |t| {
        t.classes
            .iter()
            .map(|c| (c.id, c.name.clone(), c.parent))
            .collect()
    })
}

/// Whether the mode named `name` ranks larger scores first (`None`, or a name no mode has:
/// no — a search with such a name is refused before any merge).
pub fn larger_is_better(name: Option<&str>) -> bool {
    name.and_then(SearchMode::parse)
        .is_some_and(SearchMode::larger_is_better)
}

/// The list ids of `classes` (names or ids) for a list-restricted search.
pub fn class_ids(snap: &Snapshot, classes: &[ClassRef]) -> Result<Vec<u32>> {
    Ok(snap.class_ids(classes)?)
}

/// A k-NN query: the mode's name (`None`: the codes' natural mode) and the scan's limits.
pub struct Query<'a> {
    pub k: usize,
    pub mode: Option<&'a str>,
    pub rerank: Option<usize>,
    pub nprobe: Option<usize>,
    pub lists: Option<Vec<u32>>,
    pub threads: usize,
    pub mih: MihChoice,
    /// Only rows this filter passes (`where=`, `ids=`).
    pub filter: Option<RowFilter>,
}

/// How scores read: Hamming distances (integers), or floats where smaller or larger is better.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scores {
    Hamming,
    Smaller,
    Larger,
}

/// The search mode named `name`, or the natural mode of the index's codes.
fn resolve_mode(snap: &Snapshot, name: Option<&str>) -> Result<SearchMode> {
    let model = snap.model()?;
    SearchMode::resolve(name, model.code_kind()).map_err(|e| Error::InvalidArgument {
        argument: "mode".into(),
        detail: e.to_string(),
    })
}

fn params(mode: SearchMode, query: &Query<'_>) -> SearchParams {
    let mut params = SearchParams::new(query.k, mode)
        .threads(query.threads)
        .mih(query.mih);
    if let Some(r) = query.rerank {
        params = params.rerank(r);
    }
    if let Some(n) = query.nprobe {
        params = params.nprobe(n);
    }
    if let Some(l) = &query.lists {
        params = params.lists(l.clone());
    }
    if let Some(f) = &query.filter {
        params = params.filter(f.clone());
    }
    params
}

pub fn search(
    snap: &Snapshot,
    q: ArrayView2<f32>,
    query: &Query<'_>,
    cancel: &Cancel,
) -> Result<(Hits, Scores)> {
    let mode = resolve_mode(snap, query.mode)?;
    let p = params(mode, query);
    let hits = in_chunks(q.nrows(), cancel, |r| {
        Ok(plain(snap.search(q.slice(ndarray::s![r, ..]), &p)?))
    })?;
    Ok((hits, scores_of(mode, query)))
}

/// The first chunk of queries [`in_chunks`] runs, and the most it grows to.
const FIRST_CHUNK: usize = 8;
const LARGEST_CHUNK: usize = 4096;

/// Runs `f` over the rows `0..n` in chunks, checking `cancel` before each, so Ctrl-C stops a
/// large batch of queries within about one chunk. Chunks start at [`FIRST_CHUNK`] rows and
/// double while one takes under 50 ms (up to [`LARGEST_CHUNK`]), so a big batch still reaches
/// the kernels in large blocks. Queries are independent: the results equal one call's.
fn in_chunks<T>(
    n: usize,
    cancel: &Cancel,
    mut f: impl FnMut(std::ops::Range<usize>) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(n);
    let (mut start, mut chunk) = (0, FIRST_CHUNK);
    while start < n {
        cancel.check()?;
        let end = (start + chunk).min(n);
        let t = std::time::Instant::now();
        out.extend(f(start..end)?);
        if t.elapsed() < std::time::Duration::from_millis(50) {
            chunk = (chunk * 2).min(LARGEST_CHUNK);
        }
        start = end;
    }
    Ok(out)
}

/// How a k-NN search's scores read: Hamming distances, or the mode's float direction.
fn scores_of(mode: SearchMode, query: &Query<'_>) -> Scores {
    if query.rerank.is_some() || mode != SearchMode::Hamming {
        if mode.larger_is_better() {
            Scores::Larger
        } else {
            Scores::Smaller
        }
    } else {
        Scores::Hamming
    }
}

/// The scores a k-NN search of `query` gives (for an empty batch, which does not search).
pub fn search_scores(snap: &Snapshot, query: &Query<'_>) -> Result<Scores> {
    Ok(scores_of(resolve_mode(snap, query.mode)?, query))
}

/// Text queries through the model's text head (larger scores are better), and per query the
/// words it ignored (not in the head's vocabulary; a query with no known word is an error).
pub fn search_text(
    snap: &Snapshot,
    queries: &[String],
    query: &Query<'_>,
    cancel: &Cancel,
) -> Result<(Hits, Vec<Vec<String>>)> {
    let mode = resolve_mode(snap, query.mode)?;
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let prepared = snap.text_queries(&refs)?;
    let p = params(mode, query);
    let hits = in_chunks(prepared.len(), cancel, |r| {
        Ok(plain(snap.search_text_prepared(&prepared[r], &p, None)?))
    })?;
    let ignored = prepared.into_iter().map(|q| q.vector.unknown).collect();
    Ok((hits, ignored))
}

/// The filtered IVF plan's counts per query (`Snapshot::ivf_list_counts`): `None` when a
/// search of `query` does not run the plan (for no query at all: an empty list). In chunks of
/// queries, each chunk's `start` positions with it, so Ctrl-C stops a large batch.
pub fn ivf_list_counts(
    snap: &Snapshot,
    q: ArrayView2<f32>,
    query: &Query<'_>,
    start: &[usize],
    count: Option<usize>,
    cancel: &Cancel,
) -> Result<Option<Vec<codedb::ListCounts>>> {
    let p = params(resolve_mode(snap, query.mode)?, query);
    if !start.is_empty() && start.len() != q.nrows() {
        // The engine's own refusal, before the chunks split `start`.
        return Ok(snap.ivf_list_counts(q, &p, start, count)?);
    }
    let mut applies = true;
    let counts = in_chunks(q.nrows(), cancel, |r| {
        let from = if start.is_empty() {
            &[][..]
        } else {
            &start[r.clone()]
        };
        let got = snap.ivf_list_counts(q.slice(ndarray::s![r, ..]), &p, from, count)?;
        applies &= got.is_some();
        Ok(got.unwrap_or_default())
    })?;
    Ok(applies.then_some(counts))
}

/// The live rows `filter` passes (every live row without one).
pub fn passing_rows(snap: &Snapshot, filter: Option<&RowFilter>) -> Result<u64> {
    Ok(match filter {
        Some(f) => snap.passing_rows(f)?,
        None => snap.live_rows(),
    })
}

/// A k-NN search following a driver's plan per query (`Snapshot::search_ivf_planned`).
pub fn search_ivf_planned(
    snap: &Snapshot,
    q: ArrayView2<f32>,
    query: &Query<'_>,
    plan: &[Option<Vec<u32>>],
    cancel: &Cancel,
) -> Result<(Hits, Scores)> {
    let mode = resolve_mode(snap, query.mode)?;
    let p = params(mode, query);
    let plan: Vec<codedb::QueryPlan> = plan
        .iter()
        .map(|l| match l {
            Some(l) => codedb::QueryPlan::Lists(l.clone()),
            None => codedb::QueryPlan::Flat,
        })
        .collect();
    if plan.len() != q.nrows() {
        // The engine's own refusal, before the chunks split the plan.
        snap.search_ivf_planned(q, &p, &plan)?;
    }
    let hits = in_chunks(q.nrows(), cancel, |r| {
        let part = &plan[r.clone()];
        Ok(plain(snap.search_ivf_planned(
            q.slice(ndarray::s![r, ..]),
            &p,
            part,
        )?))
    })?;
    Ok((hits, scores_of(mode, query)))
}

pub fn search_radius(
    snap: &Snapshot,
    q: ArrayView2<f32>,
    radius: u32,
    filter: Option<&RowFilter>,
    cancel: &Cancel,
) -> Result<Hits> {
    in_chunks(q.nrows(), cancel, |r| {
        let q = q.slice(ndarray::s![r, ..]);
        Ok(plain(match filter {
            Some(f) => snap.search_radius_filtered(q, radius, f)?,
            None => snap.search_radius(q, radius)?,
        }))
    })
}

fn plain(hits: Vec<Vec<codedb::Hit>>) -> Hits {
    hits.into_iter()
        .map(|l| l.into_iter().map(|h| (h.id, h.score)).collect())
        .collect()
}

/// The `top` best classes per row: (class id, score), best first.
pub fn classify(
    snap: &Snapshot,
    x: ArrayView2<f32>,
    top: usize,
    cancel: &Cancel,
) -> Result<Vec<Vec<(u32, f32)>>> {
    in_chunks(x.nrows(), cancel, |r| {
        Ok(snap
            .classify(x.slice(ndarray::s![r, ..]), top)?
            .into_iter()
            .map(|l| l.into_iter().map(|c| (c.id, c.score)).collect())
            .collect())
    })
}

/// Reports as JSON text (the CLI's `--json` shapes).
pub fn versions_json(dir: &Path) -> Result<String> {
    json(&codedb::admin::list_versions(dir)?)
}

pub fn inspect_json(dir: &Path) -> Result<String> {
    json(&codedb::admin::inspect_dir(dir)?)
}

/// The verification report and whether it found no problem.
pub fn verify_json(dir: &Path) -> Result<(String, bool)> {
    let report = codedb::admin::verify_path(dir, &mut |_| {});
    Ok((json(&report)?, report.ok()))
}

fn json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::InvalidArgument {
        argument: "report".into(),
        detail: format!("not serialisable as JSON: {e}"),
    })
}

/// The newest committed version of the index at `dir`, read-only.
pub fn open_snapshot(dir: &Path) -> Result<Snapshot> {
    Ok(Snapshot::open(dir)?)
}

/// One given version of an index, newest or not (a sharded reader pinning a cut).
pub fn open_snapshot_version(dir: &Path, version: u64) -> Result<Snapshot> {
    Ok(Snapshot::open_version(dir, version)?)
}

/// The model's identity: the file id it was saved under (hex), shared by every index made
/// with it; a sharded index checks its shards agree on it.
pub fn model_id(m: &Model) -> String {
    m.id().to_string()
}

/// One class's image count and f64 descriptor sum (FORMAT.md §5): the additive part of a
/// class table, which a sharded index adds up over its shards.
pub struct ClassSums {
    pub id: u32,
    pub name: String,
    pub parent: Option<u32>,
    pub count: u64,
    pub sum: Vec<f64>,
}

/// The snapshot's class table as counts and sums, with its descriptor dimension (0: no table).
pub fn class_sums(snap: &Snapshot) -> (usize, Vec<ClassSums>) {
    snap.classes().map_or((0, Vec::new()), |t| {
        let classes = t
            .classes
            .iter()
            .map(|c| ClassSums {
                id: c.id,
                name: c.name.clone(),
                parent: c.parent,
                count: c.count,
                sum: c.sum.clone(),
            })
            .collect();
        (t.dim as usize, classes)
    })
}

/// NCM classification against the class table made of `classes` under `model`: the same
/// projected means and scan as `Snapshot::classify` over a table holding these records.
pub fn classify_sums(
    model: &Model,
    dim: usize,
    classes: Vec<ClassSums>,
    x: ArrayView2<f32>,
    top: usize,
) -> Result<Vec<Vec<(u32, f32)>>> {
    let bad = |detail: String| Error::InvalidArgument {
        argument: "classes".into(),
        detail,
    };
    let mut seen = std::collections::HashSet::new();
    for c in &classes {
        if !seen.insert(c.id) {
            return Err(bad(format!("class id {} appears twice", c.id)));
        }
        if c.sum.len() != dim || c.sum.iter().any(|v| !v.is_finite()) {
            return Err(bad(format!(
                "class {} ({:?}): sum must be {dim} finite values, got {}",
                c.id,
                c.name,
                c.sum.len()
            )));
        }
    }
    let table = codedb::format::ClassTable {
        file_id: codedb::format::FileId::ZERO,
        dim: u32::try_from(dim).map_err(|_| Error::InvalidArgument {
            argument: "dim".into(),
            detail: format!("{dim} does not fit 32 bits"),
        })?,
        delta_of: None,
        classes: classes
            .into_iter()
            .map(|c| codedb::format::ClassRecord {
                id: c.id,
                name: c.name,
                parent: c.parent,
                count: c.count,
                sum: c.sum,
                centroids: Vec::new(),
                removed: 0,
            })
            .collect(),
    };
    let means = codedb::ClassMeans::build(&table, model)?;
    if means.is_empty() {
        return Err(codedb::ClassError::NoClasses {
            dir: "merged class table".into(),
        }
        .into());
    }
    Ok(means
        .classify(model, x, top)?
        .into_iter()
        .map(|l| l.into_iter().map(|c| (c.id, c.score)).collect())
        .collect())
}

/// The model of a snapshot's version.
pub fn snapshot_model(snap: &Snapshot) -> Result<Model> {
    Ok(snap.model()?.clone())
}

/// A model from the bytes of a model file (`Model.from_bytes`, unpickling).
pub fn model_from_bytes(bytes: &[u8]) -> Result<Model> {
    let mf = codedb::format::ModelFile::from_bytes(bytes, Path::new("<model bytes>"))?;
    Ok(Model::from_model_file(&mf)?)
}

/// Codes decoded into the model's projected space: (values, rows, columns).
pub fn decode(m: &Model, codes: &[u8]) -> Result<(Vec<f32>, usize, usize)> {
    let a = m.decode(codes)?;
    let (n, c) = a.dim();
    Ok((a.iter().copied().collect(), n, c))
}

/// Refuses at once (before encoding) when the handle fell back or is poisoned.
pub fn check_writable(index: &Index) -> Result<()> {
    Ok(index.check_writable()?)
}

fn class_stats(keep: bool) -> codedb::ClassStats {
    if keep {
        codedb::ClassStats::Keep
    } else {
        codedb::ClassStats::Update
    }
}

/// Stages rows replacing the live rows of their ids; returns how many were replaced.
/// Stages deletes; returns (rows deleted, ids skipped as not live — only with
/// `ignore_missing`).
pub fn delete_rows(
    index: &Index,
    ids: &[u64],
    ignore_missing: bool,
    keep_class_stats: bool,
) -> Result<(usize, Vec<u64>)> {
    let stats = class_stats(keep_class_stats);
    let missing = if ignore_missing {
        index.delete_live(ids, stats)?
    } else {
        index.delete_with(ids, stats)?;
        Vec::new()
    };
    Ok((ids.len() - missing.len(), missing))
}

/// The CLI's `compact` (seal the log, compact by the policy, collect garbage): its `--json`.
pub fn compact_sealed(
    index: &Index,
    full: bool,
    deleted_threshold: f64,
    cancel: &Cancel,
    progress: codedb::CompactProgressFn,
) -> Result<String> {
    let policy = CompactionPolicy {
        full,
        max_deleted_fraction: deleted_threshold,
        ..CompactionPolicy::default()
    };
    json(&index.compact_sealed_cancellable(&policy, cancel, Some(progress))?)
}

/// The CLI's `gc --json`.
pub fn gc(index: &Index) -> Result<String> {
    json(&index.gc()?)
}

/// The CLI's `recover DIR --to-version N --json`: the recovery record and the version.
pub fn recover(dir: &Path, to_version: u64) -> Result<String> {
    let index = Index::recover(dir, to_version, Config::default())?;
    let mut v =
        serde_json::to_value(&index.recovery().recovered).map_err(|e| Error::InvalidArgument {
            argument: "report".into(),
            detail: format!("not serialisable as JSON: {e}"),
        })?;
    if let Some(o) = v.as_object_mut() {
        o.insert("version".into(), index.version().into());
    }
    json(&v)
}

/// The manifests newer than the snapshot's version that did not read, as `inspect` lists them.
pub fn skipped_json(snap: &Snapshot) -> Result<String> {
    json(&snap.skipped_manifests())
}

/// The stored vectors of `ids`: (values, dim).
pub fn reconstruct(snap: &Snapshot, ids: &[u64]) -> Result<(Vec<f32>, usize)> {
    Ok(snap.reconstruct(ids)?)
}

/// The negatives of a query by examples.
pub enum ExampleNegatives<'a> {
    Given(ArrayView2<'a, f32>),
    Random(usize),
    Default,
}

/// The SVM of a query by examples.
pub struct Svm {
    pub seed: u64,
    pub c: Option<f64>,
}

/// The engine's negatives for `negatives` (the CLI's checks and messages).
fn example_negatives<'a>(
    snap: &Snapshot,
    negatives: ExampleNegatives<'a>,
    seed: u64,
) -> Result<codedb::Negatives<'a>> {
    let live = snap.live_rows() as usize;
    Ok(match negatives {
        ExampleNegatives::Given(n) => codedb::Negatives::Given(n),
        ExampleNegatives::Random(count) => {
            if count > live {
                return Err(Error::InvalidArgument {
                    argument: "random_negatives".into(),
                    detail: format!(
                        "{count}: {} has {live} live rows; give negatives=, or ask for at \
                         most {live}",
                        snap.dir().display()
                    ),
                });
            }
            codedb::Negatives::Sampled { count, seed }
        }
        ExampleNegatives::Default => {
            if live == 0 {
                return Err(Error::InvalidArgument {
                    argument: "negatives".into(),
                    detail: format!(
                        "{} has no live rows to draw negatives from; give negatives=",
                        snap.dir().display()
                    ),
                });
            }
            codedb::Negatives::Sampled {
                count: codedb::DEFAULT_RANDOM_NEGATIVES.min(live),
                seed,
            }
        }
    })
}

fn example_params(snap: &Snapshot, svm: &Svm, query: &Query<'_>) -> Result<codedb::ExampleParams> {
    let mode = resolve_mode(snap, query.mode)?;
    let mut params = codedb::ExampleParams::new(params(mode, query));
    params.svm.seed = svm.seed;
    if let Some(c) = svm.c {
        params.svm.c = c;
    }
    Ok(params)
}

/// A query by examples (the CLI's `search --examples`): the one result list.
pub fn search_examples(
    snap: &Snapshot,
    positives: ArrayView2<f32>,
    negatives: ExampleNegatives<'_>,
    svm: &Svm,
    query: &Query<'_>,
) -> Result<(Vec<(u64, f32)>, Scores)> {
    let params = example_params(snap, svm, query)?;
    let negatives = example_negatives(snap, negatives, svm.seed)?;
    let hits = snap.search_examples(positives, negatives, &params)?;
    Ok((
        hits.into_iter().map(|h| (h.id, h.score)).collect(),
        Scores::Larger,
    ))
}

/// Several queries by examples (the CLI's `search --examples F --example-groups G`): set i
/// is `positives[i]` against `negatives[i]` (`None`: `shared`); one result list per set.
pub fn search_examples_batch<'a>(
    snap: &Snapshot,
    positives: &[ArrayView2<'a, f32>],
    negatives: &[Option<ArrayView2<'a, f32>>],
    shared: ExampleNegatives<'a>,
    svm: &Svm,
    query: &Query<'_>,
) -> Result<Vec<Vec<(u64, f32)>>> {
    let params = example_params(snap, svm, query)?;
    let shared = example_negatives(snap, shared, svm.seed)?;
    let sets: Vec<codedb::ExampleSet<'a>> = positives
        .iter()
        .zip(negatives)
        .map(|(p, n)| codedb::ExampleSet {
            positives: *p,
            negatives: n.map_or(shared, codedb::Negatives::Given),
        })
        .collect();
    let hits = snap.search_examples_batch(&sets, &params)?;
    Ok(hits
        .into_iter()
        .map(|h| h.into_iter().map(|h| (h.id, h.score)).collect())
        .collect())
}

/// Rows ranked by a given linear classifier of their codes (`classifier`: D weights, then the
/// bias; the CLI's `search --classifier`).
pub fn search_classifier(
    snap: &Snapshot,
    classifier: &[f32],
    query: &Query<'_>,
) -> Result<Vec<(u64, f32)>> {
    let mode = resolve_mode(snap, query.mode)?;
    if classifier.len() < 2 {
        return Err(Error::InvalidArgument {
            argument: "classifier".into(),
            detail: format!(
                "{} values; expected D + 1 (at least one weight and the bias)",
                classifier.len()
            ),
        });
    }
    let c = codedb::CodeClassifier::from_values(classifier);
    let hits = snap.search_classifier(&c, &params(mode, query))?;
    Ok(hits.into_iter().map(|h| (h.id, h.score)).collect())
}

/// A FAISS index factory string as a codedb pipeline SPEC, with the notes on what differs.
pub fn spec_from_faiss(factory: &str, dim: Option<usize>) -> Result<(String, Vec<String>)> {
    let t = PipelineSpec::from_faiss_factory(factory, dim)?;
    Ok((t.spec, t.notes))
}

/// Ids per lookup of [`attribute_values`] between two checks of the cancel token.
const VALUES_CHUNK: usize = 4096;

/// Columns `names` of the live rows `ids`, one vector per column in `ids`' order (what
/// `search(columns=...)` returns beside the hits; the CLI's `search --with`), looked up in
/// chunks so `cancel` stops a large lookup. An unknown name is refused even without ids.
pub fn attribute_values(
    snap: &Snapshot,
    ids: &[u64],
    names: &[&str],
    cancel: &Cancel,
) -> Result<Vec<Vec<codedb::Value>>> {
    let mut out: Vec<Vec<codedb::Value>> = vec![Vec::with_capacity(ids.len()); names.len()];
    let chunks: Vec<&[u64]> = if ids.is_empty() {
        vec![&[]]
    } else {
        ids.chunks(VALUES_CHUNK).collect()
    };
    let defaults = attribute_defaults(snap, names);
    for chunk in chunks {
        cancel.check()?;
        let found = snap.attribute_values(chunk, names)?;
        for (c, col) in out.iter_mut().enumerate() {
            let data = found.column(c);
            for r in 0..chunk.len() {
                // `attribute_values` returns every named column with a value per id; the
                // default stands in only if that ever changed.
                let v = data.as_ref().and_then(|d| d.value(r));
                col.push(v.unwrap_or_else(|| defaults[c].clone()));
            }
        }
    }
    Ok(out)
}

/// Each named column's default (`Value::zero` of its type unless the schema gives one; an
/// unknown name gets the int zero — [`attribute_values`] refuses it).
pub fn attribute_defaults(snap: &Snapshot, names: &[&str]) -> Vec<codedb::Value> {
    let schema = snap.attribute_schema();
    names
        .iter()
        .map(|n| match schema.find(n) {
            Some((i, t)) => schema
                .default_value(i)
                .cloned()
                .unwrap_or(codedb::Value::zero(t)),
            None => codedb::Value::Int(0),
        })
        .collect()
}
