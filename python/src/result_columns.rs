//! `columns=` and `as_frame=` of the search methods: results carrying attribute columns (the
//! CLI's `search --with`). The chosen columns of every hit are looked up in the version the
//! search read, with the GIL released and Ctrl-C honoured between chunks
//! ([`engine::attribute_values`]), and come back as numpy arrays shaped like the ids — or, with
//! `as_frame=True`, as a pandas DataFrame of one row per (query, rank).
//!
//! Array types by column type: int → int64, float → float64, timestamp → datetime64[us], bool
//! → bool, string → object (str), tags → object (a list of str per hit). A padding position
//! (id −1 past the rows found) holds the column's default, so the arrays keep the ids' shape
//! and dtype; mask them with `I >= 0` (or `D`'s padding), as the scores are masked.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use codedb::{ColumnType, Value};

use crate::arrays;
use crate::engine::{self, Scores, Snapshot};
use crate::errors::invalid;
use crate::interrupt::{self, Progress};

/// `columns=` (names, in order) and `as_frame=`.
pub struct ResultColumns {
    names: Option<Vec<String>>,
    as_frame: bool,
}

impl ResultColumns {
    /// `columns`: a column name or an iterable of them; `as_frame`: a DataFrame instead of
    /// arrays.
    pub fn new(columns: Option<&Bound<'_, PyAny>>, as_frame: bool) -> PyResult<Self> {
        let names = match columns {
            None => None,
            Some(c) if c.is_instance_of::<PyString>() => Some(vec![c.extract::<String>()?]),
            Some(c) => {
                let mut names = Vec::new();
                for item in c.try_iter().map_err(|_| {
                    invalid(
                        "columns",
                        "expected a column name or a list of column names",
                    )
                })? {
                    names.push(item?.extract::<String>().map_err(|_| {
                        invalid(
                            "columns",
                            "expected a column name or a list of column names",
                        )
                    })?);
                }
                Some(names)
            }
        };
        Ok(ResultColumns { names, as_frame })
    }

    /// Nothing asked beyond the scores and ids.
    fn plain(&self) -> bool {
        self.names.is_none() && !self.as_frame
    }

    /// k-NN results, `nq` lists in `cols` columns: `(D, I)`, `(D, I, columns)` or a DataFrame.
    pub fn knn<'py>(
        &self,
        py: Python<'py>,
        snap: &Snapshot,
        hits: &[Vec<(u64, f32)>],
        nq: usize,
        cols: usize,
        scores: Scores,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (d, i) = shaped(py, hits, nq, cols, scores)?;
        if self.plain() {
            return Ok(PyTuple::new(py, [d, i])?.into_any());
        }
        let found: Vec<&[(u64, f32)]> = hits.iter().map(|l| &l[..l.len().min(cols)]).collect();
        if self.as_frame {
            return self.frame(py, snap, &found, scores == Scores::Hamming);
        }
        let (ids, index) = distinct(&found);
        let cells: Vec<Option<usize>> = (0..nq)
            .flat_map(|q| {
                let l = found.get(q).copied().unwrap_or(&[]);
                (0..cols).map(move |j| l.get(j).map(|h| h.0))
            })
            .map(|id| id.map(|id| index[&id]))
            .collect();
        let dict = self.arrays(py, snap, &ids, &cells, Some((nq, cols)))?;
        Ok(PyTuple::new(py, [d, i, dict.into_any()])?.into_any())
    }

    /// Radius results: `(lims, D, I)`, `(lims, D, I, columns)` or a DataFrame.
    pub fn radius<'py>(
        &self,
        py: Python<'py>,
        snap: &Snapshot,
        hits: &[Vec<(u64, f32)>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut lims = Vec::with_capacity(hits.len() + 1);
        lims.push(0i64);
        let (mut d, mut i) = (Vec::new(), Vec::new());
        for row in hits {
            for &(id, s) in row {
                i.push(arrays::id_bits(id));
                d.push(s as i32);
            }
            lims.push(i.len() as i64);
        }
        let (lims, d, i) = (
            arrays::vector(py, lims),
            arrays::vector(py, d),
            arrays::vector(py, i),
        );
        if self.plain() {
            return Ok(PyTuple::new(py, [lims, d, i])?.into_any());
        }
        let found: Vec<&[(u64, f32)]> = hits.iter().map(Vec::as_slice).collect();
        if self.as_frame {
            return self.frame(py, snap, &found, true);
        }
        let (ids, index) = distinct(&found);
        let cells: Vec<Option<usize>> = found
            .iter()
            .flat_map(|l| l.iter().map(|h| Some(index[&h.0])))
            .collect();
        let dict = self.arrays(py, snap, &ids, &cells, None)?;
        Ok(PyTuple::new(py, [lims, d, i, dict.into_any()])?.into_any())
    }

    /// One row per hit: query, rank, id (uint64), score (int32 Hamming distances, else
    /// float32), then the chosen columns.
    fn frame<'py>(
        &self,
        py: Python<'py>,
        snap: &Snapshot,
        found: &[&[(u64, f32)]],
        hamming: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pandas = py.import("pandas").map_err(|e| {
            pyo3::exceptions::PyImportError::new_err(format!(
                "as_frame=True needs pandas ({e}); columns= alone returns numpy arrays"
            ))
        })?;
        let (mut q, mut rank, mut id, mut score) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (qi, l) in found.iter().enumerate() {
            for (j, &(h, s)) in l.iter().enumerate() {
                q.push(qi as i64);
                rank.push(j as i64);
                id.push(h);
                score.push(s);
            }
        }
        let (ids, index) = distinct(found);
        let cells: Vec<Option<usize>> = id.iter().map(|h| Some(index[h])).collect();
        let data = PyDict::new(py);
        data.set_item("query", arrays::vector(py, q))?;
        data.set_item("rank", arrays::vector(py, rank))?;
        data.set_item("id", arrays::vector(py, id))?;
        if hamming {
            let s: Vec<i32> = score.iter().map(|&s| s as i32).collect();
            data.set_item("score", arrays::vector(py, s))?;
        } else {
            data.set_item("score", arrays::vector(py, score))?;
        }
        let df = pandas.call_method1("DataFrame", (data,))?;
        if let Some(names) = &self.names {
            let values = self.arrays(py, snap, &ids, &cells, None)?;
            for (k, name) in names.iter().enumerate() {
                let kwargs = PyDict::new(py);
                // An attribute column named like a hit field (`score`) stands beside it.
                kwargs.set_item("allow_duplicates", true)?;
                let column = values
                    .get_item(name)?
                    .ok_or_else(|| invalid("columns", format!("no values for {name:?}")))?;
                df.call_method("insert", (4 + k, name, column), Some(&kwargs))?;
            }
        }
        Ok(df)
    }

    /// `{name: array}`: per cell the value of row `ids[cell]`, or the column's default for a
    /// padding cell (`None`); `shape` reshapes each array (k-NN: `(nq, k)`).
    fn arrays<'py>(
        &self,
        py: Python<'py>,
        snap: &Snapshot,
        ids: &[u64],
        cells: &[Option<usize>],
        shape: Option<(usize, usize)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let names: Vec<&str> = self.names.iter().flatten().map(String::as_str).collect();
        let values = interrupt::run(py, &Progress::Off, |cancel, _| {
            engine::attribute_values(snap, ids, &names, cancel)
        })?;
        let defaults = engine::attribute_defaults(snap, &names);
        let out = PyDict::new(py);
        for ((name, col), default) in names.iter().zip(&values).zip(&defaults) {
            let t = default.column_type();
            let get = |c: &Option<usize>| c.map_or(default, |r| &col[r]);
            let a = array(py, t, cells.iter().map(get))?;
            let a = match shape {
                Some((r, c)) => a.call_method1("reshape", ((r, c),))?,
                None => a,
            };
            out.set_item(*name, a)?;
        }
        Ok(out)
    }
}

/// The distinct ids of `found`, sorted, and each one's position among them.
fn distinct(found: &[&[(u64, f32)]]) -> (Vec<u64>, HashMap<u64, usize>) {
    let mut ids: Vec<u64> = found.iter().flat_map(|l| l.iter().map(|h| h.0)).collect();
    ids.sort_unstable();
    ids.dedup();
    let index = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    (ids, index)
}

/// A 1-D numpy array of `values`, all of type `t` (module doc: the dtypes).
fn array<'py, 'a>(
    py: Python<'py>,
    t: ColumnType,
    values: impl Iterator<Item = &'a Value>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match t {
        ColumnType::Int | ColumnType::Timestamp => {
            let v: Vec<i64> = values
                .map(|v| match v {
                    Value::Int(x) | Value::Timestamp(x) => *x,
                    _ => 0,
                })
                .collect();
            let a = arrays::vector(py, v);
            if t == ColumnType::Timestamp {
                a.call_method1("view", ("datetime64[us]",))?
            } else {
                a
            }
        }
        ColumnType::Float => arrays::vector(
            py,
            values
                .map(|v| match v {
                    Value::Float(x) => *x,
                    _ => f64::NAN,
                })
                .collect::<Vec<f64>>(),
        ),
        ColumnType::Bool => arrays::vector(
            py,
            values
                .map(|v| matches!(v, Value::Bool(true)))
                .collect::<Vec<bool>>(),
        ),
        ColumnType::Str | ColumnType::Tags => {
            let objects: Vec<Py<PyAny>> = values
                .map(|v| -> PyResult<Py<PyAny>> {
                    Ok(match v {
                        Value::Str(s) => PyString::new(py, s).into_any().unbind(),
                        Value::Tags(t) => PyList::new(py, t)?.into_any().unbind(),
                        other => PyString::new(py, &other.to_string()).into_any().unbind(),
                    })
                })
                .collect::<PyResult<_>>()?;
            arrays::vector(py, objects)
        }
    })
}

/// `(D, I)` of `nq` result lists in `cols` columns: I int64 (ids' bits, −1 padding), D int32
/// Hamming distances (padding i32::MAX) or float32 (padding +inf when smaller is better, −inf
/// when larger is).
fn shaped<'py>(
    py: Python<'py>,
    hits: &[Vec<(u64, f32)>],
    nq: usize,
    cols: usize,
    scores: Scores,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mut ids = vec![-1i64; nq * cols];
    for (qi, row) in hits.iter().enumerate() {
        for (j, &(id, _)) in row.iter().take(cols).enumerate() {
            ids[qi * cols + j] = arrays::id_bits(id);
        }
    }
    let i = arrays::matrix(py, ids, nq, cols)?;
    let d = match scores {
        Scores::Hamming => {
            let mut d = vec![i32::MAX; nq * cols];
            for (qi, row) in hits.iter().enumerate() {
                for (j, &(_, s)) in row.iter().take(cols).enumerate() {
                    d[qi * cols + j] = s as i32;
                }
            }
            arrays::matrix(py, d, nq, cols)?
        }
        Scores::Smaller | Scores::Larger => {
            let pad = if scores == Scores::Smaller {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            };
            let mut d = vec![pad; nq * cols];
            for (qi, row) in hits.iter().enumerate() {
                for (j, &(_, s)) in row.iter().take(cols).enumerate() {
                    d[qi * cols + j] = s;
                }
            }
            arrays::matrix(py, d, nq, cols)?
        }
    };
    Ok((d, i))
}
