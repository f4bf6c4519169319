//! Errors of the scan layer: every variant names the argument that is wrong and why.

/// An error raised by a scan before it touches any code: the inputs are checked once, up front,
/// so the kernels themselves can run without checks and never panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// `k` is zero.
    #[error("invalid argument k: must be at least 1 (got 0)")]
    ZeroK,
    /// The code width is zero bytes.
    #[error("invalid argument code_bytes: must be at least 1 (got 0)")]
    ZeroCodeWidth,
    /// The codes are not a whole number of rows.
    #[error(
        "invalid argument codes: length {codes_len} is not a multiple of code_bytes = {code_bytes}"
    )]
    CodesLength {
        /// The length of the codes, in bytes.
        codes_len: usize,
        /// The code width, in bytes.
        code_bytes: usize,
    },
    /// Not one id per code row.
    #[error("invalid argument ids: {ids_len} ids for {rows} code rows")]
    IdsLength {
        /// The number of ids.
        ids_len: usize,
        /// The number of code rows.
        rows: usize,
    },
    /// The deletion bitmap does not have one bit per row (rounded up to whole words).
    #[error(
        "invalid argument deleted: bitmap has {words} u64 words, {rows} rows need exactly {expected}"
    )]
    DeletedLength {
        /// The bitmap's length in words.
        words: usize,
        /// The number of code rows.
        rows: usize,
        /// The number of words the rows need.
        expected: usize,
    },
    /// An argument of the wrong length.
    #[error("invalid argument {argument}: length {found}, expected {expected}")]
    Length {
        /// The argument at fault.
        argument: &'static str,
        /// The length expected.
        expected: usize,
        /// Its length.
        found: usize,
    },
    /// An argument whose length is not a whole number of units (rows, tables).
    #[error("invalid argument {argument}: length {found} is not a multiple of {unit} ({what})")]
    NotMultiple {
        /// The argument at fault.
        argument: &'static str,
        /// Its length.
        found: usize,
        /// The unit's length.
        unit: usize,
        /// What a unit is.
        what: &'static str,
    },
    /// An empty argument that needs at least one entry.
    #[error("invalid argument {argument}: must not be empty")]
    Empty {
        /// The argument at fault.
        argument: &'static str,
    },
    /// NaN or infinity in a query or table.
    #[error("invalid argument {argument}: entry {index} is not finite ({value})")]
    NonFinite {
        /// The argument at fault.
        argument: &'static str,
        /// The entry's position.
        index: usize,
        /// The value.
        value: f32,
    },
    /// Lookup-table entries so large that a sum of them could overflow `f32`.
    #[error(
        "invalid argument lut: the sum over tables of the largest |entry| is {bound:e}, \
         too close to f32::MAX for scores to stay finite"
    )]
    LutRange {
        /// The sum over tables of the largest |entry|.
        bound: f64,
    },
    /// A computed score is not finite.
    #[error("{what}: the result is not finite (inputs too large or not finite)")]
    NonFiniteResult {
        /// The computation whose result is not finite.
        what: &'static str,
    },
    /// Any other argument out of range.
    #[error("invalid argument {argument}: {detail}")]
    Invalid {
        /// The argument at fault.
        argument: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A kernel set (ISA) was asked for that this CPU lacks.
    #[error(
        "dispatch {requested} requested but this CPU does not support it (detected: {detected})"
    )]
    IsaUnavailable {
        /// The kernel set asked for.
        requested: &'static str,
        /// The best kernel set this CPU supports.
        detected: &'static str,
    },
}

/// Result of the scan layer.
pub type Result<T> = std::result::Result<T, ScanError>;
