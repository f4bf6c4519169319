//! Queries over one version, shared by `Index` (its newest version) and `Snapshot`: k-NN and
//! text queries in FAISS's shapes, radius lookup in `range_search`'s, NCM classification.

use std::ffi::CString;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrays;
use crate::engine::{self, MihChoice, Scores, Snapshot};
use crate::errors::{IntoPy, invalid};

/// A k-NN query's Python arguments.
pub struct QueryArgs<'a, 'py> {
    pub k: usize,
    pub mode: Option<&'a str>,
    pub rerank: Option<usize>,
    pub nprobe: Option<usize>,
    pub classes: Option<&'a Bound<'py, PyAny>>,
    pub threads: usize,
    /// `auto`, `on` or `off`, as the CLI's `search --mih`.
    pub mih: &'a str,
}

/// `search(mih=...)`: the CLI's `--mih` values, anything else a `ValueError` naming `mih`.
fn mih_choice(name: &str) -> PyResult<MihChoice> {
    MihChoice::parse(name)
        .ok_or_else(|| invalid("mih", format!("{name:?}: expected auto, on or off")))
}

/// Ids as int64 (FAISS's `idx_t`); the engine's ids are below 2⁶³ in practice, and one that
/// is not is refused rather than wrapped.
pub fn ids_out(ids: Vec<u64>) -> PyResult<Vec<i64>> {
    ids.into_iter()
        .map(|id| i64::try_from(id).map_err(|_| invalid("ids", format!("id {id} ≥ 2⁶³"))))
        .collect()
}

/// `classes=[...]`: names or class ids → list ids.
fn list_ids(snap: &Snapshot, classes: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    let table = engine::classes(snap);
    let mut out = Vec::new();
    for item in classes.try_iter()? {
        let item = item?;
        if let Ok(name) = item.extract::<String>() {
            match table.iter().find(|c| c.1 == name) {
                Some(c) => out.push(c.0),
                None => return Err(invalid("classes", format!("no class is named {name:?}"))),
            }
        } else {
            let id: u32 = item
                .extract()
                .map_err(|_| invalid("classes", "expected class names or class ids"))?;
            if !table.is_empty() && !table.iter().any(|c| c.0 == id) {
                return Err(invalid("classes", format!("no class has id {id}")));
            }
            out.push(id);
        }
    }
    Ok(out)
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

/// Text queries (the model's text head): `(D float32, I int64)`, larger scores better,
/// padded with -inf and -1. Words a query ignored (not in the vocabulary) are a `UserWarning`,
/// as the CLI's note on stderr.
pub fn search_text<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    queries: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if a.k == 0 {
        return Err(invalid("k", "must be at least 1"));
    }
    let texts = text_queries(queries)?;
    let lists = a.classes.map(|c| list_ids(snap, c)).transpose()?;
    let query = engine::Query {
        k: a.k,
        mode: a.mode,
        rerank: a.rerank,
        nprobe: a.nprobe,
        lists,
        threads: a.threads,
        mih: mih_choice(a.mih)?,
    };
    let (hits, ignored) = py
        .detach(|| engine::search_text(snap, &texts, &query))
        .py_err()?;
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
    let (nq, k) = (texts.len(), a.k);
    let mut ids = vec![-1i64; nq * k];
    let mut d = vec![f32::NEG_INFINITY; nq * k];
    for (qi, row) in hits.iter().enumerate() {
        for (j, &(id, s)) in row.iter().take(k).enumerate() {
            ids[qi * k + j] = ids_out(vec![id])?[0];
            d[qi * k + j] = s;
        }
    }
    Ok((
        arrays::matrix(py, d, nq, k)?,
        arrays::matrix(py, ids, nq, k)?,
    ))
}

pub fn search<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    a: &QueryArgs<'_, 'py>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if a.k == 0 {
        return Err(invalid("k", "must be at least 1"));
    }
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let nq = view.nrows();
    let lists = a.classes.map(|c| list_ids(snap, c)).transpose()?;
    let query = engine::Query {
        k: a.k,
        mode: a.mode,
        rerank: a.rerank,
        nprobe: a.nprobe,
        lists,
        threads: a.threads,
        mih: mih_choice(a.mih)?,
    };
    let (hits, scores) = py.detach(|| engine::search(snap, view, &query)).py_err()?;
    let k = a.k;
    let mut ids = vec![-1i64; nq * k];
    for (qi, row) in hits.iter().enumerate() {
        for (j, &(id, _)) in row.iter().take(k).enumerate() {
            ids[qi * k + j] = ids_out(vec![id])?[0];
        }
    }
    let i = arrays::matrix(py, ids, nq, k)?;
    let d = match scores {
        Scores::Hamming => {
            let mut d = vec![i32::MAX; nq * k];
            for (qi, row) in hits.iter().enumerate() {
                for (j, &(_, s)) in row.iter().take(k).enumerate() {
                    d[qi * k + j] = s as i32;
                }
            }
            arrays::matrix(py, d, nq, k)?
        }
        Scores::Smaller | Scores::Larger => {
            let pad = if scores == Scores::Smaller {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            };
            let mut d = vec![pad; nq * k];
            for (qi, row) in hits.iter().enumerate() {
                for (j, &(_, s)) in row.iter().take(k).enumerate() {
                    d[qi * k + j] = s;
                }
            }
            arrays::matrix(py, d, nq, k)?
        }
    };
    Ok((d, i))
}

pub fn search_radius<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    q: &Bound<'py, PyAny>,
    radius: u32,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let rows = arrays::rows(q, "q")?;
    let view = rows.view()?;
    let hits = py
        .detach(|| engine::search_radius(snap, view, radius))
        .py_err()?;
    let mut lims = Vec::with_capacity(hits.len() + 1);
    lims.push(0i64);
    let (mut d, mut i) = (Vec::new(), Vec::new());
    for row in &hits {
        for &(id, s) in row {
            i.push(id);
            d.push(s as i32);
        }
        lims.push(i.len() as i64);
    }
    Ok((
        arrays::vector(py, lims),
        arrays::vector(py, d),
        arrays::vector(py, ids_out(i)?),
    ))
}

pub fn classify<'py>(
    py: Python<'py>,
    snap: &Snapshot,
    x: &Bound<'py, PyAny>,
    top: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if top == 0 {
        return Err(invalid("top", "must be at least 1"));
    }
    let rows = arrays::rows(x, "x")?;
    let view = rows.view()?;
    let n = view.nrows();
    let best = py.detach(|| engine::classify(snap, view, top)).py_err()?;
    classified(py, &best, n, top)
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
        out.push(engine::ClassSums {
            id: field("id")?.extract()?,
            name: field("name")?.extract()?,
            parent: field("parent")?.extract()?,
            count: field("count")?.extract()?,
            sum,
        });
    }
    Ok(out)
}
