//! A model: an ordered pipeline of float transforms ending in one quantiser, with everything
//! needed to encode new vectors exactly as at build time.
//!
//! Encoding runs each row through the stages with the deterministic kernels of `kernels.rs`,
//! in parallel row blocks: codes do not depend on batch size or thread count, and a model
//! saved with [`Model::to_model_file`] and loaded with [`Model::from_model_file`] encodes
//! byte-identically.

use std::sync::Arc;

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::format::{CodeKind, FileId, ModelFile};
use crate::scan::LutTerms;

use super::cancel::Cancel;
use super::error::{ModelError, Result};
use super::input::{all_finite, checked_rows, checked_shape, non_finite_error};
use super::ivf::CoarseQuantizer;
use super::origin::Origin;
use super::pq::{AdcMetric, ProductQuantizer};
use super::quantizer::{RowFault, RowQuantizer, code_rows, encode_block, first_fault, get_bit};
use super::stage::Stage;
use super::text::{PamirOptions, PamirReport, TextHead, train_pamir};
use super::transform::{ROW_BLOCK, RowMap};

/// Rows a block is pushed through the transforms at a time (see [`Model::for_each_tile`]).
const TILE_ROWS: usize = 16;

/// What went wrong in one parallel block of [`Model::encode`]: the flat input position of its
/// first NaN/Inf, and its first unencodable row (input row numbers).
#[derive(Default)]
struct BlockOutcome {
    non_finite: Option<usize>,
    fault: Option<(usize, RowFault)>,
}

/// Longest code this layer produces, in bytes (`u32` in the model file).
const MAX_CODE_BYTES: usize = u32::MAX as usize;

/// Largest table of IVF list terms kept precomputed (K × M × 256 floats; 64 MiB). Beyond it
/// (e.g. K = 65,536 with M ≥ 4) each probed list's terms are computed when scanned.
const MAX_PRECOMPUTED_TERMS: usize = 16 << 20;

/// A trained (or loaded) model pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    id: FileId,
    stages: Vec<Stage>,
    /// Optional text head (PAMIR): scores text queries; not needed to encode.
    text: Option<TextHead>,
    /// IVF models: every list's term of the ADC tables ([`CoarseQuantizer::list_terms`]),
    /// K × M × 256, checked (one group per list), when at most [`MAX_PRECOMPUTED_TERMS`] and
    /// finite; derived from the stages. Otherwise each probed list's terms are computed and
    /// checked when scanned (a non-finite term is then the search's error).
    ivf_terms: Option<Arc<LutTerms>>,
    /// How the stages were trained (spec, seed, step per stage); not needed to encode.
    origin: Option<Origin>,
}

impl Model {
    /// A model from its stages, checked: at least one stage, only the last one a quantiser,
    /// and each stage's input dimension equal to the previous stage's output. Gets a fresh id.
    pub fn new(stages: Vec<Stage>) -> Result<Model> {
        let bad = |detail: String| ModelError::BadModel { detail };
        let Some((last, transforms)) = stages.split_last() else {
            return Err(bad("a model needs at least one stage".into()));
        };
        if !last.is_quantizer() {
            return Err(bad(format!(
                "the last stage is {} but must be a quantiser (binarize, sklsh, pq or float)",
                last.name()
            )));
        }
        for (i, s) in transforms.iter().enumerate() {
            if s.is_quantizer() {
                return Err(bad(format!(
                    "stage {i} ({}) is a quantiser but is not the last stage",
                    s.name()
                )));
            }
        }
        if let Some(i) = stages
            .iter()
            .skip(1)
            .position(|s| matches!(s, Stage::Hom(_)))
        {
            return Err(bad(format!(
                "stage {} (hom) maps non-negative descriptors and must be the first stage",
                i + 1
            )));
        }
        for (i, s) in stages.iter().enumerate() {
            let pq8 = |s: &Stage| matches!(s, Stage::Pq(p) if p.ksub() == 256);
            if matches!(s, Stage::Ivf(_)) && !(i + 2 == stages.len() && pq8(last)) {
                return Err(bad(format!(
                    "stage {i} (ivf) must come right before the last stage, an 8-bit pq \
                     (its residual quantiser)"
                )));
            }
        }
        for (i, w) in stages.windows(2).enumerate() {
            if w[0].out_dim() != w[1].in_dim() {
                return Err(bad(format!(
                    "stage {i} ({}) outputs {} dimensions but stage {} ({}) takes {}",
                    w[0].name(),
                    w[0].out_dim(),
                    i + 1,
                    w[1].name(),
                    w[1].in_dim()
                )));
            }
        }
        let mut model = Model {
            id: FileId::generate(),
            stages,
            text: None,
            ivf_terms: None,
            origin: None,
        };
        if let (Some(c), Some(pq)) = (model.ivf(), model.pq()) {
            let per = pq.m() * pq.ksub();
            if c.lists() * per <= MAX_PRECOMPUTED_TERMS {
                let mut t = vec![0f32; c.lists() * per];
                t.par_chunks_mut(per)
                    .enumerate()
                    .for_each(|(l, o)| c.list_terms(pq, l, o));
                model.ivf_terms = LutTerms::new(t, pq.m(), "ivf list terms")
                    .ok()
                    .map(Arc::new);
            }
        }
        let (cb, bits) = (
            model.quantizer().code_bytes(),
            model.quantizer().code_bits(),
        );
        if cb > MAX_CODE_BYTES || !model.code_kind().consistent(cb as u32, bits as u32) {
            return Err(bad(format!(
                "{} codes of {cb} bytes / {bits} bits cannot be stored",
                model.code_kind().name()
            )));
        }
        Ok(model)
    }

    /// The same model under another id.
    pub fn with_id(mut self, id: FileId) -> Model {
        self.id = id;
        self
    }

    /// The text head, when the model has one (see [`TextHead`]).
    pub fn text_head(&self) -> Option<&TextHead> {
        self.text.as_ref()
    }

    /// The same model with `head` as its text head (replacing any), checked: the head scores
    /// vectors of the model's projected dimension. Codes are unchanged.
    pub fn with_text_head(mut self, head: TextHead) -> Result<Model> {
        if head.dim() != self.project_dim() {
            return Err(ModelError::BadModel {
                detail: format!(
                    "the text head scores {}-D vectors but the model projects to {} dimensions",
                    head.dim(),
                    self.project_dim()
                ),
            });
        }
        self.text = Some(head);
        Ok(self)
    }

    /// The same model without a text head.
    pub fn without_text_head(mut self) -> Model {
        self.text = None;
        self
    }

    /// The same model with a PAMIR text head trained on the projection of `x` (what the
    /// index's codes encode, so the head scores them, Grangier et al. §2.2) and the rows'
    /// captions, and what the training did: the one word for "train a text head" that the
    /// CLI's `train --captions`, `eval --task text` and Python's `train(captions=...)` use.
    pub fn with_trained_text_head(
        self,
        x: ArrayView2<f32>,
        captions: &[Vec<String>],
        opts: &PamirOptions,
    ) -> Result<(Model, PamirReport)> {
        let p = self.project(x)?;
        let (head, report) = train_pamir(p.view(), captions, opts)?;
        Ok((self.with_text_head(head)?, report))
    }

    /// How the model was trained, when it records that (models trained by [`crate::model::train`]
    /// do; models assembled from stages do not).
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// The same model recording `origin`, checked: it names one step per pipeline stage.
    pub fn with_origin(mut self, origin: Origin) -> Result<Model> {
        if origin.stages() != self.stages.len() {
            return Err(ModelError::BadModel {
                detail: format!(
                    "the origin names the steps of {} stages, the model has {}",
                    origin.stages(),
                    self.stages.len()
                ),
            });
        }
        self.origin = Some(origin);
        Ok(self)
    }

    /// The model's identity (its file id; segments record which model encoded them).
    pub fn id(&self) -> FileId {
        self.id
    }

    /// The stages, in the order they are applied.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    fn transforms(&self) -> impl Iterator<Item = &dyn RowMap> {
        self.stages.iter().filter_map(Stage::as_map)
    }

    fn last(&self) -> &Stage {
        // `new` guarantees a non-empty pipeline.
        &self.stages[self.stages.len() - 1]
    }

    /// The final, code-producing stage.
    pub fn quantizer(&self) -> &dyn RowQuantizer {
        // `new` guarantees the last stage is a quantiser; a binarizer never fails to be one.
        match self.last().as_quantizer() {
            Some(q) => q,
            None => unreachable!("Model::new checks the last stage is a quantiser"),
        }
    }

    /// Dimension of the input vectors.
    pub fn input_dim(&self) -> usize {
        self.stages.first().map_or(0, Stage::in_dim)
    }

    /// Code layout.
    pub fn code_kind(&self) -> CodeKind {
        self.last().code_kind().unwrap_or(CodeKind::Binary)
    }

    /// Bytes per code.
    pub fn code_bytes(&self) -> usize {
        self.quantizer().code_bytes()
    }

    /// Meaningful bits per code.
    pub fn code_bits(&self) -> usize {
        self.quantizer().code_bits()
    }

    /// Columns of [`Model::project`]'s output.
    pub fn project_dim(&self) -> usize {
        self.quantizer().project_dim()
    }

    /// The coarse quantiser, for an IVF model (`ivf:K,pq:Mx8`): its lists are the index's
    /// inverted lists and its PQ codes encode residuals.
    pub fn ivf(&self) -> Option<&CoarseQuantizer> {
        self.stages.iter().find_map(|s| match s {
            Stage::Ivf(c) => Some(c),
            _ => None,
        })
    }

    /// An IVF model's list terms of the ADC tables, checked, one group of M tables per list
    /// ([`CoarseQuantizer::list_terms`]): `None` when they are not precomputed (too large, or
    /// not finite); then [`Model::ivf_list_terms`] computes a list's.
    pub(crate) fn ivf_terms(&self) -> Option<&LutTerms> {
        self.ivf_terms.as_deref()
    }

    /// An IVF model's list term of the ADC tables of list `l` into `out` (M × 256 values,
    /// [`CoarseQuantizer::list_terms`]), computed.
    pub fn ivf_list_terms(&self, l: usize, out: &mut [f32]) {
        if let (Some(c), Some(pq)) = (self.ivf(), self.pq()) {
            c.list_terms(pq, l, out);
        }
    }

    /// The product quantiser, when the model ends in one.
    pub fn pq(&self) -> Option<&ProductQuantizer> {
        match self.last() {
            Stage::Pq(p) => Some(p),
            _ => None,
        }
    }

    /// Refuses input outside the first stage's domain (`what` names it): a `hom` map takes
    /// non-negative values only. Row-major `data` of `input_dim()` columns.
    pub(crate) fn check_domain(&self, what: &str, data: &[f32]) -> Result<()> {
        match self.stages.first() {
            Some(Stage::Hom(h)) => h.check_non_negative(what, data),
            _ => Ok(()),
        }
    }

    /// Runs the transforms on a tile of rows (`x`, row-major), using `bufs` as ping-pong
    /// scratch; returns the quantiser's input (`x` itself when there are no transforms).
    fn transform_tile<'a>(&self, x: &'a [f32], bufs: &'a mut [Vec<f32>; 2]) -> &'a [f32] {
        let n = x.len() / self.input_dim().max(1);
        // Which buffer holds the current rows (`None`: still `x`).
        let mut cur: Option<usize> = None;
        for t in self.transforms() {
            let next = if cur == Some(0) { 1 } else { 0 };
            let [b0, b1] = &mut *bufs;
            let (src, dst): (&[f32], &mut Vec<f32>) = match (cur, next) {
                (None, _) => (x, b0),
                (Some(0), _) => (b0, b1),
                _ => (b1, b0),
            };
            dst.clear();
            dst.resize(n * t.out_dim(), 0.0);
            t.map_block(src, dst);
            cur = Some(next);
        }
        match cur {
            None => x,
            Some(i) => &bufs[i],
        }
    }

    /// Runs `each(first_row, quantiser_input)` over the block `x` in tiles of [`TILE_ROWS`]
    /// rows: the intermediate vectors of a tile stay in cache, and the scratch buffers are
    /// allocated once per block.
    fn for_each_tile(&self, x: &[f32], mut each: impl FnMut(usize, &[f32])) {
        let d = self.input_dim().max(1);
        let mut bufs = [Vec::new(), Vec::new()];
        for (t, xt) in x.chunks(TILE_ROWS * d).enumerate() {
            each(t * TILE_ROWS, self.transform_tile(xt, &mut bufs));
        }
    }

    /// Encodes the rows of `x` (n × `input_dim()`): `n × code_bytes()` bytes, row-major.
    /// Errors on empty input, a dimension mismatch, NaN/Inf, or (float16) out-of-range values;
    /// a NaN/Inf anywhere is reported (the first one) before any out-of-range value.
    ///
    /// Each tile of rows is checked for NaN/Inf just before it is transformed, while it is in
    /// cache, instead of in a separate pass over the whole input (which cost a tenth of the
    /// encoding time on 784-D input).
    pub fn encode(&self, x: ArrayView2<f32>) -> Result<Vec<u8>> {
        Ok(self.encode_lists(x)?.0)
    }

    /// [`Model::encode`], and for an IVF model each row's inverted list (its nearest coarse
    /// centroid; the code encodes the residual to it). `None` for other models.
    pub fn encode_lists(&self, x: ArrayView2<f32>) -> Result<(Vec<u8>, Option<Vec<u32>>)> {
        self.encode_lists_cancellable(x, &Cancel::new())
    }

    /// [`Model::encode`] that stops with [`ModelError::Cancelled`] soon after `cancel` is
    /// cancelled (it is checked per tile of 16 rows on every thread, so a stop takes
    /// microseconds, not the whole batch).
    pub fn encode_cancellable(&self, x: ArrayView2<f32>, cancel: &Cancel) -> Result<Vec<u8>> {
        Ok(self.encode_lists_cancellable(x, cancel)?.0)
    }

    /// [`Model::encode_lists`] that stops with [`ModelError::Cancelled`] soon after `cancel` is
    /// cancelled (see [`Model::encode_cancellable`]).
    pub fn encode_lists_cancellable(
        &self,
        x: ArrayView2<f32>,
        cancel: &Cancel,
    ) -> Result<(Vec<u8>, Option<Vec<u32>>)> {
        const WHAT: &str = "encode: input";
        let rows = checked_shape(WHAT, x, Some(self.input_dim()))?;
        let data = rows.as_slice();
        let (d, cb) = (self.input_dim(), self.code_bytes());
        let q = self.quantizer();
        let coarse = self.ivf();
        let mut out = vec![0u8; rows.n() * cb];
        let mut lists = vec![0u32; rows.n()];
        let outcomes: Vec<BlockOutcome> = out
            .par_chunks_mut(ROW_BLOCK * cb)
            .zip(data.par_chunks(ROW_BLOCK * d))
            .zip(lists.par_chunks_mut(ROW_BLOCK))
            .enumerate()
            .map(|(b, ((o, xi), li))| {
                let mut outcome = BlockOutcome::default();
                let mut bufs = [Vec::new(), Vec::new()];
                let mut residual = Vec::new();
                let tiles = xi
                    .chunks(TILE_ROWS * d)
                    .zip(o.chunks_mut(TILE_ROWS * cb))
                    .zip(li.chunks_mut(TILE_ROWS));
                for (t, ((xt, ot), lt)) in tiles.enumerate() {
                    if cancel.is_cancelled() {
                        break;
                    }
                    let r0 = b * ROW_BLOCK + t * TILE_ROWS;
                    if !all_finite(xt) {
                        let p = xt.iter().position(|v| !v.is_finite()).unwrap_or(0);
                        outcome.non_finite = Some(r0 * d + p);
                        break;
                    }
                    if outcome.fault.is_none() {
                        let mut y = self.transform_tile(xt, &mut bufs);
                        if let Some(c) = coarse {
                            residual.clear();
                            residual.extend_from_slice(y);
                            lt.copy_from_slice(&c.residuals_in_place(&mut residual));
                            y = &residual;
                        }
                        outcome.fault = encode_block(q, y, ot).map(|(r, f)| (r0 + r, f));
                    }
                }
                outcome
            })
            .collect();
        cancel.check()?;
        if let Some(pos) = outcomes.iter().filter_map(|o| o.non_finite).min() {
            return Err(non_finite_error(WHAT, data, d, pos));
        }
        self.check_domain(WHAT, data)?;
        first_fault(WHAT, outcomes.into_iter().map(|o| o.fault).collect())?;
        Ok((out, coarse.map(|_| lists)))
    }

    /// For an IVF model, the inverted list of each row of `x`: the coarse cell
    /// [`Model::encode_lists`] files it under (the nearest centroid of the transformed row,
    /// ties to the smaller id; Jégou et al., TPAMI 2011, §III-A), without encoding it. `None`
    /// for a model without a coarse quantiser. A sharded index partitioned by list routes rows
    /// by it, so it must agree with the encoder row for row: both call
    /// [`CoarseQuantizer::assign_row`] on the same transformed tile.
    pub fn assign_lists(&self, x: ArrayView2<f32>) -> Result<Option<Vec<u32>>> {
        let Some(c) = self.ivf() else {
            return Ok(None);
        };
        let rows = checked_rows("assign: input", x, Some(self.input_dim()))?;
        self.check_domain("assign: input", rows.as_slice())?;
        let d = self.input_dim();
        let mut lists = vec![0u32; rows.n()];
        lists
            .par_chunks_mut(ROW_BLOCK)
            .zip(rows.as_slice().par_chunks(ROW_BLOCK * d))
            .for_each(|(l, xi)| {
                self.for_each_tile(xi, |r0, y| {
                    for (j, row) in y.chunks_exact(c.dim()).enumerate() {
                        l[r0 + j] = c.assign_row(row);
                    }
                });
            });
        Ok(Some(lists))
    }

    /// For an IVF model, the `nprobe` lists each query row probes (ascending list ids): the
    /// `nprobe` centroids nearest its projection, as a search with `nprobe` scans them (see
    /// [`CoarseQuantizer::probe`]). `None` for a model without a coarse quantiser; `nprobe`
    /// must lie in 1..=K.
    pub fn probe_lists(&self, q: ArrayView2<f32>, nprobe: usize) -> Result<Option<Vec<Vec<u32>>>> {
        let Some(c) = self.ivf() else {
            return Ok(None);
        };
        if nprobe == 0 || nprobe > c.lists() {
            return Err(ModelError::invalid(
                "nprobe",
                format!(
                    "{nprobe}: the model's coarse quantiser has {k} lists (1 ≤ nprobe ≤ {k})",
                    k = c.lists()
                ),
            ));
        }
        let y = self.project(q)?;
        let flat: Vec<f32> = y.iter().copied().collect();
        Ok(Some(
            c.probe(&flat, nprobe)
                .into_iter()
                .map(|p| {
                    let mut l: Vec<u32> = p.into_iter().map(|(l, _)| l).collect();
                    l.sort_unstable();
                    l
                })
                .collect(),
        ))
    }

    /// The real-valued vectors the codes quantise (n × `project_dim()`), for asymmetric
    /// queries: binary models give a vector positive exactly where the bit is 1 (`x − t` after
    /// the transforms for sign bits, `cos(w·x + b) + t` for SKLSH); PQ and float models give
    /// the quantiser's input.
    pub fn project(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let rows = checked_rows("project: input", x, Some(self.input_dim()))?;
        self.check_domain("project: input", rows.as_slice())?;
        let d = self.input_dim();
        let q = self.quantizer();
        let p = q.project_dim();
        let mut out = vec![0f32; rows.n() * p];
        out.par_chunks_mut(ROW_BLOCK * p)
            .zip(rows.as_slice().par_chunks(ROW_BLOCK * d))
            .for_each(|(o, xi)| {
                self.for_each_tile(xi, |r0, y| {
                    let orows = o.get_mut(r0 * p..).unwrap_or_default();
                    for (orow, yrow) in orows.chunks_exact_mut(p).zip(y.chunks_exact(q.in_dim())) {
                        q.project_row(yrow, orow);
                    }
                });
            });
        Array2::from_shape_vec((rows.n(), p), out)
            .map_err(|e| ModelError::shape("model: projected rows", e))
    }

    /// Decodes codes into the projected space: PQ reconstructions, stored floats, or ±1
    /// vectors for binary codes (1 bit → +1).
    /// IVF codes encode residuals to their list's centroid: they are refused here.
    pub fn decode(&self, codes: &[u8]) -> Result<Array2<f32>> {
        if self.ivf().is_some() {
            return Err(ivf_refused("decoding codes without their lists"));
        }
        let cb = self.code_bytes();
        match self.last() {
            Stage::Pq(p) => p.decode(codes),
            Stage::Float(f) => f.decode(codes),
            _ => {
                let n = code_rows(codes, cb)?;
                let bits = self.code_bits();
                let mut out = Array2::<f32>::zeros((n, bits));
                for (mut row, code) in out.rows_mut().into_iter().zip(codes.chunks_exact(cb)) {
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = if get_bit(code, j) { 1.0 } else { -1.0 };
                    }
                }
                Ok(out)
            }
        }
    }

    /// ADC look-up tables of queries (n × (M·K), each row M tables of K floats): the queries
    /// are projected through the transforms, not quantised. Only for PQ models.
    pub fn adc_tables(&self, queries: ArrayView2<f32>, metric: AdcMetric) -> Result<Array2<f32>> {
        if self.ivf().is_some() {
            return Err(ivf_refused(
                "one ADC table per query (IVF tables are per list)",
            ));
        }
        let Some(pq) = self.pq() else {
            return Err(ModelError::unsupported(
                "adc",
                format!(
                    "ADC tables need a PQ model; this model produces {} codes",
                    self.code_kind().name()
                ),
            ));
        };
        let p = self.project(queries)?;
        pq.adc_tables(p.view(), metric)
    }

    /// The model as the byte layer's structure (write it with `ModelFile::write_to`).
    pub fn to_model_file(&self) -> ModelFile {
        ModelFile {
            model_id: self.id,
            input_dim: self.input_dim() as u32,
            code_kind: self.code_kind(),
            code_bytes: self.code_bytes() as u32,
            code_bits: self.code_bits() as u32,
            stages: self
                .stages
                .iter()
                .map(Stage::to_record)
                .chain(self.origin.iter().map(Origin::to_record))
                .chain(self.text.iter().map(TextHead::to_record))
                .collect(),
            skipped_stages: Vec::new(),
        }
    }

    /// Rebuilds a model from a model file, validating every stage (errors name the stage
    /// index, kind and tensor) and checking the file's input dimension and code layout
    /// against what the stages produce. Unknown optional stages (already skipped by the
    /// byte layer) are not needed to encode and are ignored.
    pub fn from_model_file(mf: &ModelFile) -> Result<Model> {
        let mut stages = Vec::with_capacity(mf.stages.len());
        let mut text = None;
        let mut origin = None;
        for (i, rec) in mf.stages.iter().enumerate() {
            if rec.kind == crate::format::stage_kind::ORIGIN {
                // After the pipeline, before any text head; one at most.
                if origin.is_some() || text.is_some() || stages.is_empty() {
                    return Err(ModelError::BadStage {
                        stage: format!("{i} (origin)"),
                        detail: "an origin must follow the pipeline's stages, once".into(),
                    });
                }
                origin = Some(Origin::from_record(rec).map_err(|e| with_stage_index(e, i))?);
                continue;
            }
            if origin.is_some() && rec.kind != crate::format::stage_kind::TEXT {
                return Err(ModelError::BadStage {
                    stage: format!("{i}"),
                    detail: "only a text head may follow the origin".into(),
                });
            }
            if rec.kind == crate::format::stage_kind::TEXT {
                // The text head follows the quantiser; one at most.
                if text.is_some() || i + 1 != mf.stages.len() {
                    return Err(ModelError::BadStage {
                        stage: format!("{i} (text)"),
                        detail: "a text head must be the model's last stage, once".into(),
                    });
                }
                text = Some(TextHead::from_record(rec).map_err(|e| with_stage_index(e, i))?);
                continue;
            }
            let s = Stage::from_record(rec).map_err(|e| with_stage_index(e, i))?;
            stages.push(s);
        }
        let mut model = Model::new(stages)?.with_id(mf.model_id);
        if let Some(head) = text {
            model = model.with_text_head(head)?;
        }
        if let Some(o) = origin {
            model = model.with_origin(o)?;
        }
        let got = (
            model.input_dim(),
            model.code_kind(),
            model.code_bytes(),
            model.code_bits(),
        );
        let want = (
            mf.input_dim as usize,
            mf.code_kind,
            mf.code_bytes as usize,
            mf.code_bits as usize,
        );
        if got != want {
            return Err(ModelError::BadModel {
                detail: format!(
                    "file meta says input dimension {}, {} codes of {} bytes / {} bits, but its \
                     stages give input dimension {}, {} codes of {} bytes / {} bits",
                    want.0,
                    want.1.name(),
                    want.2,
                    want.3,
                    got.0,
                    got.1.name(),
                    got.2,
                    got.3
                ),
            });
        }
        Ok(model)
    }
}

/// The error for what an IVF model's residual codes cannot do.
fn ivf_refused(what: &str) -> ModelError {
    ModelError::unsupported(
        "ivf",
        format!("{what}: an IVF model's codes encode residuals to their list's centroid"),
    )
}

/// Prefixes the stage index to a stage error: "stage 2 (linear)".
fn with_stage_index(e: ModelError, i: usize) -> ModelError {
    match e {
        ModelError::BadTensor {
            stage,
            tensor,
            detail,
        } => ModelError::BadTensor {
            stage: format!("{i} ({stage})"),
            tensor,
            detail,
        },
        ModelError::BadStage { stage, detail } => ModelError::BadStage {
            stage: format!("{i} ({stage})"),
            detail,
        },
        other => other,
    }
}
