//! Errors of the class layer (class means, NCM classification, new classes, labelled adds).
//! Every variant names the class, argument or file at fault; none is ever a panic.

use crate::model::ModelError;
use crate::scan::ScanError;

/// An error defining, updating or classifying with classes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassError {
    /// Projecting, encoding or decoding with the index's model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A scan over class means or codes was given bad arguments.
    #[error(transparent)]
    Scan(#[from] ScanError),

    /// A class named by an argument does not exist in the class table.
    #[error("{argument}: unknown class {class}")]
    UnknownClass {
        /// The argument at fault.
        argument: String,
        /// The class as given (a name or an id).
        class: String,
    },

    /// A row label that is not a class of the index's class table.
    #[error(
        "labels: row {row} has label {label}, which is not a class of the index (add the class \
         first: codedb add-class DIR --id {label} --name NAME --data IMAGES.npy)"
    )]
    UnknownLabel {
        /// The row with the label.
        row: usize,
        /// The label.
        label: u32,
    },

    /// A new class would reuse a name the table already has.
    #[error("class name {name:?} is already taken (class id {id})")]
    DuplicateName {
        /// The name.
        name: String,
        /// The id of the class that has it.
        id: u32,
    },

    /// A new class would reuse an id the table (or a row label) already has.
    #[error("class id {id} is already taken ({detail})")]
    DuplicateId {
        /// The id.
        id: u32,
        /// Who has it already.
        detail: String,
    },

    /// New classes whose parents form a loop.
    #[error("parent cycle: {chain}")]
    ParentCycle {
        /// The classes of the loop, in order.
        chain: String,
    },

    /// A vector or matrix has the wrong number of columns.
    #[error("{argument}: expected {expected} columns (the class table's dimension), got {got}")]
    Dimension {
        /// The argument at fault.
        argument: String,
        /// The class table's dimension.
        expected: usize,
        /// The number of columns given.
        got: usize,
    },

    /// NaN or infinity in input data.
    #[error("{argument}: non-finite value {value} at row {row}, column {col}")]
    NonFinite {
        /// The argument at fault.
        argument: String,
        /// The row of the value.
        row: usize,
        /// The column of the value.
        col: usize,
        /// The value.
        value: f64,
    },

    /// A new class has no images, no given mean and no parent: nothing defines its mean.
    #[error(
        "class {name:?}: no images, no mean and no parent to take a zero-shot prior from (give --data, --mean or --parent)"
    )]
    NoSource {
        /// The new class's name.
        name: String,
    },

    /// The zero-shot prior (Mensink et al. eq. 29) has nothing to average.
    #[error(
        "class {name:?}: no class under parent {parent:?} has images, so there is no zero-shot prior"
    )]
    EmptyPrior {
        /// The new class's name.
        name: String,
        /// Its parent.
        parent: String,
    },

    /// The index (or snapshot) has no class with a mean to classify against.
    #[error("{dir}: the index has no class with images (add one with codedb add-class)")]
    NoClasses {
        /// The index's directory.
        dir: String,
    },

    /// The model given is not the one that encodes the index.
    #[error("model {got} is not the index's model {expected}")]
    ModelMismatch {
        /// The index's model.
        expected: String,
        /// The model given.
        got: String,
    },

    /// Any other malformed argument (empty input, bad value, wrong length).
    #[error("invalid argument {argument}: {detail}")]
    Invalid {
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },
}

impl ClassError {
    pub(crate) fn invalid(argument: &str, detail: impl Into<String>) -> ClassError {
        ClassError::Invalid {
            argument: argument.to_string(),
            detail: detail.into(),
        }
    }
}

/// Shorthand used throughout the class layer.
pub type Result<T> = std::result::Result<T, ClassError>;
