//! Queries over one version — the one implementation behind `Snapshot`'s query methods, which
//! `Index` reaches through its newest committed version: k-NN, text and example queries in
//! FAISS's shapes, radius lookup in `range_search`'s, NCM classification.
//!
//! Result columns: `k` (padded with id −1 past the rows found, as FAISS pads), except when `k`
//! exceeds both the snapshot's live rows and [`PAD_LIMIT`] — then the CLI's rule, k capped at
//! the live rows, so no argument can size an array beyond the index (`k=2**62` returns every
//! live row instead of asking for exabytes). The same for `top` against the classes.

use std::ffi::CString;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::arrays;
use crate::engine::{self, MihChoice, Scores, Snapshot};
use crate::errors::{IntoPy, invalid};
use crate::interrupt::{self, Progress};
use crate::result_columns::ResultColumns;

/// Up to this many result columns are padded as FAISS pads; above it (and above the live
/// rows) `k` is capped at the live rows.
pub const PAD_LIMIT: usize = 1 << 16;

/// The number of result columns for `k` over `available` rows (see the module doc).
pub fn columns(k: usize, available: u64) -> usize {
    let available = usize::try_from(available).unwrap_or(usize::MAX);
    if k <= PAD_LIMIT.max(available) {
        k
    } else {
        available
    }
}

/// The return type of a k-NN query: `(D, I)`.
pub type Pair<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

/// A k-NN query's Python arguments, counts already checked.
pub struct QueryArgs<'a, 'py> {
    pub k: usize,
    pub mode: Option<&'a str>,
    pub rerank: Option<usize>,
    pub nprobe: Option<usize>,
    pub classes: Option<&'a Bound<'py, PyAny>>,
    pub threads: usize,
    /// `auto`, `on` or `off`, as the CLI's `search --mih`.
    pub mih: &'a str,
    pub filter: FilterArgs<'a>,
}

/// `where=` and `ids=`: which rows a query may return (docs/filtering.md). Both given: a row
/// must pass both, as the CLI's `--where` with `--ids`.
pub struct FilterArgs<'a> {
    pub expression: Option<&'a str>,
    /// `ids=` as ids, read while the GIL is held; `Some(empty)` passes no row.
    pub ids: Option<Vec<u64>>,
}

impl<'a> FilterArgs<'a> {
    pub fn new(expression: Option<&'a str>, ids: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(FilterArgs {
            expression,
            ids: ids.map(|i| arrays::id_set(i, "ids")).transpose()?,
        })
    }

    /// The engine's filter (`RowFilter::checked`), its expression parsed and checked against
    /// `snap`'s columns before anything is read; a refusal is `InvalidArgument` naming `where`,
    /// with the engine's message (its 1-based character column), as the CLI's `--where` usage
    /// error.
    pub fn filter(&self, snap: &Snapshot) -> PyResult<Option<engine::RowFilter>> {
        let ids = self.ids.clone().map(engine::IdSelector::new);
        engine::RowFilter::checked(self.expression, ids, snap.attribute_schema()).map_err(|e| {
            invalid(
                "where",
                format!("{:?}: {e}", self.expression.unwrap_or_default()),
            )
        })
    }
}

impl<'a, 'py> QueryArgs<'a, 'py> {
    /// The Python arguments, each count checked and named (`k=-1`, `rerank=2**64`:
    /// `InvalidArgument`, never `OverflowError`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        k: i128,
        mode: Option<&'a str>,
        rerank: Option<i128>,
        nprobe: Option<i128>,
        classes: Option<&'a Bound<'py, PyAny>>,
        threads: i128,
        mih: &'a str,
        expression: Option<&'a str>,
        ids: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        Ok(QueryArgs {
            k: arrays::count(k, "k", 1)?,
            mode,
            rerank: rerank.map(|r| arrays::count(r, "rerank", 1)).transpose()?,
            nprobe: nprobe.map(|n| arrays::count(n, "nprobe", 1)).transpose()?,
            classes,
            threads: arrays::count(threads, "threads", 0)?,
            mih,
            filter: FilterArgs::new(expression, ids)?,
        })
    }

    fn query(&self, snap: &Snapshot) -> PyResult<engine::Query<'a>> {
        Ok(engine::Query {
            k: self.k,
            mode: self.mode,
            rerank: self.rerank,
            nprobe: self.nprobe,
            lists: self.classes.map(|c| list_ids(snap, c)).transpose()?,
            threads: self.threads,
            mih: mih_choice(self.mih)?,
            filter: self.filter.filter(snap)?,
        })
    }
}

/// `search(mih=...)`: the CLI's `--mih` values, anything else a `ValueError` naming `mih`.
fn mih_choice(name: &str) -> PyResult<MihChoice> {
    MihChoice::parse(name)
        .ok_or_else(|| invalid("mih", format!("{name:?}: expected auto, on or off")))
}

/// `classes=[...]`: names (str) or class ids (int) → list ids ([`engine::class_ids`]).
fn list_ids(snap: &Snapshot, classes: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    let mut refs = Vec::new();
    for item in classes.try_iter()? {
        let item = item?;
        refs.push(if let Ok(name) = item.extract::<String>() {
            engine::ClassRef::Name(name)
        } else {
            engine::ClassRef::Id(
                item.extract()
                    .map_err(|_| invalid("classes", "expected class names or class ids"))?,
            )
        });
    }
    engine::class_ids(snap, &refs).py_err()
}

/// `queries=`: one string or a list of strings.
fn text_queries(queries: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(one) = queries.extract::<String>() {
        return Ok(vec![one]);
    }
    queries
        .extract::<Vec<String>>()
        .map_err(|_| invalid("queries", "expected a string or a list of strings"))
}

/// An empty batch of `argument` must still have the model's width.
fn check_empty_width(snap: &Snapshot, argument: &str, cols: usize) -> PyResult<()> {
    let d = engine::input_dim(snap).py_err()?;
    if cols != d {
        return Err(invalid(
            argument,
            format!("{cols} columns, the index's model takes {d}-D vectors"),
        ));
    }
    Ok(())
}

/// Text queries (the model's text head): `(D float32, I int64)`, larger scores better,
/// padded with -inf and -1. Words a query ignored (not in the vocabulary) are a `UserWarning`,
/// as the CLI's note on stderr.
pub fn search_text<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    queries: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    let texts = text_queries(queries)?;
    let query = a.query(snap)?;
    let cols = columns(a.k, engine::live_rows(snap));
    if texts.is_empty() {
        return out.knn(py, snap, &[], 0, cols, Scores::Larger);
    }
    let (hits, ignored) = interrupt::run(py, &Progress::Off, |cancel, _| {
        engine::search_text(snap, &texts, &query, cancel)
    })?;
    for (qi, words) in ignored.iter().enumerate() {
        if !words.is_empty() {
            let msg = format!(
                "query {qi} {:?}: ignored words not in the model's vocabulary: {}",
                texts[qi],
                words.join(", ")
            );
            let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &msg, 1)?;
        }
    }
    out.knn(py, snap, &hits, texts.len(), cols, Scores::Larger)
}

pub fn search<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let nq = view.nrows();
    let query = a.query(snap)?;
    let cols = columns(a.k, engine::live_rows(snap));
    if nq == 0 {
        check_empty_width(snap, "q", view.ncols())?;
        let scores = engine::search_scores(snap, &query).py_err()?;
        return out.knn(py, snap, &[], 0, cols, scores);
    }
    let (hits, scores) = interrupt::run(py, &Progress::Off, |cancel, _| {
        engine::search(snap, view, &query, cancel)
    })?;
    out.knn(py, snap, &hits, nq, cols, scores)
}

/// Where the negatives of a query by examples come from (Python's `negatives=` /
/// `random_negatives=`).
pub enum NegativesArg<'py> {
    Given(arrays::Rows<'py>),
    /// One array per example set (a list).
    PerSet(Bound<'py, PyAny>),
    Random(usize),
    Default,
}

/// `search_examples`' negatives (`negatives=` or `random_negatives=`, not both) and SVM
/// (`seed=`, `svm_c=`), checked and named.
pub fn example_args<'py>(
    negatives: Option<&Bound<'py, PyAny>>,
    random_negatives: Option<i128>,
    seed: i128,
    svm_c: Option<f64>,
) -> PyResult<(NegativesArg<'py>, engine::Svm)> {
    let seed = arrays::seed(seed, "seed")?;
    if let Some(c) = svm_c
        && !(c.is_finite() && c > 0.0)
    {
        return Err(invalid("svm_c", format!("{c}, expected a finite C > 0")));
    }
    let negatives = match (negatives, random_negatives) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "random_negatives",
                "give negatives or random_negatives, not both",
            ));
        }
        (Some(n), None) if n.is_instance_of::<PyList>() || n.is_instance_of::<PyTuple>() => {
            NegativesArg::PerSet(n.clone())
        }
        (Some(n), None) => NegativesArg::Given(arrays::rows(n, "negatives")?),
        (None, Some(n)) => NegativesArg::Random(arrays::count(n, "random_negatives", 1)?),
        (None, None) => NegativesArg::Default,
    };
    Ok((negatives, engine::Svm { seed, c: svm_c }))
}

/// A query by examples: `(D, I)` of shape `(1, k)`, larger scores better; with `examples` a
/// list (or tuple) of arrays, one row per set, each as its own call (`negatives` then a single
/// array shared by every set, or a list of one array per set).
pub fn search_examples<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    examples: &Bound<'py, PyAny>,
    negatives: NegativesArg<'py>,
    svm: &engine::Svm,
    a: &QueryArgs<'_, 'py>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    if examples.is_instance_of::<PyList>() || examples.is_instance_of::<PyTuple>() {
        return search_examples_batch(py, snap, examples, negatives, svm, a, out);
    }
    let pos = arrays::rows(examples, "examples")?;
    let pos = pos.view()?;
    let query = a.query(snap)?;
    let neg_view = match &negatives {
        NegativesArg::Given(r) => Some(r.view()?),
        NegativesArg::PerSet(_) => {
            return Err(invalid(
                "negatives",
                "a list of negatives (one array per set) needs a list of example sets",
            ));
        }
        _ => None,
    };
    let neg = match (&negatives, neg_view) {
        (NegativesArg::Given(_), Some(v)) => engine::ExampleNegatives::Given(v),
        (NegativesArg::Random(n), _) => engine::ExampleNegatives::Random(*n),
        _ => engine::ExampleNegatives::Default,
    };
    let cols = columns(a.k, engine::live_rows(snap));
    let (hits, scores) = py
        .detach(|| engine::search_examples(snap, pos, neg, svm, &query))
        .py_err()?;
    out.knn(py, snap, &[hits], 1, cols, scores)
}

/// The batch form of [`search_examples`]: `(D, I)` of shape `(sets, k)`.
fn search_examples_batch<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    examples: &Bound<'py, PyAny>,
    negatives: NegativesArg<'py>,
    svm: &engine::Svm,
    a: &QueryArgs<'_, 'py>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    let sets: Vec<arrays::Rows<'py>> = examples
        .try_iter()?
        .enumerate()
        .map(|(i, e)| arrays::rows(&e?, &format!("examples[{i}]")))
        .collect::<PyResult<_>>()?;
    if sets.is_empty() {
        return Err(invalid("examples", "an empty list of example sets"));
    }
    let pos: Vec<_> = sets
        .iter()
        .map(arrays::Rows::view)
        .collect::<PyResult<_>>()?;
    let own: Vec<arrays::Rows<'py>> = match &negatives {
        NegativesArg::PerSet(list) => list
            .try_iter()?
            .enumerate()
            .map(|(i, e)| arrays::rows(&e?, &format!("negatives[{i}]")))
            .collect::<PyResult<_>>()?,
        _ => Vec::new(),
    };
    if matches!(negatives, NegativesArg::PerSet(_)) && own.len() != sets.len() {
        return Err(invalid(
            "negatives",
            format!(
                "{} arrays for {} example sets (give one per set, or one array for all)",
                own.len(),
                sets.len()
            ),
        ));
    }
    let own: Vec<_> = own
        .iter()
        .map(arrays::Rows::view)
        .collect::<PyResult<_>>()?;
    let per_set: Vec<Option<_>> = (0..sets.len()).map(|i| own.get(i).copied()).collect();
    let shared_view = match &negatives {
        NegativesArg::Given(r) => Some(r.view()?),
        _ => None,
    };
    let shared = match (&negatives, shared_view) {
        (NegativesArg::Given(_), Some(v)) => engine::ExampleNegatives::Given(v),
        (NegativesArg::Random(n), _) => engine::ExampleNegatives::Random(*n),
        _ => engine::ExampleNegatives::Default,
    };
    let query = a.query(snap)?;
    let cols = columns(a.k, engine::live_rows(snap));
    let hits = py
        .detach(|| engine::search_examples_batch(snap, &pos, &per_set, shared, svm, &query))
        .py_err()?;
    out.knn(py, snap, &hits, hits.len(), cols, Scores::Larger)
}

/// Rows ranked by a given linear classifier of their codes: `(D, I)` of shape `(1, k)`.
pub fn search_classifier<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    classifier: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let values = np.call_method1("atleast_2d", (classifier,))?;
    let rows = arrays::rows(&values, "classifier")?;
    let view = rows.view()?;
    if view.nrows() != 1 {
        return Err(invalid(
            "classifier",
            format!(
                "shape ({}, {}); expected D + 1 values (1-D: the weights, then the bias)",
                view.nrows(),
                view.ncols()
            ),
        ));
    }
    let values = view
        .as_slice()
        .ok_or_else(|| invalid("classifier", "not contiguous"))?;
    let query = a.query(snap)?;
    let cols = columns(a.k, engine::live_rows(snap));
    let hits = py
        .detach(|| engine::search_classifier(snap, values, &query))
        .py_err()?;
    out.knn(py, snap, &[hits], 1, cols, Scores::Larger)
}

pub fn search_radius<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    radius: u32,
    filter: &FilterArgs<'_>,
    out: &ResultColumns,
) -> PyResult<Bound<'py, PyAny>> {
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let filter = filter.filter(snap)?;
    let hits = if view.nrows() == 0 {
        check_empty_width(snap, "q", view.ncols())?;
        Vec::new()
    } else {
        interrupt::run(py, &Progress::Off, |cancel, _| {
            engine::search_radius(snap, view, radius, filter.as_ref(), cancel)
        })?
    };
    out.radius(py, snap, &hits)
}

pub fn classify<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    x: &Bound<'py, PyAny>,
    top: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let n = view.nrows();
    let cols = columns(top, engine::classes(snap).len() as u64);
    if n == 0 {
        check_empty_width(snap, "x", view.ncols())?;
        return classified(py, &[], 0, cols);
    }
    let best = interrupt::run(py, &Progress::Off, |cancel, _| {
        engine::classify(snap, view, cols.max(1), cancel)
    })?;
    classified(py, &best, n, cols)
}

/// Classification results as `(scores float32, class ids int64)`, `(n, top)` each, padded
/// with -inf and -1.
pub fn classified<'py>(
    py: Python<'py>,
    best: &[Vec<(u32, f32)>],
    n: usize,
    top: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mut scores = vec![f32::NEG_INFINITY; n * top];
    let mut ids = vec![-1i64; n * top];
    for (r, row) in best.iter().enumerate() {
        for (j, &(id, s)) in row.iter().take(top).enumerate() {
            scores[r * top + j] = s;
            ids[r * top + j] = i64::from(id);
        }
    }
    Ok((
        arrays::matrix(py, scores, n, top)?,
        arrays::matrix(py, ids, n, top)?,
    ))
}

pub fn classes<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (id, name, _) in engine::classes(snap) {
        d.set_item(id, name)?;
    }
    Ok(d)
}

/// The class table as `(dim, [{"id", "name", "parent", "count", "sum"}])`, `sum` a float64
/// vector of `dim` values (FORMAT.md §5; `dim` is 0 without a class table).
pub fn class_sums<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<(usize, Bound<'py, PyList>)> {
    let (dim, classes) = engine::class_sums(snap);
    let out = PyList::empty(py);
    for c in classes {
        let d = PyDict::new(py);
        d.set_item("id", c.id)?;
        d.set_item("name", c.name)?;
        d.set_item("parent", c.parent)?;
        d.set_item("count", c.count)?;
        d.set_item("sum", arrays::vector(py, c.sum))?;
        out.append(d)?;
    }
    Ok((dim, out))
}

/// `classes` as `class_sums` gives them → the engine's records.
pub fn class_sums_in(classes: &Bound<'_, PyAny>) -> PyResult<Vec<engine::ClassSums>> {
    let mut out = Vec::new();
    for (i, item) in classes.try_iter()?.enumerate() {
        let item = item?;
        let field = |key: &str| {
            item.get_item(key).map_err(|_| {
                invalid(
                    "classes",
                    format!("entry {i} has no {key:?} (expected class_sums() entries)"),
                )
            })
        };
        let sum = field("sum")?;
        let np = item.py().import("numpy")?;
        let sum = np.call_method1("asarray", (sum, "float64"))?;
        let sum: Vec<f64> = np
            .call_method1("ravel", (sum,))?
            .call_method0("tolist")?
            .extract()?;
        let bad = |key: &str| invalid("classes", format!("entry {i}: {key:?} is out of range"));
        out.push(engine::ClassSums {
            id: field("id")?.extract().map_err(|_| bad("id"))?,
            name: field("name")?.extract()?,
            parent: field("parent")?.extract().map_err(|_| bad("parent"))?,
            count: field("count")?.extract().map_err(|_| bad("count"))?,
            sum,
        });
    }
    Ok(out)
}

/// The manifests a version skipped, as `inspect` lists them: `[{"version", "file", "error"}]`.
pub fn skipped<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyAny>> {
    let text = engine::skipped_json(snap).py_err()?;
    crate::arrays::json_loads(py, &text)
}

/// The stored vectors of rows `ids` (float32, `(len(ids), d)`).
pub fn reconstruct<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    ids: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let ids = arrays::ids(ids, "ids")?;
    let (values, dim) = py.detach(|| engine::reconstruct(snap, &ids)).py_err()?;
    arrays::matrix(py, values, ids.len(), dim)
}

/// `ivf_list_counts`: per query `(lists, passing, read)` as int64 arrays, or `None` when a
/// search with these arguments does not run the filtered IVF plan.
pub fn ivf_list_counts<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
    start: Option<&Bound<'py, PyAny>>,
    count: Option<i128>,
) -> PyResult<Bound<'py, PyAny>> {
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let query = a.query(snap)?;
    let start: Vec<usize> = match start {
        None => Vec::new(),
        Some(s) => positions(s)?,
    };
    let count = count.map(|c| arrays::count(c, "count", 1)).transpose()?;
    if view.nrows() == 0 {
        check_empty_width(snap, "q", view.ncols())?;
    }
    let got = interrupt::run(py, &Progress::Off, |cancel, _| {
        engine::ivf_list_counts(snap, view, &query, &start, count, cancel)
    })?;
    let Some(got) = got else {
        return Ok(py.None().into_bound(py));
    };
    let as_i64 = |v: &[u64]| -> Vec<i64> {
        v.iter()
            .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
            .collect()
    };
    let out = PyList::empty(py);
    for c in got {
        let lists: Vec<i64> = c.lists.iter().map(|&l| i64::from(l)).collect();
        let item = PyTuple::new(
            py,
            [
                arrays::vector(py, lists),
                arrays::vector(py, as_i64(&c.passing)),
                arrays::vector(py, as_i64(&c.read)),
            ],
        )?;
        out.append(item)?;
    }
    Ok(out.into_any())
}

/// `start=`: one non-negative position per query.
fn positions(s: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let mut out = Vec::new();
    for item in s.try_iter()? {
        let v: i128 = item?
            .extract()
            .map_err(|_| invalid("start", "expected one integer position per query"))?;
        out.push(arrays::count(v, "start", 0)?);
    }
    Ok(out)
}

/// `plan=`: per query a sequence of list ids, or `None` for the flat search.
fn plan_entries(plan: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Vec<u32>>>> {
    let mut out = Vec::new();
    for (qi, item) in plan.try_iter()?.enumerate() {
        let item = item?;
        if item.is_none() {
            out.push(None);
            continue;
        }
        let mut lists = Vec::new();
        for l in item
            .try_iter()
            .map_err(|_| invalid("plan", format!("query {qi}: expected list ids or None")))?
        {
            let v: i128 = l?
                .extract()
                .map_err(|_| invalid("plan", format!("query {qi}: expected integer list ids")))?;
            let l = u32::try_from(v)
                .map_err(|_| invalid("plan", format!("query {qi}: list {v} out of range")))?;
            lists.push(l);
        }
        out.push(Some(lists));
    }
    Ok(out)
}

/// `search_ivf_planned`: `(D, I)` as `search` returns them.
pub fn search_ivf_planned<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    plan: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let nq = view.nrows();
    let plan = plan_entries(plan)?;
    let query = a.query(snap)?;
    let cols = columns(a.k, engine::live_rows(snap));
    let out = ResultColumns::new(None, false)?;
    if nq == 0 && plan.is_empty() {
        check_empty_width(snap, "q", view.ncols())?;
        let scores = engine::search_scores(snap, &query).py_err()?;
        return out.knn(py, snap, &[], 0, cols, scores);
    }
    let (hits, scores) = interrupt::run(py, &Progress::Off, |cancel, _| {
        engine::search_ivf_planned(snap, view, &query, &plan, cancel)
    })?;
    out.knn(py, snap, &hits, nq, cols, scores)
}
