//! Where the metric learners read their training rows from: a dense float matrix, or product
//! quantisation codes decoded on demand. Mensink et al. (TPAMI 2013, §5.1 "Datasets and
//! features") learn on 64K-dimensional Fisher vectors of ImageNet that only fit in memory as
//! PQ codes and "decompress" the images of each SGD mini-batch on the fly; [`RowSource::Codes`]
//! is that: it holds the codes (a few bytes a row) and the quantiser's codebooks, and
//! [`RowSource::fill`] writes the reconstructions of just the requested rows into a caller's
//! reused buffer.
//!
//! Every pass of the learners (SGD batches, class means, PCA initialisation, validation) goes
//! through [`RowSource::fill`] with the same row order and block sizes whatever the source, so
//! learning from codes gives bit for bit the model learned from the explicitly decoded matrix.

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::pq::ProductQuantizer;
use super::super::quantizer::RowQuantizer;

/// Rows per block of the streamed passes (means, PCA, validation).
pub(crate) const STREAM_ROWS: usize = 4096;

/// PQ codes and the codebooks that decode them.
#[derive(Debug, Clone)]
pub(crate) struct CodeRows<'a> {
    codes: &'a [u8],
    code_bytes: usize,
    /// Sub-quantisers, centroids per sub-quantiser, sub-vector width.
    m: usize,
    ksub: usize,
    dsub: usize,
    /// M × K × dsub, row-major (a copy: D × K floats, small next to the data).
    centroids: Vec<f32>,
    pq: &'a ProductQuantizer,
}

impl<'a> CodeRows<'a> {
    /// `codes`: row-major, `pq.code_bytes()` bytes a row. Errors when the length is not a
    /// positive multiple of the code size or a codebook entry is not finite (so decoded rows
    /// are always finite).
    pub(crate) fn new(what: &str, codes: &'a [u8], pq: &'a ProductQuantizer) -> Result<Self> {
        let cb = pq.code_bytes();
        if codes.is_empty() || cb == 0 || !codes.len().is_multiple_of(cb) {
            return Err(ClassifyError::invalid(
                what,
                format!(
                    "{} code bytes is not a positive multiple of the {cb}-byte codes",
                    codes.len()
                ),
            ));
        }
        let centroids: Vec<f32> = pq.centroids().iter().copied().collect();
        if let Some(i) = centroids.iter().position(|v| !v.is_finite()) {
            return Err(ClassifyError::invalid(
                what,
                format!("the PQ codebooks hold a non-finite value (entry {i})"),
            ));
        }
        Ok(CodeRows {
            codes,
            code_bytes: cb,
            m: pq.m(),
            ksub: pq.ksub(),
            dsub: pq.dsub(),
            centroids,
            pq,
        })
    }

    fn decode_row(&self, i: usize, out: &mut [f32]) {
        let code = &self.codes[i * self.code_bytes..(i + 1) * self.code_bytes];
        for (s, o) in out.chunks_exact_mut(self.dsub).enumerate().take(self.m) {
            let k = self.pq.code_index(code, s);
            let at = (s * self.ksub + k) * self.dsub;
            o.copy_from_slice(&self.centroids[at..at + self.dsub]);
        }
    }
}

/// The training rows of a learner.
#[derive(Debug, Clone)]
pub(crate) enum RowSource<'a> {
    /// Validated (finite) row-major floats.
    Dense { x: &'a [f32], dim: usize },
    /// PQ codes, decoded on demand.
    Codes(CodeRows<'a>),
}

impl RowSource<'_> {
    pub(crate) fn n(&self) -> usize {
        match self {
            RowSource::Dense { x, dim } => x.len() / (*dim).max(1),
            RowSource::Codes(c) => c.codes.len() / c.code_bytes,
        }
    }

    pub(crate) fn dim(&self) -> usize {
        match self {
            RowSource::Dense { dim, .. } => *dim,
            RowSource::Codes(c) => c.m * c.dsub,
        }
    }

    /// Replaces the contents of `out` with the rows `idx` (each `< n()`), row-major.
    pub(crate) fn fill(&self, idx: &[usize], out: &mut Vec<f32>) {
        let d = self.dim();
        out.clear();
        out.resize(idx.len() * d, 0.0);
        match self {
            RowSource::Dense { x, .. } => {
                for (o, &i) in out.chunks_exact_mut(d).zip(idx) {
                    o.copy_from_slice(&x[i * d..(i + 1) * d]);
                }
            }
            RowSource::Codes(c) => {
                for (o, &i) in out.chunks_exact_mut(d).zip(idx) {
                    c.decode_row(i, o);
                }
            }
        }
    }
}

/// Standardises row-major `rows` in place: `(x − mean) · inv`, computed in f64.
pub(crate) fn standardise(rows: &mut [f32], mean: &[f64], inv: f64) {
    let d = mean.len().max(1);
    for r in rows.chunks_exact_mut(d) {
        for (a, m) in r.iter_mut().zip(mean) {
            *a = ((*a as f64 - m) * inv) as f32;
        }
    }
}

/// Class means (eq. 2 of Mensink et al.) of the rows `rows` of `src` with dense class ids
/// `ids` (indexed by row), in f64, `classes` × D, read in blocks of [`STREAM_ROWS`] (each
/// block summed on its own, blocks added in order); standardised first with `(mean, inv)`
/// when given. Classes without rows get a zero mean. Also the per-class counts.
pub(crate) fn class_means(
    src: &RowSource,
    rows: &[usize],
    ids: &[u32],
    classes: usize,
    standardised: Option<(&[f64], f64)>,
) -> (Vec<f64>, Vec<usize>) {
    let dd = src.dim();
    let mut sums = vec![0f64; classes * dd];
    let mut counts = vec![0usize; classes];
    let mut buf = Vec::new();
    let mut part = vec![0f64; classes * dd];
    for blk in rows.chunks(STREAM_ROWS) {
        src.fill(blk, &mut buf);
        if let Some((mean, inv)) = standardised {
            standardise(&mut buf, mean, inv);
        }
        part.fill(0.0);
        for (&i, r) in blk.iter().zip(buf.chunks_exact(dd)) {
            let cl = ids[i] as usize;
            counts[cl] += 1;
            for (s, &v) in part[cl * dd..(cl + 1) * dd].iter_mut().zip(r) {
                *s += v as f64;
            }
        }
        for (a, b) in sums.iter_mut().zip(&part) {
            *a += b;
        }
    }
    for (cl, &k) in counts.iter().enumerate() {
        if k > 0 {
            let inv = 1.0 / k as f64;
            for v in &mut sums[cl * dd..(cl + 1) * dd] {
                *v *= inv;
            }
        }
    }
    (sums, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kmeans::KMeansOptions;
    use ndarray::Array2;

    #[test]
    fn decoded_rows_equal_the_quantizers_decode() {
        let (n, d) = (300, 8);
        let x: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919) % 1000) as f32 / 100.0)
            .collect();
        let xa = Array2::from_shape_vec((n, d), x).unwrap();
        let t = ProductQuantizer::train(xa.view(), 4, 4, &KMeansOptions::default()).unwrap();
        let codes = t.pq.encode(xa.view()).unwrap();
        let all = t.pq.decode(&codes).unwrap();
        let src = RowSource::Codes(CodeRows::new("codes", &codes, &t.pq).unwrap());
        assert_eq!((src.n(), src.dim()), (n, d));
        let idx = [299, 0, 17, 17];
        let mut buf = vec![1.0; 3];
        src.fill(&idx, &mut buf);
        for (r, &i) in buf.chunks_exact(d).zip(&idx) {
            assert_eq!(r, all.row(i).as_slice().unwrap());
        }
        assert!(CodeRows::new("codes", &codes[..3], &t.pq).is_err());
        assert!(CodeRows::new("codes", &[], &t.pq).is_err());
    }
}
