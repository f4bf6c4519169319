//! `codedb._codedb`: the engine as a Python extension module. `Model` (train, encode, save),
//! `Index` (the single writer of an index directory, and its newest committed version for
//! queries) and `Snapshot` (one pinned version). Every engine call goes through `engine.rs`,
//! with the GIL released (`py.detach`) while the engine works.

mod arrays;
mod engine;
mod errors;
mod query;

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use errors::IntoPy;
use query::QueryArgs;

/// A trained model: turns descriptors into codes.
#[pyclass(module = "codedb._codedb", name = "Model", frozen)]
struct PyModel {
    model: Arc<engine::Model>,
    /// What training did, as JSON; `None` for a model read from a file or an index.
    report: Option<String>,
}

#[pymethods]
impl PyModel {
    /// What training did (`codedb.train` only; `None` for a loaded model): `report["train"]`
    /// (steps and their seconds, PCA variance, ITQ loss per iteration, PQ error, CCA
    /// correlations, the SGD validation's choice) and `report["text"]` (the text head's
    /// vocabulary, C grid trials with validation AvgP / BEP / P@10, triplet loss before and
    /// after; `None` without captions).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.report
            .as_deref()
            .map(|text| json_loads(py, text))
            .transpose()
    }

    /// Input dimension.
    #[getter]
    fn d(&self) -> usize {
        engine::model_shape(&self.model).0
    }

    /// Bits per code (binary codes; PQ: sub-quantisers × bits).
    #[getter]
    fn code_bits(&self) -> usize {
        engine::model_shape(&self.model).1
    }

    /// Bytes per code.
    #[getter]
    fn code_bytes(&self) -> usize {
        engine::model_shape(&self.model).2
    }

    /// The codes' kind: "binary", "pq8", "pq4", "float32" or "float16".
    #[getter]
    fn code_kind(&self) -> &'static str {
        engine::model_shape(&self.model).3
    }

    /// The model's identity (hex): the same for every copy of one trained model (its file,
    /// every index made with it), different for another training run.
    #[getter]
    fn id(&self) -> String {
        engine::model_id(&self.model)
    }

    /// How the model was trained, kept in the model file (format 1.6): `{"spec": "cca:32,itq,bits",
    /// "seed": 7, "steps": ["cca:32", "cca:32", "itq", "bits"]}` (the step that learned each
    /// stage); `None` for a model that does not record it (written before 1.6).
    #[getter]
    fn origin<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(o) = self.model.origin() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("spec", o.spec())?;
        d.set_item("seed", o.seed())?;
        let steps: Vec<&str> = (0..o.stages()).filter_map(|i| o.step_of(i)).collect();
        d.set_item("steps", steps)?;
        Ok(Some(d.into_any()))
    }

    /// The codes of the rows of `x`, one row of `code_bytes` uint8 per input row.
    fn encode<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let n = view.nrows();
        let model = &self.model;
        let codes = py.detach(|| engine::encode(model, view)).py_err()?;
        arrays::matrix(py, codes, n, engine::model_shape(model).2)
    }

    /// Writes the model file (the CLI's `codedb train --out` format).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let model = &self.model;
        let written = py.detach(|| {
            let bytes = engine::model_bytes(model)?;
            Ok(std::fs::write(&path, bytes))
        });
        match written.py_err()? {
            Ok(()) => Ok(()),
            Err(e) => Err(errors::exception(
                py,
                errors::Kind::Io,
                format!("writing the model file {}: {e}", path.display()),
            )),
        }
    }

    /// Reads a model file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyModel> {
        let model = py.detach(|| engine::load_model(&path)).py_err()?;
        Ok(PyModel {
            model: Arc::new(model),
            report: None,
        })
    }

    fn __repr__(&self) -> String {
        let (d, bits, bytes, kind) = engine::model_shape(&self.model);
        format!("Model(d={d}, code_kind={kind:?}, code_bits={bits}, code_bytes={bytes})")
    }
}

/// Trains the pipeline `spec` (e.g. "pca-itq:64", "opq-pq:16x8") on the rows of `x`; with
/// `captions` (one per row: a string, or a list of tags) also a PAMIR text head for
/// `search_text` (the CLI's `train --captions`).
#[pyfunction]
#[pyo3(signature = (
    x, spec, labels=None, seed=1234, sample=None, captions=None, margin="constant",
    epsilon=None, pamir_c=vec![0.01, 0.1, 1.0, 10.0], pamir_iterations=100_000,
    pamir_validation=0.2, max_words=100_000,
))]
#[allow(clippy::too_many_arguments)]
fn train(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    spec: &str,
    labels: Option<&Bound<'_, PyAny>>,
    seed: u64,
    sample: Option<usize>,
    captions: Option<&Bound<'_, PyAny>>,
    margin: &str,
    epsilon: Option<f32>,
    pamir_c: Vec<f32>,
    pamir_iterations: usize,
    pamir_validation: f64,
    max_words: usize,
) -> PyResult<PyModel> {
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let labels = labels
        .map(|l| arrays::ids(l, "labels"))
        .transpose()?
        .map(|l| l.into_iter().map(|v| v as i64).collect());
    let text = captions
        .map(|c| {
            Ok::<_, PyErr>(engine::TextTrain {
                captions: caption_words(c)?,
                margin: margin.to_string(),
                epsilon,
                c_grid: pamir_c,
                iterations: pamir_iterations,
                validation: pamir_validation,
                max_words,
            })
        })
        .transpose()?;
    let (model, report) = py
        .detach(|| {
            let (model, report) = engine::train(view, spec, labels, seed, sample)?;
            let (model, text) = match &text {
                Some(t) => {
                    let (model, text) = engine::attach_text_head(model, view, t, seed)?;
                    (model, Some(text))
                }
                None => (model, None),
            };
            Ok::<_, engine::Error>((model, engine::train_report_json(&report, text.as_ref())?))
        })
        .py_err()?;
    Ok(PyModel {
        model: Arc::new(model),
        report: Some(report),
    })
}

/// `captions=`: per row a string or a list of tag strings → its words.
fn caption_words(captions: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<String>>> {
    if captions.extract::<String>().is_ok() {
        return Err(errors::invalid(
            "captions",
            "expected one caption per row (a list), not one string",
        ));
    }
    let mut out = Vec::new();
    for (i, item) in captions.try_iter()?.enumerate() {
        let item = item?;
        if let Ok(s) = item.extract::<String>() {
            out.push(engine::caption_words([s.as_str()]));
        } else if let Ok(tags) = item.extract::<Vec<String>>() {
            out.push(engine::caption_words(tags.iter().map(String::as_str)));
        } else {
            return Err(errors::invalid(
                "captions",
                format!("entry {i} is neither a string nor a list of tag strings"),
            ));
        }
    }
    Ok(out)
}

/// An open index and its decoded model.
struct Open {
    index: engine::Index,
    model: engine::Model,
}

/// The single writer of an index directory; queries read its newest committed version.
#[pyclass(module = "codedb._codedb", name = "Index", frozen)]
struct PyIndex {
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
}

#[pymethods]
impl PyIndex {
    /// Creates an empty index at `path` with `model` (version 1). `store_vectors` ("f32" or
    /// "f16") keeps every row's descriptor for re-ranking and the exact modes.
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

    /// Builds an index at `path` from `x` in one commit: ids, labels (and the class table made
    /// from them), inverted lists ("label" or "nearest") and stored vectors.
    #[staticmethod]
    #[pyo3(signature = (path, model, x, ids=None, labels=None, store_vectors=None, lists=None))]
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
    ) -> PyResult<PyIndex> {
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
        let index = py.detach(|| engine::build(&path, &m, view, &b)).py_err()?;
        Ok(PyIndex::new(index, (*m).clone(), path))
    }

    /// Opens the index at `path` as its single writer (`LockedError` if another has it).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<PyIndex> {
        let (index, model) = py
            .detach(|| {
                let index = engine::open(&path)?;
                let model = engine::index_model(&index)?;
                Ok((index, model))
            })
            .py_err()?;
        Ok(PyIndex::new(index, model, path))
    }

    /// Adds the rows of `x` (visible at the next `commit`); returns their ids (int64).
    #[pyo3(signature = (x, ids=None, labels=None, lists=None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        labels: Option<&Bound<'py, PyAny>>,
        lists: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let open = self.get()?;
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let ids = ids.map(|i| arrays::ids(i, "ids")).transpose()?;
        let labels = labels.map(|l| arrays::labels(l, "labels")).transpose()?;
        let added = py
            .detach(|| engine::add(&open.index, view, ids.as_deref(), labels.as_deref(), lists))
            .py_err()?;
        Ok(arrays::vector(py, query::ids_out(added)?))
    }

    /// Publishes everything staged as a new version; returns its number.
    fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        let open = self.get()?;
        py.detach(|| engine::commit(&open.index)).py_err()
    }

    /// Deletes the rows of these ids (at the next `commit`); an unknown id is `NotFoundError`.
    fn delete(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<()> {
        let open = self.get()?;
        let ids = arrays::ids(ids, "ids")?;
        py.detach(|| engine::delete(&open.index, &ids)).py_err()
    }

    /// Merges segments and drops deleted rows (the default policy), then collects garbage.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let open = self.get()?;
        py.detach(|| engine::compact(&open.index)).py_err()
    }

    /// Stages a class (visible at the next `commit`): its mean from images `x`, or a given
    /// `mean`, or — with neither — zero-shot from `parent`. Returns its class id.
    #[pyo3(signature = (name, x=None, mean=None, parent=None, id=None, prior_weight=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_class(
        &self,
        py: Python<'_>,
        name: &str,
        x: Option<&Bound<'_, PyAny>>,
        mean: Option<&Bound<'_, PyAny>>,
        parent: Option<&Bound<'_, PyAny>>,
        id: Option<u32>,
        prior_weight: Option<u64>,
    ) -> PyResult<u32> {
        let open = self.get()?;
        let rows = x.map(|x| arrays::rows(x, "x")).transpose()?;
        let mean_rows = mean
            .map(|m| {
                let py = m.py();
                let np = py.import("numpy")?;
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

    /// k-NN search of the newest committed version: `(D, I)` as FAISS returns them.
    #[pyo3(signature = (q, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        k: usize,
        mode: Option<&str>,
        rerank: Option<usize>,
        nprobe: Option<usize>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: usize,
        mih: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let snap = self.newest()?;
        let args = QueryArgs {
            k,
            mode,
            rerank,
            nprobe,
            classes,
            threads,
            mih,
        };
        query::search(py, &snap, q, &args)
    }

    /// Text queries (a string or a list of strings) ranked by the model's text head over the
    /// newest committed version: `(D, I)` in FAISS's shapes, D float32 with larger = better.
    #[pyo3(signature = (queries, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search_text<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: usize,
        mode: Option<&str>,
        rerank: Option<usize>,
        nprobe: Option<usize>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: usize,
        mih: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let snap = self.newest()?;
        let args = QueryArgs {
            k,
            mode,
            rerank,
            nprobe,
            classes,
            threads,
            mih,
        };
        query::search_text(py, &snap, queries, &args)
    }

    /// Every row within Hamming `radius` (≤ 2) of each query's code: `(lims, D, I)` as FAISS's
    /// `range_search` returns them (query i's results are `D[lims[i]:lims[i+1]]`).
    fn search_radius<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        radius: u32,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let snap = self.newest()?;
        query::search_radius(py, &snap, q, radius)
    }

    /// The `top` nearest class means per row: `(scores, class ids)`, best first (ids -1 past
    /// the last class); names via `classes`.
    #[pyo3(signature = (x, top=5))]
    fn classify<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        top: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let snap = self.newest()?;
        query::classify(py, &snap, x, top)
    }

    /// The committed classes: {class id: name}.
    #[getter]
    fn classes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        query::classes(py, &self.newest()?)
    }

    /// The newest version's class table as counts and sums: `(dim, [{"id", "name",
    /// "parent", "count", "sum"}])` (what `codedb.distributed` adds up over shards).
    fn class_sums<'py>(&self, py: Python<'py>) -> PyResult<(usize, Bound<'py, PyList>)> {
        query::class_sums(py, &self.newest()?)
    }

    /// The newest committed version, pinned: it stays readable while the index changes.
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
        Ok(PyModel {
            model: Arc::new(self.get()?.model.clone()),
            report: None,
        })
    }

    /// Every version on disk, oldest first (the CLI's `versions --json`).
    fn versions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get()?;
        let path = &self.path;
        let text = py.detach(|| engine::versions_json(path)).py_err()?;
        json_loads(py, &text)
    }

    /// The directory's report (the CLI's `inspect --json`): versions, files, sections.
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get()?;
        let path = &self.path;
        let text = py.detach(|| engine::inspect_json(path)).py_err()?;
        json_loads(py, &text)
    }

    /// Checks every checksum of every file; returns the report (`report["ok"]`: no problem).
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get()?;
        let path = &self.path;
        let (text, ok) = py.detach(|| engine::verify_json(path)).py_err()?;
        let report = json_loads(py, &text)?;
        report.set_item("ok", ok)?;
        Ok(report)
    }

    /// Releases the writer lock (staged, uncommitted changes are dropped). Idempotent.
    fn close(&self) {
        self.open.write().take();
    }

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

/// One committed version of an index, pinned until closed.
#[pyclass(module = "codedb._codedb", name = "Snapshot", frozen)]
struct PySnapshot {
    snap: RwLock<Option<Arc<engine::Snapshot>>>,
}

impl PySnapshot {
    fn new(snap: engine::Snapshot) -> PySnapshot {
        PySnapshot {
            snap: RwLock::new(Some(Arc::new(snap))),
        }
    }

    fn get(&self) -> PyResult<Arc<engine::Snapshot>> {
        self.snap
            .read()
            .clone()
            .ok_or_else(|| errors::closed("snapshot"))
    }
}

#[pymethods]
impl PySnapshot {
    /// Opens the newest committed version of the index at `path`, read-only (no lock).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<PySnapshot> {
        let snap = py.detach(|| engine::open_snapshot(&path)).py_err()?;
        Ok(PySnapshot::new(snap))
    }

    /// k-NN search of this version: `(D, I)` as FAISS returns them.
    #[pyo3(signature = (q, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        k: usize,
        mode: Option<&str>,
        rerank: Option<usize>,
        nprobe: Option<usize>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: usize,
        mih: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let args = QueryArgs {
            k,
            mode,
            rerank,
            nprobe,
            classes,
            threads,
            mih,
        };
        query::search(py, &*self.get()?, q, &args)
    }

    /// Text queries over this version: `(D, I)`, D float32 with larger = better.
    #[pyo3(signature = (queries, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn search_text<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: usize,
        mode: Option<&str>,
        rerank: Option<usize>,
        nprobe: Option<usize>,
        classes: Option<&Bound<'py, PyAny>>,
        threads: usize,
        mih: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let args = QueryArgs {
            k,
            mode,
            rerank,
            nprobe,
            classes,
            threads,
            mih,
        };
        query::search_text(py, &*self.get()?, queries, &args)
    }

    /// `(lims, D, I)`: every row within Hamming `radius` of each query's code.
    fn search_radius<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        radius: u32,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        query::search_radius(py, &*self.get()?, q, radius)
    }

    /// `(scores, class ids)` of the `top` nearest class means per row.
    #[pyo3(signature = (x, top=5))]
    fn classify<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        top: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        query::classify(py, &*self.get()?, x, top)
    }

    /// This version's classes: {class id: name}.
    #[getter]
    fn classes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        query::classes(py, &*self.get()?)
    }

    /// This version's class table as counts and sums: `(dim, [{"id", "name", "parent",
    /// "count", "sum"}])` (what `codedb.distributed` adds up over shards).
    fn class_sums<'py>(&self, py: Python<'py>) -> PyResult<(usize, Bound<'py, PyList>)> {
        query::class_sums(py, &*self.get()?)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(engine::live_rows(&*self.get()?) as usize)
    }

    #[getter]
    fn d(&self) -> PyResult<usize> {
        engine::input_dim(&*self.get()?).py_err()
    }

    #[getter]
    fn version(&self) -> PyResult<u64> {
        Ok(engine::version(&*self.get()?))
    }

    /// The model this version's codes were made with.
    #[getter]
    fn model(&self) -> PyResult<PyModel> {
        let model = engine::snapshot_model(&*self.get()?).py_err()?;
        Ok(PyModel {
            model: Arc::new(model),
            report: None,
        })
    }

    /// Unpins the version (its files may then be collected). Idempotent.
    fn close(&self) {
        self.snap.write().take();
    }

    #[getter]
    fn closed(&self) -> bool {
        self.snap.read().is_none()
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
        match self.get() {
            Ok(s) => format!("Snapshot(version={})", engine::version(&s)),
            Err(_) => "Snapshot(closed)".into(),
        }
    }
}

/// NCM classification of the rows of `x` against the class table made of `classes` (entries
/// as `class_sums` gives them, of `dim`-value sums) under `model`: `(scores, class ids)` as
/// `Index.classify` returns them. A sharded index adds its shards' counts and sums (the
/// table is additive) and classifies here, exactly as one index holding every row would.
#[pyfunction]
#[pyo3(signature = (model, dim, classes, x, top=5))]
fn classify_sums<'py>(
    py: Python<'py>,
    model: &PyModel,
    dim: usize,
    classes: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    top: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if top == 0 {
        return Err(errors::invalid("top", "must be at least 1"));
    }
    let records = query::class_sums_in(classes)?;
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let n = view.nrows();
    let m = &model.model;
    let best = py
        .detach(|| engine::classify_sums(m, dim, records, view, top))
        .py_err()?;
    query::classified(py, &best, n, top)
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

#[pymodule]
fn _codedb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The Cargo package version: the one `codedb --version` prints and the wheel's metadata
    // carries (maturin reads it from python/Cargo.toml).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyModel>()?;
    m.add_class::<PyIndex>()?;
    m.add_class::<PySnapshot>()?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(classify_sums, m)?)?;
    Ok(())
}
