//! `codedb eval`'s arguments, for every task (retrieve, classify, text), and the train/test
//! splits they describe (`--split`, or a seeded one). Apart from the runs so that
//! `eval.rs` and `eval_text.rs` import them and neither imports the other.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::args;

#[derive(clap::Args)]
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
  codedb eval --data X.npy --pipelines 'lsh:32; pca-itq:32' \\
      --recall 1,10,100 --plot pr.svg
  codedb eval --task text --data hogcolor.npy --captions tags.json \\
      --text-queries queries.json --split split.npy \\
      --pipelines 'random; oracle; pca:256,pq:32x8; pca-itq:256'

--json prints a list with one object per pipeline (pipeline, bits, bytes, map_euclid, \
map_class, precision_at_k, recall_at_r, lookup, train_s, encode_s, query_ms, ...). \
--task text --json prints train_rows, test_rows, queries and one object per pipeline in \
rankers (pipeline, margin, bits, avgp, bep, p10, queries, unknown_queries, c, iterations, ...). \
/usr/share/datasets/fashion-mnist is installed by the Debian package dataset-fashion-mnist \
(apt-get install dataset-fashion-mnist).

Exit codes: 0 success, 1 failure, 2 usage error (bad pipeline token, unknown --task).")]
pub struct EvalArgs {
    /// What to evaluate: `retrieve` (ITQ §4.2 retrieval protocols; pipelines are model SPECs)
    /// or `classify` (Mensink et al. §5.1 flat top-1/top-5 error; pipelines are classifier
    /// SPECs: ncm, pca:C,ncm, ncmml:d, ncmml-dot:d, ncmc:dxk, fda:d, mahal:d, knn:d, ridge,
    /// svm)
    /// or `text` (PAMIR §5 text → image AvgP / BEP / P10; pipelines are model SPECs trained
    /// with a text head, and the baselines random, oracle, cca:R; needs --captions and
    /// --text-queries).
    #[arg(long, default_value = "retrieve", value_parser = ["retrieve", "classify", "text"])]
    pub task: String,
    /// Descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory, which brings its
    /// own labels and train/test split; Debian package dataset-fashion-mnist).
    #[arg(long)]
    pub data: PathBuf,
    /// Class labels (.npy int32/int64 or IDX labels), one per row.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Split (.npy integers, one per row): non-zero rows are test rows queries are drawn
    /// from, zero rows form the database. Without it each run partitions at random.
    #[arg(long)]
    pub split: Option<PathBuf>,
    /// `;`-separated pipeline SPECs, e.g. "lsh:64; pca-itq:64; pq:8x8".
    #[arg(long)]
    pub pipelines: String,
    /// Queries per run.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = args::count)]
    pub queries: usize,
    /// Random partitions to average over (the paper uses 5).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = args::count)]
    pub runs: usize,
    /// Seed of every random choice (partitions, samples, training).
    #[arg(long, default_value_t = codedb::DEFAULT_SEED, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// k of class-label precision@k.
    #[arg(short, long, default_value_t = 500, allow_negative_numbers = true, value_parser = args::count)]
    pub k: usize,
    /// The R values of recall@R (1-NN in the top R), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100", allow_negative_numbers = true, value_parser = args::count)]
    pub recall: Vec<usize>,
    /// Hamming radius of the hash-lookup precision/recall (binary codes).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = args::u32_0)]
    pub radius: u32,
    /// Train each pipeline on this many database rows, sampled with the seed (default: all,
    /// up to 100,000).
    #[arg(long, allow_negative_numbers = true, value_parser = args::count)]
    pub train_sample: Option<usize>,
    /// Database rows whose 50th-NN distance sets the Euclidean threshold.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = args::count)]
    pub truth_sample: usize,
    /// Print a JSON list, one object per pipeline.
    #[arg(long)]
    pub json: bool,
    /// Also draw a figure (retrieve task): precision-recall curves, recall@R against R and mAP
    /// against bits, one colour per pipeline. PATH is a *.svg or *.png file, or a directory to
    /// hold eval.svg; a bare --plot writes eval.svg in the current directory. Works with --json.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = ".")]
    pub plot: Option<PathBuf>,
    /// Text task: captions or tags of the --data rows (as `codedb train --captions`).
    #[arg(long, value_name = "FILE")]
    pub captions: Option<PathBuf>,
    /// Text task: the queries, a .json list of {"text", "relevant": [row, ...]} (openclipart's
    /// queries.json) or a text file with one query per line (relevant: captions holding
    /// every word).
    #[arg(long, value_name = "FILE")]
    pub text_queries: Option<PathBuf>,
    /// Text task: PAMIR margin policies to evaluate each SPEC with (comma-separated; the
    /// default is `codedb train`'s).
    #[arg(long, value_delimiter = ',', default_value = "constant", value_parser = clap::builder::PossibleValuesParser::new(codedb::model::MARGIN_NAMES.iter().map(|m| m.0)))]
    pub margins: Vec<String>,
    /// Text task: aggressiveness values C tried on the validation part of the training rows.
    #[arg(long, value_delimiter = ',', default_value = "0.01,0.1,1,10")]
    pub pamir_c: Vec<f32>,
    /// Text task: most passive-aggressive iterations per validation run (the cap: a run stops
    /// earlier when its validation AvgP stops improving; the count is chosen on validation).
    #[arg(long, default_value_t = codedb::model::PAMIR_DEFAULT_ITERATIONS, allow_negative_numbers = true, value_parser = args::count)]
    pub pamir_iterations: usize,
    /// Text task: validation checkpoints (spaced ×1.5) in a row without a 0.5 % AvgP gain
    /// after which a PAMIR validation run stops.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = args::count)]
    pub pamir_patience: usize,
    /// Text task: group ids of the --data rows (.npy of integers, e.g. the item each
    /// near-duplicate renders): PAMIR's and CCA's validation parts keep every group on one side.
    #[arg(long, value_name = "FILE")]
    pub pamir_validation_groups: Option<PathBuf>,
    /// Text task, cca: powers p of the correlation that scales CCA's directions (λ^p),
    /// comma-separated; several are chosen from on validation rows.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1,2,4")]
    pub cca_power: Vec<f64>,
    /// Text task: fraction of the training rows held out to choose C and the iterations.
    #[arg(long, default_value_t = 0.2)]
    pub pamir_validation: f64,
    /// Text task, cca:R: a text embedding of each row's caption (.npy, one row per --data row).
    #[arg(long, value_name = "FILE")]
    pub caption_embeddings: Option<PathBuf>,
    /// Text task, cca:R: the same embedding of each query (.npy, one row per query).
    #[arg(long, value_name = "FILE")]
    pub query_embeddings: Option<PathBuf>,
    /// cca:R steps: regularisation ρ, relative to each view's mean variance (default 1e-4).
    /// Retrieve task: also `auto` or a comma-separated list, chosen on held-out database rows
    /// (as `codedb train --cca-rho`); text task: one value, or several (default `auto`)
    /// chosen on a validation part of the training rows.
    #[arg(long, value_name = "RHO")]
    pub cca_rho: Option<codedb::model::CcaRho>,
}

pub(crate) fn load_split(path: &Path, n: usize) -> Result<Vec<bool>> {
    let s =
        codedb_cli::io::load_labels(path).with_context(|| format!("--split {}", path.display()))?;
    if s.len() != n {
        bail!(
            "--split {}: {} entries for {n} data rows",
            path.display(),
            s.len()
        );
    }
    Ok(s.into_iter().map(|v| v != 0).collect())
}

/// A seeded split with a fifth of the rows (at least one) as test rows (1), the rest train (0).
pub(crate) fn random_split(n: usize, seed: u64) -> Vec<i32> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let mut split = vec![0i32; n];
    for &i in order.iter().take((n / 5).max(1)) {
        split[i] = 1;
    }
    split
}
