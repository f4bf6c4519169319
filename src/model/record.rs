//! Reading a stage's tensors back from a [`StageRecord`] with full validation.
//!
//! The byte layer guarantees well-formed tensors; this layer checks *meaning*: each stage asks
//! for its tensors by name with the dtype and shape it needs, values are checked finite, and
//! tensors the stage does not know are refused (a stage kind's layout never changes; new
//! layouts take new kind numbers, FORMAT.md §4.2). Every error names the stage and the tensor.

use crate::format::{StageRecord, Tensor, TensorData};

use super::error::{ModelError, Result};

/// Validating accessor over one stage record.
pub(crate) struct RecordReader<'a> {
    stage: &'static str,
    rec: &'a StageRecord,
    used: Vec<bool>,
}

fn shape_str(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl<'a> RecordReader<'a> {
    /// Starts reading `rec` as a stage of kind `kind` named `stage`.
    pub(crate) fn new(stage: &'static str, kind: u16, rec: &'a StageRecord) -> Result<Self> {
        if rec.kind != kind {
            return Err(ModelError::BadStage {
                stage: stage.to_string(),
                detail: format!("record has stage kind {}, expected {kind}", rec.kind),
            });
        }
        for (i, t) in rec.tensors.iter().enumerate() {
            if rec.tensors[..i].iter().any(|u| u.name == t.name) {
                return Err(ModelError::bad_tensor(
                    stage,
                    &t.name,
                    "appears more than once",
                ));
            }
        }
        Ok(RecordReader {
            stage,
            rec,
            used: vec![false; rec.tensors.len()],
        })
    }

    fn err(&self, tensor: &str, detail: impl Into<String>) -> ModelError {
        ModelError::bad_tensor(self.stage, tensor, detail)
    }

    fn find(&mut self, name: &str) -> Option<&'a Tensor> {
        let i = self.rec.tensors.iter().position(|t| t.name == name)?;
        if let Some(u) = self.used.get_mut(i) {
            *u = true;
        }
        self.rec.tensors.get(i)
    }

    fn require(&mut self, name: &str) -> Result<&'a Tensor> {
        self.find(name).ok_or_else(|| self.err(name, "is missing"))
    }

    /// Checks `t.shape` against `shape`, where `None` entries accept any extent ≥ 1.
    fn check_shape(&self, t: &Tensor, shape: &[Option<usize>]) -> Result<Vec<usize>> {
        let ok = t.shape.len() == shape.len()
            && t.shape.iter().zip(shape).all(|(&got, want)| match want {
                Some(w) => got == *w as u64,
                None => got >= 1,
            });
        if !ok {
            let want: Vec<String> = shape
                .iter()
                .map(|s| s.map_or("*".to_string(), |v| v.to_string()))
                .collect();
            return Err(self.err(
                &t.name,
                format!(
                    "expected shape [{}], got {}",
                    want.join(", "),
                    shape_str(&t.shape)
                ),
            ));
        }
        t.shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| self.err(&t.name, "extent overflows usize")))
            .collect()
    }

    fn f32_data(&self, t: &'a Tensor) -> Result<&'a [f32]> {
        match &t.data {
            TensorData::F32(v) => {
                if let Some(p) = v.iter().position(|x| !x.is_finite()) {
                    return Err(
                        self.err(&t.name, format!("non-finite value {} at element {p}", v[p]))
                    );
                }
                Ok(v)
            }
            other => Err(self.err(
                &t.name,
                format!("expected dtype f32, got {}", other.dtype().name()),
            )),
        }
    }

    fn f64_data(&self, t: &'a Tensor) -> Result<&'a [f64]> {
        match &t.data {
            TensorData::F64(v) => {
                if let Some(p) = v.iter().position(|x| !x.is_finite()) {
                    return Err(
                        self.err(&t.name, format!("non-finite value {} at element {p}", v[p]))
                    );
                }
                Ok(v)
            }
            other => Err(self.err(
                &t.name,
                format!("expected dtype f64, got {}", other.dtype().name()),
            )),
        }
    }

    /// A required finite f32 tensor of the given shape (`None` = any extent ≥ 1); returns the
    /// data and the actual shape.
    pub(crate) fn f32(
        &mut self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(&'a [f32], Vec<usize>)> {
        let t = self.require(name)?;
        let s = self.check_shape(t, shape)?;
        Ok((self.f32_data(t)?, s))
    }

    /// An optional finite f64 tensor of the given shape.
    pub(crate) fn opt_f64(
        &mut self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<Option<&'a [f64]>> {
        match self.find(name) {
            None => Ok(None),
            Some(t) => {
                self.check_shape(t, shape)?;
                Ok(Some(self.f64_data(t)?))
            }
        }
    }

    /// An optional finite f32 tensor of the given shape.
    pub(crate) fn opt_f32(
        &mut self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<Option<&'a [f32]>> {
        match self.find(name) {
            None => Ok(None),
            Some(t) => {
                self.check_shape(t, shape)?;
                Ok(Some(self.f32_data(t)?))
            }
        }
    }

    /// A required finite f64 scalar (shape []).
    pub(crate) fn f64_scalar(&mut self, name: &str) -> Result<f64> {
        let t = self.require(name)?;
        self.check_shape(t, &[])?;
        let v = self.f64_data(t)?;
        v.first()
            .copied()
            .ok_or_else(|| self.err(name, "scalar has no element"))
    }

    /// A required u64 scalar (shape []).
    pub(crate) fn u64_scalar(&mut self, name: &str) -> Result<u64> {
        let t = self.require(name)?;
        self.check_shape(t, &[])?;
        match &t.data {
            TensorData::U64(v) => v
                .first()
                .copied()
                .ok_or_else(|| self.err(name, "scalar has no element")),
            other => Err(self.err(
                name,
                format!("expected dtype u64, got {}", other.dtype().name()),
            )),
        }
    }

    /// A required u8 tensor of the given shape; returns the data and the actual shape.
    pub(crate) fn u8s(
        &mut self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(&'a [u8], Vec<usize>)> {
        let t = self.require(name)?;
        let s = self.check_shape(t, shape)?;
        match &t.data {
            TensorData::U8(v) => Ok((v, s)),
            other => Err(self.err(
                name,
                format!("expected dtype u8, got {}", other.dtype().name()),
            )),
        }
    }

    /// A required u64 tensor of the given shape.
    pub(crate) fn u64s(&mut self, name: &str, shape: &[Option<usize>]) -> Result<&'a [u64]> {
        let t = self.require(name)?;
        self.check_shape(t, shape)?;
        match &t.data {
            TensorData::U64(v) => Ok(v),
            other => Err(self.err(
                name,
                format!("expected dtype u64, got {}", other.dtype().name()),
            )),
        }
    }

    /// Refuses tensors this stage kind does not define.
    pub(crate) fn finish(self) -> Result<()> {
        for (t, used) in self.rec.tensors.iter().zip(&self.used) {
            if !used {
                return Err(self.err(&t.name, "is not a tensor of this stage kind"));
            }
        }
        Ok(())
    }
}

/// An f32 tensor.
pub(crate) fn f32_tensor(name: &str, shape: &[usize], data: Vec<f32>) -> Tensor {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    Tensor::new(name, &shape, TensorData::F32(data))
}

/// An f64 tensor.
pub(crate) fn f64_tensor(name: &str, shape: &[usize], data: Vec<f64>) -> Tensor {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    Tensor::new(name, &shape, TensorData::F64(data))
}
