//! Why a filter expression was refused: every variant names where in the text (a 1-based
//! character column) so that a caller can point at it.

/// A filter expression that does not parse, or does not type against the index's columns.
/// Raised before anything is scanned; the CLI maps it to a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The text is not a sentence of the filter language (docs/filtering.md, "Grammar").
    #[error("filter, column {column}: {detail}")]
    Syntax {
        /// 1-based character column of the offending token (one past the end for "end of
        /// input").
        column: usize,
        /// What was expected and what was found.
        detail: String,
    },
    /// A column the index does not have.
    #[error("filter, column {column}: no column named {name:?} (columns: {known})")]
    UnknownColumn {
        /// 1-based character column of the name.
        column: usize,
        /// The name as written.
        name: String,
        /// The columns the expression may name, comma-separated.
        known: String,
    },
    /// An operator or a value that does not apply to the column's type (`licence < 3`,
    /// `year = 'x'`, `tags = 'cat'`).
    #[error("filter, column {column}: {detail}")]
    Type {
        /// 1-based character column of the comparison.
        column: usize,
        /// What does not fit.
        detail: String,
    },
}

impl FilterError {
    /// The 1-based character column the error points at.
    pub fn column(&self) -> usize {
        match self {
            FilterError::Syntax { column, .. }
            | FilterError::UnknownColumn { column, .. }
            | FilterError::Type { column, .. } => *column,
        }
    }
}
