//! What a new segment holds besides ids and codes, and the order its columns are written in:
//! shared by sealing a log and merging segments.

use std::io::BufWriter;

use crate::format::{SegmentWriter, VectorSpec};

use super::fs::SeamWriter;

/// The writer a new segment's columns are streamed into (see `Index::write_segment`).
pub(crate) type ColumnWriter<'a> = SegmentWriter<&'a mut BufWriter<SeamWriter>>;

/// Which optional columns a new segment has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentColumns {
    pub labels: bool,
    pub lists: bool,
    pub vectors: Option<VectorSpec>,
    /// The segment stores attribute columns (the index has a schema).
    pub attributes: bool,
}

/// A segment column, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Ids,
    Codes,
    Labels,
    Lists,
    Vectors,
    Attributes,
}

impl Column {
    /// The column's name in progress reports.
    pub fn name(self) -> &'static str {
        match self {
            Column::Ids => "ids",
            Column::Codes => "codes",
            Column::Labels => "labels",
            Column::Lists => "lists",
            Column::Vectors => "vectors",
            Column::Attributes => "attributes",
        }
    }
}

/// What `Index::write_segment` asks its source for: one column into the writer, or the code
/// column once more (row-major, whole codes, in row order) into a sink — the passes that build
/// the multi-index hashing tables (`format::mih_tables`).
pub(crate) enum Fill<'a, 'w> {
    Column(Column, &'a mut ColumnWriter<'w>),
    CodesAgain(&'a mut dyn FnMut(&[u8])),
}
