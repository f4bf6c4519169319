//! Where a figure goes: the path is checked before any work (an evaluation can take minutes),
//! and the SVG is written to a temporary file in the same directory and renamed over the
//! target, so a failure leaves no half-written file.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A figure that could not be made or written, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error(
        "{path}: only SVG figures are written (name the file *.svg); PNG would need a font \
         rasteriser and a bundled font"
    )]
    NotSvg { path: PathBuf },
    #[error("{path}: the directory {dir} does not exist")]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("{path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("drawing {what}: {source}")]
    Draw {
        what: &'static str,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{what}: nothing to plot ({detail})")]
    NoData { what: &'static str, detail: String },
    #[error("{path}: {detail}")]
    BadInput { path: PathBuf, detail: String },
}

impl PlotError {
    /// A plotters drawing error (the SVG backend only fails on its string buffer).
    pub(crate) fn draw<E: std::error::Error + Send + Sync + 'static>(
        what: &'static str,
    ) -> impl FnOnce(E) -> PlotError {
        move |e| PlotError::Draw {
            what,
            source: Box::new(e),
        }
    }

    /// Whether the error is in the argument itself (a usage error, exit 2) rather than in the
    /// file system or the data (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, PlotError::NotSvg { .. })
    }
}

/// A checked figure path: ends in `.svg` and its directory exists.
#[derive(Debug, Clone)]
pub struct PlotTarget {
    path: PathBuf,
    dir: PathBuf,
}

impl PlotTarget {
    pub fn check(path: &Path) -> Result<PlotTarget, PlotError> {
        let svg = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
        if !svg {
            return Err(PlotError::NotSvg { path: path.into() });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(PlotError::NoDirectory {
                path: path.into(),
                dir,
            });
        }
        Ok(PlotTarget {
            path: path.into(),
            dir,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `svg` to a temporary file beside the target and renames it into place.
    pub fn write(&self, svg: &str) -> Result<(), PlotError> {
        let err = |source| PlotError::Write {
            path: self.path.clone(),
            source,
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".codedb-plot-").suffix(".svg.tmp");
        // A figure is for reading (a temporary file starts as rw-------).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
        let mut tmp = builder.tempfile_in(&self.dir).map_err(err)?;
        tmp.write_all(svg.as_bytes()).map_err(err)?;
        tmp.as_file().sync_all().map_err(err)?;
        tmp.persist(&self.path).map_err(|e| err(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_extension_and_directory_and_writes_whole_files() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            PlotTarget::check(&d.path().join("a.png")),
            Err(PlotError::NotSvg { .. })
        ));
        assert!(matches!(
            PlotTarget::check(&d.path().join("missing/a.svg")),
            Err(PlotError::NoDirectory { .. })
        ));
        let t = PlotTarget::check(&d.path().join("a.SVG")).unwrap();
        t.write("<svg/>").unwrap();
        assert_eq!(std::fs::read_to_string(t.path()).unwrap(), "<svg/>");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }
}
