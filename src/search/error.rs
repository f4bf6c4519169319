//! Errors of a search: each variant names the argument or stored column that is wrong. A
//! filter's own error ([`FilterError`]: why an expression was refused, every variant naming
//! where in the text, a 1-based character column, so that a caller can point at it) stands
//! here beside the [`SearchError`] that holds it, so the filter language (`filter/`), which
//! raises both, takes its errors from below.

/// Why a search could not run. Raised before any result is produced: a search never returns a
/// partial or silently wrong list.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A caller argument is unusable (k = 0, wrong query width, empty queries, bad radius …).
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },
    /// The mode needs codes of another kind than the index stores.
    #[error("invalid argument mode: {mode} does not apply to {kind} codes ({hint})")]
    ModeNotApplicable {
        /// The mode asked for.
        mode: &'static str,
        /// The kind of codes the index stores.
        kind: &'static str,
        /// What the mode needs, or which modes apply to these codes.
        hint: &'static str,
    },
    /// `nprobe` on a snapshot whose class means (the coarse quantiser) cannot be built: no
    /// class with images, or a class table that does not fit the model.
    #[error("invalid argument nprobe: the class means are the coarse quantiser: {source}")]
    NoClassMeans {
        /// Why the class means cannot be built.
        source: crate::classes::ClassError,
    },
    /// The class means refused the queries of an `nprobe` search.
    #[error("invalid argument nprobe: {source}")]
    Probe {
        /// The class means' error.
        source: crate::classes::ClassError,
    },
    /// A list-restricted search (`lists`, or `nprobe`) on an index where no live row has a list
    /// id: it would scan every row, so the restriction would silently do nothing.
    #[error(
        "invalid argument {argument}: the index has no inverted lists (none of its {live_rows} live \
         rows has a list id), so a list-restricted search would scan every row; file rows under \
         lists when adding them: codedb build/add --lists label|nearest (library: \
         BuildOptions::lists, AddOptions::lists)"
    )]
    NoLists {
        /// The argument at fault.
        argument: &'static str,
        /// The index's number of live rows.
        live_rows: u64,
    },
    /// Re-ranking or exact search needs stored vectors and (some of) the index has none.
    #[error("no stored vectors: {detail}")]
    NoVectors {
        /// What is wrong.
        detail: String,
    },
    /// A text query on an index whose model has no text head.
    #[error(
        "the index's model has no text head, so it cannot answer text queries (train one with \
         codedb train … --captions FILE and build the index with that model)"
    )]
    NoTextHead,
    /// A filter expression that does not parse, or names a column the index does not have, or
    /// tests it with an operator or value its type does not take (the CLI's exit 2).
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// The model failed to encode or project the queries.
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    /// A scan kernel refused its arguments.
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    /// A file of the index does not decode.
    #[error(transparent)]
    Format(#[from] crate::format::FormatError),
    /// Opening the index or reading its files failed.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    /// Training from an index's codes failed.
    #[error(transparent)]
    Train(#[from] crate::model::classify::ClassifyError),
}

/// Shorthand for [`SearchError::InvalidArgument`].
impl From<crate::format::AttributeError> for SearchError {
    fn from(e: crate::format::AttributeError) -> SearchError {
        SearchError::InvalidArgument {
            argument: format!("attributes column {}", e.column),
            detail: match e.row {
                Some(r) => format!("row {r}: {}", e.detail),
                None => e.detail,
            },
        }
    }
}

pub(crate) fn invalid(argument: &str, detail: impl Into<String>) -> SearchError {
    SearchError::InvalidArgument {
        argument: argument.into(),
        detail: detail.into(),
    }
}

impl SearchError {
    /// Whether the query was stopped through its [`Cancel`](crate::model::Cancel) token.
    pub fn is_cancelled(&self) -> bool {
        match self {
            SearchError::Model(crate::model::ModelError::Cancelled) => true,
            SearchError::Storage(e) => e.is_cancelled(),
            _ => false,
        }
    }
}

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
