//! One `codedb bench scan` case: a generated segment, mmapped; the machine's read bandwidth
//! measured on the same mapping; then the kernel timed hot (best of several batches) and cold
//! (after evicting the file from the page cache).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::error::Error;
use codedb::format::{
    ChecksumPolicy, CodeKind, LoadMode, OpenOptions, RowColumn, SegmentLayout, SegmentReader,
};
use codedb::kernels::{
    CodeRows, Direction, FastScanRows, ScanOptions, fastscan_topk_batch, hamming_topk_batch,
    lut8_topk_batch, pack_fastscan,
};

use super::bandwidth::read_bandwidth;
use super::generated_segment::{GENERATED_MODEL_ID, ensure_generated_segment};

/// What is scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchKind {
    /// Hamming distance over codes of this many bits.
    Hamming(u32),
    /// PQ ADC with M one-byte sub-quantisers (LUT-8 kernel).
    Pq8(u32),
    /// PQ ADC with M 4-bit sub-quantisers (fast-scan kernel).
    Pq4(u32),
}

impl BenchKind {
    pub fn parse(s: &str) -> Option<BenchKind> {
        let num = |p: &str| s.strip_prefix(p).and_then(|x| x.parse::<u32>().ok());
        if let Some(b) = num("hamming") {
            return (b > 0 && b % 8 == 0).then_some(BenchKind::Hamming(b));
        }
        if let Some(m) = num("pq8x") {
            return (m > 0).then_some(BenchKind::Pq8(m));
        }
        if let Some(m) = num("pq4x") {
            return (m > 0 && m <= 64).then_some(BenchKind::Pq4(m));
        }
        None
    }

    pub fn name(self) -> String {
        match self {
            BenchKind::Hamming(b) => format!("hamming{b}"),
            BenchKind::Pq8(m) => format!("pq8x{m}"),
            BenchKind::Pq4(m) => format!("pq4x{m}"),
        }
    }

    pub fn layout(self) -> SegmentLayout {
        let (code_kind, code_bytes, code_bits) = match self {
            BenchKind::Hamming(b) => (CodeKind::Binary, b / 8, b),
            BenchKind::Pq8(m) => (CodeKind::Pq8, m, 8 * m),
            BenchKind::Pq4(m) => (CodeKind::Pq4, m.div_ceil(2), 4 * m),
        };
        SegmentLayout {
            code_kind,
            code_bytes,
            code_bits,
            model_id: GENERATED_MODEL_ID,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ScanResult {
    pub kind: String,
    pub codes: u64,
    pub queries: usize,
    pub threads: usize,
    pub k: usize,
    pub cache: &'static str,
    pub seconds_per_query: f64,
    pub codes_per_s: f64,
    /// Code bytes scanned per second (a batch of queries reads the codes once).
    pub gb_per_s: f64,
    /// Plain streaming read of the same mapping with the same threads, this run.
    pub bandwidth_gb_per_s: f64,
    pub bandwidth_fraction: f64,
    pub isa: &'static str,
    /// For cold runs: whether the page cache could be emptied (and why not).
    pub note: Option<String>,
    /// Hot runs: first and later batches with and without the block checks a search makes on
    /// a segment opened without column checksums (FORMAT.md §3.5).
    pub checked: Option<CheckedScan>,
}

/// Parameters of one run (several cases share the generated segment).
#[derive(Debug, Clone)]
pub struct ScanBench {
    pub kind: BenchKind,
    pub codes: u64,
    pub queries: usize,
    pub k: usize,
    pub threads: usize,
    pub repeats: usize,
    pub seed: u64,
}

fn rng_fill(seed: u64, out: &mut [f32]) {
    let mut s = seed;
    for v in out {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        *v = ((z >> 40) as f32) / (1u64 << 24) as f32;
    }
}

/// Runs `b` on the generated segment in `dir` (written first when missing), for each cache
/// state in `caches` ("hot", "cold").
pub fn run_scan_bench(
    dir: &Path,
    b: &ScanBench,
    caches: &[&'static str],
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<ScanResult>, Error> {
    // An invalid CODEDB_SCAN_ISA fails here, before any work.
    codedb::kernels::Dispatch::Auto.resolve()?;
    let layout = b.kind.layout();
    let (path, _) = ensure_generated_segment(dir, layout, b.codes, b.seed, progress)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(b.threads.max(1))
        .build()
        .map_err(|e| Error::InvalidArgument {
            argument: "threads".into(),
            detail: e.to_string(),
        })?;
    let mut out = Vec::new();
    for &cache in caches {
        let mut note = None;
        if cache == "cold" {
            note = Some(match codedb::format::evict_from_page_cache(&path) {
                Ok(()) => "evicted with posix_fadvise(DONTNEED) before the run".to_string(),
                Err(e) => format!("could not evict the page cache: {e}"),
            });
        }
        let opts = OpenOptions {
            load: LoadMode::Mmap,
            checksums: ChecksumPolicy::SkipColumns,
        };
        let seg = SegmentReader::open(&path, opts)?;
        let (r, interleaved_bw) = pool.install(|| time_case(&seg, b, cache == "cold"))?;
        let checked = if cache == "hot" {
            Some(pool.install(|| time_checked(&path, b))?)
        } else {
            None
        };
        let bw = if let Some(bw) = interleaved_bw {
            bw
        } else {
            // Cold bandwidth: the same read from an emptied cache.
            drop(seg);
            let _ = codedb::format::evict_from_page_cache(&path);
            let seg = SegmentReader::open(&path, opts)?;
            read_bandwidth(seg.stored_codes(), b.threads, 1).0
        };
        let bytes = b.codes as f64 * layout.code_bytes as f64;
        let gbps = bytes / r / 1e9;
        out.push(ScanResult {
            kind: b.kind.name(),
            codes: b.codes,
            queries: b.queries,
            threads: b.threads,
            k: b.k,
            cache,
            seconds_per_query: r / b.queries as f64,
            codes_per_s: b.codes as f64 * b.queries as f64 / r,
            gb_per_s: gbps,
            bandwidth_gb_per_s: bw / 1e9,
            bandwidth_fraction: gbps / (bw / 1e9),
            isa: codedb::kernels::detected_isa(),
            note,
            checked,
        });
    }
    Ok(out)
}

/// The query side of a case, made once (seeded).
enum Inputs {
    Codes(Vec<u8>),
    Lut8(Vec<f32>),
    Lut4(Vec<f32>),
}

fn inputs(b: &ScanBench, cb: usize) -> Inputs {
    match b.kind {
        BenchKind::Hamming(_) => {
            let mut q = vec![0f32; b.queries * cb];
            rng_fill(b.seed ^ 1, &mut q);
            Inputs::Codes(q.iter().map(|v| (v * 256.0) as u8).collect())
        }
        BenchKind::Pq8(m) => {
            let mut lut = vec![0f32; b.queries * m as usize * 256];
            rng_fill(b.seed ^ 2, &mut lut);
            Inputs::Lut8(lut)
        }
        BenchKind::Pq4(m) => {
            let mut lut = vec![0f32; b.queries * m as usize * 16];
            rng_fill(b.seed ^ 3, &mut lut);
            Inputs::Lut4(lut)
        }
    }
}

/// One batch of queries over the whole segment with the kernel of `b.kind`. With `checked`,
/// the ids and code blocks are checked first on `b.threads` threads, as a search does
/// (FORMAT.md §3.5): on a fresh reader that checksums every block, on a reader that checked
/// them before it costs one atomic load per block.
fn scan_once(
    seg: &SegmentReader,
    b: &ScanBench,
    inputs: &Inputs,
    packed_copy: Option<&[u8]>,
    checked: bool,
) -> Result<(), Error> {
    if checked {
        for col in [RowColumn::Ids, RowColumn::Codes] {
            seg.check_rows_par(col, 0..seg.rows(), b.threads)?;
        }
    }
    let cb = seg.meta().code_bytes as usize;
    let opts = ScanOptions {
        threads: b.threads.max(1),
        ..ScanOptions::default()
    };
    let d = Direction::SmallerIsBetter;
    match (inputs, b.kind) {
        (Inputs::Codes(q), _) => {
            let rows = CodeRows::new(seg.codes(), cb, seg.ids(), None)?;
            std::hint::black_box(hamming_topk_batch(&rows, q, b.k, opts)?);
        }
        (Inputs::Lut8(lut), _) => {
            let rows = CodeRows::new(seg.codes(), cb, seg.ids(), None)?;
            std::hint::black_box(lut8_topk_batch(&rows, lut, d, b.k, opts)?);
        }
        (Inputs::Lut4(lut), BenchKind::Pq4(m)) => {
            let packed = match (seg.fastscan_codes(), packed_copy) {
                (Some((p, _)), _) | (None, Some(p)) => p,
                (None, None) => {
                    return Err(Error::InvalidArgument {
                        argument: "kind".into(),
                        detail: "a row-major pq4 segment needs its packed copy".into(),
                    });
                }
            };
            let rows = FastScanRows::new(packed, m as usize, seg.ids(), None)?;
            std::hint::black_box(fastscan_topk_batch(&rows, lut, d, b.k, opts)?);
        }
        (Inputs::Lut4(_), _) => {
            return Err(Error::InvalidArgument {
                argument: "kind".into(),
                detail: "LUT-4 inputs for another kind".into(),
            });
        }
    }
    Ok(())
}

/// Seconds for one batch of `queries` queries (best of `repeats` when hot, one pass when cold),
/// kernel only; when hot, also the read bandwidth (bytes/s), best of one read of the codes
/// right after each timed batch. Interleaving puts the scan and its yardstick in the same
/// moments: on a shared host the bandwidth drifts by a third between runs a minute apart, so a
/// yardstick taken after all the batches can turn the same scan into 70 % or 107 %.
fn time_case(seg: &SegmentReader, b: &ScanBench, cold: bool) -> Result<(f64, Option<f64>), Error> {
    let inputs = inputs(b, seg.meta().code_bytes as usize);
    // Segments of format 1.2 store the fast-scan layout and are scanned in place; a row-major
    // segment generated by an older build is packed in memory once, outside the timing.
    let owned = match (b.kind, seg.fastscan_codes()) {
        (BenchKind::Pq4(m), None) => Some(pack_fastscan(seg.codes(), m as usize)?),
        _ => None,
    };
    let passes = if cold { 1 } else { b.repeats.max(1) + 1 };
    let mut best = f64::INFINITY;
    let mut bw = 0f64;
    for i in 0..passes {
        let t = Instant::now();
        scan_once(seg, b, &inputs, owned.as_deref(), false)?;
        if cold || i > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
        if !cold {
            bw = bw.max(read_bandwidth(seg.stored_codes(), b.threads, 1).0);
        }
    }
    Ok((best, (!cold).then_some(bw)))
}

/// Checked scans of a segment opened without column checksums (what a search does on a large
/// segment), page cache hot, seconds per batch of queries.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CheckedScan {
    /// Kernel alone, first batch after opening (the mapping's pages are faulted in).
    pub unchecked_first_s: f64,
    /// Kernel alone, best later batch.
    pub unchecked_later_s: f64,
    /// First batch after opening: every ids and code block checksummed, then the kernel.
    pub checked_first_s: f64,
    /// The checksums of that first batch alone.
    pub check_s: f64,
    /// Best later batch: the blocks are remembered as checked, then the kernel.
    pub checked_later_s: f64,
}

/// Measures [`CheckedScan`] on the segment at `path`: each "first" figure on a freshly opened
/// reader (nothing checked yet), after one unchecked pass has made the page cache hot.
fn time_checked(path: &Path, b: &ScanBench) -> Result<CheckedScan, Error> {
    let opts = OpenOptions {
        load: LoadMode::Mmap,
        checksums: ChecksumPolicy::SkipColumns,
    };
    let open = || SegmentReader::open(path, opts);
    let warm = open()?;
    let inputs = inputs(b, warm.meta().code_bytes as usize);
    let owned = match (b.kind, warm.fastscan_codes()) {
        (BenchKind::Pq4(m), None) => Some(pack_fastscan(warm.codes(), m as usize)?),
        _ => None,
    };
    let secs = |f: &mut dyn FnMut() -> Result<(), Error>| -> Result<f64, Error> {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64())
    };
    scan_once(&warm, b, &inputs, owned.as_deref(), false)?;
    drop(warm);
    let best = |x: &mut f64, s: f64| *x = x.min(s);
    let (mut unchecked_first_s, mut unchecked_later_s) = (f64::INFINITY, f64::INFINITY);
    let (mut check_s, mut checked_first_s, mut checked_later_s) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    // Best of `repeats` for every figure; each "first" on a freshly opened reader.
    for _ in 0..b.repeats.max(1) {
        let seg = open()?;
        let t = secs(&mut || scan_once(&seg, b, &inputs, owned.as_deref(), false))?;
        best(&mut unchecked_first_s, t);
        let t = secs(&mut || scan_once(&seg, b, &inputs, owned.as_deref(), false))?;
        best(&mut unchecked_later_s, t);
        drop(seg);
        let seg = open()?;
        let t = secs(&mut || {
            for col in [RowColumn::Ids, RowColumn::Codes] {
                seg.check_rows_par(col, 0..seg.rows(), b.threads)?;
            }
            Ok(())
        })?;
        best(&mut check_s, t);
        drop(seg);
        let seg = open()?;
        let t = secs(&mut || scan_once(&seg, b, &inputs, owned.as_deref(), true))?;
        best(&mut checked_first_s, t);
        let t = secs(&mut || scan_once(&seg, b, &inputs, owned.as_deref(), true))?;
        best(&mut checked_later_s, t);
    }
    Ok(CheckedScan {
        unchecked_first_s,
        unchecked_later_s,
        checked_first_s,
        check_s,
        checked_later_s,
    })
}
