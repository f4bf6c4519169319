//! Every SIMD scan path against its scalar twin and against a brute-force reference (compute
//! every score, drop deleted rows, sort by (score, id), keep k): identical top-k lists, with
//! bit-identical scores for the float kernels. Inputs: random (fixed seeds) and adversarial —
//! all special and odd widths, lengths that are not a multiple of any block size, all-equal
//! codes (every row ties), k = 1 / N / > N, no / some / all rows deleted, several threads and
//! several queries per pass.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::kernels::{
    CodeRows, Direction, Dispatch, ScanOptions, TopK, available_dispatches, hamming_topk,
    hamming_topk_batch, hamming_topk_into, hamming_within, lut4_topk_batch, lut8_topk_batch,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const HAMMING_WIDTHS: [usize; 12] = [1, 3, 5, 7, 8, 12, 16, 24, 32, 64, 100, 130];
const LENGTHS: [usize; 6] = [0, 1, 15, 17, 1000, 4099];

#[derive(Clone, Copy, Debug)]
enum Data {
    Random,
    AllEqual,
    /// Few distinct values: long runs of ties at every distance.
    FewValues,
}

#[derive(Clone, Copy, Debug)]
enum Deleted {
    None,
    ZeroWords,
    Some,
    All,
}

fn gen_codes(rng: &mut ChaCha8Rng, n: usize, w: usize, data: Data) -> Vec<u8> {
    match data {
        Data::Random => (0..n * w).map(|_| rng.random()).collect(),
        Data::AllEqual => {
            let row: Vec<u8> = (0..w).map(|_| rng.random()).collect();
            (0..n).flat_map(|_| row.iter().copied()).collect()
        }
        Data::FewValues => (0..n * w)
            .map(|_| [0u8, 1, 0x80, 0xff][rng.random_range(0..4)])
            .collect(),
    }
}

fn gen_ids(rng: &mut ChaCha8Rng, n: usize) -> Vec<u64> {
    // Distinct, not sorted: a permutation of a spread-out set.
    let mut ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1_000_000).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..=i);
        ids.swap(i, j);
    }
    ids
}

fn gen_deleted(rng: &mut ChaCha8Rng, n: usize, kind: Deleted) -> Option<Vec<u64>> {
    let words = n.div_ceil(64);
    match kind {
        Deleted::None => None,
        Deleted::ZeroWords => Some(vec![0; words]),
        Deleted::All => Some(vec![u64::MAX; words]),
        Deleted::Some => {
            let mut d = vec![0u64; words];
            for r in 0..n {
                if rng.random_bool(0.3) {
                    d[r / 64] |= 1 << (r % 64);
                }
            }
            Some(d)
        }
    }
}

fn is_deleted(d: Option<&[u64]>, r: usize) -> bool {
    d.is_some_and(|d| (d[r / 64] >> (r % 64)) & 1 == 1)
}

fn popcount_distance(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

fn reference_hamming(
    codes: &[u8],
    w: usize,
    ids: &[u64],
    del: Option<&[u64]>,
    q: &[u8],
    k: usize,
) -> Vec<(u32, u64)> {
    let mut all: Vec<(u32, u64)> = codes
        .chunks_exact(w)
        .enumerate()
        .filter(|(r, _)| !is_deleted(del, *r))
        .map(|(r, c)| (popcount_distance(c, q), ids[r]))
        .collect();
    all.sort_unstable();
    all.truncate(k);
    all
}

/// Score keys of the reference, so f32 lists compare bit for bit.
fn reference_scores(
    scores: Vec<(f32, u64)>,
    del: Option<&[u64]>,
    direction: Direction,
    k: usize,
) -> Vec<(f32, u64)> {
    let mut live: Vec<(f32, u64)> = scores
        .into_iter()
        .enumerate()
        .filter(|(r, _)| !is_deleted(del, *r))
        .map(|(_, s)| s)
        .collect();
    live.sort_by(|a, b| {
        let o = match direction {
            Direction::SmallerIsBetter => a.0.total_cmp(&b.0),
            Direction::LargerIsBetter => b.0.total_cmp(&a.0),
        };
        o.then(a.1.cmp(&b.1))
    });
    live.truncate(k);
    live
}

fn bits(v: &[(f32, u64)]) -> Vec<(u32, u64)> {
    v.iter().map(|(s, i)| (s.to_bits(), *i)).collect()
}

fn ks(n: usize) -> Vec<usize> {
    let mut v = vec![1, 10, n.max(1), n + 5];
    v.dedup();
    v
}

#[test]
fn hamming_all_paths_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5ca1);
    let mut cases = 0;
    for &w in &HAMMING_WIDTHS {
        for &n in &LENGTHS {
            for data in [Data::Random, Data::AllEqual, Data::FewValues] {
                for del_kind in [
                    Deleted::None,
                    Deleted::ZeroWords,
                    Deleted::Some,
                    Deleted::All,
                ] {
                    let codes = gen_codes(&mut rng, n, w, data);
                    let ids = gen_ids(&mut rng, n);
                    let del = gen_deleted(&mut rng, n, del_kind);
                    let rows = CodeRows::new(&codes, w, &ids, del.as_deref()).unwrap();
                    // Query: a row of the data when there is one (distance-0 ties), else random.
                    let query: Vec<u8> = if n > 0 && rng.random_bool(0.5) {
                        codes[..w].to_vec()
                    } else {
                        (0..w).map(|_| rng.random()).collect()
                    };
                    for k in ks(n) {
                        let want = reference_hamming(&codes, w, &ids, del.as_deref(), &query, k);
                        for d in available_dispatches() {
                            let opts = ScanOptions {
                                dispatch: d,
                                threads: 1,
                            };
                            let got = hamming_topk_batch(&rows, &query, k, opts).unwrap();
                            assert_eq!(
                                got,
                                vec![want.clone()],
                                "w={w} n={n} k={k} {data:?} {del_kind:?} {d:?}"
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 1000);
}

#[test]
fn hamming_threads_and_batches_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for &w in &[8usize, 16, 32, 64, 12] {
        let n = 40_003;
        for data in [Data::Random, Data::FewValues] {
            let codes = gen_codes(&mut rng, n, w, data);
            let ids = gen_ids(&mut rng, n);
            let del = gen_deleted(&mut rng, n, Deleted::Some);
            let nq = 5;
            let queries: Vec<u8> = (0..nq * w).map(|_| rng.random()).collect();
            for del in [None, del.as_deref()] {
                let rows = CodeRows::new(&codes, w, &ids, del).unwrap();
                for k in [1usize, 7, 100] {
                    let want: Vec<Vec<(u32, u64)>> = queries
                        .chunks_exact(w)
                        .map(|q| reference_hamming(&codes, w, &ids, del, q, k))
                        .collect();
                    for d in available_dispatches() {
                        for threads in [1usize, 2, 3] {
                            let opts = ScanOptions {
                                dispatch: d,
                                threads,
                            };
                            let got = hamming_topk_batch(&rows, &queries, k, opts).unwrap();
                            assert_eq!(got, want, "w={w} k={k} {d:?} threads={threads}");
                        }
                    }
                }
            }
        }
    }
}

/// The fixed-width AVX2 and AVX-512 kernels take 4 to 32 rows per step and leave the rest to
/// the scalar twin: every tail length of every step size, at every fixed width, one query and
/// several, against the reference.
#[test]
fn hamming_step_tails_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x7a11);
    for &w in &[8usize, 16, 32, 64] {
        for n in (0usize..=41).chain(250..=262) {
            let codes = gen_codes(&mut rng, n, w, Data::FewValues);
            let ids = gen_ids(&mut rng, n);
            let rows = CodeRows::new(&codes, w, &ids, None).unwrap();
            let queries: Vec<u8> = (0..3 * w).map(|_| rng.random()).collect();
            for k in [1usize, 5, n + 1] {
                let want: Vec<Vec<(u32, u64)>> = queries
                    .chunks_exact(w)
                    .map(|q| reference_hamming(&codes, w, &ids, None, q, k))
                    .collect();
                for d in available_dispatches() {
                    let opts = ScanOptions {
                        dispatch: d,
                        threads: 1,
                    };
                    let one = hamming_topk_batch(&rows, &queries[..w], k, opts).unwrap();
                    assert_eq!(one, want[..1], "w={w} n={n} k={k} {d:?}");
                    let all = hamming_topk_batch(&rows, &queries, k, opts).unwrap();
                    assert_eq!(all, want, "w={w} n={n} k={k} {d:?} nq=3");
                }
            }
        }
    }
}

#[test]
fn hamming_within_matches_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for &w in &[1usize, 4, 8, 16, 32, 64, 20] {
        let n = 20_011;
        // Codes near a centre so small radii find something.
        let centre: Vec<u8> = (0..w).map(|_| rng.random()).collect();
        let codes: Vec<u8> = (0..n)
            .flat_map(|_| {
                let mut c = centre.clone();
                for _ in 0..rng.random_range(0..4) {
                    let bit = rng.random_range(0..8 * w);
                    c[bit / 8] ^= 1 << (bit % 8);
                }
                c
            })
            .collect();
        let ids = gen_ids(&mut rng, n);
        let del = gen_deleted(&mut rng, n, Deleted::Some);
        let rows = CodeRows::new(&codes, w, &ids, del.as_deref()).unwrap();
        for radius in [0u32, 1, 2, 3] {
            let mut want: Vec<(u32, u64)> = codes
                .chunks_exact(w)
                .enumerate()
                .filter(|(r, _)| !is_deleted(del.as_deref(), *r))
                .map(|(r, c)| (popcount_distance(c, &centre), ids[r]))
                .filter(|(d, _)| *d <= radius)
                .collect();
            want.sort_unstable();
            assert!(!want.is_empty());
            for d in available_dispatches() {
                for threads in [1, 2] {
                    let opts = ScanOptions {
                        dispatch: d,
                        threads,
                    };
                    let got = hamming_within(&rows, &centre, radius, opts).unwrap();
                    assert_eq!(got, want, "w={w} r={radius} {d:?}");
                }
            }
        }
    }
}

#[test]
fn hamming_segments_merge_like_one_column() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let w = 8;
    let n = 3000;
    let codes = gen_codes(&mut rng, n, w, Data::FewValues);
    let ids = gen_ids(&mut rng, n);
    let query: Vec<u8> = (0..w).map(|_| rng.random()).collect();
    let want = hamming_topk(&codes, w, &ids, None, &query, 25).unwrap();
    for d in available_dispatches() {
        let mut t = TopK::new(25).unwrap();
        for (cs, is) in [(0, 1111), (1111, 2000), (2000, 3000)] {
            let seg = CodeRows::new(&codes[cs * w..is * w], w, &ids[cs..is], None).unwrap();
            hamming_topk_into(&seg, &query, &mut t, d).unwrap();
        }
        assert_eq!(t.into_sorted_vec(), want, "{d:?}");
    }
}

fn random_lut(rng: &mut ChaCha8Rng, m: usize, entries: usize, data: Data) -> Vec<f32> {
    (0..m * entries)
        .map(|_| match data {
            // Small integers: exact sums, many ties.
            Data::FewValues | Data::AllEqual => rng.random_range(0..4) as f32,
            Data::Random => rng.random_range(-10.0f32..10.0) * rng.random_range(0.0f32..1.0),
        })
        .collect()
}

fn lut8_reference(codes: &[u8], m: usize, lut: &[f32]) -> Vec<f32> {
    codes
        .chunks_exact(m)
        .map(|c| {
            let mut s = 0.0f32;
            for (j, &b) in c.iter().enumerate() {
                s += lut[j * 256 + b as usize];
            }
            s
        })
        .collect()
}

fn lut4_reference(codes: &[u8], m: usize, lut: &[f32]) -> Vec<f32> {
    let cb = m.div_ceil(2);
    codes
        .chunks_exact(cb)
        .map(|c| {
            let mut s = 0.0f32;
            for j in 0..m {
                let nib = (c[j / 2] >> (4 * (j % 2))) & 15;
                s += lut[j * 16 + nib as usize];
            }
            s
        })
        .collect()
}

#[test]
fn lut8_all_paths_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1078);
    for &m in &[1usize, 3, 4, 5, 7, 8, 12, 16, 24, 32, 33] {
        for &n in &LENGTHS {
            for data in [Data::Random, Data::AllEqual, Data::FewValues] {
                for del_kind in [Deleted::None, Deleted::Some, Deleted::All] {
                    let codes = gen_codes(&mut rng, n, m, data);
                    let ids = gen_ids(&mut rng, n);
                    let del = gen_deleted(&mut rng, n, del_kind);
                    let rows = CodeRows::new(&codes, m, &ids, del.as_deref()).unwrap();
                    let lut = random_lut(&mut rng, m, 256, data);
                    let scores = lut8_reference(&codes, m, &lut);
                    for dir in [Direction::SmallerIsBetter, Direction::LargerIsBetter] {
                        let all: Vec<(f32, u64)> =
                            scores.iter().copied().zip(ids.iter().copied()).collect();
                        for k in ks(n) {
                            let want = reference_scores(all.clone(), del.as_deref(), dir, k);
                            for d in available_dispatches() {
                                let opts = ScanOptions {
                                    dispatch: d,
                                    threads: 1,
                                };
                                let got = lut8_topk_batch(&rows, &lut, dir, k, opts).unwrap();
                                assert_eq!(got.len(), 1);
                                assert_eq!(
                                    bits(&got[0]),
                                    bits(&want),
                                    "m={m} n={n} k={k} {data:?} {del_kind:?} {dir:?} {d:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Several queries per pass (on AVX2 CPUs the query-lane kernel, 8 queries per group, with a
/// partial last group in the lanes (11 = 8 + 3) or run per query (9, 17 = 8k + 1); under
/// `Avx512` the 16-lane kernel, groups of 16 (18 = 16 + 2 runs the last two per query, 35 =
/// 2 × 16 + 3 in the lanes); nq = 2 runs per query): each query's list equals the reference of
/// that query alone, bit for bit, for group sizes around 8 and 16, the widths with a word loop
/// and odd ones, ties and deletions.
#[test]
fn lut8_query_groups_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a4e);
    for &m in &[1usize, 3, 8, 13, 16, 24, 32] {
        // 8 and 16 lanes: full groups, a short last group that still runs the lanes (≥ 3)
        // and one that falls back to the scalar kernel (< 3).
        for &nq in &[2usize, 3, 7, 8, 9, 11, 15, 16, 17, 18, 35] {
            for &n in &[0usize, 1, 15, 1000, 4099] {
                for (data, del_kind) in [
                    (Data::Random, Deleted::None),
                    (Data::FewValues, Deleted::Some),
                    (Data::AllEqual, Deleted::ZeroWords),
                ] {
                    let codes = gen_codes(&mut rng, n, m, data);
                    let ids = gen_ids(&mut rng, n);
                    let del = gen_deleted(&mut rng, n, del_kind);
                    let rows = CodeRows::new(&codes, m, &ids, del.as_deref()).unwrap();
                    let luts = random_lut(&mut rng, nq * m, 256, data);
                    for dir in [Direction::SmallerIsBetter, Direction::LargerIsBetter] {
                        for k in [1, 10, n + 5] {
                            let want: Vec<Vec<(u32, u64)>> = luts
                                .chunks_exact(m * 256)
                                .map(|l| {
                                    let all = lut8_reference(&codes, m, l)
                                        .into_iter()
                                        .zip(ids.iter().copied());
                                    bits(&reference_scores(all.collect(), del.as_deref(), dir, k))
                                })
                                .collect();
                            for d in available_dispatches() {
                                let opts = ScanOptions {
                                    dispatch: d,
                                    threads: 1,
                                };
                                let got = lut8_topk_batch(&rows, &luts, dir, k, opts).unwrap();
                                let got: Vec<Vec<(u32, u64)>> =
                                    got.iter().map(|g| bits(g)).collect();
                                assert_eq!(
                                    got, want,
                                    "m={m} nq={nq} n={n} k={k} {data:?} {del_kind:?} {dir:?} {d:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn lut4_all_paths_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1074);
    for &m in &[1usize, 2, 3, 7, 8, 9, 16, 32, 33] {
        let cb = m.div_ceil(2);
        for &n in &LENGTHS {
            for data in [Data::Random, Data::AllEqual, Data::FewValues] {
                for del_kind in [Deleted::None, Deleted::Some, Deleted::All] {
                    let codes = gen_codes(&mut rng, n, cb, data);
                    let ids = gen_ids(&mut rng, n);
                    let del = gen_deleted(&mut rng, n, del_kind);
                    let rows = CodeRows::new(&codes, cb, &ids, del.as_deref()).unwrap();
                    let lut = random_lut(&mut rng, m, 16, data);
                    let scores = lut4_reference(&codes, m, &lut);
                    for dir in [Direction::SmallerIsBetter, Direction::LargerIsBetter] {
                        let all: Vec<(f32, u64)> =
                            scores.iter().copied().zip(ids.iter().copied()).collect();
                        for k in ks(n) {
                            let want = reference_scores(all.clone(), del.as_deref(), dir, k);
                            for d in available_dispatches() {
                                let opts = ScanOptions {
                                    dispatch: d,
                                    threads: 1,
                                };
                                let got = lut4_topk_batch(&rows, m, &lut, dir, k, opts).unwrap();
                                assert_eq!(
                                    bits(&got[0]),
                                    bits(&want),
                                    "m={m} n={n} k={k} {data:?} {del_kind:?} {dir:?} {d:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn lut_threads_and_batches_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(5150);
    let n = 40_009;
    let nq = 4;
    // m = 8 with 40 009 rows spans several query-group blocks (16 384 rows each).
    for &m in &[8usize, 16, 6] {
        let codes = gen_codes(&mut rng, n, m, Data::Random);
        let ids = gen_ids(&mut rng, n);
        let del = gen_deleted(&mut rng, n, Deleted::Some);
        let rows = CodeRows::new(&codes, m, &ids, del.as_deref()).unwrap();
        let luts = random_lut(&mut rng, nq * m, 256, Data::Random);
        let dir = Direction::SmallerIsBetter;
        let want: Vec<Vec<(u32, u64)>> = luts
            .chunks_exact(m * 256)
            .map(|l| {
                let all = lut8_reference(&codes, m, l)
                    .into_iter()
                    .zip(ids.iter().copied());
                bits(&reference_scores(all.collect(), del.as_deref(), dir, 10))
            })
            .collect();
        // LUT-4 over the same bytes read as 2m nibbles.
        let luts4 = random_lut(&mut rng, nq * 2 * m, 16, Data::FewValues);
        let want4: Vec<Vec<(u32, u64)>> = luts4
            .chunks_exact(2 * m * 16)
            .map(|l| {
                let all = lut4_reference(&codes, 2 * m, l)
                    .into_iter()
                    .zip(ids.iter().copied());
                bits(&reference_scores(all.collect(), del.as_deref(), dir, 10))
            })
            .collect();
        for d in available_dispatches() {
            for threads in [1, 2, 3] {
                let opts = ScanOptions {
                    dispatch: d,
                    threads,
                };
                let got = lut8_topk_batch(&rows, &luts, dir, 10, opts).unwrap();
                let got: Vec<Vec<(u32, u64)>> = got.iter().map(|g| bits(g)).collect();
                assert_eq!(got, want, "lut8 m={m} {d:?} threads={threads}");
                let got4 = lut4_topk_batch(&rows, 2 * m, &luts4, dir, 10, opts).unwrap();
                let got4: Vec<Vec<(u32, u64)>> = got4.iter().map(|g| bits(g)).collect();
                assert_eq!(got4, want4, "lut4 m={} {d:?} threads={threads}", 2 * m);
            }
        }
    }
}

/// `CODEDB_EXPECT_DISPATCH=avx512` (or `avx2`, `neon`, `scalar`) makes this test fail unless
/// that dispatch is among the available ones, so a run on an emulated CPU
/// (`tools/avx512_emulated.sh`) cannot pass by silently testing fewer kernels than it was meant
/// to. Without the variable there is nothing to check.
#[test]
fn expected_dispatch_is_available() {
    let Ok(want) = std::env::var("CODEDB_EXPECT_DISPATCH") else {
        return;
    };
    let d = match want.as_str() {
        "avx512" => Dispatch::Avx512,
        "avx2" => Dispatch::Avx2,
        "neon" => Dispatch::Neon,
        "scalar" => Dispatch::Scalar,
        other => panic!("CODEDB_EXPECT_DISPATCH={other}: expected avx512, avx2, neon or scalar"),
    };
    let have = available_dispatches();
    println!("available dispatches: {have:?}");
    assert!(
        have.contains(&d),
        "CODEDB_EXPECT_DISPATCH={want}, but this CPU offers only {have:?}"
    );
}

#[test]
fn unavailable_dispatch_is_an_error_not_a_fallback() {
    let have = available_dispatches();
    let codes = [0u8; 8];
    let ids = [1u64];
    let rows = CodeRows::new(&codes, 8, &ids, None).unwrap();
    for d in [Dispatch::Avx2, Dispatch::Avx512, Dispatch::Neon] {
        let r = hamming_topk_batch(
            &rows,
            &[0u8; 8],
            1,
            ScanOptions {
                dispatch: d,
                threads: 1,
            },
        );
        assert_eq!(r.is_ok(), have.contains(&d), "{d:?}");
    }
}

/// The documented lane-blocked order, written out independently of the crate.
fn documented_order(a: &[f32], b: &[f32], l2: bool) -> f32 {
    let term = |x: f32, y: f32, acc: f32| {
        if l2 {
            (x - y).mul_add(x - y, acc)
        } else {
            x.mul_add(y, acc)
        }
    };
    let main = a.len() / 32 * 32;
    let mut lanes = [0.0f32; 32];
    for i in 0..main {
        lanes[i % 32] = term(a[i], b[i], lanes[i % 32]);
    }
    let v: Vec<f32> = (0..8)
        .map(|l| (lanes[l] + lanes[8 + l]) + (lanes[16 + l] + lanes[24 + l]))
        .collect();
    let s4: Vec<f32> = (0..4).map(|l| v[l] + v[l + 4]).collect();
    let mut s = (s4[0] + s4[2]) + (s4[1] + s4[3]);
    for i in main..a.len() {
        s = term(a[i], b[i], s);
    }
    s
}

#[test]
fn dense_all_paths_bit_identical() {
    use codedb::kernels::{Metric, dense_f32, dense_f32_f16};
    use half::f16;
    let mut rng = ChaCha8Rng::seed_from_u64(0xd07);
    for n in [0usize, 1, 7, 8, 31, 32, 33, 63, 64, 65, 100, 784, 1000] {
        for _ in 0..5 {
            let a: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let bh: Vec<f16> = b.iter().map(|&x| f16::from_f32(x)).collect();
            let bw: Vec<f32> = bh.iter().map(|x| x.to_f32()).collect();
            for (metric, l2) in [(Metric::Dot, false), (Metric::L2Sq, true)] {
                let want = documented_order(&a, &b, l2);
                let want_h = documented_order(&a, &bw, l2);
                // Sanity against a plain f64 sum.
                let exact: f64 = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let (x, y) = (f64::from(x), f64::from(y));
                        if l2 { (x - y) * (x - y) } else { x * y }
                    })
                    .sum();
                assert!((f64::from(want) - exact).abs() <= 1e-4 * (1.0 + exact.abs()));
                for d in available_dispatches() {
                    let got = dense_f32(metric, &a, &b, d).unwrap();
                    assert_eq!(got.to_bits(), want.to_bits(), "n={n} {metric:?} {d:?}");
                    let got_h = dense_f32_f16(metric, &a, &bh, d).unwrap();
                    assert_eq!(
                        got_h.to_bits(),
                        want_h.to_bits(),
                        "f16 n={n} {metric:?} {d:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn dense_topk_matches_reference() {
    use codedb::kernels::{DenseRows, DenseValues, Metric, dense_topk};
    use half::f16;
    let mut rng = ChaCha8Rng::seed_from_u64(0xde5);
    for (n, dim) in [(0usize, 4usize), (1, 3), (17, 33), (1000, 16), (20_000, 8)] {
        let v: Vec<f32> = (0..n * dim)
            .map(|_| rng.random_range(-2i32..3) as f32 * 0.5)
            .collect();
        let vh: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
        let ids = gen_ids(&mut rng, n);
        let del = gen_deleted(&mut rng, n, Deleted::Some);
        let nq = 3;
        let queries: Vec<f32> = (0..nq * dim)
            .map(|_| rng.random_range(-2i32..3) as f32)
            .collect();
        for metric in [Metric::Dot, Metric::L2Sq] {
            for k in [1usize, 5, n + 1] {
                let want: Vec<Vec<(u32, u64)>> = queries
                    .chunks_exact(dim)
                    .map(|q| {
                        let all: Vec<(f32, u64)> = v
                            .chunks_exact(dim)
                            .zip(&ids)
                            .map(|(row, &id)| {
                                (documented_order(q, row, metric == Metric::L2Sq), id)
                            })
                            .collect();
                        bits(&reference_scores(
                            all,
                            del.as_deref(),
                            metric.direction(),
                            k,
                        ))
                    })
                    .collect();
                for d in available_dispatches() {
                    for threads in [1, 2] {
                        let opts = ScanOptions {
                            dispatch: d,
                            threads,
                        };
                        for values in [DenseValues::F32(&v), DenseValues::F16(&vh)] {
                            let rows = DenseRows::new(values, dim, &ids, del.as_deref()).unwrap();
                            let got = dense_topk(&rows, &queries, metric, k, opts).unwrap();
                            let got: Vec<Vec<(u32, u64)>> = got.iter().map(|g| bits(g)).collect();
                            assert_eq!(got, want, "n={n} dim={dim} {metric:?} k={k} {d:?}");
                        }
                    }
                }
            }
        }
    }
}

/// Fast-scan filters with quantised u8 tables but re-scores exactly, so its lists must equal the
/// plain LUT-4 kernel's bit for bit — including tables with a wide dynamic range, where the
/// quantisation is coarse and the bound's slack matters. Query counts cycle through 1, 2, 3, 4,
/// 5 and 9 (the AVX-512 kernel scores groups of up to 4 queries, the AVX2 one of up to 2: every
/// group width, full groups plus one), and M through widths whose blocks end in a half chunk of two tables (M2 ≡ 2
/// mod 4) and widths of 2, 4, 6 and 8 whole 64-byte chunks (M2 = 8, 16, 24, 32: the AVX-512
/// kernels with the chunk count fixed at compile time; 31 with a padding table).
#[test]
fn fastscan_equals_plain_lut4() {
    use codedb::kernels::{FastScanRows, fastscan_topk_batch, pack_fastscan};
    let mut rng = ChaCha8Rng::seed_from_u64(0xfa57);
    let mut case = 0usize;
    for &m in &[1usize, 2, 3, 6, 8, 15, 16, 23, 24, 31, 32, 33] {
        let cb = m.div_ceil(2);
        for &n in &[0usize, 1, 31, 33, 1000, 4099, 40_001] {
            for data in [Data::Random, Data::AllEqual, Data::FewValues] {
                for del_kind in [Deleted::None, Deleted::Some, Deleted::All] {
                    if n == 40_001 && !matches!(del_kind, Deleted::Some) {
                        continue;
                    }
                    let mut codes = gen_codes(&mut rng, n, cb, data);
                    if m % 2 == 1 {
                        for r in 0..n {
                            codes[r * cb + cb - 1] &= 0x0f;
                        }
                    }
                    let ids = gen_ids(&mut rng, n);
                    let del = gen_deleted(&mut rng, n, del_kind);
                    let rows = CodeRows::new(&codes, cb, &ids, del.as_deref()).unwrap();
                    let packed = pack_fastscan(&codes, m).unwrap();
                    let fs = FastScanRows::new(&packed, m, &ids, del.as_deref()).unwrap();
                    let nq = [1usize, 2, 3, 4, 5, 9][case % 6];
                    case += 1;
                    let mut luts = random_lut(&mut rng, nq * m, 16, data);
                    if matches!(data, Data::Random) {
                        // One wide table: coarse quantisation of the others.
                        for x in luts.iter_mut().take(16) {
                            *x *= 1000.0;
                        }
                    }
                    for dir in [Direction::SmallerIsBetter, Direction::LargerIsBetter] {
                        for k in [1usize, 10, n + 1] {
                            let scalar = ScanOptions {
                                dispatch: Dispatch::Scalar,
                                threads: 1,
                            };
                            let want = lut4_topk_batch(&rows, m, &luts, dir, k, scalar).unwrap();
                            let want: Vec<Vec<(u32, u64)>> = want.iter().map(|g| bits(g)).collect();
                            for d in available_dispatches() {
                                for threads in [1, 2] {
                                    let opts = ScanOptions {
                                        dispatch: d,
                                        threads,
                                    };
                                    let got =
                                        fastscan_topk_batch(&fs, &luts, dir, k, opts).unwrap();
                                    let got: Vec<Vec<(u32, u64)>> =
                                        got.iter().map(|g| bits(g)).collect();
                                    assert_eq!(
                                        got, want,
                                        "m={m} n={n} k={k} {data:?} {del_kind:?} {dir:?} {d:?} t={threads}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
