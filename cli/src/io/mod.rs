//! Input and output of vector data: `.npy`, `.fvecs`/`.bvecs`/`.ivecs`, gzip IDX (MNIST,
//! Fashion-MNIST), label and id files.
//!
//! Rules every reader here follows:
//! - errors are [`IoError`] values naming the file and what is wrong; malformed bytes never
//!   panic and never cause an allocation larger than the file (or, for streams, than the data
//!   actually read);
//! - every reader that returns an `f32` vector matrix returns a non-empty, finite one (NaN/Inf
//!   are reported with row and column), because training and search cannot recover from them;
//! - nothing is memory-mapped (this module has no `unsafe`): large files are read in chunks
//!   through [`RowSource`].

pub mod attributes;
pub mod attributes_arrow;
pub mod attributes_input;
pub mod attributes_npy;
pub mod attributes_raw;
pub mod captions;
pub mod elements;
pub mod fashion_mnist;
pub mod idx;
pub mod load;
pub mod matrix_checks;
pub mod npy_header;
pub mod npy_read;
pub mod npy_rows;
pub mod npy_write;
pub mod row_source;
pub mod text_queries;
pub mod tsv;
pub mod vecs;

pub use crate::error::IoError;
pub use captions::read_captions;
pub use fashion_mnist::{
    FASHION_MNIST_DEBIAN_DIR, LabeledVectors, is_fashion_mnist_dir, load_fashion_mnist,
};
pub use idx::{IdxArray, IdxRowReader, read_idx, read_idx_images, read_idx_labels};
pub use load::{VectorFormat, detect_format, load_labels, load_vector, load_vectors, open_rows};
pub use matrix_checks::{check_finite, check_finite_from, check_nonempty, check_vectors};
pub use npy_header::NpyDtype;
pub use npy_read::{
    NpyArray, NpyData, read_ids, read_labels, read_matrix_f32, read_matrix_u8, read_npy,
    read_vector_f32,
};
pub use npy_rows::NpyRowReader;
pub use npy_write::{
    NpyF32Writer, write_npy_f32, write_npy_i32, write_npy_i64, write_npy_u8, write_npy_u64,
};
pub use row_source::{RowSource, read_all_rows};
pub use text_queries::read_text_queries;
pub use tsv::tsv_field;
pub use vecs::{
    VecsKind, VecsRowReader, read_bvecs, read_fvecs, read_ivecs, write_bvecs, write_fvecs,
    write_ivecs,
};
