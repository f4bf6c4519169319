//! Storage-engine benchmarks (divan): appends of 64-bit codes with a commit every 10k rows and
//! every 1M rows, the open time of an index with 1,000 segments, and compaction throughput
//! next to a plain copy (read, write, fsync) of the same bytes measured in the same run.
//!
//! `cargo bench --bench storage`. Indexes live in the default temporary directory (a real
//! disk, so commits pay real fsyncs); `CODEDB_BENCH_DIR` puts them elsewhere.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use codedb::admin::{FileSystem, StdFs, WriteFile};
use codedb::format::{CodeKind, FileId, ModelFile};
use codedb::{CompactionPolicy, Config, Index, ReadOptions, Retention, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};

/// Every benchmark directory lives under this root, removed when the run ends (fixtures are
/// held in statics, which are never dropped).
static ROOT: OnceLock<PathBuf> = OnceLock::new();

fn main() {
    let root = tempfile::tempdir_in(bench_root()).unwrap();
    ROOT.set(root.path().to_path_buf()).unwrap();
    divan::main();
    drop(root);
}

fn model() -> ModelFile {
    ModelFile {
        model_id: FileId::from_u128(0xBE_4C),
        input_dim: 64,
        code_kind: CodeKind::Binary,
        code_bytes: 8,
        code_bits: 64,
        stages: vec![],
        skipped_stages: vec![],
    }
}

fn codes(first: u64, n: usize) -> Vec<u8> {
    (0..n as u64)
        .flat_map(|i| ((first + i).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes())
        .collect()
}

fn bench_root() -> PathBuf {
    std::env::var_os("CODEDB_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

fn tempdir() -> tempfile::TempDir {
    match ROOT.get() {
        Some(root) => tempfile::tempdir_in(root).unwrap(),
        None => tempfile::tempdir_in(bench_root()).unwrap(),
    }
}

/// Appends `total` rows in calls of 10k rows, committing every `commit_every` rows.
fn append(dir: &Path, total: usize, commit_every: usize) -> Index {
    let idx = Index::create(dir, &model(), Config::default()).unwrap();
    let chunk = 10_000;
    let mut since = 0;
    for k in (0..total).step_by(chunk) {
        idx.add_encoded(
            &RowBatch::new(&codes(k as u64, chunk)),
            &EncodedOptions::default(),
        )
        .unwrap();
        since += chunk;
        if since >= commit_every {
            idx.commit().unwrap();
            since = 0;
        }
    }
    idx.commit().unwrap();
    idx
}

/// 200k rows of 64-bit codes, a commit every 10k rows (20 commits).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_commit_every_10k_rows(b: Bencher) {
    b.counter(ItemsCount::new(200_000usize))
        .with_inputs(tempdir)
        .bench_local_values(|d| {
            let idx = append(d.path(), 200_000, 10_000);
            (idx, d)
        });
}

/// 1M rows of 64-bit codes, one commit at the end.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_commit_every_1m_rows(b: Bencher) {
    b.counter(ItemsCount::new(1_000_000usize))
        .with_inputs(tempdir)
        .bench_local_values(|d| {
            let idx = append(d.path(), 1_000_000, 1_000_000);
            (idx, d)
        });
}

/// The seam without fsyncs: only to build benchmark fixtures quickly.
#[derive(Debug)]
struct NoSync;

struct NoSyncFile(Box<dyn WriteFile>);

impl WriteFile for NoSyncFile {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.0.truncate(len)
    }
}

impl FileSystem for NoSync {
    fn create_new(&self, p: &Path) -> std::io::Result<Box<dyn WriteFile>> {
        Ok(Box::new(NoSyncFile(StdFs.create_new(p)?)))
    }
    fn open_append(&self, p: &Path) -> std::io::Result<Box<dyn WriteFile>> {
        Ok(Box::new(NoSyncFile(StdFs.open_append(p)?)))
    }
    fn rename(&self, a: &Path, b: &Path) -> std::io::Result<()> {
        StdFs.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> std::io::Result<()> {
        StdFs.remove_file(p)
    }
    fn set_read_only(&self, p: &Path) -> std::io::Result<()> {
        StdFs.set_read_only(p)
    }
    fn sync_dir(&self, _: &Path) -> std::io::Result<()> {
        Ok(())
    }
}

fn fixture_config(seal_bytes: u64) -> Config {
    Config {
        seal_bytes,
        auto_gc: false,
        retention: Retention {
            keep_versions: 1,
            keep_for: std::time::Duration::ZERO,
        },
        fs: Arc::new(NoSync),
        ..Config::default()
    }
}

/// An index of 1,000 sealed segments of 100 rows each (built once).
fn thousand_segments() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempdir();
        let idx = Index::create(d.path(), &model(), fixture_config(1)).unwrap();
        for k in 0..1000u64 {
            idx.add_encoded(
                &RowBatch::new(&codes(k * 100, 100)),
                &EncodedOptions::default(),
            )
            .unwrap();
            idx.commit().unwrap();
        }
        assert_eq!(idx.snapshot().segment_count(), 1000);
        idx.gc().unwrap();
        d
    })
    .path()
}

/// Opening for reading: newest manifest, 1,000 segments mapped and checksummed (small
/// segments are fully checked), model.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn open_reader_1000_segments(b: Bencher) {
    let dir = thousand_segments();
    b.bench_local(|| Snapshot::open(dir).unwrap());
}

/// Opening as the writer (lock, recovery checks).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn open_writer_1000_segments(b: Bencher) {
    let dir = thousand_segments();
    b.bench_local(|| Index::open(dir, Config::default()).unwrap());
}

const COMPACT_SEGMENTS: u64 = 8;
const COMPACT_ROWS: usize = 1_000_000;

/// 8 segments of 1M rows (16 MB each: opened without column checksums, so compaction
/// checksums them before copying), built once. `interleaved`: segment k holds ids
/// `k, k+8, k+16, …`, so the merge alternates sources on every row; otherwise segment k holds
/// the k-th block of increasing automatic ids.
fn compaction_source(interleaved: bool) -> &'static (tempfile::TempDir, u64) {
    static SEQ: OnceLock<(tempfile::TempDir, u64)> = OnceLock::new();
    static MIX: OnceLock<(tempfile::TempDir, u64)> = OnceLock::new();
    let cell = if interleaved { &MIX } else { &SEQ };
    cell.get_or_init(|| {
        let d = tempdir();
        let idx = Index::create(d.path(), &model(), fixture_config(1)).unwrap();
        for k in 0..COMPACT_SEGMENTS {
            let first = k * COMPACT_ROWS as u64;
            for c in (0..COMPACT_ROWS).step_by(100_000) {
                let ids: Vec<u64> = (0..100_000u64)
                    .map(|i| (c as u64 + i) * COMPACT_SEGMENTS + k)
                    .collect();
                let given = interleaved.then_some(&ids[..]);
                idx.add_encoded(
                    &RowBatch {
                        ids: given,
                        ..RowBatch::new(&codes(first + c as u64, 100_000))
                    },
                    &EncodedOptions::default(),
                )
                .unwrap();
            }
            idx.commit().unwrap();
        }
        idx.gc().unwrap();
        let s = idx.snapshot();
        assert_eq!(s.segment_count() as u64, COMPACT_SEGMENTS);
        let bytes = s
            .blocks()
            .filter_map(|b| b.segment())
            .map(|r| r.container().file_len())
            .sum();
        drop(s);
        drop(idx);
        (d, bytes)
    })
}

fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempdir();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
        }
    }
    to
}

fn compact(b: Bencher, interleaved: bool) {
    let (src, bytes) = compaction_source(interleaved);
    let cfg = Config {
        auto_gc: false,
        read: ReadOptions::default(),
        ..Config::default()
    };
    b.counter(BytesCount::new(*bytes))
        .with_inputs(|| {
            let d = copy_dir(src.path());
            let idx = Index::open(d.path(), cfg.clone()).unwrap();
            (d, idx)
        })
        .bench_local_values(|(d, idx)| {
            let r = idx.compact(&CompactionPolicy::full()).unwrap();
            assert_eq!(r.merges[0].rows, COMPACT_SEGMENTS * COMPACT_ROWS as u64);
            (d, idx)
        });
}

/// Full compaction of 8 segments of increasing ids into one (checksum, merge, write, fsync,
/// publish).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn compaction(b: Bencher) {
    compact(b, false);
}

/// The same with ids interleaved across the 8 segments (a heap step per row).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn compaction_interleaved_ids(b: Bencher) {
    compact(b, true);
}

/// The baseline: copy the same segment files (read, write, fsync each, fsync the directory).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn plain_copy_of_the_same_bytes(b: Bencher) {
    let (src, bytes) = compaction_source(false);
    let segs: Vec<PathBuf> = std::fs::read_dir(src.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    b.counter(BytesCount::new(*bytes))
        .with_inputs(tempdir)
        .bench_local_values(|d| {
            for s in &segs {
                let to = d.path().join(s.file_name().unwrap());
                std::fs::copy(s, &to).unwrap();
                std::fs::File::open(&to).unwrap().sync_all().unwrap();
            }
            std::fs::File::open(d.path()).unwrap().sync_all().unwrap();
            d
        });
}
