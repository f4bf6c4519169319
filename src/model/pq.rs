//! Product quantisation (stage kind PQ), Jégou, Douze & Schmid, "Product quantization for
//! nearest neighbor search" (TPAMI 2011), trained as FAISS's `ProductQuantizer` does: the
//! vector is split into M contiguous sub-vectors of `dsub = D / M` dimensions, each quantised
//! by its own k-means codebook of K = 256 (8-bit) or K = 16 (4-bit, for fast-scan) centroids
//! (`kmeans.rs`: 25 iterations, empty-cluster repair, ≤ 256 points per centroid).
//! Gordo et al. (CVPR 2012, §7) use "sub-vectors of 8 dimensions and each sub-vector is
//! encoded on 8 bits" after PCA: `pca:C,pq:(C/8)x8`.
//!
//! Codes: 8-bit — byte m is the index of sub-vector m (`CodeKind::Pq8`); 4-bit — two indices
//! per byte, sub-vector 2i in the low nibble of byte i, 2i+1 in the high nibble, a trailing
//! high nibble 0 when M is odd (`CodeKind::Pq4`).
//!
//! Asymmetric distance computation (ADC, Jégou et al. §4.1): for a query q (not quantised),
//! the table `T[m][k] = ‖q_m − c_{m,k}‖²` (L2) or `⟨q_m, c_{m,k}⟩` (inner product), M × K f32
//! row-major; the distance to a code is `Σ_m T[m][code_m]`, exactly the squared distance (or
//! dot product) between q and the code's reconstruction.
//!
//! Stored tensors: `centroids` f32 `[M, K, dsub]`, K ∈ {16, 256}.

use ndarray::{Array2, Array3, ArrayView2, ArrayView3};

use crate::format::{StageRecord, stage_kind};

use super::cancel::Cancel;
use super::error::{ModelError, Result};
use super::fixed_order::{ColumnOp, columns, nearest_transposed, nearest_transposed_pair};
use super::input::checked_rows;
use super::kmeans::{KMeansOptions, kmeans_rows};
use super::quantizer::{RowFault, RowQuantizer, code_rows, encode_rows};
use super::random::{derive_seed, gather_rows, rng, sample_indices};
use super::record::{RecordReader, f32_tensor};

/// Score of an ADC table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdcMetric {
    /// Squared Euclidean distance (smaller is closer).
    L2,
    /// Inner product (larger is closer).
    InnerProduct,
}

/// A trained product quantiser.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductQuantizer {
    m: usize,
    ksub: usize,
    dsub: usize,
    /// M × K × dsub, standard layout.
    centroids: Array3<f32>,
    /// M × dsub × K: per sub-quantiser, coordinate-major, for the encode and table kernels.
    transposed: Vec<f32>,
    /// M × K: `‖p_{m,j}‖²` (the column kernel's L2 from the origin), for IVF list terms.
    norms: Vec<f32>,
}

/// The result of [`ProductQuantizer::train`].
#[derive(Debug, Clone)]
pub struct PqTraining {
    /// The trained quantiser.
    pub pq: ProductQuantizer,
    /// k-means objective per iteration, per sub-quantiser.
    pub objective: Vec<Vec<f64>>,
    /// Empty clusters repaired, over all sub-quantisers.
    pub splits: usize,
    /// Training rows actually used (after subsampling to ≤ K × max_points_per_centroid).
    pub training_points: usize,
}

fn bits_to_ksub(nbits: u32) -> Result<usize> {
    match nbits {
        8 => Ok(256),
        4 => Ok(16),
        b => Err(ModelError::unsupported(
            "pq",
            format!("sub-quantisers of {b} bits are not supported (use 8 or 4)"),
        )),
    }
}

impl ProductQuantizer {
    /// A quantiser from its codebooks, `[M, K, dsub]` with K = 16 or 256, all finite.
    pub fn new(centroids: Array3<f32>) -> Result<ProductQuantizer> {
        let (m, ksub, dsub) = centroids.dim();
        if m == 0 || dsub == 0 || !(ksub == 16 || ksub == 256) {
            return Err(ModelError::bad_tensor(
                "pq",
                "centroids",
                format!("shape [{m}, {ksub}, {dsub}]: need M >= 1, K = 16 or 256, dsub >= 1"),
            ));
        }
        if centroids.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "pq",
                "centroids",
                "non-finite value",
            ));
        }
        let centroids = centroids.as_standard_layout().into_owned();
        let flat = centroids.as_slice().unwrap_or(&[]);
        let mut transposed = vec![0f32; flat.len()];
        for s in 0..m {
            for k in 0..ksub {
                for j in 0..dsub {
                    transposed[s * dsub * ksub + j * ksub + k] = flat[(s * ksub + k) * dsub + j];
                }
            }
        }
        let mut norms = vec![0f32; m * ksub];
        let origin = vec![0f32; dsub];
        for (s, o) in norms.chunks_exact_mut(ksub).enumerate() {
            let ct = &transposed[s * dsub * ksub..(s + 1) * dsub * ksub];
            columns(ColumnOp::L2, &origin, dsub, ct, ksub, o);
        }
        Ok(ProductQuantizer {
            m,
            ksub,
            dsub,
            centroids,
            transposed,
            norms,
        })
    }

    /// Trains M sub-quantisers of `nbits` (8 or 4) bits on the rows of `x`. The dimension
    /// must be a multiple of M.
    pub fn train(
        x: ArrayView2<f32>,
        m: usize,
        nbits: u32,
        opts: &KMeansOptions,
    ) -> Result<PqTraining> {
        let rows = checked_rows("pq: training data", x, None)?;
        ProductQuantizer::train_rows(
            rows.as_slice(),
            rows.dim(),
            m,
            nbits,
            opts,
            None,
            &Cancel::new(),
            &mut |_| {},
        )
    }

    /// Training on validated row-major data; `hot` starts every sub-quantiser from an existing
    /// quantiser's codebooks (FAISS `Train_hot_start`); `on_sub(s)` after sub-quantiser s.
    #[allow(clippy::too_many_arguments)] // the data, its shape, the method's settings, hooks
    pub(crate) fn train_rows(
        x: &[f32],
        d: usize,
        m: usize,
        nbits: u32,
        opts: &KMeansOptions,
        hot: Option<&ProductQuantizer>,
        cancel: &Cancel,
        on_sub: &mut dyn FnMut(usize),
    ) -> Result<PqTraining> {
        let ksub = bits_to_ksub(nbits)?;
        if m == 0 || !d.is_multiple_of(m) {
            return Err(ModelError::unsupported(
                "pq",
                format!(
                    "{m} sub-quantisers cannot split {d} dimensions (M must divide the dimension)"
                ),
            ));
        }
        let dsub = d / m;
        if let Some(h) = hot
            && (h.m != m || h.ksub != ksub || h.dsub != dsub)
        {
            return Err(ModelError::invalid(
                "pq hot start",
                "codebook shape differs",
            ));
        }
        let n = x.len() / d;
        if n < ksub {
            return Err(ModelError::TooFewRows {
                method: format!("pq with {ksub} centroids per sub-quantiser"),
                needed: ksub,
                got: n,
            });
        }
        // Subsample once for all sub-quantisers (FAISS samples the same rows for each).
        let cap = ksub.saturating_mul(opts.max_points_per_centroid);
        let sampled;
        let x: &[f32] = if opts.max_points_per_centroid > 0 && n > cap {
            sampled = gather_rows(
                x,
                d,
                &sample_indices(&mut rng(derive_seed(opts.seed, 0x5051)), n, cap),
            );
            &sampled
        } else {
            x
        };
        let n = x.len() / d;
        let mut centroids = Array3::<f32>::zeros((m, ksub, dsub));
        let mut objective = Vec::with_capacity(m);
        let mut splits = 0;
        let mut sub = vec![0f32; n * dsub];
        for s in 0..m {
            for (o, r) in sub.chunks_exact_mut(dsub).zip(x.chunks_exact(d)) {
                o.copy_from_slice(&r[s * dsub..(s + 1) * dsub]);
            }
            let sub_opts = KMeansOptions {
                seed: derive_seed(opts.seed, s as u64),
                max_points_per_centroid: 0,
                ..opts.clone()
            };
            let init = hot.map(|h| &h.flat()[s * ksub * dsub..(s + 1) * ksub * dsub]);
            let km = kmeans_rows(&sub, dsub, ksub, init, &sub_opts, cancel)?;
            centroids
                .index_axis_mut(ndarray::Axis(0), s)
                .assign(&km.centroids);
            objective.push(km.objective);
            splits += km.splits;
            on_sub(s);
        }
        Ok(PqTraining {
            pq: ProductQuantizer::new(centroids)?,
            objective,
            splits,
            training_points: n,
        })
    }

    /// Number of sub-quantisers M.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Centroids per sub-quantiser K (16 or 256).
    pub fn ksub(&self) -> usize {
        self.ksub
    }
    /// Bits per sub-quantiser (4 or 8).
    pub fn nbits(&self) -> u32 {
        if self.ksub == 16 { 4 } else { 8 }
    }
    /// Dimensions per sub-vector.
    pub fn dsub(&self) -> usize {
        self.dsub
    }
    /// Input dimension M × dsub.
    pub fn dim(&self) -> usize {
        self.m * self.dsub
    }

    /// The codebooks, `[M, K, dsub]`.
    pub fn centroids(&self) -> ArrayView3<'_, f32> {
        self.centroids.view()
    }

    /// The codebooks as one row-major slice (`new` keeps them in standard layout).
    fn flat(&self) -> &[f32] {
        self.centroids.as_slice().unwrap_or(&[])
    }

    /// Sub-quantiser `s`'s codebook, transposed (`dsub × K`), for the encode kernels.
    fn sub_codebook(&self, s: usize) -> &[f32] {
        let len = self.dsub * self.ksub;
        &self.transposed[s * len..(s + 1) * len]
    }

    /// Writes centroid index `k` of sub-quantiser `s` into a code (byte s for 8 bits; the low
    /// nibble of byte s/2 for even s, the high one for odd s, for 4 bits). `code` starts zeroed.
    fn put(&self, code: &mut [u8], s: usize, k: usize) {
        if self.ksub == 256 {
            code[s] = k as u8;
        } else {
            code[s / 2] |= (k as u8) << (4 * (s % 2));
        }
    }

    /// Centroid index of sub-quantiser `s` in a code.
    #[inline]
    pub fn code_index(&self, code: &[u8], s: usize) -> usize {
        if self.ksub == 256 {
            code.get(s).copied().unwrap_or(0) as usize
        } else {
            let b = code.get(s / 2).copied().unwrap_or(0);
            (if s.is_multiple_of(2) {
                b & 0x0f
            } else {
                b >> 4
            }) as usize
        }
    }

    /// Encodes rows as PQ codes: one byte per sub-quantiser, or two 4-bit codes per byte.
    pub fn encode(&self, x: ArrayView2<f32>) -> Result<Vec<u8>> {
        let rows = checked_rows("pq: input", x, Some(self.dim()))?;
        encode_rows(self, "pq: input", rows.as_slice())
    }

    /// Reconstructions (concatenated centroids) of row-major codes.
    pub fn decode(&self, codes: &[u8]) -> Result<Array2<f32>> {
        let cb = self.code_bytes();
        let n = code_rows(codes, cb)?;
        let d = self.dim();
        let mut out = vec![0f32; n * d];
        for (o, code) in out.chunks_exact_mut(d).zip(codes.chunks_exact(cb)) {
            for s in 0..self.m {
                let k = self.code_index(code, s);
                let at = (s * self.ksub + k) * self.dsub;
                let c = &self.flat()[at..at + self.dsub];
                o[s * self.dsub..(s + 1) * self.dsub].copy_from_slice(c);
            }
        }
        Array2::from_shape_vec((n, d), out).map_err(|e| ModelError::shape("pq: decoded codes", e))
    }

    /// The ADC table of one query (length `dim()`): M × K, row-major.
    pub fn adc_table(&self, q: &[f32], metric: AdcMetric) -> Result<Vec<f32>> {
        if q.len() != self.dim() {
            return Err(ModelError::DimensionMismatch {
                what: "pq: ADC query".into(),
                expected: self.dim(),
                got: q.len(),
            });
        }
        if let Some(p) = q.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::NonFinite {
                what: "pq: ADC query".into(),
                row: 0,
                col: p,
                value: q[p],
            });
        }
        let mut t = vec![0f32; self.m * self.ksub];
        self.fill_table(q, metric, &mut t);
        Ok(t)
    }

    /// The ADC table of `q` into `t` (M × K): per sub-quantiser, the column kernel over its
    /// transposed codebook (one FMA chain per centroid, the same bits on every CPU path).
    pub(crate) fn fill_table(&self, q: &[f32], metric: AdcMetric, t: &mut [f32]) {
        let op = match metric {
            AdcMetric::L2 => ColumnOp::L2,
            AdcMetric::InnerProduct => ColumnOp::Dot,
        };
        let (ks, ds) = (self.ksub, self.dsub);
        for (s, ts) in t.chunks_exact_mut(ks).take(self.m).enumerate() {
            columns(
                op,
                &q[s * ds..(s + 1) * ds],
                ds,
                self.sub_transposed(s),
                ks,
                ts,
            );
        }
    }

    /// Sub-quantiser `s`'s codebook, transposed (dsub × K).
    fn sub_transposed(&self, s: usize) -> &[f32] {
        let n = self.dsub * self.ksub;
        &self.transposed[s * n..(s + 1) * n]
    }

    /// `⟨x_r, p_{s,j}⟩` for the rows `x_r` of `xs` (dsub values each) and the K centroids of
    /// sub-quantiser `s`, into `out` (K values per row), by the column kernel.
    pub(crate) fn ip_table_sub(&self, s: usize, xs: &[f32], out: &mut [f32]) {
        columns(
            ColumnOp::Dot,
            xs,
            self.dsub,
            self.sub_transposed(s),
            self.ksub,
            out,
        );
    }

    /// `‖p_{s,j}‖²` for the K centroids of sub-quantiser `s`.
    pub(crate) fn sub_norms(&self, s: usize) -> &[f32] {
        &self.norms[s * self.ksub..(s + 1) * self.ksub]
    }

    /// ADC tables of many queries: one row of M × K values per query.
    pub fn adc_tables(&self, q: ArrayView2<f32>, metric: AdcMetric) -> Result<Array2<f32>> {
        let rows = checked_rows("pq: ADC queries", q, Some(self.dim()))?;
        let w = self.m * self.ksub;
        let mut out = Array2::<f32>::zeros((rows.n(), w));
        for (mut o, qr) in out
            .rows_mut()
            .into_iter()
            .zip(rows.as_slice().chunks_exact(self.dim()))
        {
            if let Some(s) = o.as_slice_mut() {
                self.fill_table(qr, metric, s);
            }
        }
        Ok(out)
    }

    /// Inner-product tables of many row-major queries scaled by `scale`: `scale · ⟨x_m, c_{m,k}⟩`,
    /// one row of M × K values per query, through the column kernel (one pass per
    /// sub-quantiser over all queries, its transposed codebook staying in cache: the query side
    /// of IVFADC, see `ivf.rs`).
    pub(crate) fn scaled_ip_tables(&self, x: &[f32], scale: f32) -> Vec<f32> {
        let (m, ks, ds, d) = (self.m, self.ksub, self.dsub, self.dim());
        let n = x.len() / d.max(1);
        let mut out = vec![0f32; n * m * ks];
        let mut sub = vec![0f32; n * ds];
        let mut dots = vec![0f32; n * ks];
        for s in 0..m {
            for (o, row) in sub.chunks_exact_mut(ds).zip(x.chunks_exact(d)) {
                o.copy_from_slice(&row[s * ds..(s + 1) * ds]);
            }
            self.ip_table_sub(s, &sub, &mut dots);
            for (o, t) in out.chunks_exact_mut(m * ks).zip(dots.chunks_exact(ks)) {
                for (a, &b) in o[s * ks..(s + 1) * ks].iter_mut().zip(t) {
                    *a = scale * b;
                }
            }
        }
        out
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::PQ,
            required: true,
            tensors: vec![f32_tensor(
                "centroids",
                &[self.m, self.ksub, self.dsub],
                self.flat().to_vec(),
            )],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<ProductQuantizer> {
        let mut r = RecordReader::new("pq", stage_kind::PQ, rec)?;
        let (c, shape) = r.f32("centroids", &[None, None, None])?;
        r.finish()?;
        let arr = Array3::from_shape_vec((shape[0], shape[1], shape[2]), c.to_vec())
            .map_err(|e| ModelError::tensor_shape("pq", "centroids", e))?;
        ProductQuantizer::new(arr)
    }
}

impl RowQuantizer for ProductQuantizer {
    fn in_dim(&self) -> usize {
        self.dim()
    }
    fn code_bytes(&self) -> usize {
        if self.ksub == 256 {
            self.m
        } else {
            self.m.div_ceil(2)
        }
    }
    fn code_bits(&self) -> usize {
        self.m * self.nbits() as usize
    }
    fn project_dim(&self) -> usize {
        self.dim()
    }
    fn encode_row(&self, x: &[f32], out: &mut [u8]) -> std::result::Result<(), RowFault> {
        let (ks, ds) = (self.ksub, self.dsub);
        out.fill(0);
        for s in 0..self.m {
            let k = nearest_transposed(&x[s * ds..(s + 1) * ds], self.sub_codebook(s), ks);
            self.put(out, s, k);
        }
        Ok(())
    }
    /// Two rows at a time through the pair kernel (each loaded centroid vector serves both
    /// rows; each row's index is exactly its one-row index), a last odd row alone.
    fn encode_many(&self, x: &[f32], out: &mut [u8]) -> Option<(usize, RowFault)> {
        let (d, cb, ks, ds) = (self.dim(), self.code_bytes(), self.ksub, self.dsub);
        let mut xs = x.chunks_exact(2 * d);
        let mut os = out.chunks_exact_mut(2 * cb);
        for (x2, o2) in (&mut xs).zip(&mut os) {
            let (x0, x1) = x2.split_at(d);
            let (o0, o1) = o2.split_at_mut(cb);
            o0.fill(0);
            o1.fill(0);
            for s in 0..self.m {
                let sub = s * ds..(s + 1) * ds;
                let [k0, k1] =
                    nearest_transposed_pair(&x0[sub.clone()], &x1[sub], self.sub_codebook(s), ks);
                self.put(o0, s, k0);
                self.put(o1, s, k1);
            }
        }
        for (xr, or) in xs
            .remainder()
            .chunks_exact(d)
            .zip(os.into_remainder().chunks_exact_mut(cb))
        {
            // PQ encoding cannot fail.
            let _ = self.encode_row(xr, or);
        }
        None
    }
    fn project_row(&self, x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(&x[..out.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::random::gaussian;

    fn data(n: usize, d: usize, seed: u64) -> Array2<f32> {
        let g = gaussian(&mut rng(seed), n * d);
        Array2::from_shape_fn((n, d), |(i, j)| {
            (g[i * d + j] * (1.0 + j as f64 * 0.3)) as f32
        })
    }

    #[test]
    fn pq4_packs_two_indices_per_byte_low_nibble_first() {
        let x = data(600, 6, 1);
        let pq = ProductQuantizer::train(x.view(), 3, 4, &KMeansOptions::default())
            .unwrap()
            .pq;
        assert_eq!(pq.code_bytes(), 2);
        let codes = pq.encode(x.view()).unwrap();
        assert_eq!(codes.len(), 1200);
        assert!(
            codes.chunks_exact(2).all(|c| c[1] >> 4 == 0),
            "odd M: last high nibble must be 0"
        );
        let rec = pq.decode(&codes[..2]).unwrap();
        let c0 = (codes[0] & 15) as usize;
        assert_eq!(rec[(0, 0)], pq.centroids()[(0, c0, 0)]);
        let c1 = (codes[0] >> 4) as usize;
        assert_eq!(rec[(0, 2)], pq.centroids()[(1, c1, 0)]);
        assert_eq!(ProductQuantizer::from_record(&pq.to_record()).unwrap(), pq);
    }

    #[test]
    fn m_must_divide_dimension() {
        let x = data(300, 10, 2);
        let err = ProductQuantizer::train(x.view(), 3, 8, &KMeansOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("3 sub-quantisers cannot split 10 dimensions"),
            "{err}"
        );
        let err = ProductQuantizer::train(x.view(), 5, 6, &KMeansOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("6 bits"), "{err}");
    }

    #[test]
    fn bad_codebook_shapes_are_refused() {
        let err = ProductQuantizer::new(Array3::zeros((2, 100, 4)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("centroids") && err.contains("K = 16 or 256"),
            "{err}"
        );
    }
}
