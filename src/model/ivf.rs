//! The coarse quantiser of an inverted file (stage kind IVF, format 1.6): K k-means centroids
//! in the space the quantiser sees. Jégou, Douze & Schmid, "Product quantization for nearest
//! neighbor search" (TPAMI 2011), §III-A (inverted file) and §IV (IVFADC): a row is filed
//! under its nearest centroid `c` (its inverted list) and the product quantiser after this
//! stage encodes the residual `y − c`, not `y`.
//!
//! It sits right before an 8-bit `pq` stage (`ivf:K,pq:Mx8`). Assignment uses the encode
//! kernel's exact differences (ties to the smaller index), so a row's list does not depend on
//! its batch. Training: FAISS-style k-means (`kmeans.rs`) on the seeded training sample.
//!
//! ADC per probed list uses FAISS's precomputed terms (Jégou et al. §IV; `IndexIVFPQ`'s
//! "precomputed tables"): for the query's projection `x`, list centroid `c` and a code's
//! sub-centroids `p_m`,
//! `‖x − c − Σp_m‖² = ‖x − c‖² + Σ_m (‖p_m‖² + 2⟨c_m, p_m⟩) − 2 Σ_m ⟨x_m, p_m⟩`:
//! the middle term depends on the list only ([`CoarseQuantizer::list_terms`], computed once
//! per model), the last on the query only (one inner-product table per query), so a list's
//! table is one addition per entry.
//!
//! Stored tensors: `centroids` f32 `[K, D]`, 1 ≤ K ≤ 65,536.

use faer::Par;
use ndarray::Array2;
use rayon::prelude::*;

use crate::format::{StageRecord, stage_kind};

use super::cancel::Cancel;
use super::error::{ModelError, Result};
use super::fixed_order::{dot, l2sq, nearest_transposed};
use super::kmeans::{KMeansOptions, kmeans_rows};
use super::linalg::a_bt_f32;
use super::pq::ProductQuantizer;
use super::record::{RecordReader, f32_tensor};
use super::transform::ROW_BLOCK;

/// Most inverted lists a coarse quantiser may have.
pub const MAX_IVF_LISTS: usize = 1 << 16;

/// K centroids that file rows under inverted lists and whose residuals the PQ encodes.
#[derive(Debug, Clone, PartialEq)]
pub struct CoarseQuantizer {
    k: usize,
    d: usize,
    /// K × D, row-major.
    centroids: Vec<f32>,
    /// D × K (coordinate-major), for the nearest-centroid kernel.
    transposed: Vec<f32>,
    /// ‖c‖² of each centroid (K), the constant term of [`CoarseQuantizer::probe`]'s ranking.
    norms: Vec<f32>,
}

impl CoarseQuantizer {
    /// A coarse quantiser from its centroids (K × D, 1 ≤ K ≤ 65,536, all finite).
    pub fn new(centroids: Array2<f32>) -> Result<CoarseQuantizer> {
        let (k, d) = centroids.dim();
        if k == 0 || d == 0 || k > MAX_IVF_LISTS {
            return Err(ModelError::bad_tensor(
                "ivf",
                "centroids",
                format!("shape [{k}, {d}]: need 1 ≤ K ≤ {MAX_IVF_LISTS} and D ≥ 1"),
            ));
        }
        if let Some(p) = centroids.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "ivf",
                "centroids",
                format!("non-finite value at element {p}"),
            ));
        }
        let flat: Vec<f32> = centroids.iter().copied().collect();
        let mut transposed = vec![0f32; flat.len()];
        for (c, row) in flat.chunks_exact(d).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                transposed[j * k + c] = v;
            }
        }
        let norms = flat.chunks_exact(d).map(|c| dot(c, c)).collect();
        Ok(CoarseQuantizer {
            k,
            d,
            centroids: flat,
            transposed,
            norms,
        })
    }

    /// k-means with `k` centroids on row-major validated rows of `d` columns.
    pub(crate) fn train_rows(
        x: &[f32],
        d: usize,
        k: usize,
        opts: &KMeansOptions,
        cancel: &Cancel,
    ) -> Result<CoarseQuantizer> {
        if k > MAX_IVF_LISTS {
            return Err(ModelError::invalid(
                "ivf",
                format!("{k} lists: at most {MAX_IVF_LISTS}"),
            ));
        }
        let km = kmeans_rows(x, d, k, None, opts, cancel)?;
        CoarseQuantizer::new(km.centroids)
    }

    /// Number of lists K.
    pub fn lists(&self) -> usize {
        self.k
    }

    /// Dimension D.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Centroid `l` (D values).
    pub fn centroid(&self, l: usize) -> &[f32] {
        &self.centroids[l * self.d..(l + 1) * self.d]
    }

    /// The list (nearest centroid, ties to the smaller id) of one row of D values.
    pub fn assign_row(&self, y: &[f32]) -> u32 {
        nearest_transposed(y, &self.transposed, self.k) as u32
    }

    /// Files each row of `y` (row-major, D columns) under its list and overwrites it with its
    /// residual `y − c_list`; returns the lists.
    pub(crate) fn residuals_in_place(&self, y: &mut [f32]) -> Vec<u32> {
        let d = self.d;
        y.chunks_exact_mut(d)
            .map(|row| {
                let l = self.assign_row(row);
                for (v, c) in row.iter_mut().zip(self.centroid(l as usize)) {
                    *v -= c;
                }
                l
            })
            .collect()
    }

    /// Residuals of row-major rows (the training path: parallel over row blocks).
    pub(crate) fn residuals(&self, x: &[f32]) -> Vec<f32> {
        let mut y = x.to_vec();
        y.par_chunks_mut(ROW_BLOCK * self.d).for_each(|b| {
            self.residuals_in_place(b);
        });
        y
    }

    /// The `nprobe` nearest lists of each query row (row-major, D columns), nearest first,
    /// ties by smaller id, each with the exact squared distance `‖x − c‖²`. Candidates are
    /// ranked by `‖c‖² − 2⟨x, c⟩` (one matrix product per block of queries through faer's
    /// gemm, as k-means assigns; its rounding is not fixed across CPUs or block sizes, so a
    /// near-tie between two centroids may rank either way), then the kept ones re-scored
    /// exactly by the fixed-order L2 kernel (a sequential sum over 784-D was 18 % of an
    /// IVF1024 query at nprobe 16).
    pub fn probe(&self, x: &[f32], nprobe: usize) -> Vec<Vec<(u32, f32)>> {
        let (k, d) = (self.k, self.d);
        let norms = &self.norms;
        let nprobe = nprobe.min(k);
        // Queries per matrix product: the product packs the K × D centroids each time (at
        // IVF1024 over 784-D, 12 % of a search at 64 queries per product), so as many as keep
        // the block's distances within 4 MiB (1,024 queries at K = 1,024), 64 to 4,096.
        let per = ((1usize << 20) / k.max(1)).clamp(64, 4096);
        x.par_chunks(per * d)
            .flat_map_iter(|blk| {
                let nb = blk.len() / d;
                let dots = a_bt_f32(blk, &self.centroids, nb, d, k, Par::Seq);
                let mut out = Vec::with_capacity(nb);
                for (row, xr) in dots.chunks_exact(k).zip(blk.chunks_exact(d)) {
                    let mut s: Vec<(f32, u32)> = row
                        .iter()
                        .zip(norms)
                        .enumerate()
                        .map(|(c, (&dot, &n))| (n - 2.0 * dot, c as u32))
                        .collect();
                    let cmp =
                        |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
                    if nprobe < k {
                        s.select_nth_unstable_by(nprobe - 1, cmp);
                        s.truncate(nprobe);
                    }
                    let mut exact: Vec<(f32, u32)> = s
                        .into_iter()
                        .map(|(_, c)| (l2sq(xr, self.centroid(c as usize)), c))
                        .collect();
                    exact.sort_by(cmp);
                    out.push(exact.into_iter().map(|(dist, c)| (c, dist)).collect());
                }
                out
            })
            .collect()
    }

    /// The list-only term of the ADC table of list `l` for `pq` (M × K values, row-major):
    /// `‖p_{m,j}‖² + 2⟨c_{l,m}, p_{m,j}⟩` (see the module doc).
    pub fn list_terms(&self, pq: &ProductQuantizer, l: usize, out: &mut [f32]) {
        let (ks, ds) = (pq.ksub(), pq.dsub());
        let c = self.centroid(l);
        for (s, o) in out.chunks_exact_mut(ks).take(pq.m()).enumerate() {
            pq.ip_table_sub(s, &c[s * ds..(s + 1) * ds], o);
            for (v, &n) in o.iter_mut().zip(pq.sub_norms(s)) {
                *v = n + 2.0 * *v;
            }
        }
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::IVF,
            required: true,
            tensors: vec![f32_tensor(
                "centroids",
                &[self.k, self.d],
                self.centroids.clone(),
            )],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<CoarseQuantizer> {
        let mut r = RecordReader::new("ivf", stage_kind::IVF, rec)?;
        let (c, shape) = r.f32("centroids", &[None, None])?;
        r.finish()?;
        let arr = Array2::from_shape_vec((shape[0], shape[1]), c.to_vec())
            .map_err(|e| ModelError::tensor_shape("ivf", "centroids", e))?;
        CoarseQuantizer::new(arr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn assigns_nearest_and_probes_in_order() {
        let q = CoarseQuantizer::new(array![[0.0f32, 0.0], [10.0, 0.0], [0.0, 10.0]]).unwrap();
        assert_eq!(q.assign_row(&[9.0, 1.0]), 1);
        // Equidistant from 0 and 1: the smaller id.
        assert_eq!(q.assign_row(&[5.0, 0.0]), 0);
        let p = q.probe(&[1.0, 8.0, 9.0, 0.0], 2);
        assert_eq!(p[0].iter().map(|x| x.0).collect::<Vec<_>>(), [2, 0]);
        assert_eq!(p[1].iter().map(|x| x.0).collect::<Vec<_>>(), [1, 0]);
        assert_eq!(p[0][0].1, 1.0 + 4.0);
        let mut y = vec![9.0f32, 1.0];
        assert_eq!(q.residuals_in_place(&mut y), [1]);
        assert_eq!(y, [-1.0, 1.0]);
    }

    #[test]
    fn bad_centroids_are_refused() {
        assert!(CoarseQuantizer::new(Array2::zeros((0, 2))).is_err());
        assert!(CoarseQuantizer::new(array![[f32::NAN, 0.0]]).is_err());
        let rec = CoarseQuantizer::new(array![[1.0f32, 2.0]])
            .unwrap()
            .to_record();
        assert_eq!(
            CoarseQuantizer::from_record(&rec).unwrap().centroid(0),
            [1.0, 2.0]
        );
    }
}
