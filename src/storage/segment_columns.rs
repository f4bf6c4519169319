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
}

/// A segment column, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Ids,
    Codes,
    Labels,
    Lists,
    Vectors,
}
