//! numpy in and out. Descriptors: a C-contiguous float32 (n, d) array is read in place; float64
//! or float16, uint8 (pixels, as the CLI reads `.bvecs` and IDX images), non-contiguous arrays
//! and sequences are converted once to a C-contiguous float32 copy; any other dtype is a
//! `TypeError` naming the argument. Ids are u64 end to end (uint64, or non-negative int64, in;
//! uint64 out of `add`; int64 bit patterns in `I`, see [`ids_out`]). Counts (`k`, `top`, …)
//! arrive as any Python int and are checked here, so −1 or 2⁶⁴ is `InvalidArgument` naming the
//! argument, never `OverflowError`. Results leave as numpy arrays that own the Rust buffers
//! (`into_pyarray`: no copy).

use ndarray::ArrayView2;
use numpy::{
    IntoPyArray, PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray2, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;

use crate::errors::invalid;

/// A borrowed (or once-converted) C-contiguous float32 matrix.
pub struct Rows<'py> {
    array: PyReadonlyArray2<'py, f32>,
}

impl Rows<'_> {
    /// The rows as the engine's view (no copy).
    pub fn view(&self) -> PyResult<ArrayView2<'_, f32>> {
        let shape = self.array.shape();
        let (n, d) = (shape[0], shape[1]);
        let data = self
            .array
            .as_slice()
            .map_err(|e| invalid("array", format!("not contiguous after conversion: {e}")))?;
        ArrayView2::from_shape((n, d), data).map_err(|e| invalid("array", e))
    }
}

/// `obj` as a numpy array (sequences through `numpy.asarray`).
fn as_ndarray<'py>(
    obj: &Bound<'py, PyAny>,
    argument: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let np = obj.py().import("numpy")?;
    let a = np.call_method1("asarray", (obj,)).map_err(|e| {
        PyTypeError::new_err(format!(
            "{argument}: expected a numpy array or a sequence of numbers ({e})"
        ))
    })?;
    a.cast_into::<PyUntypedArray>()
        .map_err(|_| PyTypeError::new_err(format!("{argument}: expected a numpy array")))
}

/// `obj` as a 2-D float32 matrix of `argument`, without a copy when it already is one.
pub fn rows<'py>(obj: &Bound<'py, PyAny>, argument: &str) -> PyResult<Rows<'py>> {
    let py = obj.py();
    let a = as_ndarray(obj, argument)?;
    let dtype = a.dtype();
    let pixels = dtype.kind() == b'u' && dtype.itemsize() == 1;
    if dtype.kind() != b'f' && !pixels {
        return Err(PyTypeError::new_err(format!(
            "{argument}: dtype {}, expected float32 (float64, float16 and uint8 are converted)",
            dtype.str()?
        )));
    }
    if a.ndim() != 2 {
        return Err(invalid(
            argument,
            format!(
                "shape {:?}, expected a 2-D (n, d) array (one row per vector)",
                a.shape()
            ),
        ));
    }
    let converted;
    let a = if dtype.is_equiv_to(&numpy::dtype::<f32>(py)) && a.is_c_contiguous() {
        a.as_any()
    } else {
        // The one documented copy: float64/float16/uint8 or strided input.
        let np = py.import("numpy")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("dtype", np.getattr("float32")?)?;
        converted = np.call_method("ascontiguousarray", (a,), Some(&kwargs))?;
        &converted
    };
    let array = a
        .cast::<numpy::PyArray2<f32>>()
        .map_err(|_| PyTypeError::new_err(format!("{argument}: expected float32")))?
        .try_readonly()
        .map_err(|e| invalid(argument, e))?;
    Ok(Rows { array })
}

/// Row ids (the engine's u64 id domain), copied into `u64`s: uint64 as they are (any value;
/// the engine refuses the reserved u64::MAX), other unsigned dtypes widened, signed dtypes
/// when no value is negative (a negative id is refused naming `argument`: −1 is FAISS's
/// padding, not an id). Checked whole before the caller stages anything.
pub fn ids(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<u64>> {
    let py = obj.py();
    if obj.cast::<PyUntypedArray>().is_err()
        && let Ok(ints) = obj.extract::<Vec<i128>>()
    {
        // A list of Python ints: numpy would make floats of [2**64 - 2, 7] (losing the id).
        return ints
            .into_iter()
            .map(|v| match u64::try_from(v) {
                Ok(id) => Ok(id),
                Err(_) if v < 0 => Err(invalid(
                    argument,
                    format!("{v} is negative (ids are 0 to 2⁶⁴−2; pass uint64 for ids ≥ 2⁶³)"),
                )),
                Err(_) => Err(invalid(argument, "integers outside 0 to 2⁶⁴−1")),
            })
            .collect();
    }
    let a = int_vector(obj, argument)?;
    let np = py.import("numpy")?;
    if a.dtype().kind() == b'i' && a.len() > 0 {
        let min: i64 = np.call_method1("min", (&a,))?.extract()?;
        if min < 0 {
            return Err(invalid(
                argument,
                format!("{min} is negative (ids are 0 to 2⁶⁴−2; pass uint64 for ids ≥ 2⁶³)"),
            ));
        }
    }
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("dtype", np.getattr("uint64")?)?;
    let a = np.call_method("ascontiguousarray", (a,), Some(&kwargs))?;
    let a = a
        .cast::<PyArray1<u64>>()
        .map_err(|_| PyTypeError::new_err(format!("{argument}: expected integers")))?;
    Ok(a.readonly()
        .as_slice()
        .map_err(|e| invalid(argument, e))?
        .to_vec())
}

/// The ids of an id selector (`search(ids=...)`): as [`ids`], from a numpy integer array, a
/// list or tuple — or any other iterable of ints (a set, a range, a generator), read once. A
/// string is refused (it is not a collection of ids).
pub fn id_set(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<u64>> {
    if obj.is_instance_of::<pyo3::types::PyString>() || obj.is_instance_of::<pyo3::types::PyBytes>()
    {
        return Err(PyTypeError::new_err(format!(
            "{argument}: expected integer ids (an iterable or a numpy array), got a string"
        )));
    }
    if obj.cast::<PyUntypedArray>().is_ok()
        || obj.is_instance_of::<pyo3::types::PyList>()
        || obj.is_instance_of::<pyo3::types::PyTuple>()
    {
        return ids(obj, argument);
    }
    let list = pyo3::types::PyList::empty(obj.py());
    for item in obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{argument}: expected integer ids (an iterable or a numpy array)"
        ))
    })? {
        list.append(item?)?;
    }
    ids(list.as_any(), argument)
}

/// Ids as they leave in `I` (FAISS's int64 `idx_t`): each id's 64 bits as an int64 (two's
/// complement), so `I.view(numpy.uint64)` gives ids ≥ 2⁶³ exactly and the padding −1 is the
/// reserved id u64::MAX, never a row's.
pub fn id_bits(id: u64) -> i64 {
    i64::from_ne_bytes(id.to_ne_bytes())
}

/// A count argument (`k`, `top`, `rerank`, …) given as a Python int (any size: the binding
/// takes it as i128), as usize in `min..`; anything else is `InvalidArgument` naming
/// `argument`.
pub fn count(value: i128, argument: &str, min: usize) -> PyResult<usize> {
    match usize::try_from(value) {
        Ok(v) if v >= min => Ok(v),
        _ if value < min as i128 => Err(invalid(
            argument,
            format!("{value}, expected at least {min}"),
        )),
        _ => Err(invalid(
            argument,
            format!("{value} is above the largest count this machine can address"),
        )),
    }
}

/// A seed or other u64 argument given as a Python int: `InvalidArgument` naming `argument`
/// outside 0..2⁶⁴.
pub fn seed(value: i128, argument: &str) -> PyResult<u64> {
    u64::try_from(value).map_err(|_| invalid(argument, format!("{value}, expected 0 to 2⁶⁴−1")))
}

/// A u32 argument (a class id, a radius) given as a Python int, in `0..=max`.
pub fn small(value: i128, argument: &str, max: u32) -> PyResult<u32> {
    match u32::try_from(value) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(invalid(argument, format!("{value}, expected 0 to {max}"))),
    }
}

/// Codes: a 2-D uint8 array of `width` columns (one code per row), copied out row-major.
pub fn codes(obj: &Bound<'_, PyAny>, argument: &str, width: usize) -> PyResult<Vec<u8>> {
    let py = obj.py();
    let a = as_ndarray(obj, argument)?;
    let dtype = a.dtype();
    if !(dtype.kind() == b'u' && dtype.itemsize() == 1) {
        return Err(PyTypeError::new_err(format!(
            "{argument}: dtype {}, expected uint8 codes",
            dtype.str()?
        )));
    }
    if a.ndim() != 2 || a.shape()[1] != width {
        return Err(invalid(
            argument,
            format!(
                "shape {:?}, expected (n, {width}): one code of {width} bytes per row",
                a.shape()
            ),
        ));
    }
    let np = py.import("numpy")?;
    let flat = np.call_method1("ascontiguousarray", (a,))?;
    let flat = np.call_method1("ravel", (flat,))?;
    let flat = flat
        .cast::<PyArray1<u8>>()
        .map_err(|_| PyTypeError::new_err(format!("{argument}: expected uint8")))?;
    Ok(flat
        .readonly()
        .as_slice()
        .map_err(|e| invalid(argument, e))?
        .to_vec())
}

/// Class labels (any integer dtype, 0 ≤ label < 2³²−1), copied into `u32`s.
pub fn labels(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<u32>> {
    ints(obj, argument)?
        .into_iter()
        .map(|v| match u32::try_from(v) {
            Ok(l) if l != u32::MAX => Ok(l),
            _ => Err(invalid(
                argument,
                format!("{v} is not a class id (0 ≤ id < 2³²−1)"),
            )),
        })
        .collect()
}

/// `obj` as a 1-D integer numpy array of `argument`.
fn int_vector<'py>(
    obj: &Bound<'py, PyAny>,
    argument: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let mut a = as_ndarray(obj, argument)?;
    if a.dtype().kind() == b'O' {
        // Python ints numpy could not fit in one dtype (beyond 2⁶⁴, or −1 beside 2⁶³): as
        // uint64 if they fit, else out of the id domain.
        let np = obj.py().import("numpy")?;
        let kwargs = pyo3::types::PyDict::new(obj.py());
        kwargs.set_item("dtype", np.getattr("uint64")?)?;
        match np.call_method("asarray", (&a,), Some(&kwargs)) {
            Ok(u) => a = u.cast_into::<PyUntypedArray>()?,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) => {
                return Err(invalid(argument, "integers outside 0 to 2⁶⁴−1"));
            }
            Err(_) => {}
        }
    }
    let kind = a.dtype().kind();
    if kind != b'i' && kind != b'u' {
        return Err(PyTypeError::new_err(format!(
            "{argument}: dtype {}, expected integers",
            a.dtype().str()?
        )));
    }
    if a.ndim() != 1 {
        return Err(invalid(
            argument,
            format!("shape {:?}, expected a 1-D array", a.shape()),
        ));
    }
    Ok(a)
}

/// A 1-D integer array of `argument` as `i64`s (one copy); uint64 values above 2⁶³−1 are
/// refused (no label or class id is that large).
pub fn ints(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<i64>> {
    let py = obj.py();
    let a = int_vector(obj, argument)?;
    let np = py.import("numpy")?;
    if a.dtype().kind() == b'u' && a.dtype().itemsize() == 8 && a.len() > 0 {
        let max: u64 = np.call_method1("max", (&a,))?.extract()?;
        if max > i64::MAX as u64 {
            return Err(invalid(argument, format!("{max} is out of range")));
        }
    }
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("dtype", np.getattr("int64")?)?;
    let a = np.call_method("ascontiguousarray", (a,), Some(&kwargs))?;
    let a = a
        .cast::<PyArray1<i64>>()
        .map_err(|_| PyTypeError::new_err(format!("{argument}: expected integers")))?;
    Ok(a.readonly()
        .as_slice()
        .map_err(|e| invalid(argument, e))?
        .to_vec())
}

/// A `(rows, cols)` numpy array owning `v` (row-major).
pub fn matrix<'py, T: numpy::Element>(
    py: Python<'py>,
    v: Vec<T>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let a = v.into_pyarray(py);
    Ok(a.reshape([rows, cols])?.into_any())
}

/// A 1-D numpy array owning `v`.
pub fn vector<T: numpy::Element>(py: Python<'_>, v: Vec<T>) -> Bound<'_, PyAny> {
    v.into_pyarray(py).into_any()
}

/// An engine report (JSON text, e.g. `inspect`, a training report) as Python objects
/// (`json.loads`), so every report reads alike whichever method returns it.
pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}
