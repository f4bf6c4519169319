//! The `codedb` admin CLI: a thin layer over the library.
//!
//! Exit codes: 0 success; 1 the file or index has a problem, or the operation failed;
//! 2 usage error (bad arguments); 141 standard output closed by its reader (see `out`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use codedb::storage::inspect::{Contents, FileReport, IndexReport, inspect_dir, inspect_file};
use codedb::storage::verify::{VerifyReport, bytes_to_verify, verify_path};

mod args;
mod class_cmd;
mod commands;
mod eval_cmd;
mod inputs;
mod out;
mod progress;
mod recovery_cmd;
mod search_cmd;

use out::{errln, outln};

const EXIT_CODES: &str = "\
Exit codes:
  0    success (verify: no problem found)
  1    the file or index has a problem, or the operation failed
  2    usage error (unknown command, bad or missing argument, arguments that do
       not go together)
  141  standard output was closed by its reader (`codedb … | head`): the
       status of a process killed by SIGPIPE; nothing more is printed";

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
  codedb inspect my-index
  codedb inspect my-index/seg-0123….seg          # one file
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
  codedb demo                   # the 1,797 digits shipped with codedb
  codedb demo --data /usr/share/datasets/fashion-mnist --dir /tmp/fm-demo
  codedb demo --data X.npy --labels L.npy --json

/usr/share/datasets/fashion-mnist is installed by the Debian package \
dataset-fashion-mnist (apt-get install dataset-fashion-mnist).")]
    Demo {
        /// Where the demo's indexes go (default: a new folder under the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory) instead of the
        /// built-in digits.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Class labels for --data (.npy int32/int64); not needed for a Fashion-MNIST directory.
        #[arg(long, requires = "data")]
        labels: Option<PathBuf>,
        /// Seed of every random choice (training, ground-truth sample).
        #[arg(long, default_value_t = 1234, allow_negative_numbers = true, value_parser = args::u64_0)]
        seed: u64,
        /// Print the report as JSON (progress lines are not printed).
        #[arg(long)]
        json: bool,
    },
    /// Train a model (a pipeline of stages) on descriptors and write it to a model file.
    #[command(after_help = "Examples:
  codedb train --data X.npy --pipeline pca-itq:64 --out itq64.model
  codedb train --data X.npy --pipeline 'pca:128,pq:16x8' --out pq.model --seed 7
  codedb train --from-index pq-index --pipeline ncmml:64,itq,bits --out m2

Pipelines: explicit stage lists (pca:64,itq,bits; pca:128,pq:16x8) or presets lsh:B, \
pca-direct:B, pca-rr:B, pca-itq:B, sklsh:B, kpca-itq:B, pq:MxBITS, pq4:M, opq:MxBITS, float, \
float16. A pipeline ends with a quantiser (bits, sklsh:C, pq:MxB, pq4:M, opq:MxB, float, \
float16).")]
    Train {
        /// Training descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory).
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
        /// The pipeline SPEC: a preset or a comma-separated list of stages (see below).
        #[arg(long)]
        pipeline: String,
        /// The model file to write (refused if it exists, unless --force).
        #[arg(long)]
        out: PathBuf,
        /// Replace --out if it exists (atomically: the old file stays whole until the new one
        /// is complete).
        #[arg(long)]
        force: bool,
        /// Seed of every random choice (sampling, rotations, projections, k-means).
        #[arg(long, default_value_t = 1234, allow_negative_numbers = true, value_parser = args::u64_0)]
        seed: u64,
        /// Train on this many rows sampled with the seed (default: all, up to a cap).
        #[arg(long, allow_negative_numbers = true, value_parser = args::count)]
        sample: Option<usize>,
        /// Print per-iteration details (ITQ quantisation loss …).
        #[arg(long)]
        verbose: bool,
        /// Print a JSON report (pipeline, dimensions, losses, PCA spectrum, PQ error).
        #[arg(long)]
        json: bool,
    },
    /// Create an index from a model file and descriptors (encoded and committed as version 2).
    #[command(after_help = search_cmd::BUILD_HELP)]
    Build {
        /// The index directory to create (must not exist or be empty).
        dir: PathBuf,
        /// The model file (from codedb train) that encodes the rows.
        #[arg(long)]
        model: PathBuf,
        /// Descriptors, one row per image, in the model's input dimension.
        #[arg(long)]
        data: PathBuf,
        /// Class labels (.npy int32/int64), one per row; also creates the class table.
        #[arg(long)]
        labels: Option<PathBuf>,
        /// Row ids (.npy integers), one per row (default: 0, 1, 2, …).
        #[arg(long)]
        ids: Option<PathBuf>,
        /// Keep every row's input vector (f16 or f32) for --rerank and the exact modes.
        #[arg(long, value_parser = ["f16", "f32"])]
        store_vectors: Option<String>,
        /// Inverted-list id of each row: its label, or its nearest class mean.
        #[arg(long, value_parser = ["label", "nearest"])]
        lists: Option<String>,
    },
    /// Append descriptors to an index (encoded with its model) and commit; prints the ids of
    /// the new rows.
    #[command(after_help = "Examples:
  codedb add my-index --data new.npy
  codedb add my-index --data new.npy --ids new_ids.npy --json
  codedb add my-index --data fixed.npy --ids ids.npy --upsert
  codedb add my-index --data new.npy --labels new_labels.npy --lists label

With --labels on an index with a class table, every label must be a class (add new ones with \
codedb add-class first) and the rows' descriptors are added to their classes' means in the same \
commit. An index that stores vectors keeps the new rows' vectors too. A given id that is \
already live is an error unless --upsert, which replaces that row (in the same commit; a \
replaced labelled row leaves its class as in codedb delete, see its --help). \
--json prints {\"added\": n, \"ids\": [...], \"replaced\": r, \"version\": v}.")]
    Add {
        /// The index directory.
        dir: PathBuf,
        /// Descriptors, one row per image, in the index model's input dimension.
        #[arg(long)]
        data: PathBuf,
        /// Class labels (.npy int32/int64), one per row.
        #[arg(long)]
        labels: Option<PathBuf>,
        /// Row ids (.npy integers), one per row (default: assigned by the index).
        #[arg(long)]
        ids: Option<PathBuf>,
        /// Replace the live rows whose ids are given instead of refusing them (needs --ids).
        #[arg(long, requires = "ids")]
        upsert: bool,
        /// With --upsert: replaced rows stay in their classes' counts and sums (needed to
        /// replace labelled rows of an index without stored vectors).
        #[arg(long, requires = "upsert")]
        keep_class_stats: bool,
        /// Inverted-list id of each row: its label, or its nearest class mean.
        #[arg(long, value_parser = ["label", "nearest"])]
        lists: Option<String>,
        /// Print {added, ids, replaced, version} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete rows by id and commit.
    #[command(after_help = "Examples:
  codedb delete my-index --ids 4,8,15
  codedb delete my-index --ids-file gone.npy
  codedb delete my-index --ids 4,8,99999 --ignore-missing --json
  codedb delete my-index --ids 4,8 --keep-class-stats   # no stored vectors

An id that is not live aborts the whole delete (nothing is deleted) unless --ignore-missing, \
which deletes the live ones and lists the others. --json prints {\"deleted\": n, \"missing\": \
[...], \"version\": v, \"class_stats\": \"updated\"|\"kept\"}; with nothing to delete, no version \
is written.

A deleted row that counts in a class (its label is a class of the class table) leaves it in the \
same commit: its stored vector is subtracted from the class's sum and the count drops by one, so \
class means stay the means of the rows that are there. Without stored vectors the row's \
descriptor is unknown and the delete is refused, unless --keep-class-stats keeps every class's \
count and sum as they are.")]
    Delete {
        /// The index directory.
        dir: PathBuf,
        /// Comma-separated ids.
        #[arg(
            long,
            value_delimiter = ',',
            required_unless_present = "ids_file",
            allow_negative_numbers = true,
            value_parser = args::u64_0
        )]
        ids: Vec<u64>,
        /// A .npy file of ids.
        #[arg(long)]
        ids_file: Option<PathBuf>,
        /// Skip ids that are not live instead of refusing the batch (they are listed).
        #[arg(long)]
        ignore_missing: bool,
        /// Print {deleted, missing, version} as JSON.
        #[arg(long)]
        json: bool,
        /// Leave class counts and sums unchanged (the deleted rows stay in their classes'
        /// means); needed to delete labelled rows from an index without stored vectors.
        #[arg(long)]
        keep_class_stats: bool,
    },
    /// Seal the active log into a segment (one commit, if it holds rows), then merge segments,
    /// drop deleted rows and fold class deltas (one commit). `--json` adds `sealed_log_rows`
    /// and `sealed_version` to the compaction report.
    #[command(after_help = "Examples:
  codedb compact my-index                        # merge similar-sized segments
  codedb compact my-index --full                 # merge every segment into one
  codedb compact my-index --deleted-threshold 0  # also drop every deleted row
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
        #[arg(long, value_name = "FRACTION", default_value_t = 0.2,
              value_parser = args::fraction, allow_negative_numbers = true)]
        deleted_threshold: f64,
        /// Print the compaction report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove files that no retained version references. Refuses while a manifest does not
    /// read (which files it names is unknown): see `codedb recover`.
    #[command(after_help = "Examples:
  codedb gc my-index
  codedb gc my-index --json       # {removed, removed_bytes, kept_versions, ...}

Retained: the newest versions and recent ones (see README \"Retention\").")]
    Gc {
        /// The index directory.
        dir: PathBuf,
        /// Print the report (files removed, bytes, versions kept) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the versions (manifests) of an index; a manifest that does not read is listed as
    /// DAMAGED with its reason, and the command then exits 1.
    #[command(after_help = "Examples:
  codedb versions my-index
  codedb versions my-index --json | jq '.[-1].rows'

Exit codes: 0 every manifest reads, 1 a manifest does not read or DIR is not an index.")]
    Versions {
        /// The index directory.
        dir: PathBuf,
        /// Print one object per version (version, file, rows, deleted, segments, …, error) as
        /// JSON; the counts are null for a manifest that does not read.
        #[arg(long)]
        json: bool,
    },
    /// Accept the loss of versions whose manifests do not read: keep the newest version that
    /// reads (named with --to-version), set the damaged manifests aside in DIR/recovered/ with
    /// a record of what was dropped, and make the index writable again.
    #[command(after_help = "Examples:
  codedb recover my-index --to-version 3
  codedb recover my-index --to-version 3 --json

`codedb versions DIR` shows which version is damaged and which is the newest that reads.
Until this runs, commands that read the index warn that they serve an older version, and every
writer (add, delete, compact, gc, add-class) refuses. Restoring the damaged manifest from a
backup instead needs no recover. Version numbers are never reused: the kept version is
published again under a number above the dropped ones.")]
    Recover {
        /// The index directory.
        dir: PathBuf,
        /// The version to keep: the newest one whose manifest reads.
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = args::count_u64)]
        to_version: u64,
        /// Print the recovery record (kept_version, published_version, dropped, version) as
        /// JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the classes of an index's class table: id, name, parent, image count, centroids.
    #[command(after_help = "Examples:
  codedb classes my-index
  codedb classes my-index --json | jq '.[] | select(.count == 0)'

JSON: [{\"id\", \"name\", \"parent\" (id or null), \"parent_name\", \"count\", \"centroids\"}, …] \
in id order; [] when the index has no class table.")]
    Classes {
        /// The index directory.
        dir: PathBuf,
        /// Print the classes as JSON.
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
        #[arg(short, long, allow_negative_numbers = true, value_parser = args::count)]
        k: Option<usize>,
        /// How queries are compared with rows (default: the natural mode of the index's codes).
        #[arg(long, value_parser = search_cmd::MODES)]
        mode: Option<String>,
        /// Re-rank the R best by the mode's score with the stored vectors (R >= k).
        #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = args::count)]
        rerank: Option<usize>,
        /// Hash lookup: every row within this Hamming radius (0-2; codes of at most 32 bits).
        #[arg(
            long,
            value_name = "r",
            conflicts_with_all = ["rerank", "classes", "nprobe"],
            allow_negative_numbers = true,
            value_parser = args::u32_0
        )]
        radius: Option<u32>,
        /// Scan only the inverted lists of these classes (comma-separated names or ids).
        #[arg(long, value_delimiter = ',', conflicts_with = "nprobe")]
        classes: Vec<String>,
        /// IVF: per query, scan the lists of the n nearest class means.
        #[arg(long, value_name = "n", allow_negative_numbers = true, value_parser = args::count)]
        nprobe: Option<usize>,
        /// Threads (0 = all cores; more than the cores is capped at the cores).
        #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = args::count0)]
        threads: usize,
        /// Output format: tsv (a header, then query rank id score) or json.
        #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
        format: String,
        /// Print what ran (mode, rows, queries, threads, seconds) on stderr.
        #[arg(long)]
        verbose: bool,
    },
    /// Add a class to the class table and commit: from images, from a given mean, or
    /// zero-shot from its parent (Mensink et al. eq. 29), with a few images the MAP mean
    /// (eq. 30).
    #[command(after_help = "Examples:
  codedb add-class my-index --name sneaker --data sneakers.npy
  codedb add-class my-index --name boot --parent footwear            # zero-shot
  codedb add-class my-index --name boot --parent footwear --data few.npy \\
      --prior-weight 5
  codedb add-class my-index --name boot --parent footwear --data few.npy \\
      --validation val.npy --validation-labels val_labels.npy   # m validated
  codedb add-class my-index --name logo --mean logo_mean.npy   # count 1

With a parent and no --prior-weight/--validation, m = 5. The count of a class made from the prior \
includes its m pseudo-images. Errors (unknown parent, duplicate name or id, dimension mismatch, \
NaN, no data and no parent) leave the index unchanged.")]
    AddClass {
        /// The index directory.
        dir: PathBuf,
        /// The new class's name.
        #[arg(long)]
        name: String,
        /// Class id (default: one past every class id and row label in use).
        #[arg(long, allow_negative_numbers = true, value_parser = args::u32_0)]
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
        #[arg(long, allow_negative_numbers = true, value_parser = args::u64_0)]
        prior_weight: Option<u64>,
        /// Ancestors averaged for the prior (eq. 29): parent or ancestors.
        #[arg(long, default_value = "parent", value_parser = ["parent", "ancestors"])]
        prior_scope: String,
        /// Held-out images of existing classes to choose m on (with --data and --parent).
        #[arg(
            long,
            requires = "validation_labels",
            requires = "data",
            requires = "parent",
            conflicts_with = "prior_weight"
        )]
        validation: Option<PathBuf>,
        /// Class ids of the --validation rows.
        #[arg(long, requires = "validation")]
        validation_labels: Option<PathBuf>,
        /// Seed of the held-out episodes that choose m (with --validation).
        #[arg(long, default_value_t = 1234, allow_negative_numbers = true, value_parser = args::u64_0)]
        seed: u64,
        /// Print the new class (name, id, parent, count, version, how its mean was made) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Classify descriptors by nearest class mean in the index model's projected space.
    #[command(after_help = "Examples:
  codedb classify my-index --data X.npy --top 5
  codedb classify my-index --data X.npy --format json

TSV columns: row, rank, id, name, score. JSON: [{\"row\": i, \"classes\": [{\"name\", \"id\", \
\"score\"}, …]}], best first, ties by smaller id. Score: the eq. 9 linear score w_c·x + b_c, \
centred (larger is better). In TSV, \
control characters in a name (possible only in files written before they were refused) are \
escaped as \\t, \\n, \\r, \\u{hex}, and a backslash as \\\\; JSON keeps names as they are.")]
    Classify {
        /// The index directory (its model and class table).
        dir: PathBuf,
        /// Descriptors to classify, one row per image, in the model's input dimension.
        #[arg(long)]
        data: PathBuf,
        /// Classes per row, best first.
        #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = args::count)]
        top: usize,
        /// Output format: tsv (a header, then row rank id name score) or json.
        #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
        format: String,
    },
    /// Measure retrieval quality of several pipelines on one data set (ITQ §4.2 protocols):
    /// Euclidean-neighbour mAP, class mAP and precision@k, recall@R, Hamming-ball lookup,
    /// train/encode/query times, averaged over random partitions.
    #[command(after_help = "Examples:
  codedb eval --data /usr/share/datasets/fashion-mnist \\
      --pipelines 'lsh:64; pca-itq:64; pq:8x8'
  codedb eval --data X.npy --labels L.npy --split split.npy \\
      --pipelines 'pca-rr:32; pca-itq:32' --runs 5 --json
  codedb eval --task classify --data X.npy --labels L.npy \\
      --pipelines 'ncm; ncmml:64'

--json prints a list with one object per pipeline (pipeline, bits, bytes, map_euclid, \
map_class, precision_at_k, recall_at_r, lookup, train_s, encode_s, query_ms, ...). \
/usr/share/datasets/fashion-mnist is installed by the Debian package dataset-fashion-mnist \
(apt-get install dataset-fashion-mnist).

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
  codedb bench scan --codes 100000000 --kind hamming64 --threads 2 --dir /tmp/cb
  codedb bench scan --codes 10000000 --kind hamming64,pq8x16,pq4x32 \\
      --queries 1,16 --threads 1,2 --dir /tmp/cb --json

Kinds: hammingB (B bits), pq8xM (LUT-8 ADC), pq4xM (4-bit fast-scan). Lists are comma-separated; \
every combination runs. --json prints one object per case.")]
    Scan {
        /// Rows of the generated segment.
        #[arg(long, default_value_t = 10_000_000, allow_negative_numbers = true, value_parser = args::count_u64)]
        codes: u64,
        /// Code kinds, comma-separated: hammingB, pq8xM, pq4xM.
        #[arg(long, value_delimiter = ',', default_value = "hamming64")]
        kind: Vec<String>,
        /// Queries per scan, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count)]
        queries: Vec<usize>,
        /// Results per query.
        #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = args::count)]
        k: usize,
        /// Thread counts, comma-separated (0 = all cores; more than the cores is capped).
        #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count0)]
        threads: Vec<usize>,
        /// Where the generated segments are kept between runs.
        #[arg(long)]
        dir: PathBuf,
        /// hot, cold or both.
        #[arg(long, default_value = "hot", value_parser = ["hot", "cold", "both"])]
        cache: String,
        /// Timed repetitions per case (the median is reported).
        #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = args::count)]
        repeats: usize,
        /// Seed of the generated codes and queries.
        #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = args::u64_0)]
        seed: u64,
        /// Print one object per case as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Encoding throughput: train a pipeline on generated descriptors, then time encoding
    /// (rows/s) on the given thread counts.
    #[command(after_help = "Examples:
  codedb bench encode --pipeline pca-itq:64 --dim 784 --threads 1,2
  codedb bench encode --pipeline pq:16x8 --dim 128 --threads 1,2 --json

Descriptors are seeded Gaussians with a decaying spectrum. --json prints one object per case \
(pipeline, dim, rows, train_rows, threads, code_bytes, train_s, encode_s, rows_per_s).")]
    Encode {
        /// Pipeline SPECs, `;`-separated.
        #[arg(long, value_delimiter = ';', default_value = "pca-itq:64")]
        pipeline: Vec<String>,
        /// Dimension of the generated descriptors.
        #[arg(long, default_value_t = 784, allow_negative_numbers = true, value_parser = args::count)]
        dim: usize,
        /// Rows encoded per case.
        #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true, value_parser = args::count)]
        rows: usize,
        /// Rows the pipeline is trained on.
        #[arg(long, default_value_t = 20_000, allow_negative_numbers = true, value_parser = args::count)]
        train_rows: usize,
        /// Thread counts, comma-separated (0 = all cores; more than the cores is capped).
        #[arg(long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = args::count0)]
        threads: Vec<usize>,
        /// Seed of the generated descriptors and of training.
        #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = args::u64_0)]
        seed: u64,
        /// Print one object per case as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version on a pipe go through `out` (a closed pipe exits 141 like every
        // other output); on a terminal, and usage errors, clap prints them (exit 0 or 2).
        Err(e) if !e.use_stderr() && !std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            out::bytes(e.render().to_string().as_bytes());
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let result = run(cli.command);
    match result {
        Ok(code) => code,
        Err(e) if e.chain().any(|c| c.is::<args::UsageError>()) => {
            errln!("codedb: usage error: {}", error_chain(&e));
            ExitCode::from(2)
        }
        Err(e) => {
            errln!("codedb: error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
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
            force,
            seed,
            sample,
            verbose,
            json,
        } => {
            let source = match (from_index, data) {
                (Some(dir), _) => commands::TrainSource::Index(dir),
                (None, Some(data)) => commands::TrainSource::Data { data, labels },
                (None, None) => args::usage!("train: pass --data or --from-index"),
            };
            commands::train(&commands::TrainArgs {
                source: &source,
                pipeline: &pipeline,
                out: &out,
                force,
                seed,
                sample,
                verbose,
                json,
            })
        }
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
            upsert,
            lists,
            keep_class_stats,
            json,
        } => commands::add(&commands::AddArgs {
            dir: &dir,
            data: &data,
            labels: labels.as_deref(),
            ids: ids.as_deref(),
            upsert,
            keep_class_stats,
            lists: lists.as_deref(),
            json,
        }),
        Command::Delete {
            dir,
            ids,
            ids_file,
            ignore_missing,
            keep_class_stats,
            json,
        } => commands::delete(
            &dir,
            ids,
            ids_file.as_deref(),
            ignore_missing,
            keep_class_stats,
            json,
        ),
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
        Command::Classes { dir, json } => class_cmd::classes(&dir, json),
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
            verbose,
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
            verbose,
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
            outln!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_index(&r);
        }
    } else {
        let r = inspect_file(path)?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&r)?);
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
    outln!("index      {}", r.dir.display());
    outln!("version    {}", r.version);
    for s in &r.skipped_manifests {
        outln!(
            "skipped    version {} ({}) does not read: writes refused until codedb recover",
            s.version,
            s.file
        );
    }
    for rec in &r.recoveries {
        let dropped: Vec<String> = rec.dropped.iter().map(|d| d.version.to_string()).collect();
        outln!(
            "recovered  kept version {}, dropped damaged version(s) {} (see recovered/)",
            rec.kept_version,
            dropped.join(", ")
        );
    }
    outln!("rows       {} live, {} deleted", r.rows, r.deleted);
    outln!("segments   {}", r.segments);
    outln!("classes    {}", r.classes);
    let m = &r.model;
    match (m.code_kind, m.code_bytes, m.code_bits, m.input_dim) {
        (Some(kind), Some(bytes), Some(bits), Some(dim)) => outln!(
            "model      {} ({dim}-D in, {kind} codes of {bytes} bytes / {bits} bits; stages: {})",
            m.file,
            m.stages.join(" → ")
        ),
        _ => outln!("model      {} (unreadable: run codedb verify)", m.file),
    }
    outln!("bytes      {}", r.bytes);
    outln!("versions:");
    for v in &r.versions {
        outln!(
            "  {:>6}  {}  {} rows, {} deleted, {} segments",
            v.version,
            v.manifest,
            v.rows,
            v.deleted,
            v.segments
        );
    }
    outln!("files:");
    for f in &r.files {
        let name = f.path.file_name().map(|n| n.to_string_lossy().into_owned());
        outln!(
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
    outln!("{indent}{}", r.path.display());
    outln!(
        "{indent}  kind       {} (format {})",
        r.file_kind,
        r.format_version
    );
    outln!("{indent}  file id    {}", r.file_id);
    outln!("{indent}  size       {} bytes", r.bytes);
    match (&r.contents, &r.log) {
        (Some(c), _) => print_contents(c, indent),
        (None, Some(l)) => {
            outln!(
                "{indent}  codes      {}, {} bytes ({} bits) per row",
                l.code_kind,
                l.code_bytes,
                l.code_bits
            );
            outln!("{indent}  model      {}", l.model_id);
            outln!(
                "{indent}  batches    {} valid, {} rows, {} bytes",
                l.batches,
                l.rows,
                l.valid_bytes
            );
            outln!(
                "{indent}  tail       {} bytes after the last valid batch",
                l.tail_bytes
            );
        }
        (None, None) => outln!(
            "{indent}  ERROR      {}",
            r.error.as_deref().unwrap_or("unknown")
        ),
    }
    outln!("{indent}  sections:");
    outln!(
        "{indent}    {:<18} {:>10} {:>12} {:>12} {:<5} {:<8} checksum",
        "kind",
        "offset",
        "stored",
        "raw",
        "codec",
        "required"
    );
    for s in &r.sections {
        outln!(
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
    let p = |k: &str, v: String| outln!("{indent}  {k:<10} {v}");
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
            outln!("{indent}  stages:");
            for (i, s) in stages.iter().enumerate() {
                let tensors: Vec<String> = s
                    .tensors
                    .iter()
                    .map(|t| format!("{} {}{:?}", t.name, t.dtype, t.shape))
                    .collect();
                outln!("{indent}    {i}. {:<10} {}", s.kind, tensors.join(", "));
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
                outln!(
                    "{indent}    {:>6}  {:<24} parent {:<8} count {:<10} centroids {}{}",
                    c.id,
                    codedb_cli::io::tsv_field(&c.name),
                    c.parent
                        .map(|x| x.to_string())
                        .unwrap_or_else(|| "-".into()),
                    c.count,
                    c.centroids,
                    if c.removed > 0 {
                        format!("  removed {}", c.removed)
                    } else {
                        String::new()
                    }
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
            outln!("{indent}  segments:");
            for s in segments {
                outln!(
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
    let bar = progress::bytes(total, "verifying");
    let report: VerifyReport = verify_path(path, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    if json {
        outln!("{}", serde_json::to_string_pretty(&report).context("JSON")?);
    } else {
        for p in &report.problems {
            let by = if p.referenced_by.is_empty() {
                String::new()
            } else {
                format!(" (named by {})", p.referenced_by.join(", "))
            };
            outln!(
                "PROBLEM {} [{}]: {}{by}",
                p.path.display(),
                p.section,
                p.message
            );
        }
        for n in &report.notes {
            outln!("note: {}: {}", n.path.display(), n.message);
        }
        if !report.unreferenced.is_empty() {
            outln!(
                "note: {} file(s) referenced by no manifest (garbage collection removes them): {}",
                report.unreferenced.len(),
                report.unreferenced.join(", ")
            );
        }
        outln!(
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every command (clap's own --help and --version aside) has a help
    /// line, and clap's consistency checks hold.
    #[test]
    fn every_argument_has_help() {
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in c.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&cmd, "codedb", &mut missing);
        assert!(missing.is_empty(), "no help: {missing:?}");
    }
}
