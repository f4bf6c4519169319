//! `codedb.Index`: the single writer of an index directory. Its queries are those of its newest
//! committed version (`Snapshot`'s methods, one implementation).

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrays;
use crate::engine;
use crate::errors::{self, IntoPy};
use crate::interrupt::{self, Progress};
use crate::json_loads;
use crate::model::PyModel;
use crate::snapshot::{self, PySnapshot};

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

type Pair<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

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

    /// The newest committed version as the `Snapshot` every query delegates to.
    fn pinned(&self) -> PyResult<PySnapshot> {
        Ok(PySnapshot::new(self.newest()?))
    }

    /// The labels, ids and list options of a write, checked before anything is staged.
    fn writable(&self) -> PyResult<Arc<Open>> {
        let open = self.get()?;
        engine::check_writable(&open.index).py_err()?;
        Ok(open)
    }
}

#[pymethods]
impl PyIndex {
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
    ///     An unknown ``store_vectors``.
    /// IoError
    ///     The directory cannot be written.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.create(path, model, store_vectors="f16")
    /// >>> idx.version, len(idx)
    /// (1, 0)
    #[staticmethod]
    #[pyo3(signature = (path, model, store_vectors=None))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        model: &PyModel,
        store_vectors: Option<&str>,
    ) -> PyResult<PyIndex> {
        let m = model.model.clone();
        let index = py
            .detach(|| engine::create(&path, &m, store_vectors))
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
    /// progress : bool or callable, optional, default None
    ///     ``True``: a bar on stderr; a callable: called as ``progress("build", "rows", done,
    ///     total)`` as rows are encoded. Ctrl-C stops the build (``KeyboardInterrupt``) and
    ///     leaves no index.
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
    #[pyo3(signature = (path, model, x, ids=None, labels=None, store_vectors=None, lists=None, progress=None))]
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
        progress: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyIndex> {
        let progress = Progress::from_arg(progress)?;
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let ids = ids.map(|i| arrays::ids(i, "ids")).transpose()?;
        let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
        let m = model.model.clone();
        let b = engine::Build {
            ids: ids.as_deref(),
            labels: labels.as_deref(),
            store_vectors,
            lists,
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
    #[pyo3(signature = (x, ids=None, labels=None, lists=None, progress=None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        labels: Option<&Bound<'py, PyAny>>,
        lists: Option<&str>,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let progress = Progress::from_arg(progress)?;
        let open = self.writable()?;
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let ids = ids.map(|i| arrays::ids(i, "ids")).transpose()?;
        let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
        let total = view.nrows() as u64;
        let added = interrupt::run(py, &progress, |cancel, sink| {
            let heard = |done: usize| sink.send("add", "rows", done as u64, total);
            let adding = engine::Adding {
                ids: ids.as_deref(),
                labels: labels.as_deref(),
                lists,
                keep_class_stats: false,
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
    #[pyo3(signature = (x, ids, labels=None, lists=None, keep_class_stats=false, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
        labels: Option<&Bound<'_, PyAny>>,
        lists: Option<&str>,
        keep_class_stats: bool,
        progress: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let progress = Progress::from_arg(progress)?;
        let open = self.writable()?;
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let ids = arrays::ids(ids, "ids")?;
        let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
        let total = view.nrows() as u64;
        interrupt::run(py, &progress, |cancel, sink| {
            let heard = |done: usize| sink.send("upsert", "rows", done as u64, total);
            let adding = engine::Adding {
                ids: Some(&ids),
                labels: labels.as_deref(),
                lists,
                keep_class_stats,
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
            let heard: codedb::CompactProgressFn = Arc::new(move |p: &codedb::CompactProgress| {
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

    /// k-NN search: the k best live rows per query row, as FAISS's ``search`` returns them.
    ///
    /// Parameters
    /// ----------
    /// q : array_like, shape (nq, d)
    ///     Query descriptors (float32; float64, float16 and uint8 are converted). An empty batch
    ///     (nq = 0) gives ``(0, k)`` arrays.
    /// k : int, default 10
    ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
    ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
    /// mode : str, optional, default None
    ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
    ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
    /// rerank : int, optional, default None
    ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
    ///     k best (R ≥ k; the index must store vectors).
    /// nprobe : int, optional, default None
    ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
    ///     nearest k-means centroids).
    /// classes : iterable of str or int, optional, default None
    ///     Scan only the inverted lists of these classes (names or class ids).
    /// threads : int, default 1
    ///     Scan threads (0: every core).
    /// mih : str, default "auto"
    ///     Hamming k-NN through the segments' multi-index hashing tables: "auto", "on" or "off".
    ///
    /// Returns
    /// -------
    /// D : numpy.ndarray, shape (nq, k)
    ///     Scores, best first: int32 Hamming distances (padding 2**31-1), or float32 (padding +inf
    ///     when smaller is better, -inf for the -ip modes).
    /// I : numpy.ndarray of int64, shape (nq, k)
    ///     Ids, ties by smaller id; -1 pads. Each id's 64 bits: ``I.view(numpy.uint64)`` gives ids
    ///     at or above 2**63 exactly.
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     Wrong width, NaN, k < 1, rerank < k, an unknown mode or class, a count out of range
    ///     (``k=-1``, ``k=2**64``), a mode that does not apply to the codes.
    /// TypeError
    ///     Input that is not a numeric array (names the argument).
    /// ClosedError
    ///     The index or snapshot was closed.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> D, I = idx.search(x[:2], k=3)
    /// >>> D.shape, I.dtype, int(I[0, 0]), int(D[0, 0])
    /// ((2, 3), dtype('int64'), 0, 0)
    /// >>> idx.search(x[:0], k=3)[1].shape
    /// (0, 3)
    #[pyo3(signature = (q, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        k: i128,
        mode: Option<&str>,
        rerank: Option<i128>,
        nprobe: Option<i128>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: i128,
        mih: &str,
    ) -> PyResult<Pair<'py>> {
        self.pinned()?
            .search(py, q, k, mode, rerank, nprobe, classes, threads, mih)
    }

    /// Text queries ranked by the model's text head (PAMIR; ``train(captions=...)``).
    ///
    /// Words the head does not know are ignored with a ``UserWarning`` naming them; a query with no
    /// known word is an error.
    ///
    /// Parameters
    /// ----------
    /// queries : str or list of str
    ///     One query, or several (an empty list gives ``(0, k)`` arrays).
    /// k : int, default 10
    ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
    ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
    /// mode : str, optional, default None
    ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
    ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
    /// rerank : int, optional, default None
    ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
    ///     k best (R ≥ k; the index must store vectors).
    /// nprobe : int, optional, default None
    ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
    ///     nearest k-means centroids).
    /// classes : iterable of str or int, optional, default None
    ///     Scan only the inverted lists of these classes (names or class ids).
    /// threads : int, default 1
    ///     Scan threads (0: every core).
    /// mih : str, default "auto"
    ///     Accepted for symmetry with ``search`` (text queries scan linearly).
    ///
    /// Returns
    /// -------
    /// D : numpy.ndarray of float32, shape (nq, k)
    ///     Scores, larger is better (padding -inf).
    /// I : numpy.ndarray of int64, shape (nq, k)
    ///     Ids (-1 pads), as ``search``.
    ///
    /// Raises
    /// ------
    /// ModelError
    ///     The model has no text head.
    /// InvalidArgument
    ///     A query with no known word; counts or modes as ``search``.
    ///
    /// Examples
    /// --------
    /// >>> m = codedb.train(x, "pca-itq:16", seed=3, captions=[["red"] if v else ["blue"] for v in y == 0], pamir_iterations=2000)
    /// >>> idx = codedb.Index.build(path, m, x)
    /// >>> D, I = idx.search_text("red", k=5)
    /// >>> I.shape, D.dtype
    /// ((1, 5), dtype('float32'))
    #[pyo3(signature = (queries, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search_text<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: i128,
        mode: Option<&str>,
        rerank: Option<i128>,
        nprobe: Option<i128>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: i128,
        mih: &str,
    ) -> PyResult<Pair<'py>> {
        self.pinned()?
            .search_text(py, queries, k, mode, rerank, nprobe, classes, threads, mih)
    }

    /// Query by examples: rows ranked by a linear SVM learned at query time (PiCoDes, Bergamo et
    /// al. NIPS 2011; the CLI's ``search --examples``).
    ///
    /// The examples are encoded with the index's model and decoded (``Model.decode``); the SVM
    /// (squared hinge, each class weighted to half the total cost) learns w and b against the
    /// negatives, and every live row scores ``b + w·decode(code)``.
    ///
    /// Parameters
    /// ----------
    /// examples : array_like, shape (n, d), or list of them
    ///     Positive examples (descriptors). A list (or tuple) of arrays is a batch: one example
    ///     set per array, one result row per set, each equal to a call with that set alone (the
    ///     CLI's ``--example-groups``).
    /// k : int, default 10
    ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
    ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
    /// negatives : array_like, shape (m, d), or list of them, optional, default None
    ///     Negative examples. Default: random live rows (``random_negatives``). With a batch of
    ///     example sets: one array shared by every set, or a list of one array per set.
    /// random_negatives : int, optional, default None
    ///     Draw this many live rows as negatives (default 1000, at most the live rows).
    /// seed : int, default 1234
    ///     Seed of the random negatives and of the SVM's visiting order (``codedb``'s one default
    ///     seed, as ``train``'s and the CLI's).
    /// svm_c : float, optional, default None
    ///     The SVM's cost C (None: 1).
    /// mode : str, optional, default None
    ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
    ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
    /// rerank : int, optional, default None
    ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
    ///     k best (R ≥ k; the index must store vectors).
    /// nprobe : int, optional, default None
    ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
    ///     nearest k-means centroids).
    /// classes : iterable of str or int, optional, default None
    ///     Scan only the inverted lists of these classes (names or class ids).
    /// threads : int, default 1
    ///     Scan threads (0: every core).
    ///
    /// Returns
    /// -------
    /// D : numpy.ndarray of float32, shape (1, k) (a batch: (sets, k))
    ///     Scores, larger is better (padding -inf).
    /// I : numpy.ndarray of int64, shape (1, k) (a batch: (sets, k))
    ///     Ids (-1 pads).
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     Examples of the wrong width or NaN, both negatives and random_negatives, more random
    ///     negatives than live rows, an exact mode, counts as ``search``.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> D, I = idx.search_examples(x[:5], k=10, random_negatives=100, seed=1)
    /// >>> I.shape, bool((y[I[0]] == 0).all())
    /// ((1, 10), True)
    #[pyo3(signature = (
        examples, k=10, negatives=None, random_negatives=None, seed=1234, svm_c=None, mode=None,
        rerank=None, nprobe=None, classes=None, threads=1,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn search_examples<'py>(
        &self,
        py: Python<'py>,
        examples: &Bound<'py, PyAny>,
        k: i128,
        negatives: Option<&Bound<'py, PyAny>>,
        random_negatives: Option<i128>,
        seed: i128,
        svm_c: Option<f64>,
        mode: Option<&str>,
        rerank: Option<i128>,
        nprobe: Option<i128>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: i128,
    ) -> PyResult<Pair<'py>> {
        self.pinned()?.search_examples(
            py,
            examples,
            k,
            negatives,
            random_negatives,
            seed,
            svm_c,
            mode,
            rerank,
            nprobe,
            classes,
            threads,
        )
    }

    /// Rows ranked by a given linear classifier of their codes (the CLI's ``search --classifier``).
    ///
    /// Parameters
    /// ----------
    /// classifier : array_like of float, shape (D + 1,)
    ///     The weights over the decoded code (``Model.decode``'s columns), then the bias.
    /// k : int, default 10
    ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
    ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
    /// mode : str, optional, default None
    ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
    ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
    /// rerank : int, optional, default None
    ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
    ///     k best (R ≥ k; the index must store vectors).
    /// nprobe : int, optional, default None
    ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
    ///     nearest k-means centroids).
    /// classes : iterable of str or int, optional, default None
    ///     Scan only the inverted lists of these classes (names or class ids).
    /// threads : int, default 1
    ///     Scan threads (0: every core).
    ///
    /// Returns
    /// -------
    /// D : numpy.ndarray of float32, shape (1, k)
    ///     Scores ``bias + w·decode(code)``, larger is better (padding -inf).
    /// I : numpy.ndarray of int64, shape (1, k)
    ///     Ids (-1 pads).
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     A classifier of the wrong length or non-finite; re-ranking binary codes; counts as
    ///     ``search``.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> w = np.append(model.decode(model.encode(x[:1]))[0], 0.0)
    /// >>> D, I = idx.search_classifier(w, k=3)
    /// >>> int(I[0, 0]), int(D[0, 0])
    /// (0, 16)
    #[pyo3(signature = (classifier, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1))]
    #[allow(clippy::too_many_arguments)]
    fn search_classifier<'py>(
        &self,
        py: Python<'py>,
        classifier: &Bound<'py, PyAny>,
        k: i128,
        mode: Option<&str>,
        rerank: Option<i128>,
        nprobe: Option<i128>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: i128,
    ) -> PyResult<Pair<'py>> {
        self.pinned()?
            .search_classifier(py, classifier, k, mode, rerank, nprobe, classes, threads)
    }

    /// Every live row within Hamming ``radius`` of each query's code, as FAISS's ``range_search``.
    ///
    /// Parameters
    /// ----------
    /// q : array_like, shape (nq, d)
    ///     Query descriptors.
    /// radius : int
    ///     0, 1 or 2 (binary codes of at most 32 bits: a hash-table lookup, ITQ §4.5).
    ///
    /// Returns
    /// -------
    /// lims : numpy.ndarray of int64, shape (nq + 1,)
    ///     Query i's results are ``D[lims[i]:lims[i+1]]``, ``I[lims[i]:lims[i+1]]``.
    /// D : numpy.ndarray of int32
    ///     Hamming distances, nearest first.
    /// I : numpy.ndarray of int64
    ///     Ids (their 64 bits, as ``search``).
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     A radius above 2, codes that are not binary or wider than 32 bits, a wrong width.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> lims, D, I = idx.search_radius(x[:2], 0)
    /// >>> lims.shape, int(I[lims[0]])
    /// ((3,), 0)
    fn search_radius<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        radius: i128,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        self.pinned()?.search_radius(py, q, radius)
    }

    /// The ``top`` nearest class means per row (NCM, Mensink et al. TPAMI 2013, eq. 9).
    ///
    /// Parameters
    /// ----------
    /// x : array_like, shape (n, d)
    ///     Descriptors (an empty batch gives ``(0, top)`` arrays).
    /// top : int, default 5
    ///     Classes per row; ids -1 past the last class (a top above both the classes and 65,536 is
    ///     capped at the classes).
    ///
    /// Returns
    /// -------
    /// scores : numpy.ndarray of float32, shape (n, top)
    ///     Larger is better (padding -inf).
    /// ids : numpy.ndarray of int64, shape (n, top)
    ///     Class ids, best first; names via ``classes``.
    ///
    /// Raises
    /// ------
    /// NotFoundError
    ///     The index has no classes.
    /// InvalidArgument
    ///     Wrong width, NaN, top < 1.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> scores, cls = idx.classify(x[[0, 300, 599]], top=2)
    /// >>> cls[:, 0].tolist()
    /// [0, 1, 2]
    #[pyo3(signature = (x, top=5))]
    fn classify<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        top: i128,
    ) -> PyResult<Pair<'py>> {
        self.pinned()?.classify(py, x, top)
    }

    /// The stored vectors of rows, by id (FAISS's ``reconstruct`` / ``reconstruct_n``).
    ///
    /// Parameters
    /// ----------
    /// ids : array_like of int
    ///     Live row ids (uint64, or non-negative int64).
    ///
    /// Returns
    /// -------
    /// numpy.ndarray of float32, shape (len(ids), d)
    ///     The vectors as stored (f16 vectors come back rounded).
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     The index stores no vectors (``store_vectors=None``: decode its codes with the model), or
    ///     a negative id.
    /// NotFoundError
    ///     An id that is not a live row.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> bool((idx.reconstruct([0, 5]) == x[[0, 5]]).all())
    /// True
    fn reconstruct<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.pinned()?.reconstruct(py, ids)
    }

    /// The committed classes: ``{class id: name}``.
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> sorted(idx.classes)
    /// [0, 1, 2]
    #[getter]
    fn classes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.pinned()?.classes(py)
    }

    /// The class table as counts and sums: ``(dim, [{"id", "name", "parent", "count", "sum"}])``.
    ///
    /// What ``codedb.distributed`` adds up over shards (the table is additive); ``dim`` is 0 without
    /// a class table.
    ///
    /// Returns
    /// -------
    /// tuple of (int, list of dict)
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> dim, table = idx.class_sums()
    /// >>> dim, [c["count"] for c in table]
    /// (32, [200, 200, 200])
    fn class_sums<'py>(&self, py: Python<'py>) -> PyResult<(usize, Bound<'py, PyList>)> {
        self.pinned()?.class_sums(py)
    }

    /// Manifests newer than the served version that did not read: ``[{"version", "file",
    /// "error"}]`` (as ``inspect()["skipped_manifests"]``). Empty unless the open fell back (then a
    /// :class:`codedb.FallbackWarning` was raised, and writes raise :class:`codedb.FellBackError`).
    ///
    /// Examples
    /// --------
    /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
    /// >>> idx.skipped_manifests
    /// []
    #[getter]
    fn skipped_manifests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        snapshot::skipped(py, &self.newest()?)
    }

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
        self.pinned()
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

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { ", closed" } else { "" };
        format!("Index({:?}{state})", self.path.display().to_string())
    }
}
