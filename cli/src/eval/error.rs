//! Errors of the evaluation layer: shape mismatches and invalid rankings, each naming the
//! argument (and query) that is wrong.

/// An invalid input to a metric or ground-truth computation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("{what}: dimension {found} does not match the {expected} of the database")]
    DimensionMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("{what}: {found} entries, expected {expected}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("{what} is empty")]
    Empty { what: &'static str },
    #[error("{what}: non-finite value at row {row}, column {col}")]
    NonFinite {
        what: &'static str,
        row: usize,
        col: usize,
    },
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        argument: &'static str,
        detail: String,
    },
    #[error(
        "{what}: query {query}: index {index} is out of range (database has {n_database} items)"
    )]
    IndexOutOfRange {
        what: &'static str,
        query: usize,
        index: u64,
        n_database: usize,
    },
    #[error("{what}: query {query}: index {index} appears more than once")]
    DuplicateIndex {
        what: &'static str,
        query: usize,
        index: u32,
    },
    #[error("{what}: query {query}: {len} entries, at least {required} required")]
    TooShort {
        what: &'static str,
        query: usize,
        len: usize,
        required: usize,
    },
    #[error("{what}: no query has any relevant item, the mean is undefined")]
    NoRelevant { what: &'static str },
    #[error("{what}: {rows} rows exceed the u32 index range")]
    TooLarge { what: &'static str, rows: usize },
}

/// Shorthand for results of this module.
pub type Result<T> = std::result::Result<T, EvalError>;
