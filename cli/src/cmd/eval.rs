//! `codedb eval`: argument plumbing over `codedb_cli::eval::retrieval_eval`, a table or JSON out.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use codedb::model::PipelineSpec;
use codedb_cli::eval::{EvalProgress, PipelineScores, RetrievalData, RetrievalOptions};

use super::eval_args::{EvalArgs, load_split, random_split};
use crate::args::{self, usage};
use crate::out::outln;
use crate::progress;

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
