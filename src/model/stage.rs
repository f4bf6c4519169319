//! One pipeline stage of any kind, and the dispatch between stage records and stage structs.

use crate::format::{CodeKind, StageRecord, stage_kind};

use super::binarize::Binarize;
use super::center::Center;
use super::error::{ModelError, Result};
use super::float::FloatStage;
use super::hom::Hom;
use super::linalg::{a_bt_f32, matmul_f32, par};
use super::linear::Linear;
use super::pq::ProductQuantizer;
use super::quantizer::RowQuantizer;
use super::rff::{Rff, feature};
use super::rotation::Rotation;
use super::sklsh::Sklsh;
use super::transform::{RowMap, map_rows};

/// A stage of a model pipeline: a float-to-float transform or the final quantiser.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Subtracts a mean.
    Center(Center),
    /// Multiplies by a matrix, optionally adding a bias.
    Linear(Linear),
    /// Multiplies by an orthogonal matrix.
    Rotation(Rotation),
    /// Random Fourier features.
    Rff(Rff),
    /// Additive homogeneous kernel map (χ², intersection).
    Hom(Hom),
    /// Thresholds into packed bits.
    Binarize(Binarize),
    /// SKLSH bits.
    Sklsh(Sklsh),
    /// Product quantiser.
    Pq(ProductQuantizer),
    /// Float storage.
    Float(FloatStage),
}

impl Stage {
    /// Stage kind number (`crate::format::stage_kind`).
    pub fn kind(&self) -> u16 {
        match self {
            Stage::Center(_) => stage_kind::CENTER,
            Stage::Linear(_) => stage_kind::LINEAR,
            Stage::Rotation(_) => stage_kind::ROTATION,
            Stage::Rff(_) => stage_kind::RFF,
            Stage::Hom(_) => stage_kind::HOM,
            Stage::Binarize(_) => stage_kind::BINARIZE,
            Stage::Sklsh(_) => stage_kind::SKLSH,
            Stage::Pq(_) => stage_kind::PQ,
            Stage::Float(_) => stage_kind::FLOAT,
        }
    }

    /// Stage kind name.
    pub fn name(&self) -> &'static str {
        stage_kind::name(self.kind()).unwrap_or("unknown")
    }

    /// The float-to-float map, for transform stages.
    pub fn as_map(&self) -> Option<&dyn RowMap> {
        match self {
            Stage::Center(s) => Some(s),
            Stage::Linear(s) => Some(s),
            Stage::Rotation(s) => Some(s),
            Stage::Rff(s) => Some(s),
            Stage::Hom(s) => Some(s),
            _ => None,
        }
    }

    /// The quantiser, for code-producing stages.
    pub fn as_quantizer(&self) -> Option<&dyn RowQuantizer> {
        match self {
            Stage::Binarize(s) => Some(s),
            Stage::Sklsh(s) => Some(s),
            Stage::Pq(s) => Some(s),
            Stage::Float(s) => Some(s),
            _ => None,
        }
    }

    /// True for the stages that produce codes (they end a pipeline).
    pub fn is_quantizer(&self) -> bool {
        self.as_quantizer().is_some()
    }

    /// Input columns.
    pub fn in_dim(&self) -> usize {
        match (self.as_map(), self.as_quantizer()) {
            (Some(m), _) => m.in_dim(),
            (_, Some(q)) => q.in_dim(),
            _ => 0,
        }
    }

    /// Output columns of a transform, or of a quantiser's projection.
    pub fn out_dim(&self) -> usize {
        match (self.as_map(), self.as_quantizer()) {
            (Some(m), _) => m.out_dim(),
            (_, Some(q)) => q.project_dim(),
            _ => 0,
        }
    }

    /// Code layout of a quantiser stage.
    pub fn code_kind(&self) -> Option<CodeKind> {
        Some(match self {
            Stage::Binarize(_) | Stage::Sklsh(_) => CodeKind::Binary,
            Stage::Pq(p) if p.ksub() == 16 => CodeKind::Pq4,
            Stage::Pq(_) => CodeKind::Pq8,
            Stage::Float(f) if f.is_half() => CodeKind::Float16,
            Stage::Float(_) => CodeKind::Float32,
            _ => return None,
        })
    }

    /// Applies a transform stage to row-major rows with faer products: the training path,
    /// much faster for wide maps (3,000 random features) than the per-row encode kernels,
    /// equal to them up to float rounding. Quantiser stages return the input unchanged.
    pub(crate) fn apply_batch(&self, x: &[f32]) -> Vec<f32> {
        let din = self.in_dim().max(1);
        let n = x.len() / din;
        match self {
            Stage::Linear(l) => {
                let (o, i) = l.weight().dim();
                let w: Vec<f32> = l.weight().iter().copied().collect();
                let mut y = a_bt_f32(x, &w, n, i, o, par());
                if let Some(b) = l.bias() {
                    for row in y.chunks_exact_mut(o) {
                        for (v, bb) in row.iter_mut().zip(b) {
                            *v += bb;
                        }
                    }
                }
                y
            }
            Stage::Rotation(r) => matmul_f32(x, r.as_slice(), n, r.dim(), r.dim(), par()),
            Stage::Rff(f) => {
                let (dd, i) = f.weight().dim();
                let w: Vec<f32> = f.weight().iter().copied().collect();
                let mut y = a_bt_f32(x, &w, n, i, dd, par());
                let scale = f.scale();
                for row in y.chunks_exact_mut(dd) {
                    for (v, &b) in row.iter_mut().zip(f.phase()) {
                        *v = feature(*v + b, scale);
                    }
                }
                y
            }
            _ => match self.as_map() {
                Some(m) => map_rows(m, x),
                None => x.to_vec(),
            },
        }
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        match self {
            Stage::Center(s) => s.to_record(),
            Stage::Linear(s) => s.to_record(),
            Stage::Rotation(s) => s.to_record(),
            Stage::Rff(s) => s.to_record(),
            Stage::Hom(s) => s.to_record(),
            Stage::Binarize(s) => s.to_record(),
            Stage::Sklsh(s) => s.to_record(),
            Stage::Pq(s) => s.to_record(),
            Stage::Float(s) => s.to_record(),
        }
    }

    /// Interprets and validates a stage record.
    pub fn from_record(rec: &StageRecord) -> Result<Stage> {
        Ok(match rec.kind {
            stage_kind::CENTER => Stage::Center(Center::from_record(rec)?),
            stage_kind::LINEAR => Stage::Linear(Linear::from_record(rec)?),
            stage_kind::ROTATION => Stage::Rotation(Rotation::from_record(rec)?),
            stage_kind::RFF => Stage::Rff(Rff::from_record(rec)?),
            stage_kind::HOM => Stage::Hom(Hom::from_record(rec)?),
            stage_kind::BINARIZE => Stage::Binarize(Binarize::from_record(rec)?),
            stage_kind::SKLSH => Stage::Sklsh(Sklsh::from_record(rec)?),
            stage_kind::PQ => Stage::Pq(ProductQuantizer::from_record(rec)?),
            stage_kind::FLOAT => Stage::Float(FloatStage::from_record(rec)?),
            k => {
                return Err(ModelError::BadStage {
                    stage: format!("kind {k}"),
                    detail: "unknown stage kind".into(),
                });
            }
        })
    }
}
