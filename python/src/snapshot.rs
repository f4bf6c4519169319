//! `codedb.Snapshot`: one committed version, pinned — and the one implementation of every
//! query method (`Index` delegates to its newest version's snapshot).

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;

use crate::engine;
use crate::errors::{self, IntoPy};
use crate::model::PyModel;
use crate::query_methods::query_methods;

/// One committed version of an index, pinned until closed.
///
/// Read-only and lock-free: any number of processes may hold snapshots while one writer
/// (``Index``) commits new versions; a snapshot keeps reading its version. ``Index``'s query
/// methods are this class's, over the index's newest committed version.
///
/// Examples
/// --------
/// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
/// >>> snap = codedb.Snapshot.open(path)
/// >>> snap.version, len(snap), snap.d
/// (2, 600, 32)
/// >>> snap.close()
#[pyclass(module = "codedb._codedb", name = "Snapshot", frozen)]
pub struct PySnapshot {
    snap: RwLock<Option<Arc<engine::Snapshot>>>,
}

impl PySnapshot {
    pub fn new(snap: engine::Snapshot) -> PySnapshot {
        PySnapshot {
            snap: RwLock::new(Some(Arc::new(snap))),
        }
    }

    /// The version this snapshot's queries read (its pinned one), or `ClosedError`.
    fn queried(&self) -> PyResult<Arc<engine::Snapshot>> {
        self.get()
    }

    fn get(&self) -> PyResult<Arc<engine::Snapshot>> {
        self.snap
            .read()
            .clone()
            .ok_or_else(|| errors::closed("snapshot"))
    }
}

query_methods!(
    PySnapshot,
    {
        /// Opens the newest committed version of the index at ``path``, read-only (no lock).
        ///
        /// When the newest manifest(s) do not read, it opens the newest version that does and says so:
        /// a :class:`codedb.FallbackWarning` (the CLI's warning text, naming ``path``), and
        /// ``skipped_manifests`` lists what was skipped.
        ///
        /// Parameters
        /// ----------
        /// path : str or os.PathLike
        ///     The index directory.
        /// version : int, optional, default None
        ///     Open this version rather than the newest (it must still be on disk; no fallback):
        ///     how a sharded index's readers pin the versions a cut names.
        ///
        /// Returns
        /// -------
        /// Snapshot
        ///
        /// Raises
        /// ------
        /// NotFoundError
        ///     ``path`` is not an index.
        /// InvalidArgument
        ///     ``version`` is not on disk.
        /// CorruptError
        ///     No manifest reads, or a file of the version does not match its checksums.
        /// UnsupportedVersionError
        ///     A format version this codedb does not read.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
        /// >>> codedb.Snapshot.open(path).skipped_manifests
        /// []
        #[staticmethod]
        #[pyo3(signature = (path, version=None))]
        fn open(py: Python<'_>, path: PathBuf, version: Option<i128>) -> PyResult<PySnapshot> {
            let version = version
                .map(|v| {
                    u64::try_from(v).map_err(|_| {
                        errors::invalid("version", format!("{v}: expected a version number ≥ 0"))
                    })
                })
                .transpose()?;
            let snap = py
                .detach(|| match version {
                    Some(v) => engine::open_snapshot_version(&path, v),
                    None => engine::open_snapshot(&path),
                })
                .py_err()?;
            errors::warn_fell_back(py, &path, snap.version(), snap.skipped_manifests())?;
            Ok(PySnapshot::new(snap))
        }
    },
    {
        /// How the live rows split between inverted lists and no list: ``(listed, unlisted)``.
        ///
        /// A list-restricted search (``classes=``, ``nprobe=``) scans the rows of its lists and
        /// every unlisted row; ``codedb.distributed`` asks each shard, so that a shard holding none
        /// of a query's probed lists still answers with its unlisted rows (or with nothing).
        ///
        /// Returns
        /// -------
        /// tuple of (int, int)
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x, labels=y, lists="label")
        /// >>> idx.snapshot().list_coverage()
        /// (600, 0)
        pub fn list_coverage(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
            let snap = self.get()?;
            let c = py
                .detach(|| snap.list_coverage())
                .map_err(engine::Error::from)
                .py_err()?;
            Ok((c.listed_rows, c.unlisted_rows))
        }

        /// Live rows of this version.
        pub fn __len__(&self) -> PyResult<usize> {
            Ok(engine::live_rows(&*self.get()?) as usize)
        }

        /// The descriptors' dimension.
        #[getter]
        pub fn d(&self) -> PyResult<usize> {
            engine::input_dim(&*self.get()?).py_err()
        }

        /// This version's number.
        #[getter]
        pub fn version(&self) -> PyResult<u64> {
            Ok(engine::version(&*self.get()?))
        }

        /// The model this version's codes were made with.
        #[getter]
        pub fn model(&self) -> PyResult<PyModel> {
            let model = engine::snapshot_model(&*self.get()?).py_err()?;
            Ok(PyModel::new(model))
        }

        /// Unpins the version (its files may then be collected). Idempotent.
        ///
        /// Examples
        /// --------
        /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
        /// >>> snap = idx.snapshot(); snap.close(); snap.closed
        /// True
        fn close(&self) {
            self.snap.write().take();
        }

        /// Whether ``close`` was called.
        #[getter]
        fn closed(&self) -> bool {
            self.snap.read().is_none()
        }

        fn __repr__(&self) -> String {
            match self.get() {
                Ok(s) => format!("Snapshot(version={})", engine::version(&s)),
                Err(_) => "Snapshot(closed)".into(),
            }
        }
    }
);
