//! Bytes ⇄ structures. This layer knows the on-disk layout (`format/FORMAT.md`), checksums and
//! validation; it does not know what a projection or a class mean *means*.
//!
//! Every integer and float on disk is little-endian. Column views (`&[u64]`, `&[f32]` …) are
//! zero-copy casts of the file bytes, which is only correct on a little-endian host; big-endian
//! targets are refused at compile time rather than given silently wrong numbers.

#[cfg(target_endian = "big")]
compile_error!("codedb's zero-copy column views require a little-endian target");

pub mod append_log;
pub mod block_checksums;
pub mod class_table;
pub mod container;
pub mod container_reader;
pub mod container_writer;
pub mod deletion_bitmap;
pub mod error;
pub mod fastscan_layout;
#[allow(unsafe_code)] // the mmap site (ARCHITECTURE.md, "unsafe")
pub mod file_bytes;
pub mod le;
pub mod manifest;
pub mod model_file;
pub mod section_kind;
pub mod segment_data;
pub mod segment_meta;
pub mod segment_reader;
pub mod segment_vectors;
pub mod segment_writer;
pub mod stage_kind;

pub use append_log::{LogBatch, LogContents, LogMeta, LogTail};
pub use class_table::{Centroid, ClassRecord, ClassTable};
pub use container::{Codec, FileId, FileKind, FormatVersion, Header, SectionEntry};
pub use container_reader::{ChecksumPolicy, Container};
pub use container_writer::ContainerWriter;
pub use deletion_bitmap::DeletionBitmap;
pub use error::FormatError;
pub use file_bytes::{FileBytes, LoadMode};
pub use manifest::{ActiveLogEntry, ClassFileEntry, FileRef, Manifest, SegmentEntry};
pub use model_file::{CodeKind, DType, ModelFile, StageRecord, Tensor, TensorData};
pub use segment_data::{SegmentData, StoredVectors};
pub use segment_meta::{SegmentMeta, VectorDType};
pub use segment_reader::{ListEntry, OpenOptions, RowColumn, SegmentReader, VectorsView};
pub use segment_vectors::{VectorBuf, VectorSlice, VectorSpec};
pub use segment_writer::{SegmentLayout, SegmentWriter};
