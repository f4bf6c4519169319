//! One pipeline stage of any kind, and the dispatch between stage records and stage structs.

use crate::format::{CodeKind, StageRecord, stage_kind};

use super::binarize::Binarize;
use super::center::Center;
use super::error::{ModelError, Result};
use super::float::FloatStage;
use super::linear::Linear;
use super::pq::ProductQuantizer;
use super::quantizer::RowQuantizer;
use super::rff::Rff;
use super::rotation::Rotation;
use super::sklsh::Sklsh;
use super::transform::RowMap;

/// A stage of a model pipeline: a float-to-float transform or the final quantiser.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    Center(Center),
    Linear(Linear),
    Rotation(Rotation),
    Rff(Rff),
    Binarize(Binarize),
    Sklsh(Sklsh),
    Pq(ProductQuantizer),
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

    pub fn to_record(&self) -> StageRecord {
        match self {
            Stage::Center(s) => s.to_record(),
            Stage::Linear(s) => s.to_record(),
            Stage::Rotation(s) => s.to_record(),
            Stage::Rff(s) => s.to_record(),
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
