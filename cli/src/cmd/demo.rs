//! `codedb demo`: the whole retrieval path on built-in (or given) real data.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb_cli::demo_tour::labels_u32;

use crate::args::{self, usage};
use crate::inputs;
use crate::out::{errln, outln};

#[derive(Args)]
/// Run the whole retrieval path on built-in real data: train, build, search, compare with
/// exact search, append, delete, compact, inspect.
#[command(after_help = "Examples:
  codedb demo                   # the 1,797 digits shipped with codedb
  codedb demo --data /usr/share/datasets/fashion-mnist --dir /tmp/fm-demo
  codedb demo --data X.npy --labels L.npy --json
  codedb demo --markdown        # the quality table as the docs show it

/usr/share/datasets/fashion-mnist is installed by the Debian package \
dataset-fashion-mnist (apt-get install dataset-fashion-mnist).")]
pub struct DemoArgs {
    /// Where the demo's indexes go (default: a new folder under the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory) instead of the
    /// built-in digits.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Class labels for --data (.npy int32/int64); not needed for a Fashion-MNIST directory.
    #[arg(long, requires = "data")]
    pub labels: Option<PathBuf>,
    /// Seed of every random choice (training, ground-truth sample).
    #[arg(long, default_value_t = codedb::DEFAULT_SEED, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Print the report as JSON (progress lines are not printed).
    #[arg(long)]
    pub json: bool,
    /// Print only the quality table as Markdown (pipeline, bytes/code, mAP, recall@10, class
    /// P@10; no timings), the table the docs show; progress lines are not printed, and the
    /// demo's indexes are removed unless --dir names their folder.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

pub fn run(a: DemoArgs) -> Result<ExitCode> {
    let DemoArgs {
        dir,
        data,
        labels,
        seed,
        json,
        markdown,
    } = a;
    // With --markdown only the table is printed, so a temporary folder nobody is told about is
    // removed again; a --dir the user gave is kept.
    let remove_after = markdown && dir.is_none();
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
            let (x, y) = codedb_cli::demo_tour::builtin_digits(&dir.join("data"))?;
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
    let quiet = json || markdown;
    let report = codedb_cli::demo_tour::run_demo(&dir, x.view(), &y, &name, seed, &mut |s| {
        if !quiet {
            errln!("{s}");
        }
    })?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    if markdown {
        outln!("{}", report.markdown_table().trim_end());
        if remove_after {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("removing the demo's folder {}", dir.display()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "\n{}: {} database rows, {} queries, {}-D; k = {}",
        report.data,
        report.database_rows,
        report.queries,
        report.dim,
        codedb_cli::demo_tour::DEMO_K
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
    let r = codedb::admin::inspect_dir(&report.index_dir)?;
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
