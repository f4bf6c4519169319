//! The data files commands read (descriptors, labels, ids): every error names the file, and a
//! descriptor file whose width does not fit names the index or model it must fit, before any
//! work starts.

use std::path::Path;

use anyhow::{Context, Result, bail};
use codedb::ListAssignment;
use codedb_cli::demo_tour::labels_u32;
use ndarray::Array2;

/// Descriptors from `path` (given as `flag`), which must have `dim` columns to fit `whom`
/// ("the model of index DIR", "model FILE").
pub fn vectors_for(flag: &str, path: &Path, dim: usize, whom: &str) -> Result<Array2<f32>> {
    let x = codedb_cli::io::load_vectors(path)?;
    if x.ncols() != dim {
        bail!(
            "{flag} {}: {} columns, but {whom} takes {dim}-D vectors",
            path.display(),
            x.ncols()
        );
    }
    Ok(x)
}

/// "the model of index DIR", for [`vectors_for`].
pub fn index_model(dir: &Path) -> String {
    format!("the model of index {}", dir.display())
}

/// Class labels from `path` as u32 class ids.
pub fn labels(path: Option<&Path>) -> Result<Option<Vec<u32>>> {
    path.map(|p| -> Result<Vec<u32>> {
        let l = codedb_cli::io::load_labels(p)?;
        labels_u32(&l).with_context(|| format!("{}", p.display()))
    })
    .transpose()
}

/// Row ids from `path`.
pub fn ids(path: Option<&Path>) -> Result<Option<Vec<u64>>> {
    Ok(path.map(codedb_cli::io::read_ids).transpose()?)
}

/// The `--lists` choice: `label` or `nearest`.
pub fn lists(name: Option<&str>) -> Result<Option<ListAssignment>> {
    name.map(|l| {
        ListAssignment::parse(l).with_context(|| format!("--lists {l}: expected label or nearest"))
    })
    .transpose()
}

/// The `--attributes-format` override (clap has checked the name), or `None`: by extension.
pub fn attributes_format(
    name: Option<&str>,
) -> Option<codedb_cli::io::attributes_input::AttributesFormat> {
    name.and_then(codedb_cli::io::attributes_input::AttributesFormat::parse)
}
