//! `codedb bench mih`: exact Hamming k-NN through multi-index hashing tables (Norouzi et al.,
//! CVPR 2012) against the linear scan, on a generated segment of binary codes written with its
//! tables — uniform random codes, or clustered ones (centres with random bit flips, which
//! resemble real ITQ codes). Reports the write time with and without the tables, their bytes,
//! and per-query time of both searches; every query's two answers must be identical. The codes
//! are generated once and held in memory (as a sealed log's are), so the tables' time is the
//! build's own, not the generator's.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::Error;
use codedb::format::mih_tables::MihShape;
use codedb::format::{
    ChecksumPolicy, CodeKind, FileId, LoadMode, OpenOptions, RowColumn, SegmentLayout,
    SegmentReader, SegmentWriter,
};
use codedb::internals::mih_search;
use codedb::kernels::{CodeRows, ScanOptions, hamming_topk_batch};

use super::generated_segment::{GENERATED_MODEL_ID, SplitMix};

/// Rows generated per chunk.
const CHUNK_ROWS: usize = 1 << 20;

/// What to generate and time.
#[derive(Debug, Clone)]
pub struct MihBench {
    /// Rows of the segment.
    pub rows: u64,
    /// Bits per code (a multiple of 8, 32-256).
    pub bits: u32,
    /// Clustered codes: this many centres (0 = uniform random codes).
    pub centres: usize,
    /// Each bit of a clustered code is flipped with probability 2^-`flip_log2`.
    pub flip_log2: u32,
    /// Queries timed (drawn from the same distribution, not from the rows).
    pub queries: usize,
    /// Results per query.
    pub k: usize,
    /// Seed of the codes and queries.
    pub seed: u64,
}

/// One run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct MihResult {
    pub rows: u64,
    pub bits: u32,
    pub codes: String,
    pub k: usize,
    pub queries: usize,
    /// Substrings (tables) and their bits.
    pub tables: u32,
    pub substring_bits: Vec<u32>,
    /// Seconds to write ids and codes (the segment without tables).
    pub write_s: f64,
    /// Seconds to build and write the tables (1 counting pass + fill passes over the codes)
    /// and close the file, up to the page cache.
    pub tables_s: f64,
    /// Seconds to then flush the whole segment to disk (fsync): the disk's share, apart.
    pub sync_s: f64,
    /// Peak resident memory of the process once the tables are written, before any search
    /// (`VmHWM` of /proc/self/status; none off Linux): the generated codes (`code_bytes`) plus
    /// what writing the segment and building its tables held at most.
    pub tables_peak_rss_bytes: Option<u64>,
    /// Bytes of the code column and of the tables section.
    pub code_bytes: u64,
    pub table_bytes: u64,
    /// Per query, seconds: linear scan (1 thread) mean and median; MIH mean and median.
    pub linear_mean_s: f64,
    pub linear_median_s: f64,
    pub mih_mean_s: f64,
    pub mih_median_s: f64,
    pub mih_max_s: f64,
    /// linear mean / MIH mean.
    pub speedup: f64,
    /// Mean distance of the k-th neighbour.
    pub mean_kth_distance: f64,
}

/// A deterministic stream of codes: the same seed gives the same codes.
struct Codes {
    rng: SplitMix,
    bytes: usize,
    centres: Vec<u8>,
    flip_log2: u32,
}

impl Codes {
    fn new(b: &MihBench, stream: u64) -> Codes {
        let bytes = b.bits as usize / 8;
        let mut c = SplitMix(b.seed ^ 0x6d69_6863_656e_7472);
        let mut centres = vec![0u8; b.centres * bytes];
        for x in centres.chunks_mut(8) {
            let w = c.next().to_le_bytes();
            x.copy_from_slice(&w[..x.len()]);
        }
        Codes {
            rng: SplitMix(b.seed.wrapping_add(stream.wrapping_mul(0x9e37_79b9))),
            bytes,
            centres,
            flip_log2: b.flip_log2,
        }
    }

    fn fill(&mut self, out: &mut [u8]) {
        let n = self.centres.len() / self.bytes.max(1);
        for code in out.chunks_exact_mut(self.bytes) {
            if n == 0 {
                for x in code.chunks_mut(8) {
                    let w = self.rng.next().to_le_bytes();
                    x.copy_from_slice(&w[..x.len()]);
                }
                continue;
            }
            let c = (self.rng.next() % n as u64) as usize;
            code.copy_from_slice(&self.centres[c * self.bytes..(c + 1) * self.bytes]);
            for x in code.chunks_mut(8) {
                // AND of `flip_log2` random words: each bit set with probability 2^-flip_log2.
                let mut f = u64::MAX;
                for _ in 0..self.flip_log2 {
                    f &= self.rng.next();
                }
                for (b, fb) in x.iter_mut().zip(f.to_le_bytes()) {
                    *b ^= fb;
                }
            }
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::InvalidArgument {
        argument: "dir".into(),
        detail: format!("{}: {e}", path.display()),
    }
}

/// Writes the segment with its tables into `dir` (removed afterwards unless `keep`), times both
/// searches, and checks that they agree on every query.
pub fn run_mih_bench(
    dir: &Path,
    b: &MihBench,
    keep: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<MihResult, Error> {
    let bytes = b.bits / 8;
    let shape = MihShape::choose(bytes, b.rows).ok_or_else(|| Error::InvalidArgument {
        argument: "bits".into(),
        detail: format!(
            "multi-index hashing takes 32-256-bit codes and 1 to 2^32-1 rows, not {} bits x {} rows",
            b.bits, b.rows
        ),
    })?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path: PathBuf = dir.join(format!(
        "bench-mih-{}bit-{}rows-{}-seed{}.seg",
        b.bits,
        b.rows,
        if b.centres == 0 {
            "uniform".to_string()
        } else {
            format!("c{}f{}", b.centres, b.flip_log2)
        },
        b.seed
    ));
    let layout = SegmentLayout {
        code_kind: CodeKind::Binary,
        code_bytes: bytes,
        code_bits: b.bits,
        model_id: GENERATED_MODEL_ID,
    };
    progress("generating the codes");
    let mut codes = vec![0u8; b.rows as usize * bytes as usize];
    Codes::new(b, 0).fill(&mut codes);
    progress("writing ids and codes");
    let file = std::fs::File::create(&path).map_err(io(&path))?;
    let t = Instant::now();
    let mut w = SegmentWriter::new(
        BufWriter::with_capacity(8 << 20, file),
        FileId::generate(),
        layout,
        &path,
    )?;
    let mut start = 0u64;
    while start < b.rows {
        let n = (CHUNK_ROWS as u64).min(b.rows - start);
        w.ids(&(start..start + n).collect::<Vec<_>>())?;
        start += n;
    }
    for c in codes.chunks(CHUNK_ROWS * bytes as usize) {
        w.codes(c)?;
    }
    let write_s = t.elapsed().as_secs_f64();
    progress("building the tables");
    let t = Instant::now();
    w.mih_tables::<codedb::format::FormatError>(shape, |sink| {
        codes.chunks(CHUNK_ROWS * bytes as usize).for_each(sink);
        Ok(())
    })?;
    let (out, _) = w.finish()?;
    let file = out.into_inner().map_err(|e| io(&path)(e.into_error()))?;
    let tables_s = t.elapsed().as_secs_f64();
    let peak = peak_rss_bytes();
    // The searches read the segment's mapping; the generated copy would only take page cache
    // from it (8 GB at 10⁹ 64-bit codes).
    drop(codes);
    let t = Instant::now();
    file.sync_all().map_err(io(&path))?;
    let sync_s = t.elapsed().as_secs_f64();
    let result = time_searches(&path, b, shape, (write_s, tables_s), progress).map(|r| MihResult {
        tables_peak_rss_bytes: peak,
        sync_s,
        ..r
    });
    if !keep {
        let _ = std::fs::remove_file(&path);
    }
    result
}

/// The process's peak resident set so far (`VmHWM`), on Linux.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn time_searches(
    path: &Path,
    b: &MihBench,
    shape: MihShape,
    (write_s, tables_s): (f64, f64),
    progress: &mut dyn FnMut(&str),
) -> Result<MihResult, Error> {
    progress("checking the columns");
    let opts = OpenOptions {
        load: LoadMode::Mmap,
        checksums: ChecksumPolicy::SkipColumns,
    };
    let seg = SegmentReader::open(path, opts)?;
    for col in [RowColumn::Ids, RowColumn::Codes] {
        seg.check_column(col)?;
    }
    let tables = seg.mih_tables()?.ok_or_else(|| Error::InvalidArgument {
        argument: "segment".into(),
        detail: "the written segment has no tables".into(),
    })?;
    let cb = b.bits as usize / 8;
    let mut queries = vec![0u8; b.queries * cb];
    Codes::new(b, 1).fill(&mut queries);
    let rows = CodeRows::new(seg.codes(), cb, seg.ids(), None)?;
    let opts = ScanOptions {
        threads: 1,
        ..ScanOptions::default()
    };
    // Each method runs over all the queries in a block, after one untimed pass: MIH's
    // working set (the codes of the rows its probes hit, the buckets it reads) is then not
    // pushed out of the page cache by the scans in between, nor the scans' by MIH. At 10⁹
    // 64-bit codes the segment is 28 GB; alternating the two per query measured both mostly
    // waiting on the disk (BENCHMARKS.md).
    progress("warming up MIH");
    let mih_all = |times: &mut Vec<f64>| -> Result<Vec<Vec<(u32, u64)>>, Error> {
        let mut out = Vec::with_capacity(b.queries);
        for q in queries.chunks_exact(cb) {
            let t = Instant::now();
            out.push(mih_search(&tables, seg.codes(), seg.ids(), None, q, b.k)?);
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(out)
    };
    mih_all(&mut Vec::new())?;
    progress("timing MIH");
    let mut mih = Vec::new();
    let found = mih_all(&mut mih)?;
    progress("timing the linear scan");
    let (mut lin, mut kth) = (Vec::new(), 0.0);
    for (q, m) in queries.chunks_exact(cb).zip(&found) {
        let t = Instant::now();
        let a = hamming_topk_batch(&rows, q, b.k, opts)?;
        lin.push(t.elapsed().as_secs_f64());
        if a.first() != Some(m) {
            return Err(Error::InvalidArgument {
                argument: "mih".into(),
                detail: format!("MIH and the linear scan differ: {m:?} vs {a:?}"),
            });
        }
        kth += m.last().map_or(0.0, |h| h.0 as f64);
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (
            v.iter().sum::<f64>() / v.len().max(1) as f64,
            v.get(v.len() / 2).copied().unwrap_or(0.0),
            v.last().copied().unwrap_or(0.0),
        )
    };
    let (lm, lmed, _) = stats(&mut lin);
    let (mm, mmed, mmax) = stats(&mut mih);
    let section = seg
        .container()
        .entries()
        .iter()
        .find(|e| e.kind == codedb::format::section_kind::SEG_MIH)
        .map_or(0, |e| e.stored_len);
    Ok(MihResult {
        rows: b.rows,
        bits: b.bits,
        codes: if b.centres == 0 {
            "uniform".into()
        } else {
            format!("{} centres, bits flipped at 2^-{}", b.centres, b.flip_log2)
        },
        k: b.k,
        queries: b.queries,
        tables: shape.m,
        substring_bits: (0..shape.m).map(|j| shape.sub(j).1).collect(),
        write_s,
        tables_s,
        tables_peak_rss_bytes: None,
        sync_s: 0.0,
        code_bytes: b.rows * cb as u64,
        table_bytes: section,
        linear_mean_s: lm,
        linear_median_s: lmed,
        mih_mean_s: mm,
        mih_median_s: mmed,
        mih_max_s: mmax,
        speedup: lm / mm.max(1e-12),
        mean_kth_distance: kth / b.queries.max(1) as f64,
    })
}
