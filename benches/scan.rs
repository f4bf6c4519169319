//! Scan-kernel throughput at 10⁶ codes (numbers, not pass/fail).
//!
//! `cargo bench --bench scan` — each case reports items/s where an item is one code (row)
//! scored for one query, so nq = 16 cases count 16 × 10⁶ items per iteration. Labels:
//! `scalar` = the portable twins, `simd` = `Dispatch::Auto` on one thread, `simd-2t` = the same
//! on two rayon tasks. 10⁶ codes of 8-64 bytes fit in the last-level cache of most machines, so
//! these are compute figures; memory-bound figures need `codedb bench` at ≥ 10⁸ codes.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::sync::LazyLock;

use codedb::kernels::{
    CodeRows, ColumnOp, DenseRows, DenseValues, Direction, Dispatch, FastScanRows, Metric,
    ScanOptions, columns_fixed_order_with, dense_topk, detected_isa, fastscan_topk_batch,
    hamming_topk_batch, lut4_topk_batch, lut8_topk_batch, pack_fastscan,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const N: usize = 1_000_000;
const K: usize = 10;
const DENSE_DIM: usize = 32;
const MODES: [&str; 3] = ["scalar", "simd", "simd-2t"];
/// LUT-8 at nq = 1 also measures the gather kernels, which `Auto` does not pick (see
/// `scan::lut`; with nq >= 2 an explicit AVX2 request runs the query-lane kernel, so `gather`
/// is only measured at nq = 1).
const LUT8_MODES: [&str; 4] = ["scalar", "simd", "simd-2t", "gather"];
/// LUT-8 with several queries also measures each query-lane kernel by name: `lanes8` (explicit
/// AVX2: 8 queries per pass) and `lanes16` (explicit AVX-512: 16 per pass; `simd` picks it only
/// where 512-bit adds run at full width). A mode this CPU lacks is skipped.
const LANE_MODES: [&str; 5] = ["scalar", "simd", "simd-2t", "lanes8", "lanes16"];

fn main() {
    eprintln!("scan benches: detected ISA = {}", detected_isa());
    divan::main();
}

struct Data {
    bytes: Vec<u8>,
    ids: Vec<u64>,
    dense: Vec<f32>,
}

static DATA: LazyLock<Data> = LazyLock::new(|| {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    // Largest width used is 64 bytes.
    let bytes = (0..N * 64).map(|_| rng.random()).collect();
    let ids = (0..N as u64).collect();
    let dense = (0..N * DENSE_DIM)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    Data { bytes, ids, dense }
});

fn opts(mode: &str) -> ScanOptions {
    match mode {
        "scalar" => ScanOptions {
            dispatch: Dispatch::Scalar,
            threads: 1,
        },
        "simd" => ScanOptions {
            dispatch: Dispatch::Auto,
            threads: 1,
        },
        "lanes8" => ScanOptions {
            dispatch: Dispatch::Avx2,
            threads: 1,
        },
        "lanes16" => ScanOptions {
            dispatch: Dispatch::Avx512,
            threads: 1,
        },
        "gather" => ScanOptions {
            dispatch: match codedb::kernels::best_available() {
                codedb::kernels::Isa::Avx512 => Dispatch::Avx512,
                codedb::kernels::Isa::Avx2 => Dispatch::Avx2,
                codedb::kernels::Isa::Neon => Dispatch::Neon,
                codedb::kernels::Isa::Scalar => Dispatch::Scalar,
            },
            threads: 1,
        },
        _ => ScanOptions {
            dispatch: Dispatch::Auto,
            threads: 2,
        },
    }
}

fn queries(bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..bytes).map(|_| rng.random()).collect()
}

fn luts(floats: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..floats).map(|_| rng.random_range(0.0f32..4.0)).collect()
}

fn run_hamming(bencher: Bencher, w: usize, nq: usize, mode: &str) {
    let d = &*DATA;
    let rows = CodeRows::new(&d.bytes[..N * w], w, &d.ids, None).expect("rows");
    let q = queries(nq * w, 1);
    let o = opts(mode);
    bencher
        .counter(ItemsCount::new(N * nq))
        .bench(|| hamming_topk_batch(&rows, &q, K, o).expect("scan"));
}

#[divan::bench(consts = [8, 16, 32], args = MODES, sample_count = 10)]
fn hamming_nq1<const W: usize>(bencher: Bencher, mode: &str) {
    run_hamming(bencher, W, 1, mode);
}

#[divan::bench(consts = [8, 16, 32], args = MODES, sample_count = 5)]
fn hamming_nq16<const W: usize>(bencher: Bencher, mode: &str) {
    run_hamming(bencher, W, 16, mode);
}

#[divan::bench(consts = [8, 16, 32], args = ["simd", "simd-2t"], sample_count = 2)]
fn hamming_nq256<const W: usize>(bencher: Bencher, mode: &str) {
    run_hamming(bencher, W, 256, mode);
}

/// Hamming 64-bit with an all-zero deletion bitmap: should match `hamming_nq1::<8>` simd.
#[divan::bench(args = ["none", "zero-words"], sample_count = 10)]
fn hamming8_deleted(bencher: Bencher, bitmap: &str) {
    let d = &*DATA;
    let zeros = vec![0u64; N.div_ceil(64)];
    let del = (bitmap != "none").then_some(&zeros[..]);
    let rows = CodeRows::new(&d.bytes[..N * 8], 8, &d.ids, del).expect("rows");
    let q = queries(8, 1);
    let o = opts("simd");
    bencher
        .counter(ItemsCount::new(N))
        .bench(|| hamming_topk_batch(&rows, &q, K, o).expect("scan"));
}

fn run_lut8(bencher: Bencher, m: usize, nq: usize, mode: &str) {
    let d = &*DATA;
    let rows = CodeRows::new(&d.bytes[..N * m], m, &d.ids, None).expect("rows");
    let l = luts(nq * m * 256, 2);
    let o = opts(mode);
    if o.dispatch.resolve().is_err() {
        eprintln!("lut8 {mode}: not available on this CPU, skipped");
        return;
    }
    bencher
        .counter(ItemsCount::new(N * nq))
        .bench(|| lut8_topk_batch(&rows, &l, Direction::SmallerIsBetter, K, o).expect("scan"));
}

#[divan::bench(consts = [8, 16], args = LUT8_MODES, sample_count = 10)]
fn lut8_nq1<const M: usize>(bencher: Bencher, mode: &str) {
    run_lut8(bencher, M, 1, mode);
}

#[divan::bench(consts = [8, 16], args = LANE_MODES, sample_count = 3)]
fn lut8_nq16<const M: usize>(bencher: Bencher, mode: &str) {
    run_lut8(bencher, M, 16, mode);
}

/// nq = 256 (issue 7: every kernel at nq = 256): `simd` is the query-lane kernel, 8 queries
/// per pass over a block of rows; `scalar` runs the queries one by one over each block.
#[divan::bench(consts = [8, 16], args = LANE_MODES, sample_count = 2)]
fn lut8_nq256<const M: usize>(bencher: Bencher, mode: &str) {
    run_lut8(bencher, M, 256, mode);
}

/// Plain (row-major) 4-bit PQ ADC, M sub-quantisers in M/2 bytes.
#[divan::bench(consts = [16, 32], args = MODES, sample_count = 10)]
fn lut4_nq1<const M: usize>(bencher: Bencher, mode: &str) {
    let d = &*DATA;
    let rows = CodeRows::new(&d.bytes[..N * M / 2], M / 2, &d.ids, None).expect("rows");
    let l = luts(M * 16, 3);
    let o = opts(mode);
    bencher
        .counter(ItemsCount::new(N))
        .bench(|| lut4_topk_batch(&rows, M, &l, Direction::SmallerIsBetter, K, o).expect("scan"));
}

fn run_fastscan(bencher: Bencher, m: usize, nq: usize, mode: &str) {
    let d = &*DATA;
    let packed = pack_fastscan(&d.bytes[..N * m / 2], m).expect("pack");
    let rows = FastScanRows::new(&packed, m, &d.ids, None).expect("rows");
    let l = luts(nq * m * 16, 5);
    let o = opts(mode);
    bencher
        .counter(ItemsCount::new(N * nq))
        .bench(|| fastscan_topk_batch(&rows, &l, Direction::SmallerIsBetter, K, o).expect("scan"));
}

/// 4-bit PQ fast-scan (u8 tables in registers, exact re-scoring), M sub-quantisers.
#[divan::bench(consts = [16, 32], args = MODES, sample_count = 10)]
fn fastscan_nq1<const M: usize>(bencher: Bencher, mode: &str) {
    run_fastscan(bencher, M, 1, mode);
}

#[divan::bench(consts = [16, 32], args = MODES, sample_count = 5)]
fn fastscan_nq16<const M: usize>(bencher: Bencher, mode: &str) {
    run_fastscan(bencher, M, 16, mode);
}

#[divan::bench(consts = [16, 32], args = ["simd", "simd-2t"], sample_count = 2)]
fn fastscan_nq256<const M: usize>(bencher: Bencher, mode: &str) {
    run_fastscan(bencher, M, 256, mode);
}

fn run_dense(bencher: Bencher, nq: usize, mode: &str) {
    let d = &*DATA;
    let rows = DenseRows::new(DenseValues::F32(&d.dense), DENSE_DIM, &d.ids, None).expect("rows");
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let q: Vec<f32> = (0..nq * DENSE_DIM)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let o = opts(mode);
    bencher
        .counter(ItemsCount::new(N * nq))
        .bench(|| dense_topk(&rows, &q, Metric::Dot, K, o).expect("scan"));
}

/// Dense inner product over 10⁶ rows of 32 f32.
#[divan::bench(args = MODES, sample_count = 5)]
fn dense_dot32_nq1(bencher: Bencher, mode: &str) {
    run_dense(bencher, 1, mode);
}

#[divan::bench(args = MODES, sample_count = 2)]
fn dense_dot32_nq16(bencher: Bencher, mode: &str) {
    run_dense(bencher, 16, mode);
}

/// ADC inner-product tables (`columns_fixed_order`, the query side of IVFADC): 64 queries'
/// 49-wide sub-vectors against a transposed codebook of 256 centroids (Fashion-MNIST's
/// `pq:16x8` over 784-D). An item is one multiply-add. `avx2` / `avx512` name the kernel
/// explicitly (a kernel this CPU lacks is skipped); `simd` is what `Auto` picks.
#[divan::bench(args = ["scalar", "simd", "avx2", "avx512"], sample_count = 20)]
fn adc_tables_49x256(bencher: Bencher, mode: &str) {
    let (d, k, n) = (49, 256, 64);
    let dispatch = match mode {
        "scalar" => Dispatch::Scalar,
        "simd" => Dispatch::Auto,
        "avx2" => Dispatch::Avx2,
        _ => Dispatch::Avx512,
    };
    if dispatch.resolve().is_err() {
        eprintln!("adc_tables {mode}: not available on this CPU, skipped");
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let xs: Vec<f32> = (0..n * d).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let ct: Vec<f32> = (0..d * k).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let mut out = vec![0f32; n * k];
    bencher.counter(ItemsCount::new(n * d * k)).bench_local(|| {
        columns_fixed_order_with(ColumnOp::Dot, &xs, d, &ct, k, &mut out, dispatch);
        divan::black_box(&out);
    });
}
