//! `codedb.Model`: a trained pipeline (the CLI's model file), and `codedb.train`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrays;
use crate::engine;
use crate::errors::{self, IntoPy};
use crate::interrupt::{self, Progress};

/// A trained model: turns descriptors into codes (and codes back into the projected space).
///
/// Made by :func:`codedb.train`, read with :meth:`Model.load` or :meth:`Model.from_bytes`, or
/// taken from an index (``Index.model``). Models pickle (through their model-file bytes), so
/// they travel to Ray workers and processes.
///
/// Examples
/// --------
/// >>> model.d, model.code_kind, model.code_bits, model.code_bytes
/// (32, 'binary', 16, 2)
/// >>> import pickle
/// >>> pickle.loads(pickle.dumps(model)).id == model.id
/// True
#[pyclass(module = "codedb._codedb", name = "Model", frozen)]
pub struct PyModel {
    pub model: Arc<engine::Model>,
    /// What training did, as JSON; `None` for a model read from a file or an index.
    pub report: Option<String>,
}

impl PyModel {
    pub fn new(model: engine::Model) -> PyModel {
        PyModel {
            model: Arc::new(model),
            report: None,
        }
    }
}

#[pymethods]
impl PyModel {
    /// What training did (``codedb.train`` only; ``None`` for a loaded model): ``report["train"]``
    /// (steps and their seconds, PCA variance, ITQ loss per iteration, PQ error, CCA
    /// correlations, the SGD validation's choice) and ``report["text"]`` (the text head's
    /// vocabulary, C grid trials with validation AvgP / BEP / P@10, triplet loss before and
    /// after; ``None`` without captions).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.report
            .as_deref()
            .map(|text| crate::arrays::json_loads(py, text))
            .transpose()
    }

    /// Input dimension (columns of the descriptors it encodes).
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

    /// The number of coarse cells of an IVF model (``ivf:K,...``: K), ``None`` for a model
    /// without a coarse quantiser. A sharded index uses it to know that ``nprobe`` picks the
    /// same lists in every shard: the centroids are the model's (Jégou et al., TPAMI 2011,
    /// §III-A), not the shard's data.
    #[getter]
    fn ivf_lists(&self) -> Option<usize> {
        self.model.ivf().map(|c| c.lists())
    }

    /// The model's identity (hex): the same for every copy of one trained model (its file,
    /// every index made with it), different for another training run.
    #[getter]
    fn id(&self) -> String {
        engine::model_id(&self.model)
    }

    /// How the model was trained, kept in the model file (format 1.6): ``{"spec":
    /// "cca:32,itq,bits", "seed": 7, "steps": [...]}`` (the step that learned each stage);
    /// ``None`` for a model that does not record it (written before 1.6).
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

    /// The codes of the rows of ``x``.
    ///
    /// Parameters
    /// ----------
    /// x : array_like, shape (n, d)
    ///     Descriptors: float32 read in place; float64, float16 and uint8 converted once.
    ///
    /// Returns
    /// -------
    /// numpy.ndarray of uint8, shape (n, code_bytes)
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     ``x`` is not a numeric array (names ``x``).
    /// InvalidArgument
    ///     Wrong number of columns, NaN or infinite values, not 2-D.
    ///
    /// Examples
    /// --------
    /// >>> model.encode(x[:3]).shape
    /// (3, 2)
    fn encode<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let n = view.nrows();
        let model = &self.model;
        let codes = interrupt::run(py, &Progress::Off, |cancel, _| {
            engine::encode(model, view, cancel)
        })?;
        arrays::matrix(py, codes, n, engine::model_shape(model).2)
    }

    /// The inverted list each row of ``x`` belongs to, for an IVF model (``ivf:K,...``): the
    /// coarse cell its code is filed under (the nearest centroid, ties to the smaller id), found
    /// without encoding. A sharded index partitioned by list routes rows by it.
    ///
    /// Parameters
    /// ----------
    /// x : array_like, shape (n, d)
    ///     Descriptors, as :meth:`encode` takes them.
    ///
    /// Returns
    /// -------
    /// numpy.ndarray of uint32, shape (n,)
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     The model has no coarse quantiser; wrong number of columns, NaN or infinite values.
    ///
    /// Examples
    /// --------
    /// >>> ivf = codedb.train(x, "ivf:4,pq:4x8", seed=1)
    /// >>> ivf.assign_lists(x[:3]).shape
    /// (3,)
    fn assign_lists<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rows = arrays::rows(x, "x")?;
        let view = rows.view()?;
        let model = &self.model;
        let lists = py
            .detach(|| model.assign_lists(view).map_err(engine::Error::from))
            .py_err()?
            .ok_or_else(|| errors::invalid("x", "the model has no coarse quantiser (ivf:K)"))?;
        Ok(arrays::vector(py, lists))
    }

    /// The ``nprobe`` inverted lists each query row probes, for an IVF model: the lists a
    /// search with ``nprobe`` scans (the nearest centroids), ascending in each row.
    ///
    /// Parameters
    /// ----------
    /// q : array_like, shape (nq, d)
    ///     Queries.
    /// nprobe : int
    ///     Lists per query, 1 ≤ nprobe ≤ K.
    ///
    /// Returns
    /// -------
    /// numpy.ndarray of uint32, shape (nq, nprobe)
    ///
    /// Raises
    /// ------
    /// InvalidArgument
    ///     The model has no coarse quantiser; ``nprobe`` outside 1..K; a bad query array.
    ///
    /// Examples
    /// --------
    /// >>> ivf = codedb.train(x, "ivf:4,pq:4x8", seed=1)
    /// >>> ivf.probe_lists(x[:2], 3).shape
    /// (2, 3)
    fn probe_lists<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        nprobe: i128,
    ) -> PyResult<Bound<'py, PyAny>> {
        let nprobe = arrays::count(nprobe, "nprobe", 1)?;
        let rows = arrays::rows(q, "q")?;
        let view = rows.view()?;
        let n = view.nrows();
        let model = &self.model;
        let probes = py
            .detach(|| model.probe_lists(view, nprobe).map_err(engine::Error::from))
            .py_err()?
            .ok_or_else(|| errors::invalid("q", "the model has no coarse quantiser (ivf:K)"))?;
        let flat: Vec<u32> = probes.into_iter().flatten().collect();
        arrays::matrix(py, flat, n, nprobe)
    }

    /// Codes decoded into the model's projected space: ±1 per bit for binary codes, the PQ
    /// reconstruction for PQ codes, the stored values for float codes. What a query by
    /// examples trains its SVM on (PiCoDes, Bergamo et al. NIPS 2011).
    ///
    /// Parameters
    /// ----------
    /// codes : array_like of uint8, shape (n, code_bytes)
    ///     Codes of this model (``encode``'s output).
    ///
    /// Returns
    /// -------
    /// numpy.ndarray of float32, shape (n, p)
    ///     ``p`` is ``code_bits`` for binary codes, else the projected dimension.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     ``codes`` is not uint8.
    /// InvalidArgument
    ///     Rows of the wrong width, or a model that cannot decode (an ``ivf:K`` model's codes
    ///     are residuals to their list's centroid).
    ///
    /// Examples
    /// --------
    /// >>> model.decode(model.encode(x[:2])).shape
    /// (2, 16)
    fn decode<'py>(
        &self,
        py: Python<'py>,
        codes: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = arrays::codes(codes, "codes", engine::model_shape(&self.model).2)?;
        let model = &self.model;
        let (values, n, cols) = py.detach(|| engine::decode(model, &bytes)).py_err()?;
        arrays::matrix(py, values, n, cols)
    }

    /// Writes the model file (the CLI's ``codedb train --out`` format).
    ///
    /// Parameters
    /// ----------
    /// path : str or os.PathLike
    ///     The file to write.
    ///
    /// Raises
    /// ------
    /// IoError
    ///     The file cannot be written (names the path).
    ///
    /// Examples
    /// --------
    /// >>> model.save(path + ".model")
    /// >>> codedb.Model.load(path + ".model").id == model.id
    /// True
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

    /// Reads a model file (``Model.save``, ``codedb train --out``).
    ///
    /// Parameters
    /// ----------
    /// path : str or os.PathLike
    ///     The model file.
    ///
    /// Returns
    /// -------
    /// Model
    ///
    /// Raises
    /// ------
    /// IoError
    ///     The file does not read.
    /// CorruptError
    ///     A checksum, section or stage does not match (names the file and section).
    /// UnsupportedVersionError
    ///     A format version this codedb does not read.
    ///
    /// Examples
    /// --------
    /// >>> model.save(path + ".model")
    /// >>> codedb.Model.load(path + ".model").code_bits
    /// 16
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyModel> {
        let model = py.detach(|| engine::load_model(&path)).py_err()?;
        Ok(PyModel::new(model))
    }

    /// The model file's bytes (what ``save`` writes; ``from_bytes`` reads them back).
    ///
    /// Returns
    /// -------
    /// bytes
    ///
    /// Examples
    /// --------
    /// >>> codedb.Model.from_bytes(model.to_bytes()).id == model.id
    /// True
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let model = &self.model;
        let bytes = py.detach(|| engine::model_bytes(model)).py_err()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A model from the bytes of a model file (``to_bytes``, or a file read into memory).
    ///
    /// Parameters
    /// ----------
    /// data : bytes
    ///     The model file's bytes.
    ///
    /// Returns
    /// -------
    /// Model
    ///
    /// Raises
    /// ------
    /// CorruptError
    ///     The bytes are not a model file, or a checksum does not match.
    /// UnsupportedVersionError
    ///     A format version this codedb does not read.
    ///
    /// Examples
    /// --------
    /// >>> codedb.Model.from_bytes(model.to_bytes()).d
    /// 32
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: Vec<u8>) -> PyResult<PyModel> {
        let model = py.detach(|| engine::model_from_bytes(&data)).py_err()?;
        Ok(PyModel::new(model))
    }

    /// Pickling: the model file's bytes (the training report is not kept).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let from_bytes = py.get_type::<PyModel>().getattr("from_bytes")?;
        Ok((from_bytes, (slf.get().to_bytes(py)?,)))
    }

    fn __repr__(&self) -> String {
        let (d, bits, bytes, kind) = engine::model_shape(&self.model);
        format!("Model(d={d}, code_kind={kind:?}, code_bits={bits}, code_bytes={bytes})")
    }
}

// The signature's literal (pyo3 shows literals to `inspect`) is the engine's default.
const _: () = assert!(codedb::model::PAMIR_DEFAULT_ITERATIONS == 10_000_000);

// The literal `seed=1234` of the signatures here and in `search_examples` (PyO3 shows literals
// in `help()`) is the engine's one default seed.
const _: () = assert!(codedb::DEFAULT_SEED == 1234);
/// Trains a model: the pipeline ``spec`` on the rows of ``x`` (the CLI's ``codedb train``).
///
/// With ``captions`` (one per row: a string, or a list of tags) it also trains a PAMIR text
/// head for ``search_text`` (the CLI's ``train --captions``; Grangier & Bengio, TPAMI 2008).
///
/// Parameters
/// ----------
/// x : array_like, shape (n, d)
///     Training descriptors (float32; float64, float16 and uint8 are converted).
/// spec : str
///     The pipeline, e.g. ``"pca-itq:64"``, ``"cca:32,itq,bits"``, ``"pq:16x8"``,
///     ``"opq:16x8"``, ``"ivf:256,pq:16x8"``, ``"float16"`` (README "Pipelines").
/// labels : array_like of int, optional, default None
///     One class id per row, for supervised stages (``cca``, ``ncmml``, ``picodes``, …).
/// groups : array_like of int, optional, default None
///     Instance groups, one id per row (-1: none; the CLI's ``--groups``): rows sharing an id
///     are views of one item (renderings, crops, near-duplicates). The supervised steps then
///     validate on the instance mAP of held-out groups instead of class precision (Gordo et
///     al. CVPR 2012 §7.4): ``cca:R`` chooses ρ (from the ``"auto"`` grid unless ``cca_rho``
///     fixes it), ``metric:R`` and ``jscl:R`` their step size and epoch.
/// cca_rho : float, str or sequence of float, optional, default None
///     CCA's regularisation ρ, relative to each view's mean variance (the CLI's
///     ``--cca-rho``): a number ≥ 0; ``"auto"`` (chosen from 1e-4 … 1e3 on held-out rows: by
///     the instance mAP of ``groups``, or without groups by class precision@10); a list, or
///     a comma-separated string, to choose among. None: ``"auto"`` with ``groups``, else
///     1e-4. ``model.report["train"]["cca_rho_choice"]`` lists what each ρ scored.
/// seed : int, default 1234
///     Seed of every random choice (sampling, initialisations, rotations).
/// sample : int, optional, default None
///     Train on this many rows drawn with ``seed`` (default: all rows).
/// captions : sequence of str or of list of str, optional, default None
///     One caption per row: train a text head too.
/// margin : str, default "constant"
///     Text head margin: ``"constant"`` or ``"caption"``.
/// epsilon : float, optional, default None
///     Text head margin ε (constant) or its floor (caption); None: 1 or 0.1.
/// pamir_c : sequence of float, default [0.01, 0.1, 1.0, 10.0]
///     The grid of PAMIR's aggressiveness C, chosen on a validation split.
/// pamir_iterations : int, default 10000000
///     Most PAMIR updates per C (the cap: a run stops earlier when its validation AvgP stops
///     improving; ``model.report`` says why each run stopped).
/// pamir_patience : int, default 3
///     Validation checkpoints (spaced ×1.5) in a row without a 0.5 % AvgP gain after which a
///     PAMIR run stops.
/// pamir_validation : float, default 0.2
///     Fraction of captioned rows held out to choose C and the iteration count.
/// pamir_validation_groups : array_like of int, optional, default None
///     One group id per row (e.g. the item near-duplicate images render): the validation split
///     keeps every group on one side.
/// max_words : int, default 100000
///     Vocabulary size cap (the most frequent words).
/// progress : bool or callable, optional, default None
///     ``True``: a line per step on stderr (an ETA once a unit is done); a callable: called as
///     ``progress(step, unit, done, total)``, e.g. ``("opq:16x8", "iterations", 3, 50)``; an
///     exception it raises stops the training and is raised here. Ctrl-C stops the training
///     (``KeyboardInterrupt``).
///
/// Returns
/// -------
/// Model
///     With ``report`` describing the training. What the CLI prints as ``note:`` (e.g. a
///     PiCoDes descent that stopped without improving) is warned as ``UserWarning`` and kept
///     in ``report["train"]["notes"]``.
///
/// Raises
/// ------
/// InvalidArgument
///     A bad spec, too few rows, NaN, labels or groups of the wrong length, a bad ``cca_rho``,
///     a bad count.
/// ModelError
///     Training failed (linear algebra, classifier training).
///
/// Examples
/// --------
/// >>> m = codedb.train(x, "pca-itq:16", seed=3)
/// >>> m.code_kind, m.code_bits
/// ('binary', 16)
/// >>> codedb.train(x, "pq:4x8", seed=1).code_bytes
/// 4
#[pyfunction]
#[pyo3(signature = (
    x, spec, labels=None, groups=None, cca_rho=None, seed=1234, sample=None, captions=None,
    margin="constant",
    epsilon=None, pamir_c=vec![0.01, 0.1, 1.0, 10.0],
    pamir_iterations=10_000_000, pamir_patience=3,
    pamir_validation=0.2, pamir_validation_groups=None, max_words=100_000, progress=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn train(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    spec: &str,
    labels: Option<&Bound<'_, PyAny>>,
    groups: Option<&Bound<'_, PyAny>>,
    cca_rho: Option<&Bound<'_, PyAny>>,
    seed: i128,
    sample: Option<i128>,
    captions: Option<&Bound<'_, PyAny>>,
    margin: &str,
    epsilon: Option<f32>,
    pamir_c: Vec<f32>,
    pamir_iterations: i128,
    pamir_patience: i128,
    pamir_validation: f64,
    pamir_validation_groups: Option<&Bound<'_, PyAny>>,
    max_words: i128,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyModel> {
    let progress = Progress::from_arg(progress)?;
    let seed = arrays::seed(seed, "seed")?;
    let sample = sample.map(|s| arrays::count(s, "sample", 1)).transpose()?;
    let pamir_iterations = arrays::count(pamir_iterations, "pamir_iterations", 1)?;
    let pamir_patience = arrays::count(pamir_patience, "pamir_patience", 1)?;
    let validation_groups = pamir_validation_groups
        .map(|g| arrays::ints(g, "pamir_validation_groups"))
        .transpose()?;
    let max_words = arrays::count(max_words, "max_words", 1)?;
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let labels = labels
        .map(|l| arrays::labels(l, "labels"))
        .transpose()?
        .map(|l| l.into_iter().map(i64::from).collect());
    let groups = groups.map(|g| arrays::ints(g, "groups")).transpose()?;
    let cca_rho = cca_rho.map(cca_rho_arg).transpose()?;
    let text = captions
        .map(|c| {
            Ok::<_, PyErr>(engine::TextTrain {
                captions: caption_words(c)?,
                margin: margin.to_string(),
                epsilon,
                c_grid: pamir_c,
                iterations: pamir_iterations,
                patience: pamir_patience,
                validation: pamir_validation,
                validation_groups: validation_groups.clone(),
                max_words,
            })
        })
        .transpose()?;
    let (model, report, notes) = interrupt::run(py, &progress, |cancel, sink| {
        let sup = engine::Supervision {
            labels,
            groups,
            cca_rho,
        };
        let (model, report) =
            engine::train(view, spec, sup, seed, sample, cancel, sink.train_fn())?;
        let (model, text) = match &text {
            Some(t) => {
                let (model, text) = engine::attach_text_head(model, view, t, seed)?;
                (model, Some(text))
            }
            None => (model, None),
        };
        // The notes the CLI prints on stderr: a PiCoDes descent that stalled, a text head whose
        // run stopped at the cap while still rising.
        let mut notes = report.notes.clone();
        notes.extend(text.as_ref().and_then(|t| t.cap_note()));
        let json = engine::train_report_json(&report, text.as_ref())?;
        Ok::<_, engine::Error>((model, json, notes))
    })?;
    for note in notes {
        let msg = std::ffi::CString::new(note.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &msg,
            1,
        )?;
    }
    Ok(PyModel {
        model: Arc::new(model),
        report: Some(report),
    })
}

/// `cca_rho=`: a string is the engine's word (a number, a comma-separated list, `auto`); a
/// number or a sequence of numbers is checked as the engine checks the word.
fn cca_rho_arg(v: &Bound<'_, PyAny>) -> PyResult<engine::CcaRho> {
    let r = if let Ok(s) = v.extract::<String>() {
        engine::parse_cca_rho(&s)
    } else if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(errors::invalid(
            "cca_rho",
            "expected a number, a sequence of numbers or a string, not a bool",
        ));
    } else if let Ok(x) = v.extract::<f64>() {
        engine::cca_rho_values(vec![x], true)
    } else if let Ok(xs) = v.extract::<Vec<f64>>() {
        engine::cca_rho_values(xs, false)
    } else {
        return Err(errors::invalid(
            "cca_rho",
            "expected a number, a sequence of numbers or a string (\"auto\")",
        ));
    };
    r.map_err(errors::to_py)
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
