//! Where a figure goes: where the user says, nowhere else. `--plot FILE` is that file, `--plot
//! DIR` (an existing directory) is the command's default name inside it, and a bare `--plot`
//! is that name in the current directory — so no command writes into the checkout's own
//! `docs/img/` unless asked to. The path is checked before any work (an evaluation can take
//! minutes), its extension chooses the format (SVG or PNG), and the bytes are written to a
//! temporary file in the same directory and renamed over the target, so a failure leaves no
//! half-written file and nothing is created outside that directory.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A figure that could not be made or written, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error(
        "{path}: a figure is written as SVG or PNG: name the file *.svg or *.png, or an existing directory"
    )]
    UnknownFormat { path: PathBuf },
    #[error("{path}: the directory {dir} does not exist")]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("{path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("drawing {what}: {detail}")]
    Draw { what: &'static str, detail: String },
    #[error("{what}: nothing to plot ({detail})")]
    NoData { what: &'static str, detail: String },
    #[error("{path}: {detail}")]
    BadInput { path: PathBuf, detail: String },
}

impl PlotError {
    /// A plotters drawing error (the SVG backend fails only on its string buffer, the bitmap
    /// one on a glyph the font lacks or a PNG encoding error).
    pub(crate) fn draw<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> PlotError {
        move |e| PlotError::Draw {
            what,
            detail: e.to_string(),
        }
    }

    /// Whether the error is in the argument itself (a usage error, exit 2) rather than in the
    /// file system or the data (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, PlotError::UnknownFormat { .. })
    }
}

/// How a figure is encoded, chosen by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Scalable text: `<text>` elements a browser renders in its own sans-serif.
    Svg,
    /// A raster image, text drawn with the bundled DejaVu Sans (no system font library).
    Png,
}

/// A checked figure path: ends in `.svg` or `.png` and its directory exists.
#[derive(Debug, Clone)]
pub struct PlotTarget {
    path: PathBuf,
    dir: PathBuf,
    format: Format,
}

impl PlotTarget {
    /// The figure `path` names: `path` itself, or `default_name` inside it when `path` is an
    /// existing directory (`.` for a bare `--plot`), then [`Self::check`]ed.
    pub fn resolve(path: &Path, default_name: &str) -> Result<PlotTarget, PlotError> {
        if path.is_dir() {
            PlotTarget::check(&path.join(default_name))
        } else {
            PlotTarget::check(path)
        }
    }

    /// Checks a figure file's path: `*.svg` or `*.png`, in a directory that exists (none is
    /// created: a mistyped path fails before the work, not after it).
    pub fn check(path: &Path) -> Result<PlotTarget, PlotError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let format = if ext.eq_ignore_ascii_case("svg") {
            Format::Svg
        } else if ext.eq_ignore_ascii_case("png") {
            Format::Png
        } else {
            return Err(PlotError::UnknownFormat { path: path.into() });
        };
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
            format,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Writes `bytes` (the figure encoded as [`Self::format`]) to a temporary file beside the
    /// target and renames it into place.
    pub fn write(&self, bytes: &[u8]) -> Result<(), PlotError> {
        let err = |source| PlotError::Write {
            path: self.path.clone(),
            source,
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".codedb-plot-").suffix(".tmp");
        // A figure is for reading (a temporary file starts as rw-------).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
        let mut tmp = builder.tempfile_in(&self.dir).map_err(err)?;
        tmp.write_all(bytes).map_err(err)?;
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
            PlotTarget::check(&d.path().join("a.jpg")),
            Err(PlotError::UnknownFormat { .. })
        ));
        assert!(matches!(
            PlotTarget::check(&d.path().join("svg")),
            Err(PlotError::UnknownFormat { .. })
        ));
        let png = PlotTarget::check(&d.path().join("a.PNG")).unwrap();
        assert_eq!(png.format(), Format::Png);
        assert!(matches!(
            PlotTarget::check(&d.path().join("missing/a.svg")),
            Err(PlotError::NoDirectory { .. })
        ));
        let t = PlotTarget::check(&d.path().join("a.SVG")).unwrap();
        assert_eq!(t.format(), Format::Svg);
        t.write(b"<svg/>").unwrap();
        assert_eq!(std::fs::read_to_string(t.path()).unwrap(), "<svg/>");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn resolve_puts_the_default_name_inside_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let t = PlotTarget::resolve(d.path(), "eval.svg").unwrap();
        assert_eq!(t.path(), d.path().join("eval.svg"));
        let t = PlotTarget::resolve(&d.path().join("f.png"), "eval.svg").unwrap();
        assert_eq!(
            (t.path(), t.format()),
            (&*d.path().join("f.png"), Format::Png)
        );
        assert!(matches!(
            PlotTarget::resolve(&d.path().join("missing/"), "eval.svg"),
            Err(PlotError::UnknownFormat { .. })
        ));
    }
}
