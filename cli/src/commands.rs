//! The write and query commands: argument plumbing over the library, nothing more.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use codedb::classes::{ClassError, ListAssignment};
use codedb::model::{Model, PipelineSpec, TrainEvent, TrainOptions, train as train_model};
use codedb::storage::{
    AddOptions, ClassStats, CompactionPolicy, MergeReason, SkippedManifest, StorageError,
    list_versions,
};
use codedb_cli::demo::labels_u32;

use crate::args::usage;
use crate::inputs;
use crate::out::{errln, outln};
use crate::progress;

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
            let (x, y) = codedb_cli::demo::builtin_digits(&dir.join("data"))?;
            (x, y, "built-in UCI/sklearn digits (1,797 x 64)".to_string())
        }
        Some(p) if codedb_cli::io::is_fashion_mnist_dir(&p) => {
            let lv = codedb_cli::io::load_fashion_mnist(&p)?;
            (
                lv.vectors,
                labels_u32(&lv.labels)?,
                format!("Fashion-MNIST ({})", p.display()),
            )
        }
        Some(p) => {
            let Some(l) = labels else {
                usage!(
                    "--data {}: not a Fashion-MNIST directory, so it needs --labels",
                    p.display()
                );
            };
            let x = codedb_cli::io::load_vectors(&p)?;
            let y = inputs::labels(Some(&l))?.unwrap_or_default();
            if y.len() != x.nrows() {
                bail!("{}: {} labels for {} rows", l.display(), y.len(), x.nrows());
            }
            (x, y, p.display().to_string())
        }
    };
    let quiet = json;
    let report = codedb_cli::demo::run_demo(&dir, x.view(), &y, &name, seed, &mut |s| {
        if !quiet {
            errln!("{s}");
        }
    })?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "\n{}: {} database rows, {} queries, {}-D; k = {}",
        report.data,
        report.database_rows,
        report.queries,
        report.dim,
        codedb_cli::demo::DEMO_K
    );
    outln!(
        "{:<18} {:>6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10}",
        "pipeline",
        "bytes",
        "mAP",
        "recall@10",
        "class P@10",
        "train s",
        "build s",
        "ms/query"
    );
    for r in &report.rows {
        outln!(
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
    outln!(
        "(mAP: ITQ's Euclidean protocol against exact float search, neighbours within the mean \
         50th-neighbour distance; recall@10: share of the exact float 10 nearest neighbours \
         found in the top 10)\n"
    );
    outln!("inspect {}:", report.index_dir.display());
    let r = codedb::storage::inspect::inspect_dir(&report.index_dir)?;
    outln!(
        "  version {}, {} live rows, {} deleted, {} segments, {} bytes on disk",
        r.version,
        r.rows,
        r.deleted,
        r.segments,
        r.bytes
    );
    outln!(
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

/// Arguments of `codedb train`.
pub struct TrainArgs<'a> {
    pub source: &'a TrainSource,
    pub pipeline: &'a str,
    pub out: &'a Path,
    pub force: bool,
    pub seed: u64,
    pub sample: Option<usize>,
    pub verbose: bool,
    pub json: bool,
}

/// A training progress bar: one bar whose label and unit follow the step being trained.
fn train_progress() -> (indicatif::ProgressBar, codedb::model::ProgressFn) {
    let bar = progress::spinner("training");
    let b = bar.clone();
    let unit: Mutex<&'static str> = Mutex::new("");
    let f: codedb::model::ProgressFn = Arc::new(move |e: &TrainEvent| match e {
        TrainEvent::Progress {
            step,
            unit: u,
            done,
            total,
        } => {
            if let Ok(mut last) = unit.lock()
                && *last != *u
            {
                b.set_style(progress::counted(u));
                *last = u;
            }
            b.set_length(*total);
            b.set_position(*done);
            b.set_message(step.clone());
        }
        // Shown whether or not the bar is (a hidden bar's `println` drops lines).
        TrainEvent::Message(m) => b.suspend(|| errln!("{m}")),
    });
    (bar, f)
}

pub fn train(a: &TrainArgs<'_>) -> Result<ExitCode> {
    let pipeline = a.pipeline;
    let spec = match PipelineSpec::parse(pipeline) {
        Ok(s) => s,
        Err(e) => usage!("--pipeline {pipeline}: {e}"),
    };
    if a.out.exists() && !a.force {
        bail!(
            "{}: already exists (pass --force to replace it)",
            a.out.display()
        );
    }
    let (bar, progress) = train_progress();
    let opts = TrainOptions {
        seed: a.seed,
        sample: a.sample,
        verbose: a.verbose,
        progress: Some(progress),
        ..TrainOptions::default()
    };
    let (model, report) = match a.source {
        TrainSource::Data { data, labels } => {
            let x = codedb_cli::io::load_vectors(data)?;
            let labels = labels
                .as_deref()
                .map(|p| -> Result<Arc<[i64]>> {
                    let l = codedb_cli::io::load_labels(p)?;
                    if l.len() != x.nrows() {
                        bail!("{}: {} labels for {} rows", p.display(), l.len(), x.nrows());
                    }
                    Ok(l.into())
                })
                .transpose()?;
            if spec.is_supervised() && labels.is_none() {
                usage!("--pipeline {pipeline}: learns from class labels: pass --labels");
            }
            train_model(&spec, x.view(), &TrainOptions { labels, ..opts })
                .with_context(|| format!("training {pipeline} on {}", data.display()))?
        }
        TrainSource::Index(dir) => {
            let snap = crate::recovery_cmd::open_snapshot(dir)?;
            codedb::search::train_from_index(&snap, &spec, &opts).with_context(|| {
                format!(
                    "training {pipeline} on the codes of index {}",
                    dir.display()
                )
            })?
        }
    };
    bar.finish_and_clear();
    if a.verbose && !a.json {
        for (i, l) in report.itq_loss.iter().enumerate() {
            outln!("itq iteration {i}: quantisation loss {l:.6}");
        }
    }
    let bytes = model.to_model_file().to_bytes()?;
    write_new_file(a.out, &bytes, a.force)?;
    let out = a.out;
    if a.json {
        outln!(
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
        outln!(
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

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, synced, then
/// renamed over `path` (`replace`) or linked to it only if `path` still does not exist.
fn write_new_file(path: &Path, bytes: &[u8], replace: bool) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let what = || path.display().to_string();
    let mut tmp = tempfile::Builder::new()
        .prefix(".codedb-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(what)?;
    tmp.write_all(bytes).with_context(what)?;
    tmp.as_file().sync_all().with_context(what)?;
    if replace {
        tmp.persist(path).map_err(|e| e.error).with_context(what)?;
    } else {
        tmp.persist_noclobber(path)
            .map_err(|e| e.error)
            .with_context(|| format!("{}: already exists? (pass --force to replace it)", what()))?;
    }
    Ok(())
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

/// Arguments of `codedb add`.
pub struct AddArgs<'a> {
    pub dir: &'a Path,
    pub data: &'a Path,
    pub labels: Option<&'a Path>,
    pub ids: Option<&'a Path>,
    pub upsert: bool,
    /// With `upsert`: replaced rows stay in their classes' counts and sums.
    pub keep_class_stats: bool,
    pub lists: Option<&'a str>,
    pub json: bool,
}

pub fn add(a: &AddArgs<'_>) -> Result<ExitCode> {
    let lists = a
        .lists
        .map(|l| {
            ListAssignment::parse(l)
                .with_context(|| format!("--lists {l}: expected label or nearest"))
        })
        .transpose()?;
    let index = crate::recovery_cmd::open_writer(a.dir)?;
    let model = Model::from_model_file(index.model())?;
    let x = inputs::vectors_for(
        "--data",
        a.data,
        model.input_dim(),
        &inputs::index_model(a.dir),
    )?;
    let labels = inputs::labels(a.labels)?;
    let ids = inputs::ids(a.ids)?;
    let opts = AddOptions {
        ids: ids.as_deref(),
        labels: labels.as_deref(),
        lists,
    };
    let spinner = progress::spinner(&format!("encoding and adding {} rows", x.nrows()));
    let added = if a.upsert {
        index.upsert_descriptors_with(&model, x.view(), &opts, class_stats(a.keep_class_stats))
    } else {
        index
            .add_descriptors(&model, x.view(), &opts)
            .map(|ids| (ids, 0))
    };
    let (ids, replaced) = match added {
        Err(ClassError::Storage(StorageError::DuplicateId { dir, id })) => bail!(
            "{}: id {id} is already a live row (add --upsert replaces live rows); nothing added",
            dir.display()
        ),
        r => r.with_context(|| format!("adding {} to {}", a.data.display(), a.dir.display()))?,
    };
    let version = index.commit()?;
    spinner.finish_and_clear();
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "added": ids.len(), "ids": ids, "replaced": replaced, "version": version,
            })
        );
    } else {
        outln!(
            "added {} rows ({}{}), version {version}",
            ids.len(),
            id_summary(&ids),
            if a.upsert {
                format!("; replaced {replaced} live rows")
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Ids for a one-line report: a range when consecutive, else the first few.
fn id_summary(ids: &[u64]) -> String {
    const SHOWN: usize = 10;
    match ids {
        [] => "no ids".into(),
        [one] => format!("id {one}"),
        [first, .., last] if ids.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("ids {first}..={last}")
        }
        _ if ids.len() <= SHOWN => format!("ids {}", join(ids)),
        _ => format!(
            "ids {}, … ({} in all; --json lists them)",
            join(&ids[..SHOWN]),
            ids.len()
        ),
    }
}

fn join(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--keep-class-stats` as the library's choice.
fn class_stats(keep: bool) -> ClassStats {
    if keep {
        ClassStats::Keep
    } else {
        ClassStats::Update
    }
}

pub fn delete(
    dir: &Path,
    mut ids: Vec<u64>,
    ids_file: Option<&Path>,
    ignore_missing: bool,
    keep_class_stats: bool,
    json: bool,
) -> Result<ExitCode> {
    if let Some(f) = ids_file {
        ids.extend(codedb_cli::io::read_ids(f)?);
    }
    let index = crate::recovery_cmd::open_writer(dir)?;
    let (live, missing) = if ignore_missing {
        // No writes are staged yet, so the snapshot is what the delete will see.
        let snap = index.snapshot();
        let mut live = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            if snap.get(id)?.is_some() {
                live.push(id);
            } else {
                missing.push(id);
            }
        }
        (live, missing)
    } else {
        (ids, Vec::new())
    };
    let version = if live.is_empty() && ignore_missing {
        index.version()
    } else {
        match index.delete_with(&live, class_stats(keep_class_stats)) {
            Err(StorageError::UnknownId { dir, id }) => bail!(
                "{}: id {id} is not a live row; nothing deleted (--ignore-missing skips such ids)",
                dir.display()
            ),
            r => r?,
        }
        index.commit()?
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "deleted": live.len(), "missing": missing, "version": version,
                "class_stats": if keep_class_stats { "kept" } else { "updated" },
            })
        );
    } else {
        let skipped = if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped {} not live: {}",
                missing.len(),
                id_summary(&missing)
            )
        };
        let committed = if live.is_empty() {
            format!("nothing to commit (version {version})")
        } else {
            format!("version {version}")
        };
        outln!(
            "deleted {} row{}{skipped}, {committed}{}",
            live.len(),
            if live.len() == 1 { "" } else { "s" },
            if keep_class_stats && !live.is_empty() {
                " (class counts and sums kept)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compact(dir: &Path, full: bool, deleted_threshold: f64, json: bool) -> Result<ExitCode> {
    let policy = CompactionPolicy {
        full,
        max_deleted_fraction: deleted_threshold,
        ..CompactionPolicy::default()
    };
    let index = crate::recovery_cmd::open_writer(dir)?;
    let spinner = progress::spinner("compacting");
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
            Err(e) => r.gc_error = Some(Arc::new(e)),
        }
    }
    spinner.finish_and_clear();
    if let Some(e) = &r.gc_error {
        errln!("codedb: warning: the compaction is committed, but garbage collection failed: {e}");
    }
    if json {
        let mut v = serde_json::to_value(&r)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("sealed_log_rows".into(), log_rows.into());
            o.insert("sealed_version".into(), sealed.into());
        }
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(v) = sealed {
        outln!("sealed the active log ({log_rows} rows) into a segment: version {v}");
    }
    for m in &r.merges {
        outln!(
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
        Some(v) => outln!("compacted: version {v}, {} merge(s)", r.merges.len()),
        None => outln!("nothing to compact (version {})", r.based_on),
    }
    if r.deleted_rows_kept > 0 {
        outln!(
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
        outln!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        outln!(
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
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for x in &v {
            match (&x.error, x.rows, x.deleted) {
                (None, Some(rows), Some(deleted)) => outln!(
                    "{:>8}  {}  {rows} rows, {deleted} deleted",
                    x.version,
                    x.file
                ),
                (error, ..) => outln!(
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
        Some(r) => errln!(
            "codedb: warning: {}: {} older manifest(s) do not read; garbage collection refuses \
             until `codedb recover {} --to-version {r}` sets them aside (or they are restored)",
            dir.display(),
            damaged.len(),
            dir.display()
        ),
        None => errln!("codedb: error: {}: no manifest reads", dir.display()),
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
    use codedb_cli::bench::scan_case::{BenchKind, ScanBench, run_scan_bench};
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
        for &t in &threads {
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
                let res = run_scan_bench(dir, &b, &caches, &mut |n| bar.set_position(n))?;
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
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?);
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
    use codedb_cli::bench::encode_case::{EncodeBench, run_encode_bench};
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
