//! Errors of the scan layer: every variant names the argument that is wrong and why.

/// An error raised by a scan before it touches any code: the inputs are checked once, up front,
/// so the kernels themselves can run without checks and never panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScanError {
    #[error("invalid argument k: must be at least 1 (got 0)")]
    ZeroK,
    #[error("invalid argument code_bytes: must be at least 1 (got 0)")]
    ZeroCodeWidth,
    #[error(
        "invalid argument codes: length {codes_len} is not a multiple of code_bytes = {code_bytes}"
    )]
    CodesLength { codes_len: usize, code_bytes: usize },
    #[error("invalid argument ids: {ids_len} ids for {rows} code rows")]
    IdsLength { ids_len: usize, rows: usize },
    #[error(
        "invalid argument deleted: bitmap has {words} u64 words, {rows} rows need exactly {expected}"
    )]
    DeletedLength {
        words: usize,
        rows: usize,
        expected: usize,
    },
    #[error("invalid argument {argument}: length {found}, expected {expected}")]
    Length {
        argument: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("invalid argument {argument}: length {found} is not a multiple of {unit} ({what})")]
    NotMultiple {
        argument: &'static str,
        found: usize,
        unit: usize,
        what: &'static str,
    },
    #[error("invalid argument {argument}: must not be empty")]
    Empty { argument: &'static str },
    #[error("invalid argument {argument}: entry {index} is not finite ({value})")]
    NonFinite {
        argument: &'static str,
        index: usize,
        value: f32,
    },
    #[error(
        "invalid argument lut: the sum over tables of the largest |entry| is {bound:e}, \
         too close to f32::MAX for scores to stay finite"
    )]
    LutRange { bound: f64 },
    #[error("{what}: the result is not finite (inputs too large or not finite)")]
    NonFiniteResult { what: &'static str },
    #[error("invalid argument {argument}: {detail}")]
    Invalid {
        argument: &'static str,
        detail: String,
    },
    #[error(
        "dispatch {requested} requested but this CPU does not support it (detected: {detected})"
    )]
    IsaUnavailable {
        requested: &'static str,
        detected: &'static str,
    },
}

/// Result of the scan layer.
pub type Result<T> = std::result::Result<T, ScanError>;
