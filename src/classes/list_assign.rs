//! Inverted-list ids at insert: which list (class) a new row is filed under, so list-restricted
//! and IVF searches (`search --classes`, `--nprobe`) scan a class's rows only.
//!
//! Two rules ([`ListAssignment`]):
//! - **label**: the row's class label is its list — exact class lists, for data whose classes
//!   are known;
//! - **nearest**: the class whose projected mean is nearest the row under the index's model —
//!   the NCM rule of Mensink et al. (TPAMI 2013, eq. 1, scored in the bias form of eq. 9-11) —
//!   i.e. the class means act as the coarse quantiser of an inverted file (Jégou et al., TPAMI
//!   2011, §III-A) and a query probing the lists of its nearest means finds the rows filed under
//!   them. Needs a class table with at least one class with images.
//!
//! List ids are class ids either way, so `--nprobe` (which ranks class means) and `--classes`
//! (which names classes) address the same lists.

use ndarray::ArrayView2;

use crate::format::ClassTable;
use crate::model::Model;

use super::class_means::ClassMeans;
use super::error::{ClassError, Result};

/// How rows get their inverted-list id when they are added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListAssignment {
    /// The row's class label (labels required).
    Label,
    /// The class with the nearest projected mean (NCM; a class table required).
    Nearest,
}

impl ListAssignment {
    /// Parses the CLI name: `label` or `nearest`.
    pub fn parse(s: &str) -> Option<ListAssignment> {
        match s {
            "label" => Some(ListAssignment::Label),
            "nearest" => Some(ListAssignment::Nearest),
            _ => None,
        }
    }

    /// The CLI name: `label` or `nearest`.
    pub fn name(self) -> &'static str {
        match self {
            ListAssignment::Label => "label",
            ListAssignment::Nearest => "nearest",
        }
    }
}

impl ClassMeans {
    /// The id of the class whose projected mean is nearest each row of `x` (raw descriptors;
    /// NCM top-1, ties by smaller class id).
    pub fn nearest_classes(&self, model: &Model, x: ArrayView2<f32>) -> Result<Vec<u32>> {
        let top = self.classify(model, x, 1)?;
        top.into_iter()
            .enumerate()
            .map(|(i, l)| {
                l.first().map(|c| c.id).ok_or_else(|| {
                    ClassError::invalid("data", format!("row {i}: no class to assign"))
                })
            })
            .collect()
    }
}

/// The list id of every row of `x`: its label (`how = Label`, `labels` required, one per row)
/// or its nearest class mean in `table` projected by `model` (`how = Nearest`).
pub fn assign_lists(
    how: ListAssignment,
    model: &Model,
    x: ArrayView2<f32>,
    labels: Option<&[u32]>,
    table: Option<&ClassTable>,
) -> Result<Vec<u32>> {
    match how {
        ListAssignment::Label => {
            let Some(l) = labels else {
                return Err(ClassError::invalid(
                    "lists",
                    "list ids from labels need labels (give --labels, or use --lists nearest)",
                ));
            };
            if l.len() != x.nrows() {
                return Err(ClassError::invalid(
                    "labels",
                    format!("{} labels for {} rows", l.len(), x.nrows()),
                ));
            }
            Ok(l.to_vec())
        }
        ListAssignment::Nearest => {
            let no_classes = || {
                ClassError::invalid(
                    "lists",
                    "--lists nearest files each row under its nearest class mean, and the index \
                     has no class with images (build with --labels, or add classes with \
                     codedb add-class first)",
                )
            };
            let table = table.ok_or_else(no_classes)?;
            let means = ClassMeans::build(table, model)?;
            if means.is_empty() {
                return Err(no_classes());
            }
            means.nearest_classes(model, x)
        }
    }
}
