//! Engine errors → Python exceptions, chosen by the error's variant (never by its text). The
//! exception classes live in `codedb/_errors.py` (pure Python, so `InvalidArgument` can also be
//! a `ValueError` and `IoError` an `OSError`); the message is the engine's, which names the
//! file and section or argument, followed by its sources.

use std::error::Error as _;

use codedb::{ClassError, FormatError, ModelError, ScanError, SearchError, StorageError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::engine::Error;

/// The exception classes of `codedb._errors`, one per kind of engine error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Corrupt,
    UnsupportedVersion,
    Locked,
    InvalidArgument,
    NotFound,
    AlreadyExists,
    Io,
    Model,
    Closed,
    FellBack,
    Codedb,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Corrupt => "CorruptError",
            Kind::UnsupportedVersion => "UnsupportedVersionError",
            Kind::Locked => "LockedError",
            Kind::InvalidArgument => "InvalidArgument",
            Kind::NotFound => "NotFoundError",
            Kind::AlreadyExists => "AlreadyExistsError",
            Kind::Io => "IoError",
            Kind::Model => "ModelError",
            Kind::Closed => "ClosedError",
            Kind::FellBack => "FellBackError",
            Kind::Codedb => "CodedbError",
        }
    }
}

fn format_kind(e: &FormatError) -> Kind {
    match e {
        FormatError::Io { .. } => Kind::Io,
        FormatError::UnsupportedVersion { .. } => Kind::UnsupportedVersion,
        FormatError::InvalidArgument { .. } => Kind::InvalidArgument,
        _ => Kind::Corrupt,
    }
}

fn storage_kind(e: &StorageError) -> Kind {
    match e {
        StorageError::Locked { .. } => Kind::Locked,
        StorageError::Io { .. } => Kind::Io,
        StorageError::Format(f) => format_kind(f),
        StorageError::Class(c) => class_kind(c),
        StorageError::Model(m) => model_kind(m),
        StorageError::BuildLeftovers { cause, .. } => storage_kind(cause),
        StorageError::DuplicateId { .. } | StorageError::AlreadyExists { .. } => {
            Kind::AlreadyExists
        }
        StorageError::UnknownId { .. } | StorageError::NotAnIndex { .. } => Kind::NotFound,
        StorageError::InvalidArgument { .. } | StorageError::ClassStatsNeedVectors { .. } => {
            Kind::InvalidArgument
        }
        StorageError::FellBack { .. } => Kind::FellBack,
        StorageError::DamagedManifest { .. } => Kind::Corrupt,
        _ => Kind::Codedb,
    }
}

fn model_kind(e: &ModelError) -> Kind {
    match e {
        ModelError::Empty { .. }
        | ModelError::DimensionMismatch { .. }
        | ModelError::NonFinite { .. }
        | ModelError::OutOfRange { .. }
        | ModelError::BadSpec { .. }
        | ModelError::TooFewRows { .. }
        | ModelError::InvalidArgument { .. }
        | ModelError::Shape { .. }
        | ModelError::TextQuery { .. }
        | ModelError::FaissFactory { .. }
        | ModelError::FaissFactorySpec { .. } => Kind::InvalidArgument,
        _ => Kind::Model,
    }
}

fn scan_kind(e: &ScanError) -> Kind {
    match e {
        ScanError::IsaUnavailable { .. } | ScanError::NonFiniteResult { .. } => Kind::Codedb,
        _ => Kind::InvalidArgument,
    }
}

fn class_kind(e: &ClassError) -> Kind {
    match e {
        ClassError::Model(m) => model_kind(m),
        ClassError::Scan(s) => scan_kind(s),
        ClassError::UnknownClass { .. } | ClassError::NoClasses { .. } => Kind::NotFound,
        ClassError::DuplicateName { .. } | ClassError::DuplicateId { .. } => Kind::AlreadyExists,
        _ => Kind::InvalidArgument,
    }
}

fn search_kind(e: &SearchError) -> Kind {
    match e {
        SearchError::NoClassMeans { source } | SearchError::Probe { source } => class_kind(source),
        SearchError::Model(m) => model_kind(m),
        SearchError::Scan(s) => scan_kind(s),
        SearchError::Format(f) => format_kind(f),
        SearchError::Storage(s) => storage_kind(s),
        SearchError::Train(_) | SearchError::NoTextHead => Kind::Model,
        _ => Kind::InvalidArgument,
    }
}

/// The kind of an engine error, from its variant.
pub fn kind(e: &Error) -> Kind {
    match e {
        Error::Format(f) => format_kind(f),
        Error::Storage(s) => storage_kind(s),
        Error::Model(m) => model_kind(m),
        Error::Scan(s) => scan_kind(s),
        Error::Search(s) => search_kind(s),
        Error::Classes(c) => class_kind(c),
        Error::InvalidArgument { .. } => Kind::InvalidArgument,
        _ => Kind::Codedb,
    }
}

/// The message with every source below it that it does not already say.
fn message(e: &Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

/// A Python exception of class `kind` with `msg`.
pub fn exception(py: Python<'_>, kind: Kind, msg: String) -> PyErr {
    let class = py
        .import("codedb._errors")
        .and_then(|m| m.getattr(kind.class_name()));
    match class {
        Ok(class) => match class.call1((msg.clone(),)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        // The package is broken (its Python half is missing): say so rather than lose `msg`.
        Err(e) => PyRuntimeError::new_err(format!("{msg} (and codedb._errors failed: {e})")),
    }
}

/// The Python exception for an engine error.
pub fn to_py(e: Error) -> PyErr {
    // Only a call the binding cancelled itself returns this, and the binding raises the
    // exception that made it cancel; a cancel from elsewhere reads as Ctrl-C.
    if e.is_cancelled() {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err("cancelled");
    }
    Python::attach(|py| exception(py, kind(&e), message(&e)))
}

/// `Result<T, Error>` → `PyResult<T>`.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// An `InvalidArgument` naming `argument`.
pub fn invalid(argument: &str, detail: impl std::fmt::Display) -> PyErr {
    Python::attach(|py| {
        exception(
            py,
            Kind::InvalidArgument,
            format!("invalid argument {argument}: {detail}"),
        )
    })
}

/// The index (or snapshot) was closed.
pub fn closed(what: &str) -> PyErr {
    Python::attach(|py| exception(py, Kind::Closed, format!("{what} is closed")))
}

/// Says through `warnings.warn` (class `codedb.FallbackWarning`) that `dir` is served at
/// `version` because newer manifests (`skipped`) do not read: the engine's text, the lines the
/// CLI prints after `codedb: warning: `. Nothing when nothing was skipped.
pub fn warn_fell_back(
    py: Python<'_>,
    dir: &std::path::Path,
    version: u64,
    skipped: &[codedb::admin::SkippedManifest],
) -> PyResult<()> {
    let lines = codedb::admin::fell_back_warning(dir, version, skipped);
    if lines.is_empty() {
        return Ok(());
    }
    let class = py.import("codedb._errors")?.getattr("FallbackWarning")?;
    let msg = std::ffi::CString::new(lines.join("\n").replace('\0', " ")).unwrap_or_default();
    PyErr::warn(py, &class, &msg, 1)
}
