//! `codedb demo`: the whole retrieval path on real data that ships with codedb — train models,
//! build on-disk indexes, search, measure against exact float search, then append, delete,
//! compact and inspect.
//!
//! The quality table judges every method against exact float search twice: recall@10 (share of
//! the exact 10 nearest neighbours found in the top 10 of the on-disk search) and the mAP of ITQ
//! (Gong et al., TPAMI 2013, §4.2) over the full ranking, with exact-distance neighbours within
//! the mean 50th-neighbour distance as ground truth ([`crate::eval::euclidean_ground_truth`]).
//!
//! Default data: the 1,797 UCI/sklearn handwritten digits (8×8, grey levels 0..16; CC BY 4.0,
//! see `tests/data/digits/README.md`), compiled into the binary so the demo needs no set-up.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::{Array2, ArrayView2, Axis};
use serde::Serialize;

use crate::error::Error;
use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{CompactionPolicy, Config, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use codedb::{SearchMode, SearchParams};

const DIGITS_PIXELS: &[u8] = include_bytes!("../../tests/data/digits/pixels.npy");
const DIGITS_LABELS: &[u8] = include_bytes!("../../tests/data/digits/labels.npy");

/// The pipelines the demo compares (paper names: ITQ §4, PQ as in FAISS).
pub const DEMO_PIPELINES: &[&str] = &["pca-itq:64", "pca-rr:64", "lsh:64", "pq:8x8"];

/// Neighbours ranked per query.
pub const DEMO_K: usize = 10;

/// One row of the quality table.
#[derive(Debug, Clone, Serialize)]
pub struct DemoRow {
    pub pipeline: String,
    pub bytes_per_code: usize,
    /// Fraction of the exact float 10-NN found in the top 10.
    pub recall_at_10: f64,
    /// Fraction of the top 10 with the query's class.
    pub class_precision_at_10: f64,
    /// mAP over the full ranking with exact-float Euclidean neighbours as ground truth (ITQ
    /// §4.2); 1 for exact search up to distance ties.
    pub map_vs_exact: f64,
    pub train_s: f64,
    pub build_s: f64,
    pub query_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    pub data: String,
    pub database_rows: usize,
    pub queries: usize,
    pub dim: usize,
    pub rows: Vec<DemoRow>,
    /// The index kept for the append / delete / compact steps.
    pub index_dir: PathBuf,
    pub steps: Vec<String>,
}

/// The built-in digits as (vectors, labels).
pub fn builtin_digits(scratch: &Path) -> Result<(Array2<f32>, Vec<u32>), Error> {
    let px = scratch.join("digits-pixels.npy");
    let lb = scratch.join("digits-labels.npy");
    let io = |e: std::io::Error| Error::InvalidArgument {
        argument: "demo data".into(),
        detail: format!("cannot write {}: {e}", scratch.display()),
    };
    std::fs::create_dir_all(scratch).map_err(io)?;
    std::fs::write(&px, DIGITS_PIXELS).map_err(io)?;
    std::fs::write(&lb, DIGITS_LABELS).map_err(io)?;
    let x = crate::io::load_vectors(&px)?;
    let y = labels_u32(&crate::io::load_labels(&lb)?)?;
    Ok((x, y))
}

/// Class labels as u32, refusing negatives.
pub fn labels_u32(l: &[i64]) -> Result<Vec<u32>, Error> {
    l.iter()
        .map(|&v| {
            u32::try_from(v).map_err(|_| Error::InvalidArgument {
                argument: "labels".into(),
                detail: format!("label {v} is not in 0..2^32"),
            })
        })
        .collect()
}

/// Runs the demo in `dir` (created; must not hold earlier demo output) on `data`/`labels`
/// (every `holdout`-th row becomes a query). `say` receives progress lines.
pub fn run_demo(
    dir: &Path,
    data: ArrayView2<f32>,
    labels: &[u32],
    data_name: &str,
    seed: u64,
    say: &mut dyn FnMut(&str),
) -> Result<DemoReport, Error> {
    let n = data.nrows();
    let q_rows: Vec<usize> = (0..n).filter(|i| i % 10 == 0).take(1000).collect();
    let db_rows: Vec<usize> = (0..n).filter(|i| i % 10 != 0).collect();
    let db = data.select(Axis(0), &db_rows);
    let qs = data.select(Axis(0), &q_rows);
    let db_labels: Vec<u32> = db_rows.iter().map(|&i| labels[i]).collect();
    let q_labels: Vec<u32> = q_rows.iter().map(|&i| labels[i]).collect();
    say(&format!(
        "data: {data_name}: {} database rows, {} queries, {}-D",
        db.nrows(),
        qs.nrows(),
        data.ncols()
    ));
    let t = Instant::now();
    let exact = crate::eval::knn_l2(db.view(), qs.view(), DEMO_K)?;
    let exact_ms = t.elapsed().as_secs_f64() * 1e3 / qs.nrows() as f64;
    say("exact Euclidean ground truth (mean 50th-neighbour distance)");
    let truth = crate::eval::euclidean_ground_truth(
        db.view(),
        qs.view(),
        crate::eval::ITQ_NEIGHBOUR_RANK,
        1000,
        seed,
    )?
    .truth;
    let map_of = |model: &codedb::model::Model| -> Result<f64, Error> {
        let ranked = crate::eval::rank_with_model(model, db.view(), qs.view(), db.nrows())?;
        let rankings: Vec<Vec<u32>> = ranked
            .into_iter()
            .map(|l| l.into_iter().map(|(_, i)| i).collect())
            .collect();
        Ok(crate::eval::mean_average_precision(&truth, &rankings)?.mean)
    };
    let (float_model, _) = train(
        &PipelineSpec::parse("float")?,
        db.view(),
        &TrainOptions::default(),
    )?;
    let mut rows = vec![DemoRow {
        pipeline: "exact float (L2)".into(),
        bytes_per_code: 4 * data.ncols(),
        recall_at_10: 1.0,
        class_precision_at_10: class_precision(
            exact
                .iter()
                .map(|l| l.iter().map(|nb| db_labels[nb.index as usize]).collect()),
            &q_labels,
        ),
        map_vs_exact: map_of(&float_model)?,
        train_s: 0.0,
        build_s: 0.0,
        query_ms: exact_ms,
    }];
    let ids: Vec<u64> = db_rows.iter().map(|&i| i as u64).collect();
    let mut kept = None;
    for spec in DEMO_PIPELINES {
        say(&format!("{spec}: training"));
        let parsed = PipelineSpec::parse(spec)?;
        let t = Instant::now();
        let (model, _) = train(
            &parsed,
            db.view(),
            &TrainOptions {
                seed,
                ..TrainOptions::default()
            },
        )?;
        let train_s = t.elapsed().as_secs_f64();
        let idir = dir.join(spec.replace(':', "-"));
        let t = Instant::now();
        let index = codedb::Index::build(
            &idir,
            &model,
            db.view(),
            &codedb::BuildOptions {
                ids: Some(&ids),
                labels: Some(&db_labels),
                classes_from_labels: false,
                // Seal every commit into a segment so compaction has segments to merge.
                config: Config {
                    seal_bytes: 4096,
                    ..Config::default()
                },
                ..codedb::BuildOptions::default()
            },
            &mut |_| {},
        )?;
        let build_s = t.elapsed().as_secs_f64();
        let snap = index.snapshot();
        let mode = mode_of(&model);
        let t = Instant::now();
        let hits = snap.search(qs.view(), &SearchParams::new(DEMO_K, mode))?;
        let query_ms = t.elapsed().as_secs_f64() * 1e3 / qs.nrows() as f64;
        let mut found = 0usize;
        for (h, e) in hits.iter().zip(&exact) {
            let want: std::collections::HashSet<u64> = e
                .iter()
                .map(|nb| db_rows[nb.index as usize] as u64)
                .collect();
            found += h.iter().filter(|x| want.contains(&x.id)).count();
        }
        rows.push(DemoRow {
            pipeline: spec.to_string(),
            bytes_per_code: model.code_bytes(),
            recall_at_10: found as f64 / (DEMO_K * qs.nrows()) as f64,
            class_precision_at_10: class_precision(
                hits.iter()
                    .map(|l| l.iter().map(|h| labels[h.id as usize]).collect()),
                &q_labels,
            ),
            map_vs_exact: map_of(&model)?,
            train_s,
            build_s,
            query_ms,
        });
        if kept.is_none() {
            kept = Some((idir, index, model));
        }
    }
    let (index_dir, index, model) = kept.ok_or_else(|| Error::InvalidArgument {
        argument: "pipelines".into(),
        detail: "none".into(),
    })?;
    let steps = maintenance_steps(&index, &model, qs.view(), &q_rows, &q_labels, &ids)?;
    for s in &steps {
        say(s);
    }
    Ok(DemoReport {
        data: data_name.to_string(),
        database_rows: db.nrows(),
        queries: qs.nrows(),
        dim: data.ncols(),
        rows,
        index_dir,
        steps,
    })
}

/// The index's life after the quality table, on the first pipeline's index: append the queries
/// as new rows, delete every 97th database row, compact, and search for an appended query
/// (which finds itself first). Each step as a line of the report.
fn maintenance_steps(
    index: &codedb::Index,
    model: &codedb::model::Model,
    qs: ArrayView2<f32>,
    q_rows: &[usize],
    q_labels: &[u32],
    ids: &[u64],
) -> Result<Vec<String>, Error> {
    let mut steps = Vec::new();
    // Append the queries as new images, delete a few rows, compact.
    let q_ids: Vec<u64> = q_rows.iter().map(|&i| i as u64).collect();
    index.add_encoded(
        &RowBatch::new(&model.encode(qs)?)
            .with_ids(&q_ids)
            .with_labels(q_labels),
        &EncodedOptions::default(),
    )?;
    let v = index.commit()?;
    steps.push(format!("appended {} rows (version {v})", q_ids.len()));
    let gone: Vec<u64> = ids.iter().copied().step_by(97).collect();
    index.delete(&gone)?;
    let v = index.commit()?;
    steps.push(format!("deleted {} rows (version {v})", gone.len()));
    let report = index.compact(&CompactionPolicy::full())?;
    let snap: Snapshot = index.snapshot();
    steps.push(format!(
        "compacted into version {} ({} segment(s), {} live rows, {} deleted rows stored)",
        report.version.unwrap_or(v),
        snap.segment_count(),
        snap.live_rows(),
        snap.deleted_rows()
    ));
    // A query that was appended finds itself first.
    let hit = snap.search(
        qs.slice(ndarray::s![0..1, ..]),
        &SearchParams::new(1, mode_of(model)),
    )?;
    steps.push(match hit.first().and_then(|l| l.first()) {
        Some(h) => format!(
            "query row {} finds id {} first after the append",
            q_ids[0], h.id
        ),
        None => format!("query row {} finds nothing after the append", q_ids[0]),
    });
    Ok(steps)
}

impl DemoReport {
    /// The quality table as Markdown, as the docs show it: pipeline, bytes per code, mAP,
    /// recall@10 and class P@10, three decimals. Timings are left out: they are the machine's,
    /// not the method's, so the table is the same on every run with the same data and seed.
    pub fn markdown_table(&self) -> String {
        let mut s = String::from(
            "| pipeline | bytes/code | mAP | recall@10 | class P@10 |\n|---|---:|---:|---:|---:|\n",
        );
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {:.3} | {:.3} | {:.3} |\n",
                r.pipeline,
                r.bytes_per_code,
                r.map_vs_exact,
                r.recall_at_10,
                r.class_precision_at_10
            ));
        }
        s
    }
}

fn class_precision(lists: impl Iterator<Item = Vec<u32>>, q_labels: &[u32]) -> f64 {
    let mut hit = 0usize;
    let mut total = 0usize;
    for (l, &want) in lists.zip(q_labels) {
        total += l.len();
        hit += l.iter().filter(|&&c| c == want).count();
    }
    if total == 0 {
        0.0
    } else {
        hit as f64 / total as f64
    }
}

fn mode_of(model: &codedb::model::Model) -> SearchMode {
    SearchMode::default_for(model.code_kind())
}
