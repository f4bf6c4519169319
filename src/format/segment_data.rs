//! A whole segment in memory: the simple way to write small segments, and the value that
//! round-trip tests and fuzz targets compare.

use std::io::Write;
use std::path::Path;

use super::container::FileId;
use super::error::Result;
use super::segment_meta::{SegmentMeta, VectorDType};
use super::segment_reader::{SegmentReader, VectorsView};
use super::segment_writer::{SegmentLayout, SegmentWriter};

/// Stored vectors held in memory, with how they are stored on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVectors {
    /// Values per vector.
    pub dim: u32,
    /// Element type on disk.
    pub dtype: VectorDType,
    /// Row-major values (already rounded to f16 precision when `dtype` is f16).
    pub data: Vec<f32>,
    /// zstd level, or `None` to store uncompressed.
    pub zstd_level: Option<i32>,
}

/// All columns of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentData {
    /// The segment's file id.
    pub segment_id: FileId,
    /// Code layout and model, shared by every row.
    pub layout: SegmentLayout,
    /// Row ids, one per row.
    pub ids: Vec<u64>,
    /// Codes, `layout.code_bytes` per row, row-major.
    pub codes: Vec<u8>,
    /// Per-row labels, if the segment stores them.
    pub labels: Option<Vec<u32>>,
    /// Per-row list ids, if the segment stores them.
    pub lists: Option<Vec<u32>>,
    /// Stored vectors, if the segment keeps them.
    pub vectors: Option<StoredVectors>,
}

impl SegmentData {
    /// Writes the segment through a [`SegmentWriter`] and returns its metadata.
    pub fn write_to<W: Write>(&self, out: W, path: &Path) -> Result<(W, SegmentMeta)> {
        let mut w = SegmentWriter::new(out, self.segment_id, self.layout, path)?;
        w.ids(&self.ids)?;
        w.codes(&self.codes)?;
        if let Some(l) = &self.labels {
            w.labels(l)?;
        }
        if let Some(l) = &self.lists {
            w.lists(l)?;
        }
        if let Some(v) = &self.vectors {
            w.vectors(&v.data, v.dim, v.dtype, v.zstd_level)?;
        }
        w.finish()
    }

    /// Serialises the segment into a byte vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        Ok(self.write_to(Vec::new(), Path::new("<memory>"))?.0)
    }

    /// Copies every column out of a reader.
    pub fn from_reader(r: &SegmentReader) -> Result<SegmentData> {
        let m = r.meta();
        let vectors = match (r.vectors()?, m.vectors) {
            (Some(view), Some((dtype, dim))) => {
                let data = match view {
                    VectorsView::F32(v) => v.into_owned(),
                    VectorsView::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
                };
                let zstd_level = (r.container().entries().iter())
                    .any(|e| e.codec == super::container::Codec::Zstd)
                    .then_some(3);
                Some(StoredVectors {
                    dim,
                    dtype,
                    data,
                    zstd_level,
                })
            }
            _ => None,
        };
        Ok(SegmentData {
            segment_id: r.container().header().file_id,
            layout: SegmentLayout {
                code_kind: m.code_kind,
                code_bytes: m.code_bytes,
                code_bits: m.code_bits,
                model_id: m.model_id,
            },
            ids: r.ids().to_vec(),
            codes: r.codes().to_vec(),
            labels: r.labels().map(<[u32]>::to_vec),
            lists: r.lists().map(<[u32]>::to_vec),
            vectors,
        })
    }
}
