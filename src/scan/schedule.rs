//! How a scan is cut into work: threads taking contiguous chunks of rows in turn, and, for several queries,
//! cache-sized blocks of rows scanned for every query before moving on.
//!
//! With nq > 1 a plain loop (all rows for query 1, then all rows for query 2, …) streams the
//! codes from memory nq times. Instead each thread walks its chunks in blocks of
//! [`block_rows`] rows (about 16 KiB of codes, resident in L1) and runs every query over the
//! block, so memory traffic is that of one scan and the work becomes compute-bound. Each thread
//! keeps one collector per query; the per-thread collectors are merged at the end, which is
//! exact because the collectors' order is total (see `scan::topk`).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::dispatch::Dispatch;

/// How a scan runs: which kernels, and how many threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    /// Kernel choice (default: best the CPU has).
    pub dispatch: Dispatch,
    /// Number of concurrent tasks the rows are split into: 1 = run on the calling thread, no
    /// rayon; n > 1 = n workers on the current rayon pool (so at most the pool's size run at
    /// once; install a pool of the wanted size to control it), each taking the next contiguous
    /// chunk of rows (up to 16 per worker, at least 16 384 rows each) until none is left; 0 =
    /// the current pool's thread count. Small columns stay on one thread. The results never
    /// depend on this number.
    pub threads: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            dispatch: Dispatch::Auto,
            threads: 1,
        }
    }
}

/// Below this many rows a scan stays on one thread: the split would cost more than it saves.
const MIN_ROWS_PER_TASK: usize = 1 << 14;

/// Target bytes of codes per block when several queries share a pass: small enough to stay in
/// L1 while every query runs over it (16 KiB measured 2× faster than 64 KiB for 64-bit Hamming
/// at nq = 16 on AMD Zen 3).
const BLOCK_BYTES: usize = 16 << 10;

/// Rows per block for `row_bytes`-byte rows and `nq` queries: the whole range for one query
/// (no reuse to gain), else about [`BLOCK_BYTES`] of codes, a multiple of 64 rows.
pub(crate) fn block_rows(row_bytes: usize, nq: usize) -> usize {
    if nq <= 1 {
        usize::MAX
    } else {
        ((BLOCK_BYTES / row_bytes.max(1)) / 64 * 64).max(64)
    }
}

/// Target bytes of codes per block for kernels that score a group of queries per pass (LUT-8
/// query lanes): each group's interleaved tables (8 KiB per code byte, 128 KiB at M = 16) are
/// re-read from L2/L3 once per block, so blocks are larger than [`BLOCK_BYTES`] and live in L2
/// next to one group's tables. At M = 16, nq = 256 on AMD Zen 3, 256 KiB blocks ran 1.3× faster
/// than 16 KiB ones; 128 KiB leaves room for the tables in a 512 KiB L2.
const GROUP_BLOCK_BYTES: usize = 128 << 10;

/// Rows per block for the grouped-query kernels (see [`GROUP_BLOCK_BYTES`]), a multiple of 64.
pub(crate) fn group_block_rows(row_bytes: usize) -> usize {
    ((GROUP_BLOCK_BYTES / row_bytes.max(1)) / 64 * 64).max(64)
}

/// Splits `0..n` into at most `tasks` contiguous ranges cut at multiples of 64 rows (so no two
/// tasks share a word of the deletion bitmap or a cache line of ids).
pub(crate) fn split_rows(n: usize, tasks: usize) -> Vec<Range<usize>> {
    let tasks = tasks.max(1);
    let per = n.div_ceil(tasks).div_ceil(64) * 64;
    let per = per.max(64);
    (0..n).step_by(per).map(|s| s..(s + per).min(n)).collect()
}

/// Runs `scan(block, query, &mut sink)` over every block of rows `0..n_rows` for every query,
/// on `threads` tasks, and returns the sinks: `[task][query]`.
pub(crate) fn run<S, Mk, Sc>(
    n_rows: usize,
    nq: usize,
    threads: usize,
    block: usize,
    make: Mk,
    scan: Sc,
) -> Vec<Vec<S>>
where
    S: Send,
    Mk: Fn(usize) -> S + Sync,
    Sc: Fn(Range<usize>, usize, &mut S) + Sync,
{
    run_blocks(
        n_rows,
        nq,
        threads,
        block,
        make,
        |range, sinks: &mut [S]| {
            for (q, sink) in sinks.iter_mut().enumerate() {
                scan(range.clone(), q, sink);
            }
        },
    )
}

/// As [`run`], but `scan(block, &mut sinks)` gets the whole block and every query's sink at
/// once, for kernels that score several queries per pass over a row (`scan::lut`'s query-lane
/// kernel).
pub(crate) fn run_blocks<S, Mk, Sc>(
    n_rows: usize,
    nq: usize,
    threads: usize,
    block: usize,
    make: Mk,
    scan: Sc,
) -> Vec<Vec<S>>
where
    S: Send,
    Mk: Fn(usize) -> S + Sync,
    Sc: Fn(Range<usize>, &mut [S]) + Sync,
{
    let threads = if threads == 0 {
        rayon::current_num_threads()
    } else {
        threads
    };
    let tasks = threads.min(n_rows / MIN_ROWS_PER_TASK).max(1);
    let task = |range: Range<usize>| -> Vec<S> {
        let mut sinks: Vec<S> = (0..nq).map(&make).collect();
        let mut start = range.start;
        while start < range.end {
            let end = start.saturating_add(block).min(range.end);
            scan(start..end, &mut sinks);
            start = end;
        }
        sinks
    };
    if tasks == 1 {
        return vec![task(0..n_rows)];
    }
    // Dynamic schedule: `tasks` workers take the next of several chunks per worker until none
    // is left, each keeping its collectors (and their threshold) from chunk to chunk. A fixed
    // split into `tasks` halves waits for the slowest half, and on a shared machine a worker
    // whose core is taken by another process for a while makes its half the slowest.
    let pieces = (tasks * CHUNKS_PER_TASK)
        .min(n_rows / MIN_ROWS_PER_TASK)
        .max(tasks);
    let chunks = split_rows(n_rows, pieces);
    let next = AtomicUsize::new(0);
    (0..tasks)
        .into_par_iter()
        .with_max_len(1)
        .map(|_| {
            let mut sinks: Vec<S> = (0..nq).map(&make).collect();
            while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                let mut start = chunk.start;
                while start < chunk.end {
                    let end = start.saturating_add(block).min(chunk.end);
                    scan(start..end, &mut sinks);
                    start = end;
                }
            }
            sinks
        })
        .collect()
}

/// Chunks per worker of the dynamic schedule in [`run_blocks`] (each at least
/// [`MIN_ROWS_PER_TASK`] rows): enough for the other worker to take over the share of one
/// that falls behind, few enough that a chunk is megabytes of codes, streamed contiguously.
const CHUNKS_PER_TASK: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_everything_once() {
        for n in [0usize, 1, 63, 64, 65, 1000, 100_000] {
            for t in 1..5 {
                let r = split_rows(n, t);
                assert!(r.len() <= t.max(1));
                let mut next = 0;
                for x in &r {
                    assert_eq!(x.start, next);
                    assert!(x.start.is_multiple_of(64));
                    next = x.end;
                }
                assert_eq!(next, n);
            }
        }
    }

    #[test]
    fn run_blocks_hands_every_sink_each_block_once() {
        let n = 100_003;
        for threads in [1, 2, 3] {
            let out = run_blocks(
                n,
                5,
                threads,
                group_block_rows(8),
                |q| (q, 0usize),
                |r, sinks: &mut [(usize, usize)]| {
                    assert_eq!(sinks.len(), 5);
                    for (q, s) in sinks.iter().enumerate() {
                        assert_eq!(s.0, q);
                    }
                    for s in sinks.iter_mut() {
                        s.1 += r.len();
                    }
                },
            );
            for q in 0..5 {
                let rows: usize = out.iter().map(|t| t[q].1).sum();
                assert_eq!(rows, n, "threads={threads} q={q}");
            }
        }
    }

    #[test]
    fn run_visits_each_row_once_per_query() {
        let n = 100_003;
        for threads in [1, 2, 3] {
            let out = run(
                n,
                3,
                threads,
                block_rows(8, 3),
                |_| Vec::<Range<usize>>::new(),
                |r, _q, s: &mut Vec<Range<usize>>| s.push(r),
            );
            for q in 0..3 {
                let mut all: Vec<Range<usize>> =
                    out.iter().flat_map(|t| t[q].iter().cloned()).collect();
                all.sort_by_key(|r| r.start);
                let mut next = 0;
                for r in all {
                    assert_eq!(r.start, next);
                    assert!(r.len() <= block_rows(8, 3));
                    next = r.end;
                }
                assert_eq!(next, n);
            }
        }
    }

    /// A worker held up (here: asleep in its first chunk, as when another process takes its
    /// core) does not hold up the scan: the other worker takes the rows it has not reached.
    /// A fixed split into halves left the held-up worker its whole half.
    #[test]
    fn a_held_up_worker_leaves_its_rows_to_the_other() {
        let n = 64 * MIN_ROWS_PER_TASK;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let out = pool.install(|| {
            run(
                n,
                1,
                2,
                block_rows(8, 1),
                |_| Vec::<Range<usize>>::new(),
                |r, _q, s: &mut Vec<Range<usize>>| {
                    if r.start == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(300));
                    }
                    s.push(r);
                },
            )
        });
        let rows_of = |t: &Vec<Vec<Range<usize>>>| -> usize { t[0].iter().map(|r| r.len()).sum() };
        let held = out
            .iter()
            .find(|t| t[0].iter().any(|r| r.start == 0))
            .unwrap();
        assert!(
            rows_of(held) <= n / 4,
            "held-up worker scanned {} of {n} rows",
            rows_of(held)
        );
        assert_eq!(out.iter().map(rows_of).sum::<usize>(), n);
    }
}
