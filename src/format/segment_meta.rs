//! The fixed 64-byte metadata section of a segment (FORMAT.md §3.1).

use std::path::Path;

use super::container::FileId;
use super::error::Result;
use super::le::{LeReader, LeWriter};
use super::model_file::CodeKind;

/// Element type of stored re-ranking vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum VectorDType {
    /// 32-bit IEEE float.
    F32 = 1,
    /// IEEE half precision.
    F16 = 2,
}

impl VectorDType {
    /// The type stored as `v`, or `None` for an unknown number.
    pub fn from_u8(v: u8) -> Option<VectorDType> {
        match v {
            1 => Some(VectorDType::F32),
            2 => Some(VectorDType::F16),
            _ => None,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            VectorDType::F32 => 4,
            VectorDType::F16 => 2,
        }
    }
    /// Human-readable name used in messages and `inspect` output.
    pub fn name(self) -> &'static str {
        match self {
            VectorDType::F32 => "f32",
            VectorDType::F16 => "f16",
        }
    }

    /// The type named `name` (its [`VectorDType::name`]: "f32" or "f16"), or `None`: the one
    /// place the stored-vector type is chosen by name (the CLI's `--store-vectors`, Python's
    /// `store_vectors=`).
    pub fn parse(name: &str) -> Option<VectorDType> {
        [VectorDType::F32, VectorDType::F16]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// What a segment holds: row count, code layout, the model that encoded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentMeta {
    /// Number of rows.
    pub rows: u64,
    /// How codes are laid out.
    pub code_kind: CodeKind,
    /// Bytes per code (the row width of the code column).
    pub code_bytes: u32,
    /// Meaningful bits per code.
    pub code_bits: u32,
    /// Stored vectors: element type and dimension, if the segment keeps them.
    pub vectors: Option<(VectorDType, u32)>,
    /// The model file the codes were encoded with.
    pub model_id: FileId,
    /// Smallest and largest row id (both 0 when `rows == 0`).
    pub min_id: u64,
    /// Largest row id (see `min_id`).
    pub max_id: u64,
}

/// Length of the encoded segment meta in bytes (FORMAT.md §3.1).
pub const SEGMENT_META_LEN: usize = 64;

impl SegmentMeta {
    /// Encodes the 64-byte meta section.
    pub fn encode(&self) -> Vec<u8> {
        let (vdt, vdim) = match self.vectors {
            Some((t, d)) => (t as u8, d),
            None => (0, 0),
        };
        let mut w = LeWriter::new();
        w.u64(self.rows)
            .u32(self.code_bytes)
            .u8(self.code_kind as u8)
            .u8(vdt)
            .u16(0)
            .u32(vdim)
            .u32(self.code_bits)
            .bytes(&self.model_id.0)
            .u64(self.min_id)
            .u64(self.max_id)
            .zeros(8);
        debug_assert_eq!(w.buf.len(), SEGMENT_META_LEN);
        w.into_inner()
    }

    /// Decodes and checks internal consistency; `exact` refuses trailing bytes (files of this
    /// build's minor version or older).
    pub fn decode(bytes: &[u8], path: &Path, exact: bool) -> Result<SegmentMeta> {
        let mut r = LeReader::new(bytes, path, "meta");
        let rows = r.u64()?;
        let code_bytes = r.u32()?;
        let kind = r.u8()?;
        let vdt = r.u8()?;
        r.zeros(2, "reserved")?;
        let vdim = r.u32()?;
        let code_bits = r.u32()?;
        let model_id = FileId(r.array()?);
        let min_id = r.u64()?;
        let max_id = r.u64()?;
        r.zeros(8, "reserved")?;
        if exact {
            r.finish()?;
        }
        let code_kind = CodeKind::from_u8(kind)
            .ok_or_else(|| r.corrupt(format!("unknown code kind {kind}")))?;
        if !code_kind.consistent(code_bytes, code_bits) {
            return Err(r.corrupt(format!(
                "{} codes of {code_bytes} bytes cannot hold {code_bits} bits",
                code_kind.name()
            )));
        }
        let vectors = match (vdt, vdim) {
            (0, 0) => None,
            (0, _) => return Err(r.corrupt("vector dimension set without a vector type")),
            (t, d) => {
                let t = VectorDType::from_u8(t)
                    .ok_or_else(|| r.corrupt(format!("unknown vector type {t}")))?;
                if d == 0 {
                    return Err(r.corrupt("stored vectors with dimension 0"));
                }
                Some((t, d))
            }
        };
        if rows == 0 && (min_id != 0 || max_id != 0) {
            return Err(r.corrupt("empty segment with a non-zero id range"));
        }
        if min_id > max_id {
            return Err(r.corrupt(format!("min id {min_id} > max id {max_id}")));
        }
        Ok(SegmentMeta {
            rows,
            code_kind,
            code_bytes,
            code_bits,
            vectors,
            model_id,
            min_id,
            max_id,
        })
    }
}
