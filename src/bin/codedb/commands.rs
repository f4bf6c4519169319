//! The write and query commands: argument plumbing over the library, nothing more.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use codedb::classes::{AddOptions, ListAssignment};
use codedb::demo::labels_u32;
use codedb::model::{Model, PipelineSpec, TrainEvent, TrainOptions, train as train_model};
use codedb::storage::{CompactionPolicy, MergeReason, SkippedManifest, list_versions};

fn load_labels(path: Option<&Path>) -> Result<Option<Vec<u32>>> {
    path.map(|p| -> Result<Vec<u32>> {
        let l = codedb::io::load_labels(p)?;
        labels_u32(&l).with_context(|| format!("{}", p.display()))
    })
    .transpose()
}

fn load_ids(path: Option<&Path>) -> Result<Option<Vec<u64>>> {
    Ok(path.map(codedb::io::read_ids).transpose()?)
}

pub fn demo(
    dir: Option<PathBuf>,
    data: Option<PathBuf>,
    labels: Option<PathBuf>,
    seed: u64,
    json: bool,
) -> Result<ExitCode> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "codedb-demo-{}",
            codedb::format::FileId::generate().to_hex()
        )),
    };
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!("{}: the demo needs a new or empty directory", dir.display());
    }
    let (x, y, name) = match data {
        None => {
            let (x, y) = codedb::demo::builtin_digits(&dir.join("data"))?;
            (x, y, "built-in UCI/sklearn digits (1,797 x 64)".to_string())
        }
        Some(p) if codedb::io::is_fashion_mnist_dir(&p) => {
            let lv = codedb::io::load_fashion_mnist(&p)?;
            (
                lv.vectors,
                labels_u32(&lv.labels)?,
                format!("Fashion-MNIST ({})", p.display()),
            )
        }
        Some(p) => {
            let Some(l) = labels else {
                bail!("--data {} needs --labels", p.display());
            };
            let x = codedb::io::load_vectors(&p)?;
            let y = load_labels(Some(&l))?.unwrap_or_default();
            if y.len() != x.nrows() {
                bail!("{}: {} labels for {} rows", l.display(), y.len(), x.nrows());
            }
            (x, y, p.display().to_string())
        }
    };
    let quiet = json;
    let report = codedb::demo::run_demo(&dir, x.view(), &y, &name, seed, &mut |s| {
        if !quiet {
            eprintln!("{s}");
        }
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "\n{}: {} database rows, {} queries, {}-D; k = {}",
        report.data,
        report.database_rows,
        report.queries,
        report.dim,
        codedb::demo::DEMO_K
    );
    println!(
        "{:<18} {:>6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10}",
        "pipeline", "bytes", "mAP", "recall@10", "class P@10", "train s", "build s", "ms/query"
    );
    for r in &report.rows {
        println!(
            "{:<18} {:>6} {:>10.3} {:>10.3} {:>10.3} {:>9.3} {:>9.3} {:>10.4}",
            r.pipeline,
            r.bytes_per_code,
            r.map_vs_exact,
            r.recall_at_10,
            r.class_precision_at_10,
            r.train_s,
            r.build_s,
            r.query_ms
        );
    }
    println!(
        "(mAP: ITQ's Euclidean protocol against exact float search, neighbours within the mean \
         50th-neighbour distance; recall@10: share of the exact float 10 nearest neighbours \
         found in the top 10)\n"
    );
    println!("inspect {}:", report.index_dir.display());
    let r = codedb::storage::inspect::inspect_dir(&report.index_dir)?;
    println!(
        "  version {}, {} live rows, {} deleted, {} segments, {} bytes on disk",
        r.version, r.rows, r.deleted, r.segments, r.bytes
    );
    println!(
        "\nThe indexes are in {} — try: codedb inspect {}",
        dir.display(),
        report.index_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What `codedb train` learns from.
pub enum TrainSource {
    /// Vectors (and optional labels) from files.
    Data {
        data: PathBuf,
        labels: Option<PathBuf>,
    },
    /// The decoded PQ codes and labels of an index.
    Index(PathBuf),
}

pub fn train(
    source: &TrainSource,
    pipeline: &str,
    out: &Path,
    seed: u64,
    sample: Option<usize>,
    verbose: bool,
    json: bool,
) -> Result<ExitCode> {
    let spec = PipelineSpec::parse(pipeline).context("--pipeline")?;
    if out.exists() {
        bail!(
            "{}: already exists (model files are never overwritten)",
            out.display()
        );
    }
    let bar = crate::progress_bar(0, "training");
    let b2 = bar.clone();
    let progress: codedb::model::ProgressFn = Arc::new(move |e: &TrainEvent| match e {
        TrainEvent::Progress { step, done, total } => {
            b2.set_length(*total);
            b2.set_position(*done);
            b2.set_message(step.clone());
        }
        TrainEvent::Message(m) => b2.println(m),
    });
    let opts = TrainOptions {
        seed,
        sample,
        verbose,
        progress: Some(progress),
        ..TrainOptions::default()
    };
    let (model, report) = match source {
        TrainSource::Data { data, labels } => {
            let x = codedb::io::load_vectors(data)?;
            let labels = labels
                .as_deref()
                .map(|p| -> Result<Arc<[i64]>> {
                    let l = codedb::io::load_labels(p)?;
                    if l.len() != x.nrows() {
                        bail!("{}: {} labels for {} rows", p.display(), l.len(), x.nrows());
                    }
                    Ok(l.into())
                })
                .transpose()?;
            if spec.is_supervised() && labels.is_none() {
                bail!("--pipeline {pipeline}: learns from class labels: pass --labels");
            }
            train_model(&spec, x.view(), &TrainOptions { labels, ..opts })?
        }
        TrainSource::Index(dir) => {
            let snap = crate::recovery_cmd::open_snapshot(dir)?;
            codedb::model::classify::train_from_index(&snap, &spec, &opts)?
        }
    };
    bar.finish_and_clear();
    if verbose && !json {
        for (i, l) in report.itq_loss.iter().enumerate() {
            println!("itq iteration {i}: quantisation loss {l:.6}");
        }
    }
    let bytes = model.to_model_file().to_bytes()?;
    let tmp = out.with_extension("model.tmp");
    std::fs::write(&tmp, &bytes).with_context(|| tmp.display().to_string())?;
    std::fs::rename(&tmp, out).with_context(|| out.display().to_string())?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "model": out, "pipeline": report.canonical, "input_dim": model.input_dim(),
                "code_kind": model.code_kind().name(), "code_bytes": model.code_bytes(),
                "code_bits": model.code_bits(), "training_rows": report.training_rows,
                "itq_loss": report.itq_loss, "train_s": report.total_seconds,
                "pca": report.pca.as_ref().map(|p| serde_json::json!({
                    "eigenvalues": p.eigenvalues, "total_variance": p.total_variance,
                    "explained_variance_ratio": p.explained_variance_ratio,
                    "components": pca_components(&model),
                })),
                "pq": report.pq.as_ref().map(|q| serde_json::json!({
                    "mse": q.mse, "training_points": q.training_points, "splits": q.splits,
                })),
            })
        );
    } else {
        println!(
            "wrote {} ({}: {}-D -> {} codes of {} bytes, trained on {} rows)",
            out.display(),
            report.canonical,
            model.input_dim(),
            model.code_kind().name(),
            model.code_bytes(),
            report.training_rows
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows of the last PCA projection (a linear stage that carries eigenvalues), for peer
/// comparisons (`tools/compare_peers.py`).
fn pca_components(model: &Model) -> Option<Vec<Vec<f32>>> {
    model.stages().iter().rev().find_map(|s| match s {
        codedb::model::Stage::Linear(l) if l.eigenvalues().is_some() => {
            Some(l.weight().rows().into_iter().map(|r| r.to_vec()).collect())
        }
        _ => None,
    })
}

pub fn add(
    dir: &Path,
    data: &Path,
    labels: Option<&Path>,
    ids: Option<&Path>,
    lists: Option<&str>,
) -> Result<ExitCode> {
    let lists = lists
        .map(|l| {
            ListAssignment::parse(l)
                .with_context(|| format!("--lists {l}: expected label or nearest"))
        })
        .transpose()?;
    let index = crate::recovery_cmd::open_writer(dir)?;
    let model = Model::from_model_file(index.model())?;
    let x = codedb::io::load_vectors(data)?;
    let labels = load_labels(labels)?;
    let ids = load_ids(ids)?;
    let added = index
        .add_descriptors(
            &model,
            x.view(),
            &AddOptions {
                ids: ids.as_deref(),
                labels: labels.as_deref(),
                lists,
            },
        )
        .with_context(|| format!("adding {} to {}", data.display(), dir.display()))?;
    let v = index.commit()?;
    println!("added {} rows, version {v}", added.len());
    Ok(ExitCode::SUCCESS)
}

pub fn delete(dir: &Path, mut ids: Vec<u64>, ids_file: Option<&Path>) -> Result<ExitCode> {
    if let Some(f) = ids_file {
        ids.extend(codedb::io::read_ids(f)?);
    }
    let index = crate::recovery_cmd::open_writer(dir)?;
    index.delete(&ids)?;
    let v = index.commit()?;
    println!("deleted {} rows, version {v}", ids.len());
    Ok(ExitCode::SUCCESS)
}

pub fn compact(dir: &Path, full: bool, deleted_threshold: f64, json: bool) -> Result<ExitCode> {
    let policy = CompactionPolicy {
        full,
        max_deleted_fraction: deleted_threshold,
        ..CompactionPolicy::default()
    };
    let index = crate::recovery_cmd::open_writer(dir)?;
    // Rows still in the active log join the merge: seal them into a segment first.
    let log_rows = index.snapshot().active_log().map_or(0, |l| l.rows);
    let sealed = if log_rows > 0 {
        Some(index.commit_sealed()?)
    } else {
        None
    };
    let mut r = index.compact(&policy)?;
    if sealed.is_some() && r.gc.is_none() && r.gc_error.is_none() {
        // No merge ran (so no GC after it): remove the sealed log file now if no retained
        // version still names it.
        match index.gc() {
            Ok(g) => r.gc = Some(g),
            Err(e) => r.gc_error = Some(e.to_string()),
        }
    }
    if let Some(e) = &r.gc_error {
        eprintln!(
            "codedb: warning: the compaction is committed, but garbage collection failed: {e}"
        );
    }
    if json {
        let mut v = serde_json::to_value(&r)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("sealed_log_rows".into(), log_rows.into());
            o.insert("sealed_version".into(), sealed.into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(v) = sealed {
        println!("sealed the active log ({log_rows} rows) into a segment: version {v}");
    }
    for m in &r.merges {
        println!(
            "merged {} segment(s) ({}): {} rows kept, {} deleted rows dropped",
            m.sources.len(),
            match m.reason {
                MergeReason::Tier => "size tier",
                MergeReason::Deletes => "deleted share at or above the threshold",
                MergeReason::Full => "--full",
            },
            m.rows,
            m.dropped
        );
    }
    match r.version {
        Some(v) => println!("compacted: version {v}, {} merge(s)", r.merges.len()),
        None => println!("nothing to compact (version {})", r.based_on),
    }
    if r.deleted_rows_kept > 0 {
        println!(
            "{} deleted row(s) stay stored: no segment holding them has {}% or more of its rows \
             deleted (--deleted-threshold 0 or --full drops them)",
            r.deleted_rows_kept,
            deleted_threshold * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn gc(dir: &Path, json: bool) -> Result<ExitCode> {
    let index = crate::recovery_cmd::open_writer(dir)?;
    let r = index.gc()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "removed {} file(s), {} bytes; kept versions {:?}",
            r.removed.len(),
            r.removed_bytes,
            r.kept_versions
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Every manifest, a damaged one marked with its reason; exit 1 when any is damaged.
pub fn versions(dir: &Path, json: bool) -> Result<ExitCode> {
    let v = list_versions(dir)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for x in &v {
            match (&x.error, x.rows, x.deleted) {
                (None, Some(rows), Some(deleted)) => println!(
                    "{:>8}  {}  {rows} rows, {deleted} deleted",
                    x.version, x.file
                ),
                (error, ..) => println!(
                    "{:>8}  {}  DAMAGED: {}",
                    x.version,
                    x.file,
                    error.as_deref().unwrap_or("does not read")
                ),
            }
        }
    }
    let damaged: Vec<_> = v.iter().filter(|x| x.is_damaged()).collect();
    if damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let readable = v.iter().rev().find(|x| !x.is_damaged()).map(|x| x.version);
    let skipped: Vec<SkippedManifest> = damaged
        .iter()
        .filter(|x| readable.is_none_or(|r| x.version > r))
        .map(|x| SkippedManifest {
            version: x.version,
            file: x.file.clone(),
            error: x.error.clone().unwrap_or_default(),
        })
        .collect();
    match readable {
        Some(r) if !skipped.is_empty() => crate::recovery_cmd::warn_fell_back(dir, r, &skipped),
        Some(r) => eprintln!(
            "codedb: warning: {}: {} older manifest(s) do not read; garbage collection refuses \
             until `codedb recover {} --to-version {r}` sets them aside (or they are restored)",
            dir.display(),
            damaged.len(),
            dir.display()
        ),
        None => eprintln!("codedb: error: {}: no manifest reads", dir.display()),
    }
    Ok(ExitCode::from(1))
}

#[allow(clippy::too_many_arguments)]
pub fn bench_scan(
    codes: u64,
    kinds: &[String],
    queries: &[usize],
    k: usize,
    threads: &[usize],
    dir: &Path,
    cache: &str,
    repeats: usize,
    seed: u64,
    json: bool,
) -> Result<ExitCode> {
    use codedb::bench::scan_case::{BenchKind, ScanBench, run_scan_bench};
    if codes == 0 || k == 0 {
        bail!("--codes and --k must be at least 1");
    }
    let caches: Vec<&'static str> = match cache {
        "both" => vec!["hot", "cold"],
        "cold" => vec!["cold"],
        _ => vec!["hot"],
    };
    let mut all = Vec::new();
    for kname in kinds {
        let kind = BenchKind::parse(kname)
            .with_context(|| format!("--kind {kname}: expected hammingB, pq8xM or pq4xM"))?;
        for &t in threads {
            for &nq in queries {
                if nq == 0 || t == 0 {
                    bail!("--queries and --threads must be at least 1");
                }
                let bar = crate::progress_bar(codes, "generating codes");
                let b = ScanBench {
                    kind,
                    codes,
                    queries: nq,
                    k,
                    threads: t,
                    repeats,
                    seed,
                };
                let res = run_scan_bench(dir, &b, &caches, &mut |n| bar.set_position(n))?;
                bar.finish_and_clear();
                for r in res {
                    if !json {
                        println!(
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
                    }
                    all.push(r);
                }
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn bench_encode(
    pipelines: &[String],
    dim: usize,
    rows: usize,
    train_rows: usize,
    threads: &[usize],
    seed: u64,
    json: bool,
) -> Result<ExitCode> {
    use codedb::bench::encode_case::{EncodeBench, run_encode_bench};
    let mut all = Vec::new();
    for p in pipelines {
        for &t in threads {
            let spinner = if std::io::stderr().is_terminal() {
                let s = indicatif::ProgressBar::new_spinner();
                s.set_message(format!(
                    "training and encoding {} on {t} thread(s)",
                    p.trim()
                ));
                s.enable_steady_tick(std::time::Duration::from_millis(120));
                s
            } else {
                indicatif::ProgressBar::hidden()
            };
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
                println!(
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
        println!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(ExitCode::SUCCESS)
}
