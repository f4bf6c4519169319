//! Bytes ⇄ structures. This layer knows the on-disk layout (`format/FORMAT.md`), checksums and
//! validation; it does not know what a projection or a class mean *means*.
//!
//! Every integer and float on disk is little-endian. Column views (`&[u64]`, `&[f32]` …) are
//! zero-copy casts of the file bytes, which is only correct on a little-endian host; big-endian
//! targets are refused at compile time rather than given silently wrong numbers.
//!
//! The file format as a product: for tools that read or write codedb files without the engine
//! (a converter, a reader in another language checked against this one, the fuzzers). Its items
//! are flat here; `section_kind` and `stage_kind` are the numbers FORMAT.md assigns, and
//! `append_log`, `block_checksums` and `fastscan_layout` keep their free functions in their own
//! namespace.

#[cfg(target_endian = "big")]
compile_error!("codedb's zero-copy column views require a little-endian target");

pub mod append_log;
pub mod attribute_columns;
pub mod attribute_index;
pub mod block_checksums;
pub(crate) mod class_table;
pub(crate) mod container;
pub(crate) mod container_reader;
pub(crate) mod container_writer;
pub(crate) mod deletion_bitmap;
pub(crate) mod error;
pub mod fastscan_layout;
#[allow(unsafe_code)] // the mmap site (ARCHITECTURE.md, "unsafe")
pub(crate) mod file_bytes;
pub(crate) mod le;
pub(crate) mod manifest;
pub(crate) mod mih_build;
pub mod mih_tables;
pub(crate) mod model_file;
pub mod section_kind;
pub(crate) mod segment_data;
pub(crate) mod segment_meta;
pub(crate) mod segment_reader;
pub(crate) mod segment_vectors;
pub(crate) mod segment_writer;
pub mod stage_kind;

pub use append_log::{LogBatch, LogContents, LogMeta, LogTail};
pub use attribute_columns::{
    AttributeError, Attributes, AttributesBuilder, Column, ColumnBuilder, ColumnData, ColumnType,
    Schema, Value,
};
pub use class_table::{Centroid, ClassRecord, ClassTable, class_name_problem};
pub use container::{
    Codec, FileId, FileKind, FormatVersion, HEADER_LEN, Header, MAGIC, SECTION_ENTRY_LEN,
    SectionEntry, TRAILER_LEN,
};
pub use container_reader::{ChecksumPolicy, Container};
pub use container_writer::ContainerWriter;
pub use deletion_bitmap::DeletionBitmap;
pub use error::FormatError;
pub use file_bytes::{FileBytes, LoadMode, evict_from_page_cache};
pub use manifest::{ActiveLogEntry, ClassFileEntry, FileRef, Manifest, SegmentEntry};
pub use model_file::{CodeKind, DType, ModelFile, StageRecord, Tensor, TensorData};
pub use segment_data::{SegmentData, StoredVectors};
pub use segment_meta::{SegmentMeta, VectorDType};
pub use segment_reader::{ListEntry, OpenOptions, RowColumn, SegmentReader, VectorsView};
pub use segment_vectors::{VectorBuf, VectorSlice, VectorSpec};
pub use segment_writer::{SegmentLayout, SegmentWriter};
