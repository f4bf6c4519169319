//! Bytes ⇄ structures. This layer knows the on-disk layout (FORMAT.md), checksums and
//! validation; it does not know what a projection or a class mean *means*.

pub mod container;
pub mod container_reader;
pub mod container_writer;
pub mod error;
pub mod file_bytes;
pub mod le;
pub mod model_file;
pub mod section_kind;
pub mod stage_kind;

pub use container::{Codec, FileId, FileKind, FormatVersion, Header, SectionEntry};
pub use container_reader::{ChecksumPolicy, Container};
pub use container_writer::ContainerWriter;
pub use error::FormatError;
pub use file_bytes::{FileBytes, LoadMode};
pub use model_file::{CodeKind, DType, ModelFile, StageRecord, Tensor, TensorData};
