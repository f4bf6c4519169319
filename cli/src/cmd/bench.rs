//! `codedb bench scan` and `codedb bench encode`: numbers, not pass/fail.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use codedb::model::PipelineSpec;
use codedb_cli::bench::encode_case::{EncodeBench, run_encode_bench};
use codedb_cli::bench::ivf_case::{IvfBench, run_ivf_bench};
use codedb_cli::bench::mih_case::{MihBench, run_mih_bench};
use codedb_cli::bench::scan_case::{BenchKind, ScanBench, run_scan_bench};

use crate::args::{self, usage};
use crate::out::outln;
use crate::progress;

// The benchmarks (`codedb bench --help` takes its text from the `Bench` command).
#[derive(Subcommand)]
pub enum BenchCommand {
    Scan(ScanArgs),
    Encode(EncodeArgs),
    Mih(MihArgs),
    Plot(PlotArgs),
    Ivf(IvfArgs),
}

#[derive(Args)]
/// Scan throughput on generated codes stored as a real segment in DIR (written once,
/// reused), next to the machine's read bandwidth measured on the same mapping.
#[command(after_help = "Examples:
  codedb bench scan --codes 100000000 --kind hamming64 --threads 2 --dir /tmp/cb
  codedb bench scan --codes 10000000 --kind hamming64,pq8x16,pq4x32 \\
      --queries 1,16 --threads 1,2 --dir /tmp/cb --json
  codedb bench scan --codes 100000,1000000,10000000 --kind hamming64,pq4x32 \\
      --threads 1,2 --dir /tmp/cb --plot scan.svg

Kinds: hammingB (B bits), pq8xM (LUT-8 ADC), pq4xM (4-bit fast-scan). Lists are comma-separated; \
every combination runs. --json prints one object per case. --plot draws codes/s against N (at \
the most threads) and against threads (at the largest N), with the read bandwidth as a bound.")]
pub struct ScanArgs {
    /// Rows of the generated segment, comma-separated for several sizes (one segment each).
    #[arg(long, value_delimiter = ',', default_value = "10000000", allow_negative_numbers = true, value_parser = args::count_u64)]
    pub codes: Vec<u64>,
    /// Code kinds, comma-separated: hammingB, pq8xM, pq4xM.
    #[arg(long, value_delimiter = ',', default_value = "hamming64")]
    pub kind: Vec<String>,
    /// Queries per scan, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count)]
    pub queries: Vec<usize>,
    /// Results per query.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = args::count)]
    pub k: usize,
    /// Thread counts, comma-separated (0 = all cores; more than the cores is capped).
    #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count0)]
    pub threads: Vec<usize>,
    /// Where the generated segments are kept between runs.
    #[arg(long)]
    pub dir: PathBuf,
    /// hot, cold or both.
    #[arg(long, default_value = "hot", value_parser = ["hot", "cold", "both"])]
    pub cache: String,
    /// Timed repetitions per case (the median is reported).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = args::count)]
    pub repeats: usize,
    /// Seed of the generated codes and queries.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Print one object per case as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also draw a figure of the cases: PATH is a *.svg or *.png file, or a directory to hold
    /// scan.svg; a bare --plot writes scan.svg in the current directory. Works with --json.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = ".")]
    pub plot: Option<PathBuf>,
}

#[derive(Args)]
/// Draw the scan-throughput figure from saved results: `codedb bench scan --json` output, or
/// `tools/bench_vs_faiss.py --json` output (codedb and FAISS side by side).
#[command(after_help = "Examples:
  codedb bench plot --from scan.json --plot scan.svg
  codedb bench plot --from a.json --from b.json --plot s.png --title 'k = 10'

The files are `codedb bench scan ... --json > scan.json` output, or \
`tools/bench_vs_faiss.py ... --out faiss.json` output (codedb and FAISS side by side; its \
--plot F runs this command). Several --from files are joined (each case may appear once). \
Exit codes: 0 success, 1 failure (unreadable or malformed file, missing directory), 2 usage \
error.")]
pub struct PlotArgs {
    /// A JSON results file (repeat for several).
    #[arg(long, required = true, value_name = "FILE")]
    pub from: Vec<PathBuf>,
    /// The figure to write: a *.svg or *.png file, or a directory to hold scan.svg (default:
    /// scan.svg in the current directory).
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub plot: PathBuf,
    /// The figure's title (default: "Scan throughput", FAISS if present, and the files).
    #[arg(long)]
    pub title: Option<String>,
}

#[derive(Args)]
/// Encoding throughput: train a pipeline on generated descriptors, then time encoding
/// (rows/s) on the given thread counts.
#[command(after_help = "Examples:
  codedb bench encode --pipeline pca-itq:64 --dim 784 --threads 1,2
  codedb bench encode --pipeline pq:16x8 --dim 128 --threads 1,2 --json

Descriptors are seeded Gaussians with a decaying spectrum. --json prints one object per case \
(pipeline, dim, rows, train_rows, threads, code_bytes, train_s, encode_s, rows_per_s).")]
pub struct EncodeArgs {
    /// Pipeline SPECs, `;`-separated.
    #[arg(long, value_delimiter = ';', default_value = "pca-itq:64")]
    pub pipeline: Vec<String>,
    /// Dimension of the generated descriptors.
    #[arg(long, default_value_t = 784, allow_negative_numbers = true, value_parser = args::count)]
    pub dim: usize,
    /// Rows encoded per case.
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true, value_parser = args::count)]
    pub rows: usize,
    /// Rows the pipeline is trained on.
    #[arg(long, default_value_t = 20_000, allow_negative_numbers = true, value_parser = args::count)]
    pub train_rows: usize,
    /// Thread counts, comma-separated (0 = all cores; more than the cores is capped).
    #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count0)]
    pub threads: Vec<usize>,
    /// Seed of the generated descriptors and of training.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Print one object per case as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Scan(a) => scan(a),
        BenchCommand::Encode(a) => encode(a),
        BenchCommand::Mih(a) => mih(a),
        BenchCommand::Plot(a) => plot(a),
        BenchCommand::Ivf(a) => ivf(a),
    }
}

fn scan(a: ScanArgs) -> Result<ExitCode> {
    let ScanArgs {
        codes,
        kind: kinds,
        queries,
        k,
        threads,
        dir,
        cache,
        repeats,
        seed,
        json,
        plot,
    } = a;
    let plot = plot
        .as_deref()
        .map(|p| args::plot_target(p, "scan.svg"))
        .transpose()?;
    let (kinds, queries, threads, dir, cache) =
        (&kinds, &queries, &threads, dir.as_path(), cache.as_str());
    let threads = crate::args::thread_list(threads);
    let caches: Vec<&'static str> = match cache {
        "both" => vec!["hot", "cold"],
        "cold" => vec!["cold"],
        _ => vec!["hot"],
    };
    let mut all = Vec::new();
    for kname in kinds {
        let Some(kind) = BenchKind::parse(kname) else {
            usage!("--kind {kname}: expected hammingB, pq8xM or pq4xM");
        };
        for (&codes, &t) in codes
            .iter()
            .flat_map(|n| threads.iter().map(move |t| (n, t)))
        {
            for &nq in queries {
                let bar = progress::bar(codes, "generating codes", "rows");
                let b = ScanBench {
                    kind,
                    codes,
                    queries: nq,
                    k,
                    threads: t,
                    repeats,
                    seed,
                };
                let res = run_scan_bench(dir, &b, &caches, &mut |n| {
                    bar.set_position(n);
                    if n >= codes {
                        // Past the last row: checksums, flush and fsync, then the timed runs.
                        progress::phase(&bar, "writing the segment to disk, then measuring");
                    }
                })?;
                bar.finish_and_clear();
                for r in res {
                    if !json {
                        outln!(
                            "{:<10} codes {:>11} nq {:>4} threads {} {:<4} {:>10.6} s/query {:>10.3e} codes/s {:>7.2} GB/s = {:>5.1}% of {:.2} GB/s read bandwidth [{}]{}",
                            r.kind,
                            r.codes,
                            r.queries,
                            r.threads,
                            r.cache,
                            r.seconds_per_query,
                            r.codes_per_s,
                            r.gb_per_s,
                            100.0 * r.bandwidth_fraction,
                            r.bandwidth_gb_per_s,
                            r.isa,
                            r.note
                                .as_deref()
                                .map(|n| format!(" ({n})"))
                                .unwrap_or_default()
                        );
                        if let Some(c) = r.checked {
                            outln!(
                                "{:<10} checked scans (s/batch): first {:.6} (checksums {:.6}), later {:.6}; unchecked: first {:.6}, later {:.6}",
                                r.kind,
                                c.checked_first_s,
                                c.check_s,
                                c.checked_later_s,
                                c.unchecked_first_s,
                                c.unchecked_later_s
                            );
                        }
                    }
                    all.push(r);
                }
            }
        }
    }
    if let Some(target) = &plot {
        let isa = all.first().map_or("?", |r| r.isa);
        let title = format!("codedb bench scan, k = {k}, ISA {isa}");
        let points = codedb_cli::plot::scan_points_from_results(&all);
        target.write(&codedb_cli::plot::scan_plot(
            &points,
            &title,
            target.format(),
        )?)?;
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
/// Exact Hamming k-NN through multi-index hashing tables vs the linear scan (1 thread), on a
/// generated segment of binary codes written with its tables in DIR (deleted afterwards).
#[command(after_help = "Examples:
  codedb bench mih --rows 100000000 --bits 64 --dir /tmp/cb
  codedb bench mih --rows 100000000 --bits 64 --centres 1000000 --flip-log2 4 \\
      --dir /tmp/cb

Uniform random codes, or with --centres C clustered ones: a random centre with each bit flipped \
with probability 2^-F (--flip-log2 F), which resemble real ITQ codes. Queries come from the same \
distribution. Every query's MIH answer must equal the linear scan's (ids, distances, ties), or \
the run fails. Each method runs over all queries in a block after one untimed pass of MIH, so \
neither pushes the other's working set out of the page cache. Prints the tables' write time, \
bytes and the peak resident memory once they are written (before any search), and the \
per-query times.")]
pub struct MihArgs {
    /// Rows of the generated segment.
    #[arg(long, default_value_t = 10_000_000, allow_negative_numbers = true, value_parser = args::count_u64)]
    pub rows: u64,
    /// Bits per code (a multiple of 8 from 32 to 256).
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = args::count)]
    pub bits: usize,
    /// Clustered codes around this many random centres (0 = uniform random codes).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = args::count0)]
    pub centres: usize,
    /// Clustered codes: each bit flipped with probability 2^-F.
    #[arg(long, value_name = "F", default_value_t = 4, allow_negative_numbers = true, value_parser = args::count)]
    pub flip_log2: usize,
    /// Queries timed.
    #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = args::count)]
    pub queries: usize,
    /// Results per query.
    #[arg(short, long, default_value_t = 10, allow_negative_numbers = true, value_parser = args::count)]
    pub k: usize,
    /// Where the generated segment is written.
    #[arg(long)]
    pub dir: PathBuf,
    /// Keep the generated segment instead of deleting it.
    #[arg(long)]
    pub keep: bool,
    /// Seed of the codes and queries.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

fn mih(a: MihArgs) -> Result<ExitCode> {
    if !a.bits.is_multiple_of(8) || !(32..=256).contains(&a.bits) {
        usage!("--bits {}: expected a multiple of 8 from 32 to 256", a.bits);
    }
    let b = MihBench {
        rows: a.rows,
        bits: a.bits as u32,
        centres: a.centres,
        flip_log2: a.flip_log2 as u32,
        queries: a.queries,
        k: a.k,
        seed: a.seed,
    };
    let r = run_mih_bench(&a.dir, &b, a.keep, &mut |s| eprintln!("bench mih: {s}"))?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        outln!(
            "mih {} rows x {} bits, {} codes, k {}: {} tables of {:?} bits, {:.1} MB ({:.2} B/row; codes {:.1} MB)",
            r.rows,
            r.bits,
            r.codes,
            r.k,
            r.tables,
            r.substring_bits,
            r.table_bytes as f64 / 1e6,
            r.table_bytes as f64 / r.rows as f64,
            r.code_bytes as f64 / 1e6
        );
        outln!(
            "write: ids+codes {:.2} s, tables {:.2} s (peak resident {}), fsync {:.2} s; per query ({} queries, mean k-th distance {:.2}): linear {:.6} s (median {:.6}), mih {:.6} s (median {:.6}, max {:.6}), speedup {:.1}x",
            r.write_s,
            r.tables_s,
            r.tables_peak_rss_bytes
                .map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
            r.sync_s,
            r.queries,
            r.mean_kth_distance,
            r.linear_mean_s,
            r.linear_median_s,
            r.mih_mean_s,
            r.mih_median_s,
            r.mih_max_s,
            r.speedup
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `codedb bench plot`: the scan figure from saved JSON results.
fn plot(a: PlotArgs) -> Result<ExitCode> {
    let target = args::plot_target(&a.plot, "scan.svg")?;
    let mut points = Vec::new();
    for f in &a.from {
        let text = std::fs::read_to_string(f).with_context(|| format!("--from {}", f.display()))?;
        points.extend(codedb_cli::plot::scan_points_from_json(f, &text)?);
    }
    let title = a.title.unwrap_or_else(|| {
        let files: Vec<String> = a.from.iter().map(|f| f.display().to_string()).collect();
        let faiss = points.iter().any(|p| p.faiss_codes_per_s.is_some());
        format!(
            "Scan throughput{} ({})",
            if faiss { ": codedb and FAISS" } else { "" },
            files.join(", ")
        )
    });
    target.write(&codedb_cli::plot::scan_plot(
        &points,
        &title,
        target.format(),
    )?)?;
    Ok(ExitCode::SUCCESS)
}

fn encode(a: EncodeArgs) -> Result<ExitCode> {
    let EncodeArgs {
        pipeline: pipelines,
        dim,
        rows,
        train_rows,
        threads,
        seed,
        json,
    } = a;
    let (pipelines, threads) = (&pipelines, &threads);
    for p in pipelines {
        if let Err(e) = PipelineSpec::parse(p.trim()) {
            usage!("--pipeline {}: {e}", p.trim());
        }
    }
    let threads = crate::args::thread_list(threads);
    let mut all = Vec::new();
    for p in pipelines {
        for &t in &threads {
            let spinner = progress::spinner(&format!(
                "training and encoding {} on {t} thread(s)",
                p.trim()
            ));
            let r = run_encode_bench(&EncodeBench {
                pipeline: p.trim().to_string(),
                dim,
                rows,
                train_rows,
                threads: t,
                seed,
            });
            spinner.finish_and_clear();
            let r = r.with_context(|| format!("bench encode --pipeline {p}"))?;
            if !json {
                outln!(
                    "{:<16} dim {:>5} rows {:>11} threads {} code {:>4} B  train {:>8.3} s  encode {:>8.3} s  {:>10.3e} rows/s",
                    r.pipeline,
                    r.dim,
                    r.rows,
                    r.threads,
                    r.code_bytes,
                    r.train_s,
                    r.encode_s,
                    r.rows_per_s
                );
            }
            all.push(r);
        }
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
/// IVFADC against the flat scan on a generated clustered set (streamed: never all in memory):
/// train `ivf:K,pq:Mx8` on a sample, add the rows in batches, seal, then search every --nprobe
/// and the flat scan (nprobe = K) with all queries in one call. The index is written in DIR and
/// deleted afterwards.
#[command(after_help = "Examples:
  codedb bench ivf --rows 1000000 --clusters 100000 --lists 1024 --dir /tmp/cb
  codedb bench ivf --rows 100000000 --dim 96 --clusters 100000 --lists 1024 \\
      --nprobe 1,2,4,8,16,32 --queries 100 --rerank 1000 --repeat 3 --seed 1 \\
      --dir /tmp/cb --json

Rows: a random centre (N(0,1) coordinates) plus noise of scale sigma/sqrt(1+j) in dimension j; \
queries are further rows of the same stream. recall@10 is the fraction of queries whose exact \
nearest neighbour (found by an exact scan while the rows stream by) is among the first 10 \
results (Jégou et al., TPAMI 2011); recall_10_at_10 is the mean overlap of the first 10 with the \
exact 10 nearest, recall_10_vs_flat with the flat scan's first 10. With --repeat N the cases are \
searched in N interleaved rounds (flat, each nprobe, flat, ...) and each reports its median time, so \
speed-ups compare searches under the same load; the 1-minute load average before and after the \
searches is reported. Run it under /usr/bin/time -v for the peak memory as the OS sees it (also reported as VmHWM).")]
pub struct IvfArgs {
    /// Rows indexed.
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true, value_parser = args::count_u64)]
    pub rows: u64,
    /// Dimension of the rows.
    #[arg(long, default_value_t = 96, allow_negative_numbers = true, value_parser = args::count)]
    pub dim: usize,
    /// Gaussian clusters the rows are drawn from.
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = args::count)]
    pub clusters: usize,
    /// Noise scale of the first dimension (dimension j: sigma / sqrt(1 + j)).
    #[arg(long, default_value_t = 1.0)]
    pub sigma: f32,
    /// Coarse lists K of the pipeline ivf:K,pq:Mx8.
    #[arg(long, default_value_t = 1024, allow_negative_numbers = true, value_parser = args::count)]
    pub lists: usize,
    /// PQ sub-quantisers M (8 bits each; must divide --dim).
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = args::count)]
    pub m: usize,
    /// Lists probed, comma-separated (each at most --lists).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32", allow_negative_numbers = true, value_parser = args::count)]
    pub nprobe: Vec<usize>,
    /// Queries searched (in one call per case).
    #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = args::count)]
    pub queries: usize,
    /// Results per query (recall@10 needs at least 10).
    #[arg(short, long, default_value_t = 10, allow_negative_numbers = true, value_parser = args::count)]
    pub k: usize,
    /// Rows sampled to train the pipeline.
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = args::count)]
    pub train_rows: usize,
    /// Rows per add call (and commit).
    #[arg(long, default_value_t = 1 << 18, allow_negative_numbers = true, value_parser = args::count)]
    pub batch: usize,
    /// Search threads.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = args::count)]
    pub threads: usize,
    /// Store every row's vector (f16) and re-rank the best R by exact L2 in every case, the
    /// flat scan included (R at least -k); default: no vectors, no re-ranking.
    #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = args::count)]
    pub rerank: Option<usize>,
    /// Timed rounds: the flat scan and every --nprobe searched in turn, N times; each reports
    /// its median.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = args::count)]
    pub repeat: usize,
    /// Where the index is written.
    #[arg(long)]
    pub dir: PathBuf,
    /// Keep the index instead of deleting it.
    #[arg(long)]
    pub keep: bool,
    /// Seed of the rows, the queries, the sample and training.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

fn ivf(a: IvfArgs) -> Result<ExitCode> {
    if let Some(&n) = a.nprobe.iter().find(|&&n| n > a.lists) {
        usage!("--nprobe {n}: at most --lists ({})", a.lists);
    }
    if !a.dim.is_multiple_of(a.m) {
        usage!("--m {}: must divide --dim {}", a.m, a.dim);
    }
    if a.k < 10 {
        usage!("-k {}: recall@10 needs at least 10 results", a.k);
    }
    if !(a.sigma.is_finite() && a.sigma >= 0.0) {
        usage!("--sigma {}: must be finite and at least 0", a.sigma);
    }
    if let Some(r) = a.rerank
        && r < a.k
    {
        usage!("--rerank {r}: must be at least -k ({})", a.k);
    }
    let b = IvfBench {
        rows: a.rows,
        dim: a.dim,
        clusters: a.clusters,
        sigma: a.sigma,
        lists: a.lists,
        m: a.m,
        nprobe: a.nprobe.clone(),
        queries: a.queries,
        k: a.k,
        train_rows: a.train_rows,
        batch: a.batch,
        threads: a.threads,
        rerank: a.rerank,
        repeat: a.repeat,
        seed: a.seed,
    };
    let bar = progress::spinner("training");
    let mut counting = false;
    let r = run_ivf_bench(&a.dir, &b, a.keep, &mut |done, what| {
        // Training and searching have no row units: spinners. Adding counts rows, with a
        // clock started when the adding starts.
        if what == "encoding and adding" {
            if !counting {
                progress::count(&bar, what, "rows", done, a.rows);
                counting = true;
            }
            bar.set_position(done);
        } else {
            counting = false;
            progress::phase(&bar, what);
        }
    });
    bar.finish_and_clear();
    let r = r.context("bench ivf")?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "ivf {} rows x {} dims, {} clusters, {}: train {:.1} s ({} rows), add {:.1} s (generate + exact scan {:.1} s, encode + add {:.1} s), seal {:.1} s, index {:.1} MB, peak RSS {}",
        r.rows,
        r.dim,
        r.clusters,
        r.pipeline,
        r.train_s,
        r.train_rows,
        r.add_s,
        r.generate_and_truth_s,
        r.encode_add_s,
        r.seal_s,
        r.index_bytes as f64 / 1e6,
        r.peak_rss_bytes
            .map_or_else(|| "?".to_string(), |b| format!("{:.0} MB", b as f64 / 1e6))
    );
    let load = |l: Option<f64>| l.map_or_else(|| "?".to_string(), |l| format!("{l:.2}"));
    outln!(
        "searches: {} round(s), medians; rerank {}; load average {} before, {} after",
        r.repeat,
        r.rerank
            .map_or_else(|| "none".to_string(), |r| r.to_string()),
        load(r.load_before_search),
        load(r.load_after_search)
    );
    outln!(
        "| nprobe | queries/s | recall@10 | 10-recall@10 | 10-recall@10 vs flat | speed-up vs flat |"
    );
    outln!("|---:|---:|---:|---:|---:|---:|");
    for c in &r.cases {
        outln!(
            "| {}{} | {:.1} | {:.3} | {:.3} | {:.3} | {:.1}x |",
            c.nprobe,
            if c.flat { " (flat)" } else { "" },
            c.queries_per_s,
            c.recall_at_10,
            c.recall_10_at_10,
            c.recall_10_vs_flat,
            c.speedup_vs_flat
        );
    }
    Ok(ExitCode::SUCCESS)
}
