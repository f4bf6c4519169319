//! numpy in and out. Descriptors: a C-contiguous float32 (n, d) array is read in place; float64
//! or float16, non-contiguous arrays and sequences are converted once to a C-contiguous float32
//! copy; any other dtype is a `TypeError` naming the argument. Results leave as numpy arrays
//! that own the Rust buffers (`into_pyarray`: no copy).

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
    if dtype.kind() != b'f' {
        return Err(PyTypeError::new_err(format!(
            "{argument}: dtype {}, expected float32 (float64 and float16 are converted)",
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
        // The one documented copy: float64/float16 or strided input.
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

/// Integer ids (any integer dtype, ≥ 0), copied into `u64`s.
pub fn ids(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<u64>> {
    ints(obj, argument)?
        .into_iter()
        .map(|v| u64::try_from(v).map_err(|_| invalid(argument, format!("{v} is negative"))))
        .collect()
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

/// A 1-D integer array of `argument` as `i64`s (one copy).
fn ints(obj: &Bound<'_, PyAny>, argument: &str) -> PyResult<Vec<i64>> {
    let py = obj.py();
    let a = as_ndarray(obj, argument)?;
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
    if kind == b'u' && a.dtype().itemsize() == 8 {
        // uint64 above 2⁶³ would wrap in int64: check on the Python side's values.
        let np = py.import("numpy")?;
        let big: bool = np
            .call_method1("any", (a.call_method1("__gt__", (i64::MAX as u64,))?,))?
            .extract()?;
        if big {
            return Err(invalid(argument, "values above 2⁶³−1"));
        }
    }
    let np = py.import("numpy")?;
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
