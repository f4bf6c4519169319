//! Errors of the byte layer: every variant names the file and, where it applies, the section.

use std::path::PathBuf;

/// An error reading or writing a codedb file.
///
/// Every variant carries the file path (or `<memory>` for bytes that did not come from a file)
/// and, where it applies, the section or field that is wrong, so a user can act on the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Reading or writing the file failed.
    #[error("{path}: I/O error: {source}")]
    Io {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with codedb's magic bytes.
    #[error("{path}: not a codedb file (bad magic bytes)")]
    BadMagic {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
    },
    /// A format version this build does not read.
    #[error(
        "{path}: unsupported format version {}.{} (this build reads {}.0 to {}.{})",
        found.0, found.1, supported.0, supported.0, supported.1
    )]
    UnsupportedVersion {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The version the file declares (major, minor).
        found: (u16, u16),
        /// The newest version this build reads (major, minor).
        supported: (u16, u16),
    },
    /// A valid codedb file of another kind than the one expected (a segment for a model…).
    #[error("{path}: wrong file kind: expected {expected}, found {found}")]
    WrongKind {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The kind the caller asked for.
        expected: &'static str,
        /// The kind the file's header declares.
        found: String,
    },
    /// The file ends inside a structure.
    #[error("{path}: truncated in {section}: {detail}")]
    Truncated {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section or structure at fault.
        section: String,
        /// What is wrong.
        detail: String,
    },
    /// A header, table or section does not match its CRC32.
    #[error("{path}: checksum mismatch in {section}")]
    ChecksumMismatch {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section or structure at fault.
        section: String,
    },
    /// A block of a row column does not match its checksum (FORMAT.md §3.5): found when a
    /// scan first touches it, so nothing computed from it is returned.
    #[error(
        "{path}: checksum mismatch in {section} block {block} (rows {first_row}..{end_row}): the file is damaged"
    )]
    BlockChecksumMismatch {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section or structure at fault.
        section: String,
        /// The block's number within the column.
        block: u64,
        /// The first row the block holds.
        first_row: u64,
        /// One past the last row the block holds.
        end_row: u64,
    },
    /// Bytes that match their checksum but break a rule of the format.
    #[error("{path}: corrupt {section}: {detail}")]
    Corrupt {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section or structure at fault.
        section: String,
        /// What is wrong.
        detail: String,
    },
    /// A zstd-compressed section whose bytes match their checksum but do not decode; zstd's
    /// error is the source.
    #[error("{path}: corrupt {section}: zstd data does not decode: {source}")]
    Decompress {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section or structure at fault.
        section: String,
        /// zstd's error.
        #[source]
        source: std::io::Error,
    },
    /// A section flagged required whose kind this build does not know.
    #[error(
        "{path}: section {section} is required but not understood by this build (written by a newer codedb?)"
    )]
    UnknownRequiredSection {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The section this build does not know.
        section: String,
    },
    /// A model stage flagged required whose kind this build does not know.
    #[error(
        "{path}: model stage {stage} is required to encode but not understood by this build (written by a newer codedb?)"
    )]
    UnknownStage {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The stage this build does not know.
        stage: String,
    },
    /// A model stage whose tensors are well-formed but whose values the model layer refuses
    /// (`inspect` reads a model's optional origin stage this way).
    #[error("{path}: model stage {stage}: {source}")]
    InvalidStage {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The stage, e.g. `4 (origin)`.
        stage: String,
        /// What the model layer found wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A caller passed a value the format cannot hold (too many rows, a misused writer).
    #[error("{path}: invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The file (`<memory>` for bytes not read from a file).
        path: PathBuf,
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },
}

impl FormatError {
    /// The file this error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            FormatError::Io { path, .. }
            | FormatError::BadMagic { path }
            | FormatError::UnsupportedVersion { path, .. }
            | FormatError::WrongKind { path, .. }
            | FormatError::Truncated { path, .. }
            | FormatError::ChecksumMismatch { path, .. }
            | FormatError::BlockChecksumMismatch { path, .. }
            | FormatError::Corrupt { path, .. }
            | FormatError::Decompress { path, .. }
            | FormatError::UnknownRequiredSection { path, .. }
            | FormatError::UnknownStage { path, .. }
            | FormatError::InvalidStage { path, .. }
            | FormatError::InvalidArgument { path, .. } => path,
        }
    }

    /// The section or field the error names, if any (used by `codedb verify` reports).
    pub fn section(&self) -> Option<&str> {
        match self {
            FormatError::Truncated { section, .. }
            | FormatError::ChecksumMismatch { section, .. }
            | FormatError::BlockChecksumMismatch { section, .. }
            | FormatError::Corrupt { section, .. }
            | FormatError::Decompress { section, .. }
            | FormatError::UnknownRequiredSection { section, .. } => Some(section),
            FormatError::UnknownStage { stage, .. } | FormatError::InvalidStage { stage, .. } => {
                Some(stage)
            }
            FormatError::InvalidArgument { argument, .. } => Some(argument),
            FormatError::BadMagic { .. } | FormatError::UnsupportedVersion { .. } => Some("header"),
            FormatError::WrongKind { .. } => Some("header.kind"),
            FormatError::Io { .. } => None,
        }
    }
}

/// Shorthand used throughout the byte layer.
pub type Result<T> = std::result::Result<T, FormatError>;
