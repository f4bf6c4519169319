//! `codedb._codedb`: the engine as a Python extension module. `Model` (train, encode, decode,
//! save; `model.rs`), `Index` (the single writer of an index directory, whose queries are its
//! newest committed version's; `index.rs`) and `Snapshot` (one pinned version, and the one
//! implementation of every query method; `snapshot.rs`, `query.rs`). Every engine call goes
//! through `engine.rs`, with the GIL released (`py.detach`) while the engine works.

mod arrays;
mod attributes;
mod engine;
mod errors;
mod index;
mod interrupt;
mod model;
mod query;
mod query_methods;
mod result_columns;
mod snapshot;

use pyo3::prelude::*;

use errors::IntoPy;
use model::PyModel;

/// NCM classification against a class table given as counts and sums.
///
/// ``classes`` are entries as ``class_sums`` gives them; a sharded index adds its shards' counts
/// and sums (the table is additive) and classifies here, exactly as one index holding every row
/// would (Mensink et al. TPAMI 2013, eq. 2 and 9).
///
/// Parameters
/// ----------
/// model : Model
///     The model the table's index encodes with.
/// dim : int
///     The sums' dimension.
/// classes : iterable of dict
///     ``{"id", "name", "parent", "count", "sum"}`` entries.
/// x : array_like, shape (n, d)
///     Descriptors (an empty batch gives ``(0, top)`` arrays).
/// top : int, default 5
///     Classes per row, as ``Index.classify``.
///
/// Returns
/// -------
/// scores : numpy.ndarray of float32, shape (n, top)
/// ids : numpy.ndarray of int64, shape (n, top)
///
/// Raises
/// ------
/// InvalidArgument
///     Sums of the wrong length or non-finite, a class id twice, top < 1.
/// NotFoundError
///     No classes.
///
/// Examples
/// --------
/// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
/// >>> dim, table = idx.class_sums()
/// >>> codedb.classify_sums(model, dim, table, x[[0, 300]], top=1)[1].tolist()
/// [[0], [1]]
#[pyfunction]
#[pyo3(signature = (model, dim, classes, x, top=5))]
fn classify_sums<'py>(
    py: Python<'py>,
    model: &PyModel,
    dim: i128,
    classes: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    top: i128,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let top = arrays::count(top, "top", 1)?;
    let dim = arrays::count(dim, "dim", 0)?;
    let records = query::class_sums_in(classes)?;
    let cols = query::columns(top, records.len() as u64);
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let n = view.nrows();
    if n == 0 {
        return query::classified(py, &[], 0, cols);
    }
    let m = &model.model;
    let best = py
        .detach(|| engine::classify_sums(m, dim, records, view, cols.max(1)))
        .py_err()?;
    query::classified(py, &best, n, cols)
}

/// The codedb pipeline SPEC of a FAISS index factory string (the CLI's ``codedb spec
/// --from-faiss``).
///
/// Parameters
/// ----------
/// factory : str
///     A FAISS ``index_factory`` string, e.g. ``"IVF256,PQ16"`` or ``"PQ32x4fs"``.
/// d : int, optional
///     The descriptors' dimension (FAISS's ``d``); needed only where the string leaves a size
///     to it (plain ``"LSH"`` takes ``d`` bits).
///
/// Returns
/// -------
/// spec : str
///     The pipeline SPEC for ``codedb.train``.
/// notes : list of str
///     What differs from FAISS, or what to set at build or search time instead.
///
/// Raises
/// ------
/// InvalidArgument
///     A part with no codedb counterpart (HNSW, IMI, …) or that does not parse, named.
///
/// Examples
/// --------
/// >>> codedb.spec_from_faiss("IVF256,PQ16")[0]
/// 'ivf:256,pq:16x8'
/// >>> codedb.spec_from_faiss("PQ32x4fs")[0]
/// 'pq4:32'
#[pyfunction]
#[pyo3(signature = (factory, d=None))]
fn spec_from_faiss(factory: &str, d: Option<i128>) -> PyResult<(String, Vec<String>)> {
    let dim = d.map(|d| arrays::count(d, "d", 1)).transpose()?;
    engine::spec_from_faiss(factory, dim).py_err()
}

/// The filtered IVF plan's decision for one query from its lists' counts in probe order.
///
/// The rule one index follows (docs/filtering.md, "IVF"; Jégou et al., TPAMI 2011, §III-A): the
/// ``nprobe`` nearest lists are read; then the query stops once its lists hold its depth (k, or R when
/// re-ranked, capped at the live rows) of passing rows or every list was read, and goes to the flat
/// search over the passing rows once probing on would read more rows than that search. A sharded index
/// gives it the counts of :meth:`Index.ivf_list_counts` summed over its shards and the live rows of
/// them all, and so decides what one index holding every row decides.
///
/// Parameters
/// ----------
/// passing : sequence of int
///     Per list in probe order, its live rows the filter passes.
/// read : sequence of int
///     Per list in probe order, its live rows (as long as ``passing``).
/// nprobe : int
///     Lists every query reads at least.
/// lists : int
///     The model's lists (``Model.ivf_lists``).
/// k : int
///     Results per query.
/// rerank : int, optional, default None
///     R when re-ranked.
/// live : int, default 0
///     Live rows of the whole index.
///
/// Returns
/// -------
/// decision : int or str or None
///     ``n``: scan the first n lists of the probe order; ``"flat"``: the flat search over the passing
///     rows; None: the counts end before the rule decides (count more lists).
///
/// Raises
/// ------
/// InvalidArgument
///     ``passing`` and ``read`` of different lengths, a count out of range.
///
/// Examples
/// --------
/// >>> codedb.ivf_probe_decision([6, 4, 9], [100, 100, 100], nprobe=2, lists=8, k=10, live=10**6)
/// 2
/// >>> codedb.ivf_probe_decision([1, 0], [1000, 1000], nprobe=2, lists=8, k=10, live=10**6)
/// 'flat'
#[pyfunction]
#[pyo3(signature = (passing, read, nprobe, lists, k, rerank=None, live=0))]
#[allow(clippy::too_many_arguments)]
fn ivf_probe_decision<'py>(
    py: Python<'py>,
    passing: Vec<i128>,
    read: Vec<i128>,
    nprobe: i128,
    lists: i128,
    k: i128,
    rerank: Option<i128>,
    live: i128,
) -> PyResult<Bound<'py, PyAny>> {
    if passing.len() != read.len() {
        return Err(errors::invalid(
            "read",
            format!("{} counts, passing has {}", read.len(), passing.len()),
        ));
    }
    let counts = |v: &[i128], name: &str| -> PyResult<Vec<u64>> {
        v.iter()
            .map(|&c| arrays::count(c, name, 0).map(|c| c as u64))
            .collect()
    };
    let (p, r) = (counts(&passing, "passing")?, counts(&read, "read")?);
    let d = engine::ivf_probe_decision(
        &p,
        &r,
        arrays::count(nprobe, "nprobe", 1)?,
        arrays::count(lists, "lists", 1)?,
        arrays::count(k, "k", 1)?,
        rerank.map(|r| arrays::count(r, "rerank", 1)).transpose()?,
        arrays::count(live, "live", 0)? as u64,
    );
    Ok(match d {
        engine::ProbeDecision::Lists(n) => n.into_pyobject(py)?.into_any(),
        engine::ProbeDecision::Flat => "flat".into_pyobject(py)?.into_any(),
        engine::ProbeDecision::Undecided => py.None().into_bound(py),
    })
}

/// Whether a probed IVF search under a filter in an exact mode scans every passing row instead of its
/// lists.
///
/// The rule one index follows (docs/filtering.md, "IVF"): when the passing live rows are no more than
/// the ``nprobe`` of ``lists`` lists hold (nprobe/K of the live rows), or those lists are expected to
/// hold fewer than k of them, every query scans the passing rows. A sharded index gives it the passing
/// and live rows of all its shards (:meth:`Index.passing_rows`).
///
/// Parameters
/// ----------
/// passing : int
///     Live rows the filter passes.
/// live : int
///     Live rows.
/// nprobe : int
///     Lists a query probes.
/// lists : int
///     The model's lists (``Model.ivf_lists``).
/// k : int
///     Results per query.
///
/// Returns
/// -------
/// scans : bool
///     True: every query scans the passing rows; False: each its ``nprobe`` lists.
///
/// Raises
/// ------
/// InvalidArgument
///     A count out of range.
///
/// Examples
/// --------
/// >>> codedb.ivf_filter_scans_passing(passing=50, live=10**6, nprobe=4, lists=64, k=10)
/// True
/// >>> codedb.ivf_filter_scans_passing(passing=10**5, live=10**6, nprobe=4, lists=64, k=10)
/// False
#[pyfunction]
#[pyo3(signature = (passing, live, nprobe, lists, k))]
fn ivf_filter_scans_passing(
    passing: i128,
    live: i128,
    nprobe: i128,
    lists: i128,
    k: i128,
) -> PyResult<bool> {
    Ok(engine::ivf_filter_scans_passing(
        arrays::count(passing, "passing", 0)? as u64,
        arrays::count(live, "live", 0)? as u64,
        arrays::count(nprobe, "nprobe", 1)?,
        arrays::count(lists, "lists", 1)?,
        arrays::count(k, "k", 1)?,
    ))
}

/// Whether a search in ``mode`` ranks larger scores first: the inner-product modes (the
/// engine's ``SearchMode::larger_is_better``), what a merge of several indexes' results sorts
/// by (``codedb.distributed``).
///
/// Parameters
/// ----------
/// mode : str, optional, default None
///     A mode name as ``search`` takes it (None, the natural mode of any codes, ranks smaller
///     first; so does a name no mode has, which ``search`` refuses).
///
/// Returns
/// -------
/// bool
///
/// Examples
/// --------
/// >>> codedb._codedb.larger_is_better("adc-ip"), codedb._codedb.larger_is_better("hamming")
/// (True, False)
#[pyfunction]
#[pyo3(signature = (mode=None))]
fn larger_is_better(mode: Option<&str>) -> bool {
    engine::larger_is_better(mode)
}

#[pymodule]
fn _codedb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The Cargo package version: the one `codedb --version` prints and the wheel's metadata
    // carries (maturin reads it from python/Cargo.toml).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyModel>()?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_function(wrap_pyfunction!(model::train, m)?)?;
    m.add_function(wrap_pyfunction!(classify_sums, m)?)?;
    m.add_function(wrap_pyfunction!(spec_from_faiss, m)?)?;
    m.add_function(wrap_pyfunction!(larger_is_better, m)?)?;
    m.add_function(wrap_pyfunction!(ivf_probe_decision, m)?)?;
    m.add_function(wrap_pyfunction!(ivf_filter_scans_passing, m)?)?;
    // The warning an open that fell back raises, here too (the one class of `codedb._errors`),
    // so code holding the native module (`codedb.distributed`) can subclass it.
    let errors = m.py().import("codedb._errors")?;
    m.add("FallbackWarning", errors.getattr("FallbackWarning")?)?;
    Ok(())
}
