//! `codedb build` and `codedb search`: argument plumbing over `codedb::build_index` and
//! `codedb::search`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use codedb::format::ModelFile;
use codedb::model::Model;
use codedb::search::{Hit, SearchMode, SearchParams, search_radius, search_with};
use codedb::storage::{Config, Snapshot};
use codedb::{build_index, demo::labels_u32};

/// `search --help` text after the options.
pub const SEARCH_HELP: &str = "\
Examples:
  codedb search my-index --queries q.npy -k 10
  codedb search my-index --queries q.npy -k 5 --mode asym --format json
  codedb search my-index --queries q.npy -k 10 --mode adc --rerank 100
  codedb search my-index --queries q.npy --radius 2          # codes of at most 32 bits

Modes (default: the natural one for the index's codes):
  hamming   binary codes; query binarised by the model; score = Hamming distance
  asym      binary codes; query projected, not binarised; score = sum of |margin| over the
            bits where the code disagrees with the query's sign (smaller is better)
  adc       PQ codes; squared L2 by asymmetric distance computation
  adc-ip    PQ codes; inner product (larger is better)
  float     float32/float16 codes; squared L2 to the projected query
  float-ip  float codes; inner product (larger is better)
  exact     stored vectors; exact squared L2 to the raw query
  exact-ip  stored vectors; exact inner product (larger is better)

--rerank R re-scores the R best by the mode's score exactly against the stored vectors
(squared L2, or inner product after the -ip modes) and keeps the k best; the index must store
vectors. --radius r (0, 1 or 2) returns every row whose code is within Hamming distance r of
the query's code, by hash lookup (binary codes of at most 32 bits); -k then caps the rows per
query (default: no cap). Without --radius, k larger than the number of live rows returns every
live row.

Output, best first, ties by smaller id. TSV: a header line, then `query rank id score`
(query and rank from 0). JSON: [{\"query\": i, \"results\": [{\"id\": …, \"score\": …}, …]}, …].

Exit codes: 0 success, 1 bad input or failed search, 2 usage error.";

/// Mode names `--mode` accepts.
pub const MODES: [&str; 8] = [
    "hamming", "asym", "adc", "adc-ip", "float", "float-ip", "exact", "exact-ip",
];

fn load_model(path: &Path) -> Result<Model> {
    let mf = ModelFile::open(path)?;
    Model::from_model_file(&mf).with_context(|| format!("{}", path.display()))
}

pub fn build(
    dir: &Path,
    model: &Path,
    data: &Path,
    labels: Option<&Path>,
    ids: Option<&Path>,
) -> Result<ExitCode> {
    let model = load_model(model)?;
    let x = codedb::io::load_vectors(data)?;
    let labels = labels
        .map(|p| -> Result<Vec<u32>> {
            let l = codedb::io::load_labels(p)?;
            labels_u32(&l).with_context(|| format!("{}", p.display()))
        })
        .transpose()?;
    let ids = ids.map(codedb::io::read_ids).transpose()?;
    let bar = crate::progress_bar(x.nrows() as u64, "encoding");
    let index = build_index(
        dir,
        &model,
        x.view(),
        ids.as_deref(),
        labels.as_deref(),
        Config::default(),
        &mut |n| bar.set_position(n as u64),
    )
    .with_context(|| format!("building {}", dir.display()))?;
    bar.finish_and_clear();
    println!(
        "built {}: version {}, {} rows",
        dir.display(),
        index.version(),
        index.snapshot().live_rows()
    );
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `codedb search`.
pub struct SearchArgs<'a> {
    pub dir: &'a Path,
    pub queries: &'a Path,
    pub k: Option<usize>,
    pub mode: Option<&'a str>,
    pub rerank: Option<usize>,
    pub radius: Option<u32>,
    pub threads: usize,
    pub format: &'a str,
}

pub fn search(a: &SearchArgs<'_>) -> Result<ExitCode> {
    let snap = Snapshot::open(a.dir)?;
    let model = Model::from_model_file(snap.model())
        .with_context(|| format!("the model of {}", a.dir.display()))?;
    let mode = match a.mode {
        Some(m) => SearchMode::parse(m)
            .with_context(|| format!("--mode {m}: expected one of {}", MODES.join(", ")))?,
        None => SearchMode::default_for(model.code_kind())
            .context("this index's codes have no search mode")?,
    };
    let q = codedb::io::load_vectors(a.queries)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads)
        .build()
        .context("--threads")?;
    let hits: Vec<Vec<Hit>> = match a.radius {
        Some(r) => {
            if a.rerank.is_some() {
                bail!("--radius returns every row within the radius; it does not take --rerank");
            }
            if mode != SearchMode::Hamming {
                bail!(
                    "--radius is a Hamming hash lookup; it does not take --mode {}",
                    mode.name()
                );
            }
            if a.k == Some(0) {
                bail!("invalid argument k: must be at least 1");
            }
            let mut h = pool
                .install(|| search_radius(&snap, &model, q.view(), r))
                .with_context(|| format!("--radius {r} on {}", a.dir.display()))?;
            if let Some(k) = a.k {
                for l in &mut h {
                    l.truncate(k);
                }
            }
            h
        }
        None => {
            let params = SearchParams {
                k: a.k.unwrap_or(10),
                mode,
                rerank: a.rerank,
                threads: a.threads,
            };
            pool.install(|| search_with(&snap, &model, q.view(), &params))
                .with_context(|| format!("searching {}", a.dir.display()))?
        }
    };
    match write_hits(&hits, a.format) {
        // A closed pipe (`codedb search … | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.context("writing the results")?,
    }
    Ok(ExitCode::SUCCESS)
}

fn write_hits(hits: &[Vec<Hit>], format: &str) -> std::io::Result<()> {
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    if format == "json" {
        let out: Vec<_> = hits
            .iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"query": i, "results": l}))
            .collect();
        serde_json::to_writer(&mut o, &out)?;
        writeln!(o)?;
    } else {
        writeln!(o, "query\trank\tid\tscore")?;
        for (i, l) in hits.iter().enumerate() {
            for (r, h) in l.iter().enumerate() {
                writeln!(o, "{i}\t{r}\t{}\t{}", h.id, h.score)?;
            }
        }
    }
    o.flush()
}
