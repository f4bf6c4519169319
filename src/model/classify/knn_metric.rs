//! k-NN classification with a learned low-rank metric (Mensink et al. TPAMI 2013, §4,
//! eq. 25-28), the paper's k-NN baseline.
//!
//! Learning: SGD on the LMNN triplet hinge loss `[1 + d_W(q, p) − d_W(q, n)]_+` (eq. 25-26).
//! Each iteration draws a class uniformly, ⅔m images of it (queries and positives) and ⅓m of
//! other classes (negatives), §4 "Triplet sampling strategy". Targets P_q are either all
//! same-class images of the batch ("All") or the k closest of them under the current W
//! ("Dynamic", the paper's best). Per query, distances are sorted and the number of
//! hinge-active triplets of each positive and each negative is read off by binary search
//! (Algorithm 1), giving the coefficient matrix A of eq. 28: the gradient
//! `2 W Xᵀ (diag(A_s 1) − A_s) X`, A_s = A + Aᵀ, costs O(m²D) however many triplets there are.
//! The gradient is averaged over the batch's triplets; W starts from PCA (§5.2), and the W
//! with the lowest held-out top-5 k-NN error is kept (§5.1).
//!
//! Classification: the k nearest training images in the projected space vote; classes are
//! ranked by votes, then by the distance of their nearest image (so every class gets a rank,
//! as top-5 needs), then by label. k is validated on the held-out split from a grid (§5.2).

use faer::Par;
use ndarray::ArrayView2;
use rand::Rng;
use rayon::prelude::*;

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::linalg::{a_bt_f32, at_b_f32, matmul_f32, par};
use super::super::random::{derive_seed, rng};
use super::labels::ClassIndex;
use super::ncm::{chain_in_dim, check_chain, project_chain};
use super::projection::Projection;
use super::sgd::{
    EarlyStopping, EpochCallback, EpochReport, Prepared, SgdOptions, SgdReport, finish_epoch,
    stratified_split, top1_top5,
};
use super::train_rows::RowSource;

/// Default grid of neighbour counts validated.
pub const DEFAULT_K_GRID: [usize; 7] = [1, 3, 5, 10, 20, 50, 100];

/// Which same-class images are targets (§4 "Choice of target neighbors").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// Every same-class image of the batch.
    All,
    /// The k same-class images of the batch closest under the current W.
    Dynamic(usize),
}

/// LMNN-style metric learning settings.
#[derive(Debug, Clone, PartialEq)]
pub struct KnnMetricOptions {
    /// SGD and early-stopping settings.
    pub sgd: SgdOptions,
    /// Which same-class images are target neighbours.
    pub targets: Targets,
    /// Values of k tried on the validation split.
    pub k_grid: Vec<usize>,
}

impl KnnMetricOptions {
    /// Paper defaults: m = 300, 10 dynamic targets.
    pub fn new(dim: usize) -> KnnMetricOptions {
        KnnMetricOptions {
            sgd: SgdOptions::knn(dim),
            targets: Targets::Dynamic(10),
            k_grid: DEFAULT_K_GRID.to_vec(),
        }
    }
}

/// A k-NN classifier over stored (projected) images.
#[derive(Debug, Clone, PartialEq)]
pub struct Knn {
    chain: Vec<Projection>,
    in_dim: usize,
    dim: usize,
    db: Vec<f32>,
    norms: Vec<f32>,
    ids: Vec<u32>,
    labels: Vec<i64>,
    k: usize,
}

/// Neighbour lists (sorted by distance then index, up to `kmax`) and per-class minimum
/// distances of each query.
struct Scan {
    neighbours: Vec<Vec<u32>>,
    class_min: Vec<Vec<f32>>,
}

fn scan(
    q: &[f32],
    d: usize,
    db: &[f32],
    norms: &[f32],
    ids: &[u32],
    c: usize,
    kmax: usize,
) -> Scan {
    const QB: usize = 32;
    let n = norms.len();
    let kmax = kmax.min(n);
    let parts: Vec<Scan> = q
        .par_chunks(QB * d)
        .map(|blk| {
            let nb = blk.len() / d;
            let dots = a_bt_f32(blk, db, nb, d, n, Par::Seq);
            let mut nn = Vec::with_capacity(nb);
            let mut mins = Vec::with_capacity(nb);
            let mut cand: Vec<(f32, u32)> = Vec::with_capacity(n);
            for row in dots.chunks_exact(n) {
                let mut cm = vec![f32::INFINITY; c];
                cand.clear();
                for (j, (&dot, &nr)) in row.iter().zip(norms).enumerate() {
                    let dist = nr - 2.0 * dot;
                    let cl = ids[j] as usize;
                    if dist < cm[cl] {
                        cm[cl] = dist;
                    }
                    cand.push((dist, j as u32));
                }
                let cmp = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
                if kmax < cand.len() {
                    cand.select_nth_unstable_by(kmax, cmp);
                    cand.truncate(kmax);
                }
                cand.sort_by(cmp);
                nn.push(cand.iter().map(|v| v.1).collect());
                mins.push(cm);
            }
            Scan {
                neighbours: nn,
                class_min: mins,
            }
        })
        .collect();
    let mut out = Scan {
        neighbours: Vec::new(),
        class_min: Vec::new(),
    };
    for p in parts {
        out.neighbours.extend(p.neighbours);
        out.class_min.extend(p.class_min);
    }
    out
}

/// Class ids of one query ranked by (votes among the first k, nearest member, id).
fn rank_classes(nn: &[u32], class_min: &[f32], ids: &[u32], k: usize, top: usize) -> Vec<usize> {
    let c = class_min.len();
    let mut votes = vec![0usize; c];
    for &j in nn.iter().take(k) {
        votes[ids[j as usize] as usize] += 1;
    }
    let mut order: Vec<usize> = (0..c).collect();
    order.sort_by(|&a, &b| {
        votes[b]
            .cmp(&votes[a])
            .then(class_min[a].total_cmp(&class_min[b]))
            .then(a.cmp(&b))
    });
    order.truncate(top);
    order
}

/// Best k of `grid` by (top-5, top-1) on the scanned validation rows.
fn choose_k(sc: &Scan, ids: &[u32], truth: &[u32], grid: &[usize]) -> (usize, f64, f64) {
    let mut best = (grid[0], f64::INFINITY, f64::INFINITY);
    for &k in grid {
        let ranked: Vec<Vec<usize>> = sc
            .neighbours
            .iter()
            .zip(&sc.class_min)
            .map(|(nn, cm)| rank_classes(nn, cm, ids, k, 5))
            .collect();
        let (t1, t5) = top1_top5(&ranked, truth);
        if t5 < best.2 || (t5 == best.2 && t1 < best.1) {
            best = (k, t1, t5);
        }
    }
    best
}

fn check_grid(grid: &[usize]) -> Result<()> {
    if grid.is_empty() || grid.contains(&0) {
        return Err(ClassifyError::invalid(
            "knn: k_grid",
            "needs at least one k, all >= 1",
        ));
    }
    Ok(())
}

impl Knn {
    /// Stores the rows of `x` (through `chain`) with their labels; `k` neighbours vote.
    pub fn new(
        chain: Vec<Projection>,
        x: ArrayView2<f32>,
        labels: &[i64],
        k: usize,
    ) -> Result<Knn> {
        check_chain(&chain)?;
        if k == 0 {
            return Err(ClassifyError::invalid("knn: k", "must be at least 1"));
        }
        let rows = checked_rows("knn: database", x, chain_in_dim(&chain))?;
        let (idx, ids) = ClassIndex::from_labels("knn: labels", labels, rows.n())?;
        let db = project_chain(&chain, rows.as_slice());
        let dim = db.len() / rows.n();
        let norms = db
            .chunks_exact(dim)
            .map(|r| r.iter().map(|v| v * v).sum())
            .collect();
        Ok(Knn {
            chain,
            in_dim: rows.dim(),
            dim,
            db,
            norms,
            ids,
            labels: idx.labels().to_vec(),
            k,
        })
    }

    /// Adds labelled images (of a known or a new class) at the cost of projecting them.
    pub fn add_rows(&mut self, x: ArrayView2<f32>, labels: &[i64]) -> Result<()> {
        let rows = checked_rows("knn: new rows", x, Some(self.in_dim))?;
        if labels.len() != rows.n() {
            return Err(ClassifyError::LengthMismatch {
                what: "knn: labels of the new rows".into(),
                expected: rows.n(),
                got: labels.len(),
            });
        }
        let y = project_chain(&self.chain, rows.as_slice());
        for (r, &l) in y.chunks_exact(self.dim).zip(labels) {
            let id = match self.labels.iter().position(|&v| v == l) {
                Some(i) => i,
                None => {
                    self.labels.push(l);
                    self.labels.len() - 1
                }
            };
            self.db.extend_from_slice(r);
            self.norms.push(r.iter().map(|v| v * v).sum());
            self.ids.push(id as u32);
        }
        Ok(())
    }

    /// Puts `p` in front of the projection chain (a `pca:C` prefix fitted separately): the
    /// stored projected means / centroids / rows are unchanged.
    pub(crate) fn prepend(&mut self, p: Projection) {
        self.in_dim = p.in_dim();
        self.chain.insert(0, p);
    }

    /// Dimension of the input rows.
    pub fn input_dim(&self) -> usize {
        self.in_dim
    }

    /// Class labels, sorted.
    pub fn classes(&self) -> &[i64] {
        &self.labels
    }

    /// The k chosen on the validation split.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The `top` best class labels of each row, best first.
    pub fn top_k(&self, x: ArrayView2<f32>, top: usize) -> Result<Vec<Vec<i64>>> {
        if top == 0 {
            return Err(ClassifyError::invalid("k", "must be at least 1"));
        }
        let rows = checked_rows("knn: input", x, Some(self.in_dim))?;
        let q = project_chain(&self.chain, rows.as_slice());
        let sc = scan(
            &q,
            self.dim,
            &self.db,
            &self.norms,
            &self.ids,
            self.labels.len(),
            self.k,
        );
        Ok(sc
            .neighbours
            .iter()
            .zip(&sc.class_min)
            .map(|(nn, cm)| {
                rank_classes(nn, cm, &self.ids, self.k, top)
                    .into_iter()
                    .map(|i| self.labels[i])
                    .collect()
            })
            .collect())
    }
}

/// ℓ2 k-NN on `chain(x)` with k validated on a stratified held-out split from `grid`.
pub(crate) fn fit_knn_l2(
    x: ArrayView2<f32>,
    labels: &[i64],
    chain: Vec<Projection>,
    grid: &[usize],
    validation_fraction: f64,
    max_validation_rows: usize,
    seed: u64,
) -> Result<Knn> {
    check_grid(grid)?;
    let full = Knn::new(chain, x, labels, grid[0])?;
    let (idx, ids) = ClassIndex::from_labels("knn: labels", labels, x.nrows())?;
    let (train, val) = stratified_split(
        "knn",
        &ids,
        &idx,
        validation_fraction,
        max_validation_rows,
        1,
        seed,
    )?;
    if val.is_empty() {
        return Ok(full);
    }
    let d = full.dim;
    let g = |v: &[usize], src: &[f32]| -> Vec<f32> {
        v.iter()
            .flat_map(|&i| src[i * d..(i + 1) * d].iter().copied())
            .collect()
    };
    let db = g(&train, &full.db);
    let norms: Vec<f32> = train.iter().map(|&i| full.norms[i]).collect();
    let tids: Vec<u32> = train.iter().map(|&i| ids[i]).collect();
    let q = g(&val, &full.db);
    let kmax = grid.iter().copied().max().unwrap_or(1);
    let sc = scan(&q, d, &db, &norms, &tids, idx.len(), kmax);
    let truth: Vec<u32> = val.iter().map(|&i| ids[i]).collect();
    let (k, _, _) = choose_k(&sc, &tids, &truth, grid);
    Ok(Knn { k, ..full })
}

/// The learned metric and its k-NN classifier (all labelled rows stored, k validated).
#[derive(Debug, Clone)]
pub struct KnnMetricTraining {
    /// The learned metric W, as a projection of the raw data.
    pub projection: Projection,
    /// k-NN over all labelled rows in the learned space.
    pub knn: Knn,
    /// The SGD loss curve and early-stopping decision.
    pub report: SgdReport,
}

/// Per-query hinge counting (Algorithm 1); adds into `coef` (m × m, row = query) and returns
/// (hinge loss sum, triplet count).
fn query_coefficients(
    q: usize,
    dist: &[f32],
    m: usize,
    pos: &[usize],
    neg: &[usize],
    targets: Targets,
    coef: &mut [f32],
) -> (f64, f64) {
    let row = &dist[q * m..(q + 1) * m];
    let mut tp: Vec<usize> = pos.iter().copied().filter(|&p| p != q).collect();
    if let Targets::Dynamic(k) = targets {
        tp.sort_by(|&a, &b| row[a].total_cmp(&row[b]).then(a.cmp(&b)));
        tp.truncate(k);
    }
    if tp.is_empty() || neg.is_empty() {
        return (0.0, 0.0);
    }
    let mut dn: Vec<f32> = neg.iter().map(|&n| row[n]).collect();
    dn.sort_by(f32::total_cmp);
    let mut prefix = Vec::with_capacity(dn.len() + 1);
    prefix.push(0f64);
    for v in &dn {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + *v as f64);
    }
    let mut dp1: Vec<f32> = tp.iter().map(|&p| row[p] + 1.0).collect();
    dp1.sort_by(f32::total_cmp);
    let mut loss = 0f64;
    for &p in &tp {
        let thr = row[p] + 1.0;
        let cnt = dn.partition_point(|&v| v < thr);
        loss += cnt as f64 * thr as f64 - prefix[cnt];
        coef[q * m + p] += cnt as f32;
    }
    for &n in neg {
        let cnt = dp1.len() - dp1.partition_point(|&v| v <= row[n]);
        coef[q * m + n] -= cnt as f32;
    }
    (loss, (tp.len() * neg.len()) as f64)
}

/// Refuses options the procedure cannot run with: an empty or zero k grid, dynamic targets
/// with k = 0, and a batch too small for §4's ⅔ positives and ⅓ negatives.
fn check_options(opts: &KnnMetricOptions) -> Result<()> {
    check_grid(&opts.k_grid)?;
    if let Targets::Dynamic(0) = opts.targets {
        return Err(ClassifyError::invalid(
            "knn: targets",
            "dynamic targets need k >= 1",
        ));
    }
    if opts.sgd.batch_size < 3 {
        return Err(ClassifyError::invalid(
            "knn: batch_size",
            "needs at least 3 images (⅔ positives, ⅓ negatives)",
        ));
    }
    Ok(())
}

/// One batch (§4 "Triplet sampling strategy"): a class drawn uniformly, up to `m_pos` of its
/// training images (queries and positives) and `m_neg` images of other classes (negatives,
/// drawn with a bounded number of tries). Returns the batch, positives first, and the number
/// of positives.
fn sample_batch(
    r: &mut impl Rng,
    prep: &Prepared<'_>,
    members: &[Vec<usize>],
    m_pos: usize,
    m_neg: usize,
) -> (Vec<usize>, usize) {
    let cls = r.random_range(0..members.len());
    let pool = &members[cls];
    let np = m_pos.min(pool.len());
    let pos_idx: Vec<usize> = rand::seq::index::sample(r, pool.len(), np)
        .into_iter()
        .map(|i| pool[i])
        .collect();
    let mut neg_idx = Vec::with_capacity(m_neg);
    let mut tries = 0;
    while neg_idx.len() < m_neg && tries < 50 * m_neg {
        let j = prep.train[r.random_range(0..prep.train.len())];
        if prep.ids[j] as usize != cls {
            neg_idx.push(j);
        }
        tries += 1;
    }
    let batch = pos_idx.iter().chain(&neg_idx).copied().collect();
    (batch, np)
}

/// One SGD step on a batch (the first `np` rows positives): the batch's projected distances,
/// the hinge coefficients A of every query (Algorithm 1, eq. 28), and the update
/// `W ← W − 2η/T · W Xᵀ (diag(A_s 1) − A_s) X` with A_s = A + Aᵀ, averaged over the T
/// triplets (no update when none is active). Adds the hinge loss into `loss_sum`; returns T.
fn sgd_step(
    prep: &Prepared<'_>,
    w: &mut [f32],
    batch: &[usize],
    np: usize,
    targets: Targets,
    lr: f32,
    loss_sum: &mut f64,
) -> f64 {
    let (d, dd) = (w.len() / prep.dim.max(1), prep.dim);
    let m = batch.len();
    let xb = prep.gather(batch);
    let q = a_bt_f32(&xb, w, m, dd, d, par());
    let norms: Vec<f32> = q
        .chunks_exact(d)
        .map(|v| v.iter().map(|a| a * a).sum())
        .collect();
    let dots = a_bt_f32(&q, &q, m, d, m, par());
    let mut dist = vec![0f32; m * m];
    for a in 0..m {
        for b in 0..m {
            dist[a * m + b] = (norms[a] + norms[b] - 2.0 * dots[a * m + b]).max(0.0);
        }
    }
    let pos: Vec<usize> = (0..np).collect();
    let neg: Vec<usize> = (np..m).collect();
    let mut coef = vec![0f32; m * m];
    let mut triplets = 0f64;
    for &qi in &pos {
        let (l, t) = query_coefficients(qi, &dist, m, &pos, &neg, targets, &mut coef);
        *loss_sum += l;
        triplets += t;
    }
    if triplets == 0.0 {
        return triplets;
    }
    // Laplacian of A_s = A + Aᵀ.
    let mut lap = vec![0f32; m * m];
    for a in 0..m {
        let mut rs = 0f32;
        for b in 0..m {
            let v = coef[a * m + b] + coef[b * m + a];
            lap[a * m + b] = -v;
            rs += v;
        }
        lap[a * m + a] += rs;
    }
    let lx = matmul_f32(&lap, &xb, m, m, dd, par());
    let g = at_b_f32(&q, &lx, m, d, dd, par());
    let scale = 2.0 * lr / triplets as f32;
    for (a, gv) in w.iter_mut().zip(&g) {
        *a -= scale * gv;
    }
    triplets
}

/// Learns W for k-NN (LMNN-style) on the rows of `x` labelled `labels`.
pub fn train_knn_metric(
    x: ArrayView2<f32>,
    labels: &[i64],
    opts: &KnnMetricOptions,
    mut callback: Option<EpochCallback>,
) -> Result<KnnMetricTraining> {
    let method = "knn";
    check_options(opts)?;
    let s = &opts.sgd;
    let rows = checked_rows("knn: training data", x, None)?;
    let src = RowSource::Dense {
        x: rows.as_slice(),
        dim: rows.dim(),
    };
    let prep = Prepared::new(method, src, labels, s, 2)?;
    let (d, dd, c) = (s.dim, prep.dim, prep.classes.len());
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for &i in &prep.train {
        members[prep.ids[i] as usize].push(i);
    }
    let mut w = prep.init_w(method, s)?;
    let train_ids: Vec<u32> = prep.train.iter().map(|&i| prep.ids[i]).collect();
    let truth: Vec<u32> = prep.val.iter().map(|&i| prep.ids[i]).collect();
    let xt = prep.gather(&prep.train);
    let xv = prep.gather(&prep.val);
    let kmax = opts.k_grid.iter().copied().max().unwrap_or(1);
    let validate = |w: &[f32]| -> (usize, f64, f64) {
        if prep.val.is_empty() {
            return (opts.k_grid[0], f64::NAN, f64::NAN);
        }
        let db = a_bt_f32(&xt, w, prep.train.len(), dd, d, par());
        let norms: Vec<f32> = db
            .chunks_exact(d)
            .map(|r| r.iter().map(|v| v * v).sum())
            .collect();
        let q = a_bt_f32(&xv, w, prep.val.len(), dd, d, par());
        let sc = scan(&q, d, &db, &norms, &train_ids, c, kmax);
        choose_k(&sc, &train_ids, &truth, &opts.k_grid)
    };
    let mut stop = EarlyStopping::new(w.clone(), vec![opts.k_grid[0] as f64], s, c);
    if !prep.val.is_empty() {
        let (k, t1, t5) = validate(&w);
        stop.offer(0, t1, t5, &w, &[k as f64]);
    }
    let mut report = SgdReport {
        scale: prep.scale,
        ..SgdReport::default()
    };
    let m_pos = (2 * s.batch_size).div_ceil(3);
    let m_neg = s.batch_size - m_pos;
    let iters_per_epoch = prep.train.len().div_ceil(s.batch_size);
    let lr = s.learning_rate as f32;
    let mut r = rng(derive_seed(s.seed, 0x1a7));
    let mut iterations = 0;
    for epoch in 1..=s.max_epochs {
        let mut loss_sum = 0f64;
        let mut trip_sum = 0f64;
        for _ in 0..iters_per_epoch {
            let (batch, np) = sample_batch(&mut r, &prep, &members, m_pos, m_neg);
            let triplets = sgd_step(&prep, &mut w, &batch, np, opts.targets, lr, &mut loss_sum);
            trip_sum += triplets;
            iterations += 1;
        }
        let loss = loss_sum / trip_sum.max(1.0);
        if !loss.is_finite() || w.iter().any(|v| !v.is_finite()) {
            return Err(ClassifyError::Diverged {
                method: method.into(),
                epoch,
                detail: format!("loss {loss}"),
            });
        }
        let (k, t1, t5) = validate(&w);
        let best = stop.record(!prep.val.is_empty(), epoch, (t1, t5), &w, &[k as f64]);
        let e = EpochReport {
            method,
            epoch,
            iterations,
            train_loss: loss,
            val_top1: t1,
            val_top5: t5,
            best,
        };
        if finish_epoch(&mut report, &mut callback, &stop, e, s.max_epochs) {
            break;
        }
    }
    report.best_epoch = stop.best_epoch;
    let projection = prep.to_projection(&stop.best_w, d)?;
    let k = stop
        .best_extra
        .first()
        .map_or(opts.k_grid[0], |&v| v as usize);
    let knn = Knn::new(vec![projection.clone()], x, labels, k)?;
    Ok(KnnMetricTraining {
        projection,
        knn,
        report,
    })
}
