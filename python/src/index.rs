//! `codedb.Index`: the single writer of an index directory. Its queries are those of its newest
//! committed version (`Snapshot`'s methods, one implementation).

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;

use crate::arrays;
use crate::arrays::json_loads;
use crate::engine;
use crate::errors::{self, IntoPy};
use crate::interrupt::{self, Progress};
use crate::model::PyModel;
use crate::query_methods::query_methods;
use crate::snapshot::PySnapshot;

/// An open index and its decoded model.
struct Open {
    index: engine::Index,
    model: engine::Model,
}

/// The single writer of an index directory; its queries read the newest committed version.
///
/// One process (one handle) holds an index's writer lock at a time; readers use ``Snapshot``.
/// Writes (``add``, ``upsert``, ``delete``, ``add_class``) are staged and published together by
/// ``commit`` as a new version. Query methods are ``Snapshot``'s, over the newest version.
///
/// Ids are unsigned 64-bit (0 to 2**64-2; 2**64-1 is reserved): ``add`` returns them as uint64,
/// ``ids=`` takes uint64 or non-negative int64, and ``I`` holds each id's 64 bits as int64
/// (FAISS's type), so ``I.view(numpy.uint64)`` reads ids at or above 2**63 and -1 is padding.
///
/// Examples
/// --------
/// >>> with codedb.Index.create(path, model) as idx:
/// ...     ids = idx.add(x[:10])
/// ...     idx.commit()
/// 2
/// >>> ids.dtype, ids[:3].tolist()
/// (dtype('uint64'), [0, 1, 2])
#[pyclass(module = "codedb._codedb", name = "Index", frozen)]
pub struct PyIndex {
    open: RwLock<Option<Arc<Open>>>,
    path: PathBuf,
}

impl PyIndex {
    fn new(index: engine::Index, model: engine::Model, path: PathBuf) -> PyIndex {
        PyIndex {
            open: RwLock::new(Some(Arc::new(Open { index, model }))),
            path,
        }
    }

    /// The open index, or `ClosedError`. Calls keep their `Arc`, so `close` waits for none.
    fn get(&self) -> PyResult<Arc<Open>> {
        self.open
            .read()
            .clone()
            .ok_or_else(|| errors::closed(&format!("index {}", self.path.display())))
    }

    fn newest(&self) -> PyResult<engine::Snapshot> {
        Ok(engine::snapshot(&self.get()?.index))
    }

    /// The version this index's queries read: its newest committed one.
    fn queried(&self) -> PyResult<Arc<engine::Snapshot>> {
        Ok(Arc::new(self.newest()?))
    }

    /// The labels, ids and list options of a write, checked before anything is staged.
    fn writable(&self) -> PyResult<Arc<Open>> {
        let open = self.get()?;
        engine::check_writable(&open.index).py_err()?;
        Ok(open)
    }
}

query_methods!(
    PyIndex,
    {
        /// Creates an empty index at ``path`` with ``model`` (committed as version 1).
        ///
        /// Parameters
        /// ----------
        /// path : str or os.PathLike
        ///     The index directory (must not exist, or be empty).
        /// model : Model
        ///     The model that encodes the rows.
        /// store_vectors : str, optional, default None
        ///     "f32" or "f16": keep every row's descriptor for re-ranking, the exact modes and
        ///     ``reconstruct``.
        /// schema : str, optional, default None
        ///     The index's attribute columns, ``"name:type,…"`` (types ``int``, ``float``,
        ///     ``timestamp``, ``bool``, ``string``, ``tags``; the CLI's ``--schema``), which
        ///     ``add(attributes=)`` fills and ``where=`` tests; more with :meth:`add_column`.
        ///
        /// Returns
        /// -------
        /// Index
        ///
        /// Raises
        /// ------
        /// AlreadyExistsError
        ///     An index exists at ``path``.
        /// InvalidArgument
        ///     An unknown ``store_vectors``, a ``schema`` that does not parse (naming the
        ///     column).
        /// IoError
        ///     The directory cannot be written.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model, store_vectors="f16", schema="year:int,tags:tags")
        /// >>> idx.version, len(idx)
        /// (1, 0)
        #[staticmethod]
        #[pyo3(signature = (path, model, store_vectors=None, schema=None))]
        fn create(
            py: Python<'_>,
            path: PathBuf,
            model: &PyModel,
            store_vectors: Option<&str>,
            schema: Option<&str>,
        ) -> PyResult<PyIndex> {
            let m = model.model.clone();
            let index = py
                .detach(|| engine::create(&path, &m, store_vectors, schema))
                .py_err()?;
            Ok(PyIndex::new(index, (*m).clone(), path))
        }

        /// Builds an index at ``path`` from ``x`` in one commit (the CLI's ``codedb build``).
        ///
        /// Parameters
        /// ----------
        /// path : str or os.PathLike
        ///     The index directory (must not exist).
        /// model : Model
        ///     The model that encodes the rows.
        /// x : array_like, shape (n, d)
        ///     Descriptors.
        /// ids : array_like of int, optional, default None
        ///     One id per row (uint64, or non-negative int64; default 0..n-1).
        /// labels : array_like of int, optional, default None
        ///     One class id per row: stored on the rows, and the class table made from them.
        /// store_vectors : str, optional, default None
        ///     "f32" or "f16": keep the descriptors.
        /// lists : str, optional, default None
        ///     Inverted lists: "label" (each row's label) or "nearest" (its nearest class mean).
        /// attributes : dict, pandas.DataFrame or pyarrow.Table, optional, default None
        ///     Attribute columns stored with the rows, one value per row each, for filters
        ///     (``where=``): numpy bool → ``bool``, integers → ``int``, floats → ``float``,
        ///     ``datetime64`` → ``timestamp``, strings → ``string``, a list of strings per row
        ///     → ``tags``. They make the index's schema (docs/filtering.md) unless ``schema``
        ///     gives it.
        /// progress : bool or callable, optional, default None
        ///     ``True``: a bar on stderr; a callable: called as ``progress("build", "rows", done,
        ///     total)`` as rows are encoded. Ctrl-C stops the build (``KeyboardInterrupt``) and
        ///     leaves no index.
        /// schema : str, optional, default None
        ///     The index's attribute columns, ``"name:type,…"`` (as :meth:`create`); the
        ///     ``attributes`` given must fit it, and columns they leave out take defaults.
        ///
        /// Returns
        /// -------
        /// Index
        ///
        /// Raises
        /// ------
        /// AlreadyExistsError
        ///     An index exists at ``path``, or an id appears twice.
        /// InvalidArgument
        ///     Wrong shapes, NaN, a negative id, an unknown option value.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x, ids=np.arange(600, dtype=np.uint64) + 2**63)
        /// >>> int(idx.search(x[:1], k=1)[1].view(np.uint64)[0, 0]) == 2**63
        /// True
        #[staticmethod]
        #[pyo3(signature = (path, model, x, ids=None, labels=None, store_vectors=None, lists=None, attributes=None, progress=None, schema=None))]
        #[allow(clippy::too_many_arguments)]
        fn build(
            py: Python<'_>,
            path: PathBuf,
            model: &PyModel,
            x: &Bound<'_, PyAny>,
            ids: Option<&Bound<'_, PyAny>>,
            labels: Option<&Bound<'_, PyAny>>,
            store_vectors: Option<&str>,
            lists: Option<&str>,
            attributes: Option<&Bound<'_, PyAny>>,
            progress: Option<&Bound<'_, PyAny>>,
            schema: Option<&str>,
        ) -> PyResult<PyIndex> {
            let progress = Progress::from_arg(progress)?;
            let rows = arrays::rows(x, "x")?;
            let view = rows.view()?;
            let ids = ids.map(|i| arrays::ids(i, "ids")).transpose()?;
            let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
            let attributes = attributes
                .map(|a| crate::attributes::attributes(a, view.nrows()))
                .transpose()?;
            let m = model.model.clone();
            let b = engine::Build {
                ids: ids.as_deref(),
                labels: labels.as_deref(),
                store_vectors,
                lists,
                attributes: attributes.as_ref(),
                schema,
            };
            let total = view.nrows() as u64;
            let index = interrupt::run(py, &progress, |cancel, sink| {
                engine::build(&path, &m, view, &b, cancel, &mut |done| {
                    sink.send("build", "rows", done as u64, total);
                })
            })?;
            Ok(PyIndex::new(index, (*m).clone(), path))
        }

        /// Opens the index at ``path`` as its single writer.
        ///
        /// When the newest manifest(s) do not read, it opens at the newest version that does, raises a
        /// :class:`codedb.FallbackWarning` (the CLI's text, naming ``path``), lists them in
        /// ``skipped_manifests``, and refuses writes (:class:`codedb.FellBackError`) until
        /// ``Index.recover`` accepts the loss.
        ///
        /// Parameters
        /// ----------
        /// path : str or os.PathLike
        ///     The index directory.
        ///
        /// Returns
        /// -------
        /// Index
        ///
        /// Raises
        /// ------
        /// LockedError
        ///     Another writer holds the index.
        /// NotFoundError
        ///     ``path`` is not an index.
        /// CorruptError
        ///     No manifest reads.
        ///
        /// Examples
        /// --------
        /// >>> codedb.Index.build(path, model, x).close()
        /// >>> with codedb.Index.open(path) as idx:
        /// ...     len(idx)
        /// 600
        #[staticmethod]
        fn open(py: Python<'_>, path: PathBuf) -> PyResult<PyIndex> {
            let (index, model) = py
                .detach(|| {
                    let index = engine::open(&path)?;
                    let model = engine::index_model(&index)?;
                    Ok((index, model))
                })
                .py_err()?;
            let snap = engine::snapshot(&index);
            errors::warn_fell_back(py, &path, snap.version(), snap.skipped_manifests())?;
            Ok(PyIndex::new(index, model, path))
        }

        /// Accepts the loss of versions whose manifests do not read (the CLI's ``codedb recover DIR
        /// --to-version N``): keeps version ``to_version`` (the newest that reads), sets the damaged
        /// manifests aside in ``path/recovered/`` and publishes the kept version again, writable.
        ///
        /// Parameters
        /// ----------
        /// path : str or os.PathLike
        ///     The index directory (no writer may hold it).
        /// to_version : int
        ///     The version to keep: the newest one whose manifest reads.
        ///
        /// Returns
        /// -------
        /// dict
        ///     The recovery record, as ``codedb recover --json`` prints it: ``kept_version``,
        ///     ``published_version``, ``dropped`` (each damaged manifest, its error and where it was
        ///     moved), ``version``.
        ///
        /// Raises
        /// ------
        /// InvalidArgument
        ///     ``to_version`` is not the newest readable version, or nothing needs recovering.
        /// LockedError
        ///     A writer holds the index.
        ///
        /// Examples
        /// --------
        /// >>> codedb.Index.build(path, model, x).close()
        /// >>> codedb.Index.recover(path, to_version=2)
        /// Traceback (most recent call last):
        /// ...
        /// codedb._errors.InvalidArgument: ...
        #[staticmethod]
        fn recover<'py>(
            py: Python<'py>,
            path: PathBuf,
            to_version: i128,
        ) -> PyResult<Bound<'py, PyAny>> {
            let to_version = arrays::seed(to_version, "to_version")?;
            let text = py.detach(|| engine::recover(&path, to_version)).py_err()?;
            json_loads(py, &text)
        }

        /// Adds the rows of ``x``, visible at the next ``commit``.
        ///
        /// Every argument is checked before anything is staged: a failed add stages nothing.
        ///
        /// Parameters
        /// ----------
        /// x : array_like, shape (n, d)
        ///     Descriptors (float32; float64, float16, uint8 converted).
        /// ids : array_like of int, optional, default None
        ///     One id per row: uint64, or non-negative int64 (default: assigned, above every id ever
        ///     stored). An id already live is ``AlreadyExistsError`` (use ``upsert``).
        /// labels : array_like of int, optional, default None
        ///     One class id per row (added to its class's mean when the index has a class table).
        /// lists : str, optional, default None
        ///     "label" or "nearest": file the rows under inverted lists.
        /// attributes : dict, pandas.DataFrame or pyarrow.Table, optional, default None
        ///     Attribute columns of the rows (as ``Index.build`` takes them); a column of the
        ///     index left out takes its default, a column it lacks is ``InvalidArgument``.
        /// progress : bool or callable, optional, default None
        ///     ``True``: a bar on stderr; a callable: called as ``progress("add", "rows", done,
        ///     total)`` as rows are encoded. Ctrl-C stops the add (``KeyboardInterrupt``) and stages
        ///     nothing.
        ///
        /// Returns
        /// -------
        /// numpy.ndarray of uint64, shape (n,)
        ///     The rows' ids.
        ///
        /// Raises
        /// ------
        /// AlreadyExistsError
        ///     A given id is already live.
        /// InvalidArgument
        ///     Wrong width, NaN, a negative id, labels of the wrong length or not a class, the id space
        ///     exhausted.
        /// FellBackError
        ///     The index opened at an older version (see ``Index.open``).
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model)
        /// >>> idx.add(x[:3], ids=[2**64 - 2, 7, 8]).tolist()
        /// [18446744073709551614, 7, 8]
        /// >>> idx.add(x[3:4], ids=[-1])
        /// Traceback (most recent call last):
        /// ...
        /// codedb._errors.InvalidArgument: invalid argument ids: -1 is negative (ids are 0 to 2⁶⁴−2; pass uint64 for ids ≥ 2⁶³)
        #[pyo3(signature = (x, ids=None, labels=None, lists=None, attributes=None, progress=None))]
        #[allow(clippy::too_many_arguments)]
        fn add<'py>(
            &self,
            py: Python<'py>,
            x: &Bound<'py, PyAny>,
            ids: Option<&Bound<'py, PyAny>>,
            labels: Option<&Bound<'py, PyAny>>,
            lists: Option<&str>,
            attributes: Option<&Bound<'py, PyAny>>,
            progress: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let progress = Progress::from_arg(progress)?;
            let open = self.writable()?;
            let rows = arrays::rows(x, "x")?;
            let view = rows.view()?;
            let ids = ids.map(|i| arrays::ids(i, "ids")).transpose()?;
            let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
            let attributes = attributes
                .map(|a| crate::attributes::attributes(a, view.nrows()))
                .transpose()?;
            let total = view.nrows() as u64;
            let added = interrupt::run(py, &progress, |cancel, sink| {
                let heard = |done: usize| sink.send("add", "rows", done as u64, total);
                let adding = engine::Adding {
                    ids: ids.as_deref(),
                    labels: labels.as_deref(),
                    lists,
                    keep_class_stats: false,
                    attributes: attributes.as_ref(),
                    progress: &heard,
                };
                engine::add(&open.index, view, &adding, cancel)
            })?;
            Ok(arrays::vector(py, added))
        }

        /// Adds rows replacing the live rows of their ids (the CLI's ``add --upsert``), at the next
        /// ``commit``: the old row is deleted in the same commit.
        ///
        /// Parameters
        /// ----------
        /// x : array_like, shape (n, d)
        ///     Descriptors.
        /// ids : array_like of int
        ///     One id per row (required).
        /// labels : array_like of int, optional, default None
        ///     One class id per row.
        /// lists : str, optional, default None
        ///     "label" or "nearest".
        /// keep_class_stats : bool, default False
        ///     Leave replaced rows in their classes' counts and sums (needed without stored vectors).
        /// attributes : dict, pandas.DataFrame or pyarrow.Table, optional, default None
        ///     The new rows' attribute columns (as ``add``); they replace the old rows' values.
        /// progress : bool or callable, optional, default None
        ///     ``True``: a bar on stderr; a callable: called as ``progress("upsert", "rows", done,
        ///     total)`` as rows are encoded. Ctrl-C stops the upsert (``KeyboardInterrupt``) and
        ///     stages nothing.
        ///
        /// Returns
        /// -------
        /// int
        ///     How many live rows were replaced.
        ///
        /// Raises
        /// ------
        /// InvalidArgument
        ///     As ``add``; replacing labelled rows of an index without stored vectors (unless
        ///     ``keep_class_stats``).
        /// FellBackError
        ///     The index opened at an older version.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model)
        /// >>> idx.add(x[:2], ids=[1, 2]).tolist()
        /// [1, 2]
        /// >>> idx.upsert(x[5:7], ids=[2, 3])
        /// 1
        #[pyo3(signature = (x, ids, labels=None, lists=None, keep_class_stats=false, attributes=None, progress=None))]
        #[allow(clippy::too_many_arguments)]
        fn upsert(
            &self,
            py: Python<'_>,
            x: &Bound<'_, PyAny>,
            ids: &Bound<'_, PyAny>,
            labels: Option<&Bound<'_, PyAny>>,
            lists: Option<&str>,
            keep_class_stats: bool,
            attributes: Option<&Bound<'_, PyAny>>,
            progress: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<u64> {
            let progress = Progress::from_arg(progress)?;
            let open = self.writable()?;
            let rows = arrays::rows(x, "x")?;
            let view = rows.view()?;
            let ids = arrays::ids(ids, "ids")?;
            let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
            let attributes = attributes
                .map(|a| crate::attributes::attributes(a, view.nrows()))
                .transpose()?;
            let total = view.nrows() as u64;
            interrupt::run(py, &progress, |cancel, sink| {
                let heard = |done: usize| sink.send("upsert", "rows", done as u64, total);
                let adding = engine::Adding {
                    ids: Some(&ids),
                    labels: labels.as_deref(),
                    lists,
                    keep_class_stats,
                    attributes: attributes.as_ref(),
                    progress: &heard,
                };
                engine::upsert(&open.index, view, &adding, cancel)
            })
        }

        /// Publishes everything staged as a new version (durable when it returns).
        ///
        /// Returns
        /// -------
        /// int
        ///     The new version's number (the current one when nothing was staged).
        ///
        /// Raises
        /// ------
        /// FellBackError
        ///     The index opened at an older version.
        /// IoError
        ///     A write or fsync failed (the handle refuses further writes; reopen).
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model)
        /// >>> _ = idx.add(x[:4]); idx.commit()
        /// 2
        fn commit(&self, py: Python<'_>) -> PyResult<u64> {
            let open = self.get()?;
            py.detach(|| engine::commit(&open.index)).py_err()
        }

        /// Deletes the rows of these ids, at the next ``commit`` (FAISS's ``remove_ids``).
        ///
        /// Parameters
        /// ----------
        /// ids : array_like of int
        ///     Row ids (uint64, or non-negative int64).
        /// ignore_missing : bool, default False
        ///     Skip ids that are not live instead of refusing the batch (the CLI's
        ///     ``delete --ignore-missing``).
        /// keep_class_stats : bool, default False
        ///     Leave deleted rows in their classes' counts and sums (needed to delete labelled rows of
        ///     an index without stored vectors).
        ///
        /// Returns
        /// -------
        /// int
        ///     Rows deleted.
        ///
        /// Raises
        /// ------
        /// NotFoundError
        ///     An id that is not live (without ``ignore_missing``); nothing is deleted.
        /// InvalidArgument
        ///     No ids, an id twice, a negative id.
        /// FellBackError
        ///     The index opened at an older version.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> idx.delete([1, 2, 10**6], ignore_missing=True)
        /// 2
        #[pyo3(signature = (ids, ignore_missing=false, keep_class_stats=false))]
        fn delete(
            &self,
            py: Python<'_>,
            ids: &Bound<'_, PyAny>,
            ignore_missing: bool,
            keep_class_stats: bool,
        ) -> PyResult<usize> {
            let open = self.get()?;
            let ids = arrays::ids(ids, "ids")?;
            let (deleted, _missing) = py
                .detach(|| engine::delete_rows(&open.index, &ids, ignore_missing, keep_class_stats))
                .py_err()?;
            Ok(deleted)
        }

        /// Whether each id is live as the next commit will see it: committed rows not staged
        /// for deletion, and staged rows — the check ``add`` makes before refusing a duplicate
        /// id, asked without writing.
        ///
        /// Parameters
        /// ----------
        /// ids : array_like of int
        ///     The ids to look up (non-negative integers).
        ///
        /// Returns
        /// -------
        /// numpy.ndarray of bool
        ///     One entry per id, in ``ids``' order.
        ///
        /// Raises
        /// ------
        /// InvalidArgument
        ///     An id that is not a non-negative integer.
        /// ClosedError
        ///     The index was closed.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> idx.holds([0, 10**6])
        /// array([ True, False])
        fn holds<'py>(
            &self,
            py: Python<'py>,
            ids: &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let open = self.get()?;
            let ids = arrays::ids(ids, "ids")?;
            let held = py
                .detach(|| open.index.holds(&ids))
                .map_err(codedb::Error::from)
                .py_err()?;
            Ok(arrays::vector(py, held))
        }

        /// Adds attribute column ``name`` to the index's schema, visible at the next commit;
        /// rows written before it read ``default``. Columns are never removed or retyped.
        ///
        /// Parameters
        /// ----------
        /// name : str
        ///     The new column's name.
        /// type : str
        ///     ``"int"``, ``"float"``, ``"timestamp"``, ``"bool"``, ``"string"`` or ``"tags"``.
        /// default : object, optional, default None
        ///     The value older rows (and writes that leave the column out) read: an int, a
        ///     float, a bool, a str, a list of str, or for a timestamp a ``numpy.datetime64``,
        ///     ``datetime`` or ISO string; ``None``: the type's zero (0, 0.0, false, "", no
        ///     tags, the epoch).
        ///
        /// Raises
        /// ------
        /// InvalidArgument
        ///     An unknown type, a name taken or not allowed, a default of another type.
        /// ClosedError
        ///     The index was closed.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model, schema="year:int")
        /// >>> idx.add_column("source", "string", default="flickr")
        /// >>> idx.commit()
        /// 2
        #[pyo3(signature = (name, r#type, default=None))]
        fn add_column(
            &self,
            py: Python<'_>,
            name: &str,
            r#type: &str,
            default: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<()> {
            let open = self.get()?;
            let default = default
                .map(|d| crate::attributes::default_value(d, r#type))
                .transpose()?;
            py.detach(|| engine::add_column(&open.index, name, r#type, default))
                .py_err()
        }

        /// The CLI's ``codedb compact``: seals the active log into a segment (one commit, if it
        /// holds rows), merges segments by the policy and drops their deleted rows (one commit), then
        /// collects garbage.
        ///
        /// Parameters
        /// ----------
        /// full : bool, default False
        ///     Merge every segment into one (default: the tiered policy, which merges runs of at least
        ///     4 similar-sized segments).
        /// deleted_threshold : float, default 0.2
        ///     Rewrite a segment on its own when at least this fraction of its rows is deleted (0 to
        ///     1; 0 = any deleted row).
        /// progress : bool or callable, optional, default None
        ///     ``True``: a bar on stderr; a callable: called as ``progress(step, "rows", done,
        ///     total)`` for each merged column, ``step`` naming it (``"compact codes"``, or
        ///     ``"compact 2/3 codes"`` when several merges run). Ctrl-C stops the compaction
        ///     (``KeyboardInterrupt``) and publishes no merge.
        ///
        /// Returns
        /// -------
        /// dict
        ///     ``codedb compact --json``'s report: ``version`` (None: nothing to compact),
        ///     ``based_on``, ``merges`` (each with its ``reason``, ``rows``, ``dropped``),
        ///     ``deleted_rows_kept``, ``gc``, ``gc_error``, ``sealed_log_rows``, ``sealed_version``.
        ///
        /// Raises
        /// ------
        /// InvalidArgument
        ///     ``deleted_threshold`` outside 0 to 1.
        /// FellBackError
        ///     The index opened at an older version.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model)
        /// >>> _ = idx.add(x); _ = idx.commit(); _ = idx.delete([0, 1]); _ = idx.commit()
        /// >>> r = idx.compact(deleted_threshold=0)
        /// >>> r["sealed_log_rows"], r["sealed_version"], r["deleted_rows_kept"], len(idx)
        /// (600, 4, 0, 598)
        #[pyo3(signature = (full=false, deleted_threshold=0.2, progress=None))]
        fn compact<'py>(
            &self,
            py: Python<'py>,
            full: bool,
            deleted_threshold: f64,
            progress: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let progress = Progress::from_arg(progress)?;
            let open = self.get()?;
            let text = interrupt::run(py, &progress, |cancel, sink| {
                let sink = sink.clone();
                let heard: codedb::CompactProgressFn =
                    Arc::new(move |p: &codedb::CompactProgress| {
                        sink.send(&p.step(), "rows", p.done, p.total)
                    });
                engine::compact_sealed(&open.index, full, deleted_threshold, cancel, heard)
            })?;
            json_loads(py, &text)
        }

        /// Removes files no retained version references (the CLI's ``codedb gc``).
        ///
        /// Returns
        /// -------
        /// dict
        ///     ``codedb gc --json``'s report: ``removed`` (file names), ``removed_bytes``,
        ///     ``kept_versions``, …
        ///
        /// Raises
        /// ------
        /// FellBackError
        ///     The index opened at an older version (which files a damaged manifest names is unknown).
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> sorted(idx.gc())[:3]
        /// ['kept_versions', 'removed', 'removed_bytes']
        fn gc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            let open = self.get()?;
            let text = py.detach(|| engine::gc(&open.index)).py_err()?;
            json_loads(py, &text)
        }

        /// Stages a class, visible at the next ``commit``: its mean from images ``x``, or a given
        /// ``mean``, or — with neither — zero-shot from ``parent`` (Mensink et al. TPAMI 2013, §5).
        ///
        /// Parameters
        /// ----------
        /// name : str
        ///     The class name (unique).
        /// x : array_like, shape (n, d), optional, default None
        ///     Example images of the class.
        /// mean : array_like, shape (d,), optional, default None
        ///     The class mean, given.
        /// parent : str or int, optional, default None
        ///     The parent class (name or id): the mean of a class with no images.
        /// id : int, optional, default None
        ///     The class id (default: the next free one).
        /// prior_weight : int, optional, default None
        ///     Pseudo-count of the parent's mean blended into the class's (default: the engine's).
        ///
        /// Returns
        /// -------
        /// int
        ///     The class id.
        ///
        /// Raises
        /// ------
        /// AlreadyExistsError
        ///     The name or id is taken.
        /// InvalidArgument
        ///     Both ``x`` and ``mean``, wrong widths, NaN, an id out of range.
        /// NotFoundError
        ///     An unknown parent.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x, labels=y)
        /// >>> idx.add_class("extra", x=x[:5]); _ = idx.commit()
        /// 3
        /// >>> idx.classes[3]
        /// 'extra'
        #[pyo3(signature = (name, x=None, mean=None, parent=None, id=None, prior_weight=None))]
        #[allow(clippy::too_many_arguments)]
        fn add_class(
            &self,
            py: Python<'_>,
            name: &str,
            x: Option<&Bound<'_, PyAny>>,
            mean: Option<&Bound<'_, PyAny>>,
            parent: Option<&Bound<'_, PyAny>>,
            id: Option<i128>,
            prior_weight: Option<i128>,
        ) -> PyResult<u32> {
            let open = self.writable()?;
            let id = id
                .map(|i| arrays::small(i, "id", u32::MAX - 1))
                .transpose()?;
            let prior_weight = prior_weight
                .map(|w| arrays::seed(w, "prior_weight"))
                .transpose()?;
            let rows = x.map(|x| arrays::rows(x, "x")).transpose()?;
            let mean_rows = mean
                .map(|m| {
                    let np = m.py().import("numpy")?;
                    let m2 = np.call_method1("atleast_2d", (m,))?;
                    arrays::rows(&m2, "mean")
                })
                .transpose()?;
            let parent = parent
                .map(|p| match p.extract::<String>() {
                    Ok(name) => Ok(engine::Parent::Name(name)),
                    Err(_) => p
                        .extract::<u32>()
                        .map(engine::Parent::Id)
                        .map_err(|_| errors::invalid("parent", "expected a class name or id")),
                })
                .transpose()?;
            let source_rows = rows.as_ref().map(|r| r.view()).transpose()?;
            let mean_view = mean_rows.as_ref().map(|r| r.view()).transpose()?;
            let mean_slice = match &mean_view {
                Some(v) if v.nrows() != 1 => {
                    return Err(errors::invalid(
                        "mean",
                        format!("{} rows, expected one vector", v.nrows()),
                    ));
                }
                Some(v) => Some(
                    v.as_slice()
                        .ok_or_else(|| errors::invalid("mean", "not contiguous"))?,
                ),
                None => None,
            };
            let source = match (source_rows, mean_slice) {
                (Some(_), Some(_)) => {
                    return Err(errors::invalid("x", "give images x or a mean, not both"));
                }
                (Some(v), None) => engine::Source::Images(v),
                (None, Some(m)) => engine::Source::Mean(m),
                (None, None) => engine::Source::None,
            };
            py.detach(|| engine::add_class(&open.index, name, source, parent, id, prior_weight))
                .py_err()
        }
    },
    {
        /// The newest committed version, pinned: it stays readable while the index changes.
        ///
        /// Returns
        /// -------
        /// Snapshot
        ///
        /// Raises
        /// ------
        /// ClosedError
        ///     The index was closed.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> snap = idx.snapshot(); _ = idx.delete([0]); _ = idx.commit()
        /// >>> len(snap), len(idx)
        /// (600, 599)
        fn snapshot(&self) -> PyResult<PySnapshot> {
            Ok(PySnapshot::new(self.newest()?))
        }

        /// Live rows of the newest committed version.
        fn __len__(&self) -> PyResult<usize> {
            Ok(engine::live_rows(&self.newest()?) as usize)
        }

        /// The descriptors' dimension.
        #[getter]
        fn d(&self) -> PyResult<usize> {
            Ok(engine::model_shape(&self.get()?.model).0)
        }

        /// The newest committed version's number.
        #[getter]
        fn version(&self) -> PyResult<u64> {
            Ok(engine::version(&self.newest()?))
        }

        /// The index directory.
        #[getter]
        fn path(&self) -> PathBuf {
            self.path.clone()
        }

        /// The index's model.
        #[getter]
        fn model(&self) -> PyResult<PyModel> {
            Ok(PyModel::new(self.get()?.model.clone()))
        }

        /// Every version on disk, oldest first (the CLI's ``versions --json``).
        ///
        /// Returns
        /// -------
        /// list of dict
        ///     ``version``, ``file``, ``rows``, ``deleted``, ``segments``, …, ``error`` (a manifest
        ///     that does not read has ``error`` set and null counts).
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.create(path, model)
        /// >>> _ = idx.add(x); _ = idx.commit()
        /// >>> [(v["version"], v["rows"]) for v in idx.versions()]
        /// [(1, 0), (2, 600)]
        fn versions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            self.get()?;
            let path = &self.path;
            let text = py.detach(|| engine::versions_json(path)).py_err()?;
            json_loads(py, &text)
        }

        /// The directory's report (the CLI's ``inspect --json``): versions, files, sections.
        ///
        /// Returns
        /// -------
        /// dict
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> idx.inspect()["skipped_manifests"]
        /// []
        fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            self.get()?;
            let path = &self.path;
            let text = py.detach(|| engine::inspect_json(path)).py_err()?;
            json_loads(py, &text)
        }

        /// Checks every checksum of every file (the CLI's ``verify --json``).
        ///
        /// Returns
        /// -------
        /// dict
        ///     The report; ``report["ok"]``: no problem found.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> idx.verify()["ok"]
        /// True
        fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            self.get()?;
            let path = &self.path;
            let (text, ok) = py.detach(|| engine::verify_json(path)).py_err()?;
            let report = json_loads(py, &text)?;
            report.set_item("ok", ok)?;
            Ok(report)
        }

        /// Releases the writer lock (staged, uncommitted changes are dropped). Idempotent.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x)
        /// >>> idx.close(); idx.closed
        /// True
        fn close(&self) {
            self.open.write().take();
        }

        /// Whether ``close`` was called.
        #[getter]
        fn closed(&self) -> bool {
            self.open.read().is_none()
        }

        fn __repr__(&self) -> String {
            let state = if self.closed() { ", closed" } else { "" };
            format!("Index({:?}{state})", self.path.display().to_string())
        }
    }
);
