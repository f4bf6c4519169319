//! Multi-index hashing (format 1.6, FORMAT.md §3.6): the Hamming k-NN through the tables
//! equals the linear scan — same ids, same distances, same order of ties by id — on random and
//! on clustered codes, for several k, with deleted rows, with rows still in the active log,
//! and after compaction; segments really carry the tables; corrupt tables are typed errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::format::{
    CodeKind, FileId, FormatError, ModelFile, StageRecord, Tensor, TensorData, stage_kind,
};
use codedb::{
    CompactionPolicy, Config, EncodedOptions, Hit, Index, MihChoice, RowBatch, SearchMode,
    SearchParams, Snapshot,
};
use ndarray::Array2;
use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// A model whose query vector is the code itself: bit j set iff component j > 0.
fn model(bits: usize) -> ModelFile {
    ModelFile {
        model_id: FileId::from_u128(0x1_6005_0001),
        input_dim: bits as u32,
        code_kind: CodeKind::Binary,
        code_bytes: bits as u32 / 8,
        code_bits: bits as u32,
        stages: vec![
            StageRecord {
                kind: stage_kind::CENTER,
                required: true,
                tensors: vec![Tensor::new(
                    "mean",
                    &[bits as u64],
                    TensorData::F32(vec![0.0; bits]),
                )],
            },
            StageRecord {
                kind: stage_kind::BINARIZE,
                required: true,
                tensors: vec![Tensor::new(
                    "thresholds",
                    &[bits as u64],
                    TensorData::F32(vec![0.0; bits]),
                )],
            },
        ],
        skipped_stages: vec![],
    }
}

/// Codes of `n` rows: uniform random, or (clustered) a few centres with bits flipped at rate
/// 1/16, so that many rows tie.
fn codes(rng: &mut StdRng, n: usize, bytes: usize, centres: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * bytes);
    for _ in 0..n {
        if centres.is_empty() {
            out.extend((0..bytes).map(|_| rng.random::<u8>()));
        } else {
            let c = &centres[rng.random_range(0..centres.len())];
            out.extend(c.iter().map(|&b| {
                let mut flip = 0u8;
                for bit in 0..8 {
                    if rng.random_range(0..16) == 0 {
                        flip |= 1 << bit;
                    }
                }
                b ^ flip
            }));
        }
    }
    out
}

fn queries(codes: &[u8], bits: usize) -> Array2<f32> {
    let n = codes.len() * 8 / bits;
    Array2::from_shape_fn((n, bits), |(r, j)| {
        if codes[r * bits / 8 + j / 8] >> (j % 8) & 1 == 1 {
            1.0
        } else {
            -1.0
        }
    })
}

fn search(s: &Snapshot, q: &Array2<f32>, k: usize, mih: MihChoice) -> Vec<Vec<Hit>> {
    let p = SearchParams::new(k, SearchMode::Hamming).mih(mih);
    s.search(q.view(), &p).unwrap()
}

/// Segments of the snapshot that carry tables.
fn with_tables(s: &Snapshot) -> usize {
    s.blocks()
        .filter_map(|b| b.segment())
        .filter(|r| r.mih_tables().unwrap().is_some())
        .count()
}

fn assert_same(s: &Snapshot, q: &Array2<f32>, ks: &[usize], what: &str) {
    for &k in ks {
        let linear = search(s, q, k, MihChoice::Off);
        for mih in [MihChoice::On, MihChoice::Auto] {
            assert_eq!(search(s, q, k, mih), linear, "{what}, k = {k}, {mih:?}");
        }
    }
}

fn scenario(seed: u64, bits: usize, clustered: bool, batches: &[usize]) {
    let mut rng = StdRng::seed_from_u64(seed);
    let bytes = bits / 8;
    let centres: Vec<Vec<u8>> = if clustered {
        (0..5)
            .map(|_| (0..bytes).map(|_| rng.random::<u8>()).collect())
            .collect()
    } else {
        Vec::new()
    };
    let dir = tempfile::tempdir().unwrap();
    let sealing = Config {
        seal_bytes: 1,
        ..Config::default()
    };
    let idx = Index::create(dir.path(), &model(bits), sealing).unwrap();
    let mut total = 0u64;
    for &n in batches {
        let c = codes(&mut rng, n, bytes, &centres);
        idx.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
            .unwrap();
        idx.commit().unwrap();
        total += n as u64;
    }
    // Delete every seventh row and a few more.
    let mut gone: Vec<u64> = (0..total).step_by(7).collect();
    gone.extend((0..5).map(|_| rng.random_range(0..total)));
    gone.sort_unstable();
    gone.dedup();
    idx.delete(&gone).unwrap();
    idx.commit().unwrap();
    drop(idx);
    // Rows that stay in the active log (scanned linearly).
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let c = codes(&mut rng, 37, bytes, &centres);
    idx.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let q = queries(&codes(&mut rng, 9, bytes, &centres), bits);
    let s = idx.snapshot();
    assert_eq!(
        with_tables(&s),
        batches.len(),
        "every sealed segment has tables"
    );
    let live = s.live_rows() as usize;
    let ks = [1, 3, 10, 64, live + 3];
    assert_same(&s, &q, &ks, "after append");
    idx.compact(&CompactionPolicy::full()).unwrap();
    let s = idx.snapshot();
    assert!(with_tables(&s) >= 1, "the merged segment has tables");
    assert_same(&s, &q, &ks, "after compaction");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn mih_equals_the_linear_scan(
        seed in any::<u64>(),
        bits in prop::sample::select(vec![32usize, 64, 128, 256]),
        clustered in any::<bool>(),
        batches in prop::collection::vec(1usize..700, 1..4),
    ) {
        scenario(seed, bits, clustered, &batches);
    }
}

#[test]
fn mih_equals_the_linear_scan_on_clustered_64_bit_codes_with_many_ties() {
    scenario(7, 64, true, &[1500, 900]);
    scenario(8, 64, false, &[2000]);
}

#[test]
fn an_index_without_tables_searches_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        seal_bytes: 1,
        mih_tables: false,
        ..Config::default()
    };
    let idx = Index::create(dir.path(), &model(64), cfg).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let c = codes(&mut rng, 500, 8, &[]);
    idx.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    assert_eq!(with_tables(&s), 0);
    let q = queries(&codes(&mut rng, 4, 8, &[]), 64);
    assert_eq!(
        search(&s, &q, 10, MihChoice::On),
        search(&s, &q, 10, MihChoice::Off)
    );
}

/// The tables' section of a sealed segment, flipped: a typed error naming the file and the
/// section, from the search and from `verify`.
#[test]
fn a_damaged_table_section_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        seal_bytes: 1,
        ..Config::default()
    };
    let idx = Index::create(dir.path(), &model(64), cfg).unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let c = codes(&mut rng, 400, 8, &[]);
    idx.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    let seg = s.blocks().find_map(|b| b.segment()).unwrap();
    let path = seg.path().to_path_buf();
    let e = seg
        .container()
        .entries()
        .iter()
        .find(|e| e.kind == codedb::format::section_kind::SEG_MIH)
        .copied()
        .unwrap();
    assert!(!e.required(), "the tables are an optional section");
    drop(s);
    drop(idx);
    let mut bytes = std::fs::read(&path).unwrap();
    // A row number in table 0, past the header and the offsets.
    let at = e.offset as usize + e.stored_len as usize - 4 * 10;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let opts = codedb::ReadOptions {
        full_check_below: 0,
        ..codedb::ReadOptions::default()
    };
    let s = Snapshot::open_with(dir.path(), &opts).unwrap();
    let q = queries(&codes(&mut rng, 2, 8, &[]), 64);
    let p = SearchParams::new(5, SearchMode::Hamming).mih(MihChoice::On);
    let err = s.search(q.view(), &p).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("mih") && msg.contains(&*path.to_string_lossy()),
        "{msg}"
    );
    let seg = s.blocks().find_map(|b| b.segment()).unwrap();
    assert!(
        matches!(seg.mih_tables(), Err(FormatError::ChecksumMismatch { ref section, .. }) if section == "mih"),
        "{:?}",
        seg.mih_tables()
    );
    // The linear scan does not read the tables.
    let p = SearchParams::new(5, SearchMode::Hamming).mih(MihChoice::Off);
    assert!(s.search(q.view(), &p).is_ok());
}

/// `Auto` on a segment past `MIH_AUTO_MIN_ROWS`: queries near a row finish through the tables,
/// far ones (uniform random codes) give up and scan; both equal the linear scan.
#[test]
fn auto_on_a_large_segment_probes_or_scans_and_equals_the_linear_scan() {
    let rows = codedb::internals::MIH_AUTO_MIN_ROWS + 4000;
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(64), Config::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let c = codes(&mut rng, rows, 8, &[]);
    idx.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap();
    idx.commit_sealed().unwrap();
    let s = idx.snapshot();
    assert_eq!(with_tables(&s), 1);
    // Stored codes with a bit flipped (near), and fresh random codes (far).
    let mut q = c[..8 * 6].to_vec();
    q[3] ^= 0x10;
    q.extend(codes(&mut rng, 6, 8, &[]));
    let q = queries(&q, 64);
    assert_same(&s, &q, &[1, 10, 100], "large segment");
}

/// A broad filter on a segment past `MIH_AUTO_MIN_ROWS`, searched for many queries: `Auto`
/// probes (stopping only on passing rows) or gives up and scans the passing rows gathered into
/// one buffer; `Off` gathers them too; masking (one query) and every choice equal the brute
/// force over the passing rows, ties by id.
#[test]
fn a_broad_filter_on_a_large_segment_equals_brute_force_gathered_or_masked() {
    let rows = codedb::internals::MIH_AUTO_MIN_ROWS + 3000;
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(64), Config::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(12);
    let c = codes(&mut rng, rows, 8, &[]);
    let ids: Vec<u64> = (0..rows as u64).map(|i| 3 * i + 1).collect();
    idx.add_encoded(
        &RowBatch::new(&c).with_ids(&ids),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.delete(&ids[..rows].iter().copied().step_by(17).collect::<Vec<_>>())
        .unwrap();
    idx.commit_sealed().unwrap();
    let s = idx.snapshot();
    assert_eq!(with_tables(&s), 1);
    // 20 stored codes with a bit flipped (near: the tables finish), 20 random (far: give up).
    let mut qc = c[..8 * 20].to_vec();
    for q in qc.chunks_exact_mut(8) {
        q[5] ^= 0x04;
    }
    qc.extend(codes(&mut rng, 20, 8, &[]));
    let q = queries(&qc, 64);
    let half = codedb::IdSelector::new(ids.iter().copied().filter(|i| i % 2 == 0));
    type Pass = Box<dyn Fn(u64) -> bool>;
    let cases: Vec<(codedb::RowFilter, Pass)> = vec![
        (codedb::RowFilter::ids(half), Box::new(|i| i % 2 == 0)),
        (
            codedb::RowFilter::parse("id < 40000 OR id >= 150000").unwrap(),
            Box::new(|i| !(40_000..150_000).contains(&i)),
        ),
        (
            codedb::RowFilter::parse("id >= 30000").unwrap(),
            Box::new(|i| i >= 30_000),
        ),
    ];
    let gone: std::collections::HashSet<u64> = ids.iter().copied().step_by(17).collect();
    let dist =
        |a: &[u8], b: &[u8]| -> u32 { a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum() };
    for (filter, pass) in &cases {
        for k in [1, 10, 50] {
            let want: Vec<Vec<Hit>> = qc
                .chunks_exact(8)
                .map(|qq| {
                    let mut l: Vec<(u32, u64)> = (0..rows)
                        .filter(|&r| pass(ids[r]) && !gone.contains(&ids[r]))
                        .map(|r| (dist(qq, &c[r * 8..r * 8 + 8]), ids[r]))
                        .collect();
                    l.sort_unstable();
                    l.truncate(k);
                    l.into_iter()
                        .map(|(d, id)| Hit {
                            id,
                            score: d as f32,
                        })
                        .collect()
                })
                .collect();
            for mih in [MihChoice::Off, MihChoice::On, MihChoice::Auto] {
                for threads in [1, 2] {
                    let p = SearchParams::new(k, SearchMode::Hamming)
                        .mih(mih)
                        .threads(threads)
                        .filter(filter.clone());
                    assert_eq!(
                        s.search(q.view(), &p).unwrap(),
                        want,
                        "k {k} {mih:?} {threads}"
                    );
                    // One query at a time: the rejected rows are masked, not gathered.
                    let one = s.search(q.slice(ndarray::s![..1, ..]), &p).unwrap();
                    assert_eq!(one[..], want[..1], "one query, k {k} {mih:?}");
                }
            }
        }
    }
}
