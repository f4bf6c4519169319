//! `codedb search`: the options every kind of search reads (k-NN, `--text`, `--examples`),
//! their help text and the row filter they describe; the k-NN search (the k best rows per
//! query, or every row within a Hamming radius); and what every kind prints — the `--with`
//! columns of each hit's row and the hits in TSV or JSON (the layout `SEARCH_HELP` documents).
//! `main.rs` sends a search to its kind ([`SearchArgs::asks_text`],
//! [`SearchArgs::asks_examples`]), so `search_text.rs` and `search_examples.rs` import this
//! file and it imports neither.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use clap::builder::PossibleValuesParser;
use codedb::MihChoice;
use codedb::{ClassRef, IdSelector, RowFilter, SearchError, SearchMode, SearchParams};
use codedb::{Hit, Snapshot, Value};
use ndarray::{ArrayView2, s};

use crate::args::{self, usage};
use crate::inputs;
use crate::out::errln;
use crate::progress;

/// `search --help` text after the options.
pub const SEARCH_HELP: &str = "\
Examples:
  codedb search my-index --queries q.npy -k 10
  codedb search my-index --queries q.npy -k 5 --mode asym --format json
  codedb search my-index --queries q.npy -k 10 --mode adc --rerank 100
  codedb search my-index --queries q.npy --radius 2     # codes of <= 32 bits
  codedb search my-index --queries q.npy -k 10 --classes sneaker,sandal
  codedb search my-index --queries q.npy -k 10 --nprobe 3    # IVF
  codedb search my-index --queries q.npy --threads 0 --verbose
  codedb search my-index --text \"red apple\" -k 10   # needs train --captions
  codedb search my-index --examples pos.npy --random-negatives 500 -k 100
  codedb search my-index --examples pos.npy --negatives neg.npy -k 100
  codedb search my-index --examples sets.npy --example-groups groups.npy -k 25
  codedb search my-index --classifier w.npy -k 100
  codedb search my-index --queries q.npy --where \"id >= 1000 AND id != 7\"
  codedb search my-index --queries q.npy -k 10 --ids-file allowed.txt

Modes (default: the natural one for the index's codes):
  hamming   binary codes; query binarised by the model; score = Hamming distance
  asym      binary codes; query projected, not binarised; score = sum of
            |margin| over the bits where the code disagrees with the query's
            sign (smaller is better)
  adc       PQ codes; squared L2 by asymmetric distance computation
  adc-ip    PQ codes; inner product (larger is better)
  float     float32/float16 codes; squared L2 to the projected query
  float-ip  float codes; inner product (larger is better)
  exact     stored vectors; exact squared L2 to the raw query
  exact-ip  stored vectors; exact inner product (larger is better)

--rerank R re-scores the R best by the mode's score exactly against the stored vectors \
(squared L2, or inner product after the -ip modes) and keeps the k best; the index must store \
vectors. --radius r (0, 1 or 2) returns every row whose code is within Hamming distance r of \
the query's code, by hash lookup (binary codes of at most 32 bits); -k then caps the rows per \
query (default: no cap). Without --radius, k larger than the number of live rows returns every \
live row.

--classes a,b scans only the inverted lists of those classes (names, or ids); --nprobe n scans, \
per query, the lists of the n class means nearest the query (NCM in the model's projected \
space), and equals the full search when n is at least the number of classes. Rows added without \
a list id are scanned by every list-restricted search (a note on stderr says how many); on an \
index where no row has a list id, --classes and --nprobe are refused (exit 1). Build or add with \
--lists to file rows under lists.

An index whose model has a coarse quantiser (train --pipeline ivf:K,pq:Mx8) files every row \
under its nearest of K k-means centroids and stores the PQ code of the residual (IVFADC): adc \
scans the lists of the --nprobe n nearest centroids (1 ≤ n ≤ K; default all K, the flat \
residual search), --rerank and the exact modes work on top, and --classes (class lists), \
adc-ip, text and classifier queries are refused (exit 1).

--mih auto|on|off (hamming mode): exact k-NN through the multi-index hashing tables that \
sealed segments of 32-256-bit binary codes carry (format 1.6; Norouzi et al., CVPR 2012). The \
results are those of the linear scan, ties included. auto (default) uses a segment's tables \
when it has at least 65,536 rows and the search is not restricted by --classes/--nprobe, and \
falls back to the linear scan of that segment for a query whose probing passes 1/1024 of the \
segment's rows; on uses the tables of every segment that has them, to the end; off scans \
linearly. The active log, segments without tables and list-restricted searches are always \
scanned linearly.

--text WORDS (repeatable) or --text-file F (one query per line) ranks rows by the model's text \
head (PAMIR: score = q'Wp, larger is better) over the same codes: LUT-8 on bits, \
inner-product ADC on PQ codes, dot product on float codes; --rerank R re-scores with the stored \
vectors, --classes restricts, --nprobe probes the classes whose mean scores best for the text. \
Words are lower-cased and split on non-letters; words the model does not know are ignored \
(named on stderr); a query with no known word is an error (exit 1).

--examples F (positive examples) ranks rows by a linear SVM learned at query time on the \
examples' codes (PiCoDes): the examples are encoded with the index's model and decoded (bits \
as -1/+1, PQ reconstructions, floats), the SVM (squared hinge, C = 1, tolerance 0.1, each class weighted to \
half the total cost, so one positive is enough) learns w and b against --negatives F or N \
random live rows (--random-negatives N, default 1000, seeded by --seed), and every live row \
scores b + w'decode(code) (larger is better) through the same kernels as --text. \
--classifier F gives w and b instead (D + 1 values, D the model's projected dimension; bits: \
one weight per bit). --rerank R re-scores with the stored vectors' projections (binary codes: \
by a second SVM trained on the examples' projections; not with --classifier), --classes and \
--nprobe as for --text. Examples of the wrong width, NaN, a --classifier of the wrong length, \
more --random-negatives than live rows: exit 1 naming the option.

--example-groups G answers several example sets in one call (evaluation, serving): G holds one \
integer group id per row of --examples, each group is one query (query i of the output is the \
i-th smallest group id), and the results are those of one call per group with the same \
options and --seed. --negatives are shared by every set, or split the same way by \
--negative-groups G2 (a group without negatives is an error); random negatives are drawn per \
set with --seed.

--where EXPR returns only rows passing the filter expression (the language: docs/filtering.md; comparisons = != < <= > >=, [NOT] IN (...), HAS / HAS ANY / HAS ALL on tag sets, AND, OR, NOT, parentheses; the row id is the column `id`); --ids a,b,c and --ids-file F (one id per line) return only rows with those ids; given together a row must pass all. Every query kind and mode takes a filter, and without IVF the result is the k best of the passing rows, ties by id, exactly; fewer than k rows pass: all of them. With --nprobe on an ivf:K index (adc), a query whose probed lists hold too few passing rows probes the next-nearest lists, or is answered by the flat search over the passing rows when that reads fewer rows; with class lists it is searched again over every list. A filter that does not parse or names a column the index lacks, or compares it with a value of the wrong type, is a usage error (exit 2) naming the character column.

Output, best first, ties by smaller id. TSV: a header line, then `query rank id score` \
(query and rank from 0). JSON: [{\"query\": i, \"results\": [{\"id\": …, \"score\": …}, …]}, …].

--threads 0 uses every core; a count above the number of cores is capped at it (with a note). \
On a terminal, a progress bar counts the queries done.

Exit codes: 0 success, 1 bad input or failed search, 2 usage error.";

#[derive(Args)]
/// Search an index: the k best rows per query row, or every row within a Hamming radius.
#[command(after_help = SEARCH_HELP)]
pub struct SearchArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Query vectors (.npy, .fvecs, .bvecs, IDX), one per row, in the model's input
    /// dimension.
    #[arg(long, required_unless_present_any = ["text", "text_file", "examples", "classifier"])]
    pub queries: Option<PathBuf>,
    /// A text query (needs a model with a text head: train --captions); repeat for several.
    #[arg(long, value_name = "WORDS", conflicts_with_all = ["queries", "radius"])]
    pub text: Vec<String>,
    /// A file of text queries, one per line.
    #[arg(long, value_name = "F", conflicts_with_all = ["queries", "radius", "text"])]
    pub text_file: Option<PathBuf>,
    /// Positive examples (.npy, …; the model's input dimension): rank rows by a linear SVM
    /// learned from them at query time.
    #[arg(long, value_name = "F", conflicts_with_all = ["queries", "radius", "text", "text_file"])]
    pub examples: Option<PathBuf>,
    /// Several example sets in one call: one integer group id per row of --examples (.npy);
    /// each group is one query by examples, answered in increasing group order.
    #[arg(long, value_name = "G", requires = "examples")]
    pub example_groups: Option<PathBuf>,
    /// With --example-groups and --negatives: one group id per row of --negatives; a set
    /// learns against the negatives of its own group (default: every set uses all of them).
    #[arg(long, value_name = "G", requires_all = ["example_groups", "negatives"])]
    pub negative_groups: Option<PathBuf>,
    /// Negative examples for --examples (default: random live rows of the index).
    #[arg(
        long,
        value_name = "F",
        requires = "examples",
        conflicts_with = "random_negatives"
    )]
    pub negatives: Option<PathBuf>,
    /// Negatives for --examples: N live rows of the index drawn at random (default 1000,
    /// at most the live rows).
    #[arg(
        long,
        value_name = "N",
        requires = "examples",
        allow_negative_numbers = true,
        value_parser = args::count
    )]
    pub random_negatives: Option<usize>,
    /// Seed of --random-negatives and of the SVM's visiting order.
    #[arg(long, value_name = "S", default_value_t = codedb::DEFAULT_SEED, requires = "examples")]
    pub seed: u64,
    /// Cost C of the SVM --examples learns (default 1; larger fits the examples harder).
    #[arg(long, value_name = "C", requires = "examples", value_parser = args::finite_positive)]
    pub svm_c: Option<f64>,
    /// Rank rows by a given linear classifier of their codes: a .npy of D + 1 values (the
    /// weights over the decoded code, then the bias).
    #[arg(
        long,
        value_name = "F",
        conflicts_with_all = ["queries", "radius", "text", "text_file", "examples"]
    )]
    pub classifier: Option<PathBuf>,
    /// Results per query (default 10; with --radius: no cap unless given).
    #[arg(short, long, allow_negative_numbers = true, value_parser = args::count)]
    pub k: Option<usize>,
    /// How queries are compared with rows (default: the natural mode of the index's codes).
    #[arg(long, value_parser = PossibleValuesParser::new(codedb::MODE_NAMES.iter().map(|m| m.0)))]
    pub mode: Option<String>,
    /// Re-rank the R best by the mode's score with the stored vectors (R >= k).
    #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = args::count)]
    pub rerank: Option<usize>,
    /// Hash lookup: every row within this Hamming radius (0-2; codes of at most 32 bits).
    #[arg(
        long,
        value_name = "r",
        conflicts_with_all = ["rerank", "classes", "nprobe"],
        allow_negative_numbers = true,
        value_parser = args::u32_0
    )]
    pub radius: Option<u32>,
    /// Scan only the inverted lists of these classes (comma-separated names or ids).
    #[arg(long, value_delimiter = ',', conflicts_with = "nprobe")]
    pub classes: Vec<String>,
    /// IVF: per query, scan the lists of the n nearest class means (with an ivf:K model: of the
    /// n nearest k-means centroids, 1 ≤ n ≤ K)
    #[arg(long, value_name = "n", allow_negative_numbers = true, value_parser = args::count)]
    pub nprobe: Option<usize>,
    /// Only rows passing this filter expression, e.g. "id >= 100 AND id NOT IN (3, 7)" (the
    /// language: docs/filtering.md).
    #[arg(long = "where", value_name = "EXPR")]
    pub where_expr: Option<String>,
    /// Only rows with these ids (comma-separated).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub ids: Vec<u64>,
    /// Only rows whose ids this file lists (decimal, one per line; with --ids: either).
    #[arg(long, value_name = "F")]
    pub ids_file: Option<PathBuf>,
    /// Threads (0 = all cores; more than the cores is capped at the cores).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = args::count0)]
    pub threads: usize,
    /// Hamming k-NN through the segments' multi-index hashing tables: auto, on or off.
    #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"])]
    pub mih: String,
    /// Output format: tsv (a header, then query rank id score) or json.
    #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
    pub format: String,
    /// Attribute columns to print beside each hit (comma-separated names).
    #[arg(long = "with", value_name = "COLS", value_delimiter = ',')]
    pub with: Vec<String>,
    /// Print what ran (mode, rows, queries, threads, seconds) on stderr.
    #[arg(long)]
    pub verbose: bool,
}

impl SearchArgs {
    /// A text query (`--text`, `--text-file`): `search_text.rs` runs it.
    pub fn asks_text(&self) -> bool {
        !self.text.is_empty() || self.text_file.is_some()
    }

    /// A query by examples or by a given classifier (`--examples`, `--classifier`):
    /// `search_examples.rs` runs it.
    pub fn asks_examples(&self) -> bool {
        self.examples.is_some() || self.classifier.is_some()
    }

    /// `--mode`, or the natural mode of the model's codes.
    pub(crate) fn mode(&self, model: &codedb::Model) -> Result<SearchMode> {
        SearchMode::resolve(self.mode.as_deref(), model.code_kind())
            .map_err(|e| anyhow::anyhow!("--mode {e}"))
    }

    /// What every query kind shares: `-k` (default 10), the mode, `--rerank`, `threads` (already
    /// capped by [`args::threads`]), `--classes` as list ids, `--nprobe`.
    pub(crate) fn params(
        &self,
        snap: &Snapshot,
        mode: SearchMode,
        threads: usize,
    ) -> Result<SearchParams> {
        let lists = if self.classes.is_empty() {
            None
        } else {
            Some(resolve_classes(snap, &self.classes)?)
        };
        Ok(SearchParams {
            k: self.k.unwrap_or(10),
            mode,
            rerank: self.rerank,
            threads,
            lists,
            nprobe: self.nprobe,
            mih: MihChoice::parse(&self.mih).unwrap_or_default(),
            filter: self.row_filter(snap)?,
        })
    }

    /// `--where`, `--ids` and `--ids-file` as one filter (a row must pass all that are given:
    /// `RowFilter::checked`); an expression that does not parse or type against the index's
    /// columns is a usage error naming the character column.
    pub(crate) fn row_filter(&self, snap: &Snapshot) -> Result<Option<RowFilter>> {
        let ids = if self.ids.is_empty() && self.ids_file.is_none() {
            None
        } else {
            let mut ids = self.ids.clone();
            if let Some(f) = &self.ids_file {
                ids.extend(read_ids(f)?);
            }
            Some(IdSelector::new(ids))
        };
        let text = self.where_expr.as_deref();
        match RowFilter::checked(text, ids, snap.attribute_schema()) {
            Ok(filter) => Ok(filter),
            Err(e) => usage!("--where {:?}: {e}", text.unwrap_or_default()),
        }
    }
}

/// Queries per search call when a progress bar is shown: enough that each call still shares
/// its passes over the codes among many queries (`scan::schedule`), few enough that the bar
/// moves about a hundred times.
fn progress_chunk(queries: usize) -> usize {
    (queries / 100).max(256)
}

/// The k-NN search (or the radius lookup) of `--queries`; `main.rs` sends text and example
/// queries to their own files first.
pub fn run(a: SearchArgs) -> Result<ExitCode> {
    let Some(queries) = a.queries.clone() else {
        usage!("search: pass --queries, --text or --text-file");
    };
    if let (Some(_), Some(m)) = (a.radius, a.mode.as_deref())
        && m != "hamming"
    {
        usage!("--radius is a Hamming hash lookup; it does not take --mode {m}");
    }
    let snap = crate::inputs::open_snapshot(&a.dir)?;
    check_with(&snap, &a)?;
    let model = snap
        .model()
        .with_context(|| format!("the model of {}", a.dir.display()))?;
    let mode = a.mode(model)?;
    let q = inputs::vectors_for(
        "--queries",
        &queries,
        model.input_dim(),
        &inputs::index_model(&a.dir),
    )?;
    let threads = crate::args::threads(a.threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("--threads")?;
    let start = Instant::now();
    let hits: Vec<Vec<Hit>> = match a.radius {
        Some(r) => {
            if mode != SearchMode::Hamming {
                bail!(
                    "--radius is a Hamming hash lookup, and this index's codes are searched by \
                     {} (binary codes are needed)",
                    mode.name()
                );
            }
            let filter = a.row_filter(&snap)?;
            let mut h = pool
                .install(|| match &filter {
                    Some(f) => snap.search_radius_filtered(q.view(), r, f),
                    None => snap.search_radius(q.view(), r),
                })
                .with_context(|| format!("--radius {r} on {}", a.dir.display()))?;
            if let Some(k) = a.k {
                for l in &mut h {
                    l.truncate(k);
                }
            }
            h
        }
        None => {
            let params = a.params(&snap, mode, threads)?;
            let option = if params.lists.is_some() {
                Some("--classes")
            } else {
                a.nprobe.map(|_| "--nprobe")
            };
            if let Some(option) = option {
                let c = snap.list_coverage()?;
                if c.unlisted_rows > 0 && c.listed_rows > 0 {
                    errln!(
                        "note: {} of the {} live rows have no list id; {option} scans them too \
                         (rows without a list are in every list-restricted search)",
                        c.unlisted_rows,
                        c.unlisted_rows + c.listed_rows
                    );
                }
            }
            let run = |q: ArrayView2<f32>| {
                pool.install(|| snap.search(q, &params))
                    .map_err(|e| match e {
                        SearchError::NoLists { live_rows, .. } => anyhow::anyhow!(
                            "{}: {} has no inverted lists (none of its {live_rows} live rows has \
                             a list id), so it would scan every row; file rows under lists with \
                             --lists label|nearest at codedb build or add",
                            option.unwrap_or("--classes"),
                            a.dir.display()
                        ),
                        e => {
                            anyhow::Error::new(e).context(format!("searching {}", a.dir.display()))
                        }
                    })
            };
            let bar = progress::bar(q.nrows() as u64, "searching", "queries");
            if bar.is_hidden() {
                run(q.view())?
            } else {
                // Results do not depend on how queries are grouped; chunks let the bar move.
                let mut all = Vec::with_capacity(q.nrows());
                let chunk = progress_chunk(q.nrows());
                for from in (0..q.nrows()).step_by(chunk) {
                    let to = (from + chunk).min(q.nrows());
                    all.extend(run(q.slice(s![from..to, ..]))?);
                    bar.set_position(to as u64);
                }
                bar.finish_and_clear();
                all
            }
        }
    };
    if a.verbose {
        errln!(
            "search: mode {}, {} rows, {} queries, threads {threads}, {:.3} s",
            mode.name(),
            snap.live_rows(),
            q.nrows(),
            start.elapsed().as_secs_f64()
        );
    }
    let with = with_values(&snap, &hits, &a)?;
    if let Err(e) = write_hits(&hits, &a.format, with.as_ref()) {
        crate::out::failed(&e);
    }
    Ok(ExitCode::SUCCESS)
}

/// The ids of an `--ids-file`: decimal, one per line, blank lines skipped.
fn read_ids(path: &std::path::Path) -> Result<Vec<u64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--ids-file {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim().parse::<u64>().with_context(|| {
                format!(
                    "--ids-file {} line {}: {:?} is not an id (a whole number 0 ≤ id < 2^64)",
                    path.display(),
                    i + 1,
                    l.trim()
                )
            })
        })
        .collect()
}

/// List ids of `--classes` (each item a class name, or else a decimal class id:
/// [`Snapshot::class_ids`]).
pub(crate) fn resolve_classes(snap: &Snapshot, items: &[String]) -> Result<Vec<u32>> {
    let refs: Vec<ClassRef> = items.iter().map(|i| ClassRef::from(i.trim())).collect();
    snap.class_ids(&refs).map_err(|e| match e {
        SearchError::InvalidArgument { detail, .. } => anyhow::anyhow!("--classes {detail}"),
        other => anyhow::Error::new(other).context("--classes"),
    })
}

/// `--with`'s columns, checked against the index's attribute columns: a name it lacks is a
/// usage error (exit 2) naming it.
pub(crate) fn check_with(snap: &Snapshot, a: &SearchArgs) -> Result<()> {
    let schema = snap.attribute_schema();
    for c in &a.with {
        if schema.find(c).is_none() {
            usage!(
                "--with {}: the index has no attribute column {c:?} (columns: {})",
                a.with.join(","),
                if schema.is_empty() {
                    "none".to_owned()
                } else {
                    schema
                        .columns()
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
    }
    Ok(())
}

/// The `--with` columns of every hit's row: the names, and each hit id's values.
pub(crate) type WithValues = (Vec<String>, HashMap<u64, Vec<Value>>);

/// `--with`'s values for `hits` (`None` without `--with`).
pub(crate) fn with_values(
    snap: &Snapshot,
    hits: &[Vec<Hit>],
    a: &SearchArgs,
) -> Result<Option<WithValues>> {
    if a.with.is_empty() {
        return Ok(None);
    }
    check_with(snap, a)?;
    let mut ids: Vec<u64> = hits.iter().flatten().map(|h| h.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let names: Vec<&str> = a.with.iter().map(String::as_str).collect();
    let v = snap
        .attribute_values(&ids, &names)
        .with_context(|| format!("--with {}", a.with.join(",")))?;
    let by_id = ids
        .iter()
        .enumerate()
        .map(|(r, &id)| {
            let row = (0..names.len())
                .map(|c| v.column(c).and_then(|col| col.value(r)))
                .collect::<Option<Vec<Value>>>()
                .unwrap_or_default();
            (id, row)
        })
        .collect();
    Ok(Some((a.with.clone(), by_id)))
}

/// The hits in the output format, in the order documented in `SEARCH_HELP`; with `--with`,
/// each hit's chosen columns after its score (TSV: one field each, tags joined by `|`; JSON:
/// an `attributes` object, a NaN float as null).
pub(crate) fn write_hits(
    hits: &[Vec<Hit>],
    format: &str,
    with: Option<&WithValues>,
) -> std::io::Result<()> {
    use codedb_cli::io::attributes::{json_value, tsv_field};
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    let values = |id: u64| with.and_then(|(_, m)| m.get(&id));
    #[derive(serde::Serialize)]
    struct Query<'a, H> {
        query: usize,
        results: &'a [H],
    }
    /// `[{"query": i, "results": [...]}, ...]` and a newline: the JSON of every query's hits.
    fn write_json<H: serde::Serialize>(o: &mut impl Write, rows: &[Vec<H>]) -> std::io::Result<()> {
        let out: Vec<Query<'_, H>> = rows
            .iter()
            .enumerate()
            .map(|(query, results)| Query { query, results })
            .collect();
        serde_json::to_writer(&mut *o, &out)?;
        writeln!(o)
    }
    #[derive(serde::Serialize)]
    struct HitWith {
        id: u64,
        score: f32,
        attributes: serde_json::Map<String, serde_json::Value>,
    }
    if format == "json" {
        if let Some((names, _)) = with {
            let rows: Vec<Vec<HitWith>> = hits
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|h| HitWith {
                            id: h.id,
                            score: h.score,
                            attributes: names
                                .iter()
                                .zip(values(h.id).into_iter().flatten())
                                .map(|(n, v)| (n.clone(), json_value(v)))
                                .collect(),
                        })
                        .collect()
                })
                .collect();
            write_json(&mut o, &rows)?;
            return o.flush();
        }
        write_json(&mut o, hits)?;
    } else {
        let extra: String = with
            .map(|(n, _)| n.iter().map(|c| format!("\t{c}")).collect())
            .unwrap_or_default();
        writeln!(o, "query\trank\tid\tscore{extra}")?;
        for (i, l) in hits.iter().enumerate() {
            for (r, h) in l.iter().enumerate() {
                let fields: String = values(h.id)
                    .map(|v| v.iter().map(|x| format!("\t{}", tsv_field(x))).collect())
                    .unwrap_or_default();
                writeln!(o, "{i}\t{r}\t{}\t{}{fields}", h.id, h.score)?;
            }
        }
    }
    o.flush()
}
