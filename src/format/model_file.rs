//! The model file: a pipeline of typed stages, each a section holding named tensors.
//!
//! The byte layer knows shapes and dtypes, not meaning: `src/model` turns a [`ModelFile`] into
//! math and back. New stage kinds never change this container (FORMAT.md §4): an unknown stage
//! marked required is refused by name, an unknown optional one is skipped and reported.

use std::io::Write;
use std::path::Path;

use super::container::{FileId, FileKind};
use super::container_reader::Container;
use super::container_writer::ContainerWriter;
use super::error::{FormatError, Result};
use super::file_bytes::LoadMode;
use super::le::{LeReader, LeWriter, checked_mul, to_usize};
use super::section_kind::{META, MODEL_STAGE};
use super::stage_kind;

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum DType {
    /// 32-bit IEEE float.
    F32 = 1,
    /// 64-bit IEEE float.
    F64 = 2,
    /// Unsigned byte.
    U8 = 3,
    /// Unsigned 32-bit integer.
    U32 = 4,
    /// Unsigned 64-bit integer.
    U64 = 5,
    /// Signed 64-bit integer.
    I64 = 6,
}

impl DType {
    /// The type stored as `v`, or `None` for an unknown number.
    pub fn from_u8(v: u8) -> Option<DType> {
        Some(match v {
            1 => DType::F32,
            2 => DType::F64,
            3 => DType::U8,
            4 => DType::U32,
            5 => DType::U64,
            6 => DType::I64,
            _ => return None,
        })
    }
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            DType::U8 => 1,
            DType::F32 | DType::U32 => 4,
            DType::F64 | DType::U64 | DType::I64 => 8,
        }
    }
    /// Human-readable name used in messages and `inspect` output.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::I64 => "i64",
        }
    }
}

/// Tensor contents, owned (models are small next to code columns).
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// 32-bit float elements.
    F32(Vec<f32>),
    /// 64-bit float elements.
    F64(Vec<f64>),
    /// Byte elements.
    U8(Vec<u8>),
    /// Unsigned 32-bit elements.
    U32(Vec<u32>),
    /// Unsigned 64-bit elements.
    U64(Vec<u64>),
    /// Signed 64-bit elements.
    I64(Vec<i64>),
}

impl TensorData {
    /// Element type of the contents.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::U8(_) => DType::U8,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::I64(_) => DType::I64,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::U32(v) => v.len(),
            TensorData::U64(v) => v.len(),
            TensorData::I64(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn le_bytes(&self) -> Vec<u8> {
        fn cat<const N: usize, T: Copy>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        match self {
            TensorData::F32(v) => cat(v, f32::to_le_bytes),
            TensorData::F64(v) => cat(v, f64::to_le_bytes),
            TensorData::U8(v) => v.clone(),
            TensorData::U32(v) => cat(v, u32::to_le_bytes),
            TensorData::U64(v) => cat(v, u64::to_le_bytes),
            TensorData::I64(v) => cat(v, i64::to_le_bytes),
        }
    }
    fn from_le_bytes(dtype: DType, b: &[u8]) -> TensorData {
        fn each<const N: usize, T>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
            b.chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    f(a)
                })
                .collect()
        }
        match dtype {
            DType::F32 => TensorData::F32(each(b, f32::from_le_bytes)),
            DType::F64 => TensorData::F64(each(b, f64::from_le_bytes)),
            DType::U8 => TensorData::U8(b.to_vec()),
            DType::U32 => TensorData::U32(each(b, u32::from_le_bytes)),
            DType::U64 => TensorData::U64(each(b, u64::from_le_bytes)),
            DType::I64 => TensorData::I64(each(b, i64::from_le_bytes)),
        }
    }
}

/// A named, shaped array. Scalars have an empty shape and one element.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Name the stage looks the tensor up by, at most 64 bytes.
    pub name: String,
    /// Dimensions, outermost first, at most 4 of them; empty for a scalar.
    pub shape: Vec<u64>,
    /// Elements in row-major order; their count is the product of `shape`.
    pub data: TensorData,
}

/// Longest tensor name, in bytes.
pub const MAX_TENSOR_NAME: usize = 64;
/// Largest tensor rank.
pub const MAX_RANK: usize = 4;

impl Tensor {
    /// A tensor from its parts; [`ModelFile::write_to`] checks that shape and data agree.
    pub fn new(name: &str, shape: &[u64], data: TensorData) -> Tensor {
        Tensor {
            name: name.to_string(),
            shape: shape.to_vec(),
            data,
        }
    }
    /// A `u64` scalar (e.g. a count or a dimension).
    pub fn scalar_u64(name: &str, v: u64) -> Tensor {
        Tensor::new(name, &[], TensorData::U64(vec![v]))
    }
    /// An `f64` scalar (e.g. a bandwidth or a step size).
    pub fn scalar_f64(name: &str, v: f64) -> Tensor {
        Tensor::new(name, &[], TensorData::F64(vec![v]))
    }
    /// Number of elements implied by the shape (1 for a scalar); `None` on overflow.
    pub fn element_count(shape: &[u64]) -> Option<u64> {
        shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
}

/// One stage of a model pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct StageRecord {
    /// Stage kind number (see [`stage_kind`]).
    pub kind: u16,
    /// A reader that does not know `kind` must refuse the model when this is set (the stage is
    /// needed to encode); optional stages (e.g. heads used only by some queries) may be skipped.
    pub required: bool,
    /// The stage's parameters.
    pub tensors: Vec<Tensor>,
}

impl StageRecord {
    /// The tensor called `name`, if present.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// How codes produced by a model are laid out (repeated in each segment's metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CodeKind {
    /// Packed sign bits, bit j of the code is bit (j % 8) of byte j / 8.
    Binary = 1,
    /// One byte per PQ sub-quantiser (256 centroids).
    Pq8 = 2,
    /// Two 4-bit PQ sub-quantisers per byte, low nibble first.
    Pq4 = 3,
    /// Raw little-endian f32 vector.
    Float32 = 4,
    /// Raw little-endian IEEE half-precision vector.
    Float16 = 5,
}

impl CodeKind {
    /// The kind stored as `v`, or `None` for an unknown number.
    pub fn from_u8(v: u8) -> Option<CodeKind> {
        Some(match v {
            1 => CodeKind::Binary,
            2 => CodeKind::Pq8,
            3 => CodeKind::Pq4,
            4 => CodeKind::Float32,
            5 => CodeKind::Float16,
            _ => return None,
        })
    }
    /// Human-readable name used in messages and `inspect` output.
    pub fn name(self) -> &'static str {
        match self {
            CodeKind::Binary => "binary",
            CodeKind::Pq8 => "pq8",
            CodeKind::Pq4 => "pq4",
            CodeKind::Float32 => "float32",
            CodeKind::Float16 => "float16",
        }
    }
    /// Checks that `bits` meaningful bits fit `bytes` bytes for this kind.
    pub fn consistent(self, bytes: u32, bits: u32) -> bool {
        if bytes == 0 {
            return false;
        }
        match self {
            CodeKind::Binary => bits > 0 && (bits as u64).div_ceil(8) == bytes as u64,
            CodeKind::Pq8 => bits as u64 == 8 * bytes as u64,
            CodeKind::Pq4 => {
                bits > 0 && bits.is_multiple_of(4) && (bits as u64).div_ceil(8) == bytes as u64
            }
            CodeKind::Float32 => bytes.is_multiple_of(4) && bits as u64 == 8 * bytes as u64,
            CodeKind::Float16 => bytes.is_multiple_of(2) && bits as u64 == 8 * bytes as u64,
        }
    }
}

/// A whole model file in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    /// The model's identity (its file id); segments record which model encoded them.
    pub model_id: FileId,
    /// Dimension of the input descriptors.
    pub input_dim: u32,
    /// How codes are laid out.
    pub code_kind: CodeKind,
    /// Bytes per code.
    pub code_bytes: u32,
    /// Meaningful bits per code (e.g. 64 for 64-bit binary codes, M*4 for PQ4).
    pub code_bits: u32,
    /// The pipeline's stages, applied in order.
    pub stages: Vec<StageRecord>,
    /// Optional stages of unknown kind that were skipped when reading (kind numbers).
    pub skipped_stages: Vec<u16>,
}

const META_LEN: usize = 32;

impl ModelFile {
    /// Serialises the model.
    pub fn write_to<W: Write>(&self, out: W, path: &Path) -> Result<W> {
        self.validate(path)?;
        let mut w = ContainerWriter::new(out, FileKind::Model, self.model_id, path)?;
        let mut m = LeWriter::new();
        m.u32(self.input_dim)
            .u32(u32::try_from(self.stages.len()).unwrap_or(u32::MAX))
            .u8(self.code_kind as u8)
            .zeros(3)
            .u32(self.code_bytes)
            .u32(self.code_bits)
            .zeros(12);
        w.section(META, true, &m.buf)?;
        for s in &self.stages {
            w.section(MODEL_STAGE, true, &encode_stage(s))?;
        }
        w.finish()
    }

    /// Serialises the model into a byte vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.write_to(Vec::new(), Path::new("<memory>"))
    }

    fn validate(&self, path: &Path) -> Result<()> {
        let bad = |argument: &str, detail: String| FormatError::InvalidArgument {
            path: path.to_path_buf(),
            argument: argument.into(),
            detail,
        };
        if self.input_dim == 0 {
            return Err(bad("input_dim", "must be at least 1".into()));
        }
        if !self.code_kind.consistent(self.code_bytes, self.code_bits) {
            return Err(bad(
                "code",
                format!(
                    "{} codes of {} bytes cannot hold {} bits",
                    self.code_kind.name(),
                    self.code_bytes,
                    self.code_bits
                ),
            ));
        }
        for (i, s) in self.stages.iter().enumerate() {
            for t in &s.tensors {
                let ok_name = !t.name.is_empty() && t.name.len() <= MAX_TENSOR_NAME;
                let n = Tensor::element_count(&t.shape);
                if !ok_name || t.shape.len() > MAX_RANK || n != Some(t.data.len() as u64) {
                    return Err(bad(
                        &format!("stage {i} tensor {:?}", t.name),
                        format!(
                            "name must be 1..={MAX_TENSOR_NAME} bytes, rank <= {MAX_RANK}, and \
                             shape {:?} must match {} elements",
                            t.shape,
                            t.data.len()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads and fully validates a model file.
    pub fn open(path: &Path) -> Result<ModelFile> {
        let c = Container::open(path, LoadMode::Read, Some(FileKind::Model))?;
        ModelFile::from_container(&c)
    }

    /// Parses a model from bytes in memory.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<ModelFile> {
        let c = Container::from_slice(bytes, path, Some(FileKind::Model))?;
        ModelFile::from_container(&c)
    }

    /// Reads a model from an opened container, checking every section's checksum.
    pub fn from_container(c: &Container) -> Result<ModelFile> {
        c.verify_all(|_| {})?;
        let path = c.path();
        let mi = c.require(META)?;
        let mut r = LeReader::new(c.stored(mi), path, "meta");
        let input_dim = r.u32()?;
        let stage_count = r.u32()?;
        let kind = r.u8()?;
        r.zeros(3, "reserved")?;
        let code_bytes = r.u32()?;
        let code_bits = r.u32()?;
        r.zeros(12, "reserved")?;
        if !c.is_newer_minor() {
            r.finish()?;
        }
        debug_assert_eq!(META_LEN, 32);
        let code_kind = CodeKind::from_u8(kind)
            .ok_or_else(|| r.corrupt(format!("unknown code kind {kind}")))?;
        if !code_kind.consistent(code_bytes, code_bits) {
            return Err(r.corrupt(format!(
                "{} codes of {code_bytes} bytes cannot hold {code_bits} bits",
                code_kind.name()
            )));
        }
        if input_dim == 0 {
            return Err(r.corrupt("input dimension is 0"));
        }
        let idx = c.find_all(MODEL_STAGE);
        if idx.len() != stage_count as usize {
            return Err(r.corrupt(format!(
                "meta says {stage_count} stages, file has {}",
                idx.len()
            )));
        }
        let mut stages = Vec::with_capacity(idx.len());
        let mut skipped = Vec::new();
        for (n, i) in idx.into_iter().enumerate() {
            let label = format!("stage {n}");
            let s = decode_stage(c.stored(i), path, &label)?;
            // A kind defined by a later version than the file's is unknown in that file.
            let defined =
                stage_kind::name(s.kind).is_some() && c.version() >= stage_kind::since(s.kind);
            if !defined {
                if s.required {
                    return Err(FormatError::UnknownStage {
                        path: path.to_path_buf(),
                        stage: format!("{label} (kind {})", s.kind),
                    });
                }
                skipped.push(s.kind);
                continue;
            }
            stages.push(s);
        }
        Ok(ModelFile {
            model_id: c.header().file_id,
            input_dim,
            code_kind,
            code_bytes,
            code_bits,
            stages,
            skipped_stages: skipped,
        })
    }
}

fn encode_stage(s: &StageRecord) -> Vec<u8> {
    let mut w = LeWriter::new();
    w.u16(s.kind)
        .u16(u16::from(s.required))
        .u32(s.tensors.len() as u32);
    for t in &s.tensors {
        w.u8(t.data.dtype() as u8)
            .u8(t.shape.len() as u8)
            .u16(t.name.len() as u16)
            .u32(0);
        for &d in &t.shape {
            w.u64(d);
        }
        w.bytes(t.name.as_bytes()).align8();
        w.bytes(&t.data.le_bytes()).align8();
    }
    w.into_inner()
}

fn decode_stage(bytes: &[u8], path: &Path, label: &str) -> Result<StageRecord> {
    let mut r = LeReader::new(bytes, path, label);
    let kind = r.u16()?;
    let flags = r.u16()?;
    let n = r.u32()?;
    if flags > 1 {
        return Err(r.corrupt(format!("unknown stage flags {flags:#x}")));
    }
    let mut tensors = Vec::new();
    for ti in 0..n {
        // Each tensor needs at least its 8-byte header: bound the loop by the bytes present.
        if r.remaining() < 8 {
            return Err(FormatError::Truncated {
                path: path.to_path_buf(),
                section: label.to_string(),
                detail: format!("tensor {ti} of {n} is missing"),
            });
        }
        let dt = r.u8()?;
        let rank = r.u8()? as usize;
        let name_len = r.u16()? as usize;
        r.zeros(4, "tensor reserved")?;
        let dtype = DType::from_u8(dt)
            .ok_or_else(|| r.corrupt(format!("tensor {ti}: unknown dtype {dt}")))?;
        if rank > MAX_RANK || name_len == 0 || name_len > MAX_TENSOR_NAME {
            return Err(r.corrupt(format!(
                "tensor {ti}: rank {rank} or name length {name_len} out of range"
            )));
        }
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            shape.push(r.u64()?);
        }
        let name = std::str::from_utf8(r.take(name_len)?)
            .map_err(|_| r.corrupt(format!("tensor {ti}: name is not UTF-8")))?
            .to_string();
        r.align8()?;
        let count = Tensor::element_count(&shape)
            .ok_or_else(|| r.corrupt(format!("tensor {name:?}: shape {shape:?} overflows")))?;
        let nbytes = checked_mul(count, dtype.size(), path, label, "tensor size")?;
        let nbytes = to_usize(nbytes, path, label, "tensor size")?;
        let data = TensorData::from_le_bytes(dtype, r.take(nbytes)?);
        r.align8()?;
        tensors.push(Tensor { name, shape, data });
    }
    r.finish()?;
    Ok(StageRecord {
        kind,
        required: flags & 1 != 0,
        tensors,
    })
}
