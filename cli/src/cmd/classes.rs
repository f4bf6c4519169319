//! `codedb add-class`, `codedb classify` and `codedb classes`: argument plumbing over
//! the engine's class API (`Index::add_new_classes`, `Snapshot::classify`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb::format::class_name_problem;
use codedb::research::{DEFAULT_PRIOR_CANDIDATES, choose_prior_weight};
use codedb::{
    ClassRef, ClassScore, ClassSource, DEFAULT_PRIOR_WEIGHT, MeanSource, NewClass, PriorScope,
};
use codedb_cli::io::tsv_field;

use crate::args;
use crate::inputs;
use crate::out::outln;

#[derive(Args)]
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
pub struct AddClassArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The new class's name.
    #[arg(long)]
    pub name: String,
    /// Class id (default: one past every class id and row label in use).
    #[arg(long, allow_negative_numbers = true, value_parser = args::u32_0)]
    pub id: Option<u32>,
    /// Parent class name.
    #[arg(long)]
    pub parent: Option<String>,
    /// Images of the class (raw descriptors, the model's input dimension).
    #[arg(long, conflicts_with = "mean")]
    pub data: Option<PathBuf>,
    /// The class mean: a .npy vector of length D (as np.save(x.mean(axis=0)) writes) or a
    /// (1, D) matrix, or a one-row vector file.
    #[arg(long)]
    pub mean: Option<PathBuf>,
    /// m of eq. 30: weight of the zero-shot prior in pseudo-images.
    #[arg(long, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub prior_weight: Option<u64>,
    /// Ancestors averaged for the prior (eq. 29): parent or ancestors.
    #[arg(long, default_value = "parent", value_parser = ["parent", "ancestors"])]
    pub prior_scope: String,
    /// Held-out images of existing classes to choose m on (with --data and --parent).
    #[arg(
        long,
        requires = "validation_labels",
        requires = "data",
        requires = "parent",
        conflicts_with = "prior_weight"
    )]
    pub validation: Option<PathBuf>,
    /// Class ids of the --validation rows.
    #[arg(long, requires = "validation")]
    pub validation_labels: Option<PathBuf>,
    /// Seed of the held-out episodes that choose m (with --validation).
    #[arg(long, default_value_t = codedb::DEFAULT_SEED, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Print the new class (name, id, parent, count, version, how its mean was made) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
/// Classify descriptors by nearest class mean in the index model's projected space.
#[command(after_help = "Examples:
  codedb classify my-index --data X.npy --top 5
  codedb classify my-index --data X.npy --format json

TSV columns: row, rank, id, name, score. JSON: [{\"row\": i, \"classes\": [{\"name\", \"id\", \
\"score\"}, …]}], best first, ties by smaller id. Score: the eq. 9 linear score w_c·x + b_c, \
centred (larger is better). In TSV, \
control characters in a name (possible only in files written before they were refused) are \
escaped as \\t, \\n, \\r, \\u{hex}, and a backslash as \\\\; JSON keeps names as they are.")]
pub struct ClassifyArgs {
    /// The index directory (its model and class table).
    pub dir: PathBuf,
    /// Descriptors to classify, one row per image, in the model's input dimension.
    #[arg(long)]
    pub data: PathBuf,
    /// Classes per row, best first.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = args::count)]
    pub top: usize,
    /// Output format: tsv (a header, then row rank id name score) or json.
    #[arg(long, default_value = "tsv", value_parser = ["tsv", "json"])]
    pub format: String,
}

#[derive(Args)]
/// List the classes of an index's class table: id, name, parent, image count, centroids.
#[command(after_help = "Examples:
  codedb classes my-index
  codedb classes my-index --json | jq '.[] | select(.count == 0)'

JSON: [{\"id\", \"name\", \"parent\" (id or null), \"parent_name\", \"count\", \"centroids\"}, …] \
in id order; [] when the index has no class table.")]
pub struct ClassesArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Print the classes as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn add_class(a: AddClassArgs) -> Result<ExitCode> {
    if let Some(problem) = class_name_problem(&a.name) {
        bail!("--name {problem}");
    }
    let scope = PriorScope::parse(&a.prior_scope).with_context(|| {
        format!(
            "--prior-scope {}: expected parent or ancestors",
            a.prior_scope
        )
    })?;
    // Argument combinations (--validation with its labels, --data and --parent, not with
    // --prior-weight; --data or --mean) are checked by clap.
    let index = crate::inputs::open_writer(&a.dir)?;
    let dim = index.model()?.input_dim();
    let whom = inputs::index_model(&a.dir);
    let data = a
        .data
        .as_deref()
        .map(|p| inputs::vectors_for("--data", p, dim, &whom))
        .transpose()?;
    let mean = match a.mean.as_deref() {
        None => None,
        Some(p) => {
            let m = codedb_cli::io::load_vector(p)?;
            if m.len() != dim {
                bail!(
                    "--mean {}: {} columns, but {whom} takes {dim}-D vectors",
                    p.display(),
                    m.len()
                );
            }
            Some(m)
        }
    };
    // The prior weight: given, chosen on validation data, or the documented default.
    let mut choice = None;
    let weight = match (
        a.prior_weight,
        a.validation.as_deref(),
        a.validation_labels.as_deref(),
        &data,
    ) {
        (Some(m), ..) => m,
        (None, Some(v), Some(l), Some(x)) if a.parent.is_some() => {
            let model = index.model()?;
            let table = index
                .staged_classes()?
                .context("--validation: the index has no class table to validate on")?;
            let vx = inputs::vectors_for("--validation", v, dim, &whom)?;
            let vl = codedb_cli::demo_tour::labels_u32(&codedb_cli::io::load_labels(l)?)
                .with_context(|| l.display().to_string())?;
            let c = choose_prior_weight(
                model,
                &table,
                vx.view(),
                &vl,
                x.nrows(),
                DEFAULT_PRIOR_CANDIDATES,
                scope,
                a.seed,
            )?;
            let w = c.weight;
            choice = Some(c);
            w
        }
        _ => DEFAULT_PRIOR_WEIGHT,
    };
    let source = match (&data, &mean) {
        (Some(_), Some(_)) => bail!("give --data or --mean, not both"),
        (Some(x), None) => ClassSource::Images(x.view()),
        (None, Some(m)) => ClassSource::Mean(m),
        (None, None) => ClassSource::None,
    };
    let new = NewClass {
        name: a.name.to_string(),
        id: a.id,
        parent: a.parent.as_deref().map(|p| ClassRef::Name(p.to_string())),
        source,
        prior_weight: weight,
        prior_scope: scope,
    };
    let planned = index.add_new_classes(std::slice::from_ref(&new))?;
    let version = index.commit()?;
    let Some(p) = planned.first() else {
        bail!("internal: no class planned");
    };
    let how = match p.source {
        MeanSource::Images { n } => format!("mean of {n} images"),
        MeanSource::GivenMean => "given mean (count 1)".into(),
        MeanSource::ZeroShot { m } => format!("zero-shot prior (eq. 29), weight m = {m}"),
        MeanSource::Map { n, m } => {
            format!("MAP mean (eq. 30) of {n} images and the prior, m = {m}")
        }
        MeanSource::ImagesNoPrior { n } => {
            format!("mean of {n} images (no class under the parent has images yet: no prior)")
        }
    };
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "name": p.record.name, "id": p.record.id, "parent": p.record.parent,
                "count": p.record.count, "version": version, "mean": how,
                "prior_weight_choice": choice,
            })
        );
    } else {
        if let Some(c) = &choice {
            for (m, e) in &c.top1_error {
                outln!("prior weight m = {m:<4} top-1 error {e:.4}");
            }
            outln!(
                "chose m = {} on {} held-out images of {} classes",
                c.weight,
                c.test_images,
                c.episodes
            );
        }
        outln!(
            "added class {:?} (id {}): {how}; version {version}",
            p.record.name,
            p.record.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn classify(a: ClassifyArgs) -> Result<ExitCode> {
    let ClassifyArgs {
        dir,
        data,
        top,
        format,
    } = a;
    let (dir, data, format) = (dir.as_path(), data.as_path(), format.as_str());
    let snap = crate::inputs::open_snapshot(dir)?;
    let dim = snap.model()?.input_dim();
    let x = inputs::vectors_for("--data", data, dim, &inputs::index_model(dir))?;
    let res = snap
        .classify(x.view(), top)
        .with_context(|| format!("classifying {} with {}", data.display(), dir.display()))?;
    if let Err(e) = write_classes(&res, format) {
        crate::out::failed(&e);
    }
    Ok(ExitCode::SUCCESS)
}

/// The classification in the output format, in the order the help documents.
fn write_classes(res: &[Vec<ClassScore>], format: &str) -> std::io::Result<()> {
    use std::io::Write;
    #[derive(serde::Serialize)]
    struct Row<'a> {
        row: usize,
        classes: &'a [ClassScore],
    }
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    if format == "json" {
        let out: Vec<Row<'_>> = res
            .iter()
            .enumerate()
            .map(|(row, classes)| Row { row, classes })
            .collect();
        serde_json::to_writer(&mut o, &out)?;
        writeln!(o)?;
    } else {
        writeln!(o, "row\trank\tid\tname\tscore")?;
        for (i, l) in res.iter().enumerate() {
            for (r, c) in l.iter().enumerate() {
                writeln!(o, "{i}\t{r}\t{}\t{}\t{}", c.id, tsv_field(&c.name), c.score)?;
            }
        }
    }
    o.flush()
}

/// `codedb classes`: the class table of the newest version, in id order.
pub fn classes(a: ClassesArgs) -> Result<ExitCode> {
    let ClassesArgs { dir, json } = a;
    let dir = dir.as_path();
    #[derive(serde::Serialize)]
    struct Entry<'a> {
        id: u32,
        name: &'a str,
        parent: Option<u32>,
        parent_name: Option<&'a str>,
        count: u64,
        centroids: usize,
    }
    let snap = crate::inputs::open_snapshot(dir)?;
    let Some(table) = snap.classes() else {
        if json {
            outln!("[]");
        } else {
            outln!(
                "{}: no class table (build with --labels, or codedb add-class)",
                dir.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let name_of = |id: u32| {
        table
            .classes
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.name.as_str())
    };
    let mut entries: Vec<Entry<'_>> = table
        .classes
        .iter()
        .map(|c| Entry {
            id: c.id,
            name: &c.name,
            parent: c.parent,
            parent_name: c.parent.and_then(name_of),
            count: c.count,
            centroids: c.centroids.len(),
        })
        .collect();
    entries.sort_by_key(|e| e.id);
    if json {
        outln!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<10}  {:<24}  {:<24}  {:>12}  {:>9}",
        "id",
        "name",
        "parent",
        "count",
        "centroids"
    );
    for e in &entries {
        let parent = match (e.parent, e.parent_name) {
            (Some(p), Some(n)) => format!("{} ({p})", tsv_field(n)),
            (Some(p), None) => p.to_string(),
            (None, _) => "-".into(),
        };
        outln!(
            "{:<10}  {:<24}  {:<24}  {:>12}  {:>9}",
            e.id,
            tsv_field(e.name),
            parent,
            e.count,
            e.centroids
        );
    }
    Ok(ExitCode::SUCCESS)
}
