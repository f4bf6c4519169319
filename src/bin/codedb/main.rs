//! The `codedb` admin CLI: a thin layer over the library.
//!
//! Exit codes: 0 success; 1 the file or index has a problem, or the operation failed;
//! 2 usage error (bad arguments).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use codedb::storage::inspect::{Contents, FileReport, IndexReport, inspect_dir, inspect_file};
use codedb::storage::verify::{VerifyReport, bytes_to_verify, verify_path};

mod class_cmd;
mod commands;
mod eval_cmd;
mod recovery_cmd;
mod search_cmd;

const EXIT_CODES: &str = "\
Exit codes:
  0  success (verify: no problem found)
  1  the file or index has a problem, or the operation failed
  2  usage error (unknown command, bad or missing argument)";

#[derive(Parser)]
#[command(
    name = "codedb",
    version,
    about = "Embedded index database for compact image codes: train models, build, search, compact, inspect and verify indexes.",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what a codedb file or index directory holds: kind, version, sections, rows, model
    /// stages, classes, manifest versions.
    #[command(after_help = "Examples:
  codedb inspect format/golden/v1.0/seg-00000000000000000000000000002001.seg
  codedb inspect format/golden/v1.0            # an index directory
  codedb inspect my-index --json | jq .rows

Exit codes: 0 success, 1 unreadable file or not an index, 2 usage error.")]
    Inspect {
        /// A codedb file (segment, model, class table, deletion bitmap, manifest) or an index
        /// directory.
        path: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the whole retrieval path on built-in real data: train, build, search, compare with
    /// exact search, append, delete, compact, inspect.
    #[command(after_help = "Examples:
  codedb demo                                   # the 1,797 digits shipped with codedb
  codedb demo --data /usr/share/datasets/fashion-mnist --dir /tmp/fm-demo
  codedb demo --data X.npy --labels L.npy --json")]
    Demo {
        /// Where the demo's indexes go (default: a new folder under the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory) instead of the
        /// built-in digits.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Class labels for --data (.npy int32/int64); not needed for a Fashion-MNIST directory.
        #[arg(long)]
        labels: Option<PathBuf>,
        #[arg(long, default_value_t = 1234)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Train a model (a pipeline of stages) on descriptors and write it to a model file.
    #[command(after_help = "Examples:
  codedb train --data X.npy --pipeline pca-itq:64 --out itq64.model
  codedb train --data X.npy --pipeline 'pca:128,pq:16x8' --out pq.model --seed 7

Pipelines: explicit stage lists (pca:64,itq,bits; pca:128,pq:16x8) or presets lsh:B,
pca-direct:B, pca-rr:B, pca-itq:B, sklsh:B, kpca-itq:B, pq:MxBITS, pq4:M, opq:MxBITS, float,
float16.")]
    Train {
        #[arg(
            long,
            required_unless_present = "from_index",
            conflicts_with = "from_index"
        )]
        data: Option<PathBuf>,
        /// Class labels of --data (.npy), for supervised steps (`ncmml:C`).
        #[arg(long, conflicts_with = "from_index")]
        labels: Option<PathBuf>,
        /// Train on the decoded PQ codes (and labels) of this index instead of --data
        /// (Mensink et al. §5.1); the model keeps the index's transforms in front.
        #[arg(long)]
        from_index: Option<PathBuf>,
        #[arg(long)]
        pipeline: String,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1234)]
        seed: u64,
        /// Train on this many rows sampled with the seed (default: all, up to a cap).
        #[arg(long)]
        sample: Option<usize>,
        /// Print per-iteration details (ITQ quantisation loss …).
        #[arg(long)]
        verbose: bool,
        #[arg(long)]
        json: bool,
    },
    /// Create an index from a model file and descriptors (encoded and committed as version 2).
    #[command(after_help = search_cmd::BUILD_HELP)]
    Build {
        dir: PathBuf,
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        data: PathBuf,
        /// Class labels (.npy int32/int64), one per row; also creates the class table.
        #[arg(long)]
        labels: Option<PathBuf>,
        #[arg(long)]
        ids: Option<PathBuf>,
        /// Keep every row's input vector (f16 or f32) for --rerank and the exact modes.
        #[arg(long, value_parser = ["f16", "f32"])]
        store_vectors: Option<String>,
        /// Inverted-list id of each row: its label, or its nearest class mean.
        #[arg(long, value_parser = ["label", "nearest"])]
        lists: Option<String>,
    },
    /// Append descriptors to an index (encoded with its model) and commit.
    #[command(after_help = "Examples:
  codedb add my-index --data new.npy --ids new_ids.npy
  codedb add my-index --data new.npy --labels new_labels.npy --lists label

With --labels on an index with a class table, every label must be a class (add new ones with
codedb add-class first) and the rows' descriptors are added to their classes' means in the same
commit. An index that stores vectors keeps the new rows' vectors too.")]
    Add {
        dir: PathBuf,
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        labels: Option<PathBuf>,
        #[arg(long)]
        ids: Option<PathBuf>,
        /// Inverted-list id of each row: its label, or its nearest class mean.
        #[arg(long, value_parser = ["label", "nearest"])]
        lists: Option<String>,
    },
    /// Delete rows by id and commit.
    #[command(after_help = "Examples:
  codedb delete my-index --ids 4,8,15
  codedb delete my-index --ids-file gone.npy")]
    Delete {
        dir: PathBuf,
        /// Comma-separated ids.
        #[arg(long, value_delimiter = ',', required_unless_present = "ids_file")]
        ids: Vec<u64>,
        /// A .npy file of ids.
        #[arg(long)]
        ids_file: Option<PathBuf>,
    },
    /// Seal the active log into a segment (one commit, if it holds rows), then merge segments,
    /// drop deleted rows and fold class deltas (one commit). `--json` adds `sealed_log_rows`
    /// and `sealed_version` to the compaction report.
    #[command(after_help = "Examples:
  codedb compact my-index                          # seal the log, merge similar-sized segments
  codedb compact my-index --full                   # seal the log, merge every segment into one
  codedb compact my-index --deleted-threshold 0    # also drop every deleted row
  codedb compact my-index --json

The default (tiered) policy merges at least 4 segments of a similar size, and rewrites a segment
on its own when 20% or more of its rows are deleted (--deleted-threshold); deleted rows of other
segments stay stored, and the output says how many. --json reports each merge with its reason
(tier, deletes, full) and deleted_rows_kept.")]
    Compact {
        /// The index directory.
        dir: PathBuf,
        /// Merge every segment into one (default: the tiered policy, which merges only runs of
        /// similar-sized segments).
        #[arg(long)]
        full: bool,
        /// Rewrite a segment on its own when at least this fraction of its rows is deleted
        /// (0 to 1; 0 = any deleted row).
        #[arg(long, value_name = "FRACTION", default_value_t = 0.2, value_parser = fraction)]
        deleted_threshold: f64,
        /// Print the compaction report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove files that no retained version references. Refuses while a manifest does not
    /// read (which files it names is unknown): see `codedb recover`.
    #[command(after_help = "Examples:
  codedb gc my-index
  codedb gc my-index --json")]
    Gc {
        /// The index directory.
        dir: PathBuf,
        /// Print what was removed and kept as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the versions (manifests) of an index; a manifest that does not read is listed as
    /// DAMAGED with its reason, and the command then exits 1.
    #[command(after_help = "Examples:
  codedb versions my-index
  codedb versions my-index --json

Exit codes: 0 every manifest reads, 1 a manifest does not read or DIR is not an index.")]
    Versions {
        /// The index directory.
        dir: PathBuf,
        /// Print the list as JSON (counts are null for a damaged manifest, `error` says why).
        #[arg(long)]
        json: bool,
    },
    /// Accept the loss of versions whose manifests do not read: keep the newest version that
    /// reads (and must be named), set the damaged manifests aside in DIR/recovered/ with a
    /// record of what was dropped, and make the index writable again.
    #[command(after_help = "Examples:
  codedb versions my-index                 # shows which version is damaged and which reads
  codedb recover my-index --to-version 3
  codedb recover my-index --to-version 3 --json

Until this runs, commands that read the index warn that they serve an older version, and every
writer (add, delete, compact, gc, add-class) refuses. Restoring the damaged manifest from a
backup instead needs no recover. Versions are never renumbered: the kept version is published
again under a number above the dropped ones.")]
    Recover {
        /// The index directory.
        dir: PathBuf,
        /// The version to keep: the newest one whose manifest reads.
        #[arg(long, value_name = "N")]
        to_version: u64,
        /// Print the recovery record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search an index: the k best rows per query row, or every row within a Hamming radius.
    #[command(after_help = search_cmd::SEARCH_HELP)]
    Search {
        /// The index directory.
        dir: PathBuf,
        /// Query vectors (.npy, .fvecs, .bvecs, IDX), one per row, in the model's input
        /// dimension.
        #[arg(long)]
        queries: PathBuf,
        /// Results per query (default 10; with --radius: no cap unless given).
        #[arg(short, long)]
        k: Option<usize>,
        /// How queries are compared with rows (default: the natural mode of the index's codes).
        #[arg(long, value_parser = search_cmd::MODES)]
        mode: Option<String>,
        /// Re-rank the R best by the mode's score with the stored vectors (R >= k).
        #[arg(long, value_name = "R")]
        rerank: Option<usize>,
        /// Hash lookup: every row within this Hamming radius (0-2; codes of at most 32 bits).
        #[arg(long, value_name = "r")]
        radius: Option<u32>,
        /// Scan only the inverted lists of these classes (comma-separated names or ids).
        #[arg(long, value_delimiter = ',', conflicts_with = "nprobe")]
        classes: Vec<String>,
        /// IVF: per query, scan the lists of the n nearest class means.
        #[arg(long, value_name = "n")]
        nprobe: Option<usize>,
        /// Threads (0 = all cores).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
        format: String,
    },
    /// Add a class to the class table and commit: from images, from a given mean, or
    /// zero-shot from its parent (Mensink et al. eq. 29), with a few images the MAP mean
    /// (eq. 30).
    #[command(after_help = "Examples:
  codedb add-class my-index --name sneaker --data sneakers.npy
  codedb add-class my-index --name boot --parent footwear                 # zero-shot
  codedb add-class my-index --name boot --parent footwear --data few.npy --prior-weight 5
  codedb add-class my-index --name boot --parent footwear --data few.npy \\
      --validation val.npy --validation-labels val_labels.npy            # m chosen on held-out data
  codedb add-class my-index --name logo --mean logo_mean.npy             # a 1 x D mean, count 1

With a parent and no --prior-weight/--validation, m = 5. The count of a class made from the prior
includes its m pseudo-images. Errors (unknown parent, duplicate name or id, dimension mismatch,
NaN, no data and no parent) leave the index unchanged.")]
    AddClass {
        dir: PathBuf,
        #[arg(long)]
        name: String,
        /// Class id (default: one past every class id and row label in use).
        #[arg(long)]
        id: Option<u32>,
        /// Parent class name.
        #[arg(long)]
        parent: Option<String>,
        /// Images of the class (raw descriptors, the model's input dimension).
        #[arg(long, conflicts_with = "mean")]
        data: Option<PathBuf>,
        /// The class mean (1 x D).
        #[arg(long)]
        mean: Option<PathBuf>,
        /// m of eq. 30: weight of the zero-shot prior in pseudo-images.
        #[arg(long)]
        prior_weight: Option<u64>,
        /// Ancestors averaged for the prior (eq. 29): parent or ancestors.
        #[arg(long, default_value = "parent", value_parser = ["parent", "ancestors"])]
        prior_scope: String,
        /// Held-out images of existing classes to choose m on (with --data and --parent).
        #[arg(long)]
        validation: Option<PathBuf>,
        /// Class ids of the --validation rows.
        #[arg(long)]
        validation_labels: Option<PathBuf>,
        #[arg(long, default_value_t = 1234)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Classify descriptors by nearest class mean in the index model's projected space.
    #[command(after_help = "Examples:
  codedb classify my-index --data X.npy --top 5
  codedb classify my-index --data X.npy --format json

TSV columns: row, rank, id, name, score. JSON: [{\"row\": i, \"classes\": [{\"name\", \"id\", \"score\"}, …]}],
best first, ties by smaller id. Score: the eq. 9 linear score w_c·x + b_c, centred (larger is better).")]
    Classify {
        dir: PathBuf,
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value_t = 5)]
        top: usize,
        #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
        format: String,
    },
    /// Measure retrieval quality of several pipelines on one data set (ITQ §4.2 protocols):
    /// Euclidean-neighbour mAP, class mAP and precision@k, recall@R, Hamming-ball lookup,
    /// train/encode/query times, averaged over random partitions.
    #[command(after_help = "Examples:
  codedb eval --data /usr/share/datasets/fashion-mnist --pipelines 'lsh:64; pca-itq:64; pq:8x8'
  codedb eval --data X.npy --labels L.npy --split split.npy --pipelines 'pca-rr:32; pca-itq:32' --runs 5 --json

--json prints a list with one object per pipeline (pipeline, bits, bytes, map_euclid,
map_class, precision_at_k, recall_at_r, lookup, train_s, encode_s, query_ms, ...).
Exit codes: 0 success, 1 failure, 2 usage error (bad pipeline token, unknown --task).")]
    Eval(eval_cmd::EvalArgs),
    /// Benchmarks (numbers, not pass/fail).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Read every byte, check every checksum and cross-reference; print each problem with its
    /// file and section.
    #[command(after_help = "Examples:
  codedb verify my-index
  codedb verify my-index/seg-0123….seg --json

Exit codes: 0 clean, 1 at least one problem found, 2 usage error.")]
    Verify {
        /// A codedb file or an index directory.
        path: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Scan throughput on generated codes stored as a real segment in DIR (written once,
    /// reused), next to the machine's read bandwidth measured on the same mapping.
    #[command(after_help = "Examples:
  codedb bench scan --codes 100000000 --kind hamming64 --queries 1 --threads 2 --dir /tmp/cb
  codedb bench scan --codes 10000000 --kind hamming64,pq8x16,pq4x32 --queries 1,16 --threads 1,2 --dir /tmp/cb --json

Kinds: hammingB (B bits), pq8xM (LUT-8 ADC), pq4xM (4-bit fast-scan). Lists are comma-separated;
every combination runs. --json prints one object per case.")]
    Scan {
        #[arg(long, default_value_t = 10_000_000)]
        codes: u64,
        #[arg(long, value_delimiter = ',', default_value = "hamming64")]
        kind: Vec<String>,
        #[arg(long, value_delimiter = ',', default_value = "1")]
        queries: Vec<usize>,
        #[arg(long, default_value_t = 10)]
        k: usize,
        #[arg(long, value_delimiter = ',', default_value = "1")]
        threads: Vec<usize>,
        #[arg(long)]
        dir: PathBuf,
        /// hot, cold or both.
        #[arg(long, default_value = "hot", value_parser = ["hot", "cold", "both"])]
        cache: String,
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Encoding throughput: train a pipeline on generated descriptors, then time encoding
    /// (rows/s) on the given thread counts.
    #[command(after_help = "Examples:
  codedb bench encode --pipeline pca-itq:64 --dim 784 --rows 1000000 --threads 1,2
  codedb bench encode --pipeline pq:16x8 --dim 128 --rows 1000000 --threads 1,2 --json

Descriptors are seeded Gaussians with a decaying spectrum. --json prints one object per case
(pipeline, dim, rows, train_rows, threads, code_bytes, train_s, encode_s, rows_per_s).")]
    Encode {
        #[arg(long, value_delimiter = ';', default_value = "pca-itq:64")]
        pipeline: Vec<String>,
        #[arg(long, default_value_t = 784)]
        dim: usize,
        #[arg(long, default_value_t = 1_000_000)]
        rows: usize,
        #[arg(long, default_value_t = 20_000)]
        train_rows: usize,
        #[arg(long, value_delimiter = ',', default_value = "1")]
        threads: Vec<usize>,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
}

/// A number from 0 to 1 (a usage error otherwise).
fn fraction(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("{s}: must be a fraction from 0 to 1")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { path, json } => inspect(&path, json),
        Command::Eval(args) => eval_cmd::eval(args),
        Command::Verify { path, json } => verify(&path, json),
        Command::Bench(BenchCommand::Scan {
            codes,
            kind,
            queries,
            k,
            threads,
            dir,
            cache,
            repeats,
            seed,
            json,
        }) => commands::bench_scan(
            codes, &kind, &queries, k, &threads, &dir, &cache, repeats, seed, json,
        ),
        Command::Bench(BenchCommand::Encode {
            pipeline,
            dim,
            rows,
            train_rows,
            threads,
            seed,
            json,
        }) => commands::bench_encode(&pipeline, dim, rows, train_rows, &threads, seed, json),
        Command::Demo {
            dir,
            data,
            labels,
            seed,
            json,
        } => commands::demo(dir, data, labels, seed, json),
        Command::Train {
            data,
            labels,
            from_index,
            pipeline,
            out,
            seed,
            sample,
            verbose,
            json,
        } => match (from_index, data) {
            (Some(dir), _) => commands::train(
                &commands::TrainSource::Index(dir),
                &pipeline,
                &out,
                seed,
                sample,
                verbose,
                json,
            ),
            (None, Some(data)) => commands::train(
                &commands::TrainSource::Data { data, labels },
                &pipeline,
                &out,
                seed,
                sample,
                verbose,
                json,
            ),
            (None, None) => Err(anyhow::anyhow!("train: pass --data or --from-index")),
        },
        Command::Build {
            dir,
            model,
            data,
            labels,
            ids,
            store_vectors,
            lists,
        } => search_cmd::build(&search_cmd::BuildArgs {
            dir: &dir,
            model: &model,
            data: &data,
            labels: labels.as_deref(),
            ids: ids.as_deref(),
            store_vectors: store_vectors.as_deref(),
            lists: lists.as_deref(),
        }),
        Command::Add {
            dir,
            data,
            labels,
            ids,
            lists,
        } => commands::add(
            &dir,
            &data,
            labels.as_deref(),
            ids.as_deref(),
            lists.as_deref(),
        ),
        Command::Delete { dir, ids, ids_file } => commands::delete(&dir, ids, ids_file.as_deref()),
        Command::Compact {
            dir,
            full,
            deleted_threshold,
            json,
        } => commands::compact(&dir, full, deleted_threshold, json),
        Command::Recover {
            dir,
            to_version,
            json,
        } => recovery_cmd::recover(&dir, to_version, json),
        Command::Gc { dir, json } => commands::gc(&dir, json),
        Command::Versions { dir, json } => commands::versions(&dir, json),
        Command::Search {
            dir,
            queries,
            k,
            mode,
            rerank,
            radius,
            classes,
            nprobe,
            threads,
            format,
        } => search_cmd::search(&search_cmd::SearchArgs {
            dir: &dir,
            queries: &queries,
            k,
            mode: mode.as_deref(),
            rerank,
            radius,
            classes: &classes,
            nprobe,
            threads,
            format: &format,
        }),
        Command::AddClass {
            dir,
            name,
            id,
            parent,
            data,
            mean,
            prior_weight,
            prior_scope,
            validation,
            validation_labels,
            seed,
            json,
        } => class_cmd::add_class(&class_cmd::AddClassArgs {
            dir: &dir,
            name: &name,
            id,
            parent: parent.as_deref(),
            data: data.as_deref(),
            mean: mean.as_deref(),
            prior_weight,
            prior_scope: &prior_scope,
            validation: validation.as_deref(),
            validation_labels: validation_labels.as_deref(),
            seed,
            json,
        }),
        Command::Classify {
            dir,
            data,
            top,
            format,
        } => class_cmd::classify(&dir, &data, top, &format),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("codedb: error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// The error and its causes joined by ": ", skipping a cause whose text the message before it
/// already ends with (the library's errors print their source themselves).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn inspect(path: &Path, json: bool) -> Result<ExitCode> {
    if !path.exists() {
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    if path.is_dir() {
        let r = inspect_dir(path)?;
        recovery_cmd::warn_fell_back(path, r.version, &r.skipped_manifests);
        if json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_index(&r);
        }
    } else {
        let r = inspect_file(path)?;
        if json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_file(&r, "");
        }
        if r.error.is_some() || r.sections.iter().any(|s| !s.checksum_ok) {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_index(r: &IndexReport) {
    println!("index      {}", r.dir.display());
    println!("version    {}", r.version);
    for s in &r.skipped_manifests {
        println!(
            "skipped    version {} ({}) does not read: writes refused until codedb recover",
            s.version, s.file
        );
    }
    for rec in &r.recoveries {
        let dropped: Vec<String> = rec.dropped.iter().map(|d| d.version.to_string()).collect();
        println!(
            "recovered  kept version {}, dropped damaged version(s) {} (see recovered/)",
            rec.kept_version,
            dropped.join(", ")
        );
    }
    println!("rows       {} live, {} deleted", r.rows, r.deleted);
    println!("segments   {}", r.segments);
    println!("classes    {}", r.classes);
    let m = &r.model;
    match (m.code_kind, m.code_bytes, m.code_bits, m.input_dim) {
        (Some(kind), Some(bytes), Some(bits), Some(dim)) => println!(
            "model      {} ({dim}-D in, {kind} codes of {bytes} bytes / {bits} bits; stages: {})",
            m.file,
            m.stages.join(" → ")
        ),
        _ => println!("model      {} (unreadable: run codedb verify)", m.file),
    }
    println!("bytes      {}", r.bytes);
    println!("versions:");
    for v in &r.versions {
        println!(
            "  {:>6}  {}  {} rows, {} deleted, {} segments",
            v.version, v.manifest, v.rows, v.deleted, v.segments
        );
    }
    println!("files:");
    for f in &r.files {
        let name = f.path.file_name().map(|n| n.to_string_lossy().into_owned());
        println!(
            "  {:<48} {:<16} {:>10} bytes{}",
            name.unwrap_or_default(),
            f.file_kind,
            f.bytes,
            if f.error.is_some() || f.sections.iter().any(|s| !s.checksum_ok) {
                "  PROBLEM (run codedb verify)"
            } else {
                ""
            }
        );
    }
}

fn print_file(r: &FileReport, indent: &str) {
    println!("{indent}{}", r.path.display());
    println!(
        "{indent}  kind       {} (format {})",
        r.file_kind, r.format_version
    );
    println!("{indent}  file id    {}", r.file_id);
    println!("{indent}  size       {} bytes", r.bytes);
    match (&r.contents, &r.log) {
        (Some(c), _) => print_contents(c, indent),
        (None, Some(l)) => {
            println!(
                "{indent}  codes      {}, {} bytes ({} bits) per row",
                l.code_kind, l.code_bytes, l.code_bits
            );
            println!("{indent}  model      {}", l.model_id);
            println!(
                "{indent}  batches    {} valid, {} rows, {} bytes",
                l.batches, l.rows, l.valid_bytes
            );
            println!(
                "{indent}  tail       {} bytes after the last valid batch",
                l.tail_bytes
            );
        }
        (None, None) => println!(
            "{indent}  ERROR      {}",
            r.error.as_deref().unwrap_or("unknown")
        ),
    }
    println!("{indent}  sections:");
    println!(
        "{indent}    {:<18} {:>10} {:>12} {:>12} {:<5} {:<8} checksum",
        "kind", "offset", "stored", "raw", "codec", "required"
    );
    for s in &r.sections {
        println!(
            "{indent}    {:<18} {:>10} {:>12} {:>12} {:<5} {:<8} {}",
            s.kind,
            s.offset,
            s.stored_bytes,
            s.raw_bytes,
            s.codec,
            if s.required { "yes" } else { "no" },
            if s.checksum_ok { "ok" } else { "MISMATCH" }
        );
    }
}

fn print_contents(c: &Contents, indent: &str) {
    let p = |k: &str, v: String| println!("{indent}  {k:<10} {v}");
    match c {
        Contents::Segment {
            rows,
            code_kind,
            code_bytes,
            code_bits,
            model_id,
            min_id,
            max_id,
            labels,
            lists,
            vectors,
        } => {
            p("rows", rows.to_string());
            p(
                "codes",
                format!("{code_kind}, {code_bytes} bytes ({code_bits} bits) per row"),
            );
            p("model", model_id.clone());
            p("ids", format!("{min_id} ..= {max_id}"));
            p("labels", yes_no(*labels));
            p("lists", yes_no(*lists));
            p("vectors", vectors.clone().unwrap_or_else(|| "none".into()));
        }
        Contents::Model {
            input_dim,
            code_kind,
            code_bytes,
            code_bits,
            stages,
            skipped_stages,
        } => {
            p("input", format!("{input_dim}-D"));
            p(
                "codes",
                format!("{code_kind}, {code_bytes} bytes ({code_bits} bits)"),
            );
            println!("{indent}  stages:");
            for (i, s) in stages.iter().enumerate() {
                let tensors: Vec<String> = s
                    .tensors
                    .iter()
                    .map(|t| format!("{} {}{:?}", t.name, t.dtype, t.shape))
                    .collect();
                println!("{indent}    {i}. {:<10} {}", s.kind, tensors.join(", "));
            }
            if !skipped_stages.is_empty() {
                p(
                    "skipped",
                    format!("unknown optional stages {skipped_stages:?}"),
                );
            }
        }
        Contents::ClassTable {
            dim,
            delta_of,
            classes,
        } => {
            p("dim", dim.to_string());
            p(
                "type",
                match delta_of {
                    Some(b) => format!("delta of {b}"),
                    None => "base table".into(),
                },
            );
            p("classes", classes.len().to_string());
            for c in classes {
                println!(
                    "{indent}    {:>6}  {:<24} parent {:<8} count {:<10} centroids {}",
                    c.id,
                    c.name,
                    c.parent
                        .map(|x| x.to_string())
                        .unwrap_or_else(|| "-".into()),
                    c.count,
                    c.centroids
                );
            }
        }
        Contents::DeletionBitmap {
            segment_id,
            rows,
            deleted,
        } => {
            p("segment", segment_id.clone());
            p("rows", rows.to_string());
            p("deleted", deleted.to_string());
        }
        Contents::Manifest {
            version,
            created_unix_ms,
            next_auto_id,
            model,
            live_rows,
            deleted_rows,
            segments,
            class_files,
        } => {
            p("version", version.to_string());
            p(
                "created",
                format!("{created_unix_ms} ms since the Unix epoch"),
            );
            p("next id", next_auto_id.to_string());
            p("model", model.clone());
            p("rows", format!("{live_rows} live, {deleted_rows} deleted"));
            println!("{indent}  segments:");
            for s in segments {
                println!(
                    "{indent}    {}  {} rows, {} deleted{}",
                    s.file,
                    s.rows,
                    s.deleted,
                    s.deletions
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                );
            }
            p("classes", class_files.join(", "));
        }
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

fn verify(path: &Path, json: bool) -> Result<ExitCode> {
    if !path.exists() {
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    let total = bytes_to_verify(path);
    let bar = progress_bar(total, "verifying");
    let report: VerifyReport = verify_path(path, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report).context("JSON")?);
    } else {
        for p in &report.problems {
            let by = if p.referenced_by.is_empty() {
                String::new()
            } else {
                format!(" (named by {})", p.referenced_by.join(", "))
            };
            println!(
                "PROBLEM {} [{}]: {}{by}",
                p.path.display(),
                p.section,
                p.message
            );
        }
        for n in &report.notes {
            println!("note: {}: {}", n.path.display(), n.message);
        }
        if !report.unreferenced.is_empty() {
            println!(
                "note: {} file(s) referenced by no manifest (garbage collection removes them): {}",
                report.unreferenced.len(),
                report.unreferenced.join(", ")
            );
        }
        println!(
            "{}: {} file(s), {} bytes, {} manifest(s) checked, {} problem(s)",
            if report.ok() { "OK" } else { "FAILED" },
            report.files_checked,
            report.bytes_checked,
            report.manifests_checked,
            report.problems.len()
        );
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A byte progress bar on stderr, hidden when stderr is not a terminal.
pub(crate) fn progress_bar(total: u64, what: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}
