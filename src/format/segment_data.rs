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
    pub dim: u32,
    pub dtype: VectorDType,
    /// Row-major values (already rounded to f16 precision when `dtype` is f16).
    pub data: Vec<f32>,
    /// zstd level, or `None` to store uncompressed.
    pub zstd_level: Option<i32>,
}

/// All columns of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentData {
    pub segment_id: FileId,
    pub layout: SegmentLayout,
    pub ids: Vec<u64>,
    pub codes: Vec<u8>,
    pub labels: Option<Vec<u32>>,
    pub lists: Option<Vec<u32>>,
    pub vectors: Option<StoredVectors>,
}

impl SegmentData {
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
