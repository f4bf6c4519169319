//! `codedb eval`: argument plumbing over `codedb_cli::eval::retrieval_eval`, a table or JSON out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use codedb::model::PipelineSpec;
use codedb_cli::eval::{EvalProgress, PipelineScores, RetrievalData, RetrievalOptions};

use crate::args::{self, usage};
use crate::out::outln;
use crate::progress;

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

pub(super) fn load_split(path: &Path, n: usize) -> Result<Vec<bool>> {
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

pub fn run(a: EvalArgs) -> Result<ExitCode> {
    // clap allows only these three tasks.
    if a.task == "text" {
        if a.plot.is_some() {
            usage!("--plot draws the retrieval figure; --task text has none");
        }
        return super::eval_text::run(&a);
    }
    if a.task == "classify" {
        if a.plot.is_some() {
            usage!("--plot draws the retrieval figure; --task classify has none");
        }
        return eval_classify(&a);
    }
    let plot = a
        .plot
        .as_deref()
        .map(|p| args::plot_target(p, "eval.svg"))
        .transpose()?;
    let specs = match PipelineSpec::parse_list(&a.pipelines) {
        Ok(s) => s,
        Err(e) => usage!("--pipelines: {e}"),
    };
    let (x, mut labels, mut split, name) = if codedb_cli::io::is_fashion_mnist_dir(&a.data) {
        let lv = codedb_cli::io::load_fashion_mnist(&a.data)?;
        let split: Vec<bool> = lv.split.iter().map(|&s| s != 0).collect();
        (
            lv.vectors,
            Some(lv.labels),
            Some(split),
            format!("Fashion-MNIST ({})", a.data.display()),
        )
    } else {
        let x = codedb_cli::io::load_vectors(&a.data)
            .with_context(|| format!("--data {}", a.data.display()))?;
        (x, None, None, a.data.display().to_string())
    };
    if let Some(p) = &a.labels {
        let l =
            codedb_cli::io::load_labels(p).with_context(|| format!("--labels {}", p.display()))?;
        if l.len() != x.nrows() {
            bail!(
                "--labels {}: {} labels for {} data rows",
                p.display(),
                l.len(),
                x.nrows()
            );
        }
        labels = Some(l);
    }
    if let Some(p) = &a.split {
        split = Some(load_split(p, x.nrows())?);
    }
    let opts = RetrievalOptions {
        queries: a.queries,
        runs: a.runs,
        seed: a.seed,
        precision_k: a.k,
        recall_r: a.recall.clone(),
        lookup_radius: a.radius,
        train_sample: a.train_sample,
        truth_sample: a.truth_sample,
        supervised: {
            codedb::model::SupervisedOptions {
                cca_rho: a.cca_rho.clone(),
                ..Default::default()
            }
        },
        ..RetrievalOptions::default()
    };
    // Steps (train a pipeline, encode, rank, score) differ in cost by orders of magnitude: a
    // count of them with no ETA.
    let bar = progress::steps(0, "evaluating");
    let report = codedb_cli::eval::retrieval_eval(
        RetrievalData {
            vectors: x.view(),
            labels: labels.as_deref(),
            split: split.as_deref(),
        },
        &specs,
        &opts,
        &mut |p: &EvalProgress| {
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            bar.set_message(p.step.clone());
        },
    )?;
    bar.finish_and_clear();
    if let Some(target) = &plot {
        let title = format!(
            "{name}: {} database rows, {} queries x {} run(s)",
            report.database_rows, report.queries, a.runs
        );
        target.write(&codedb_cli::plot::eval_plot(
            &report.pipelines,
            &title,
            target.format(),
        )?)?;
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report.pipelines)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{name}: {} database rows, {} queries per run, {} run(s); Euclidean neighbours within \
         {:.4} (mean 50-NN distance), {:.1} per query on average",
        report.database_rows,
        report.queries,
        a.runs,
        codedb_mean(&report.euclid_radius),
        report.mean_euclid_neighbours
    );
    print_table(&report.pipelines, &opts);
    Ok(ExitCode::SUCCESS)
}

fn codedb_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.4}"))
}

fn print_table(rows: &[PipelineScores], opts: &RetrievalOptions) {
    let mut head = format!(
        "{:<20} {:>5} {:>5} {:>8} {:>8} {:>8}",
        "pipeline",
        "bits",
        "bytes",
        "mAP-euc",
        "mAP-cls",
        format!("P@{}", opts.precision_k)
    );
    for r in &opts.recall_r {
        head.push_str(&format!(" {:>7}", format!("R@{r}")));
    }
    head.push_str(&format!(
        " {:>8} {:>8} {:>9} {:>8} {:>8} {:>8}",
        format!("r{}-P", opts.lookup_radius),
        format!("r{}-R", opts.lookup_radius),
        "train s",
        "encode s",
        "ms/query",
        "scan"
    ));
    outln!("{head}");
    for p in rows {
        let mut line = format!(
            "{:<20} {:>5} {:>5} {:>8.4} {:>8} {:>8}",
            p.pipeline,
            p.bits,
            p.bytes,
            p.map_euclid,
            opt(p.map_class),
            opt(p.precision_at_k)
        );
        for r in &opts.recall_r {
            line.push_str(&format!(
                " {:>7.4}",
                p.recall_at_r.get(&r.to_string()).copied().unwrap_or(0.0)
            ));
        }
        let (lp, lr) = p
            .lookup
            .as_ref()
            .map_or(("-".to_string(), "-".to_string()), |l| {
                (format!("{:.4}", l.precision), format!("{:.4}", l.recall))
            });
        line.push_str(&format!(
            " {:>8} {:>8} {:>9.3} {:>8.3} {:>8.3} {:>8}",
            lp, lr, p.train_s, p.encode_s, p.query_ms, p.scan
        ));
        outln!("{line}");
    }
    outln!(
        "(mAP-euc: Euclidean-neighbour mAP; mAP-cls, P@k: class labels; R@R: exact 1-NN in the \
         top R; r{r}-P/R: Hamming-ball radius {r} precision/recall, Euclidean truth; ms/query: \
         encode + top-{k} scan)",
        r = opts.lookup_radius,
        k = opts
            .precision_k
            .max(opts.recall_r.iter().copied().max().unwrap_or(1))
    );
}

/// `--task classify`: labels are required; the split is the data set's own (Fashion-MNIST),
/// `--split` (0 = train, non-zero = test), or else a seeded random fifth of the rows as test.
fn eval_classify(a: &EvalArgs) -> Result<ExitCode> {
    use codedb::model::{ClassifierSpec, ClassifyOptions};
    use codedb_cli::eval::classify_eval;
    if let Err(e) = ClassifierSpec::parse_list(&a.pipelines) {
        usage!("--pipelines: {e}");
    }
    let (x, mut labels, mut split) = if codedb_cli::io::is_fashion_mnist_dir(&a.data) {
        let lv = codedb_cli::io::load_fashion_mnist(&a.data)?;
        (lv.vectors, Some(lv.labels), Some(lv.split))
    } else {
        let x = codedb_cli::io::load_vectors(&a.data)
            .with_context(|| format!("--data {}", a.data.display()))?;
        (x, None, None)
    };
    if let Some(p) = &a.labels {
        labels = Some(
            codedb_cli::io::load_labels(p).with_context(|| format!("--labels {}", p.display()))?,
        );
    }
    let Some(labels) = labels else {
        usage!("--task classify needs --labels (or a Fashion-MNIST directory)");
    };
    if let Some(p) = &a.split {
        split = Some(
            load_split(p, x.nrows())?
                .into_iter()
                .map(i32::from)
                .collect(),
        );
    }
    let split = split.unwrap_or_else(|| random_split(x.nrows(), a.seed));
    let opts = ClassifyOptions {
        seed: a.seed,
        ..ClassifyOptions::default()
    };
    let bar = progress::spinner(&format!("classifiers: {}", a.pipelines));
    let rows = classify_eval(x.view(), &labels, &split, &a.pipelines, &opts);
    bar.finish_and_clear();
    let rows = rows.context("eval --task classify")?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        outln!(
            "{:<24} {:>5} {:>9} {:>9} {:>9} {:>9}",
            "pipeline",
            "dim",
            "top1 err",
            "top5 err",
            "train s",
            "test s"
        );
        for r in &rows {
            outln!(
                "{:<24} {:>5} {:>9.4} {:>9.4} {:>9.2} {:>9.3}",
                r.pipeline,
                r.dim,
                r.top1_error,
                r.top5_error,
                r.train_s,
                r.test_s
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A seeded split with a fifth of the rows (at least one) as test rows (1), the rest train (0).
pub(super) fn random_split(n: usize, seed: u64) -> Vec<i32> {
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
