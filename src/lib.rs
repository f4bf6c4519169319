//! codedb: an embedded, on-disk index database for compact image codes.

pub mod format;
pub mod scan;
