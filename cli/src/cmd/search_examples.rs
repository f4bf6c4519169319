//! `codedb search DIR --examples pos.npy [--negatives neg.npy | --random-negatives N]` and
//! `--classifier w.npy`: rank the rows by a linear classifier of their codes, learned from the
//! examples at query time (PiCoDes, Bergamo et al. NIPS 2011) or given. Output as
//! `codedb search` (TSV or JSON, one query).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use codedb::{
    CodeClassifier, DEFAULT_RANDOM_NEGATIVES, ExampleParams, ExampleSet, Negatives, example_groups,
};
use codedb_cli::io::npy_read::{NpyData, read_npy};
use ndarray::{Array2, Axis};

use super::search::{SearchArgs, write_hits};
use crate::inputs;
use crate::out::errln;

/// The D + 1 values of `--classifier F`: a 1-D (or one-row) float .npy, finite.
fn read_classifier(path: &Path) -> Result<CodeClassifier> {
    let what = || format!("--classifier {}", path.display());
    let arr = read_npy(path).with_context(what)?;
    let n = match arr.shape.as_slice() {
        [n] | [1, n] => *n,
        s => bail!(
            "{}: shape {s:?}; expected D + 1 values (1-D: the weights, then the bias)",
            what()
        ),
    };
    let values: Vec<f32> = match arr.data {
        NpyData::F32(v) => v,
        NpyData::F64(v) => v.into_iter().map(|x| x as f32).collect(),
        d => bail!(
            "{}: dtype {}; expected float32 or float64",
            what(),
            d.dtype().name()
        ),
    };
    if n < 2 {
        bail!(
            "{}: {n} values; expected D + 1 (at least one weight and the bias)",
            what()
        );
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        bail!("{}: value {i} is {}", what(), values[i]);
    }
    Ok(CodeClassifier::from_values(&values))
}

/// Example vectors of `flag F`: readable, finite, of the model's input width `dim`; every
/// error names the option.
fn examples(flag: &str, path: &Path, dim: usize, whom: &str) -> Result<ndarray::Array2<f32>> {
    let x =
        codedb_cli::io::load_vectors(path).with_context(|| format!("{flag} {}", path.display()))?;
    if x.ncols() != dim {
        bail!(
            "{flag} {}: {} columns, but {whom} takes {dim}-D vectors",
            path.display(),
            x.ncols()
        );
    }
    Ok(x)
}

/// The integer group ids of `flag F`, one per row of the `rows`-row file `of`.
fn groups(flag: &str, path: &Path, rows: usize, of: &str) -> Result<Vec<i64>> {
    let g =
        codedb_cli::io::load_labels(path).with_context(|| format!("{flag} {}", path.display()))?;
    if g.len() != rows {
        bail!(
            "{flag} {}: {} group ids for the {rows} rows of {of}",
            path.display(),
            g.len()
        );
    }
    Ok(g)
}

/// One set of `--example-groups`: its positives, and its own negatives (`--negative-groups`).
type GroupSet = (Array2<f32>, Option<Array2<f32>>);

/// The example sets of `--example-groups`: each group's positives, and its own negatives when
/// `--negative-groups` splits them (else `None`: the shared negatives).
fn grouped_sets(
    a: &SearchArgs,
    path: &Path,
    pos: &Array2<f32>,
    given: Option<&Array2<f32>>,
) -> Result<Vec<GroupSet>> {
    let ids = groups("--example-groups", path, pos.nrows(), "--examples")?;
    let neg = match (&a.negative_groups, given) {
        (Some(p), Some(n)) => {
            let g = groups("--negative-groups", p, n.nrows(), "--negatives")?;
            Some((example_groups(&g), n))
        }
        _ => None,
    };
    example_groups(&ids)
        .into_iter()
        .map(|(g, rows)| {
            let own = match &neg {
                Some((sets, n)) => {
                    let Ok(j) = sets.binary_search_by_key(&g, |(id, _)| *id) else {
                        bail!(
                            "--negative-groups {}: example group {g} has no negatives",
                            a.negative_groups.as_deref().unwrap_or(path).display()
                        );
                    };
                    Some(n.select(Axis(0), &sets[j].1))
                }
                None => None,
            };
            Ok((pos.select(Axis(0), &rows), own))
        })
        .collect()
}

pub fn run(a: SearchArgs) -> Result<ExitCode> {
    let snap = crate::inputs::open_snapshot(&a.dir)?;
    let model = snap
        .model()
        .with_context(|| format!("the model of {}", a.dir.display()))?;
    let mode = a.mode(model)?;
    let threads = crate::args::threads(a.threads);
    let search = a.params(&snap, mode, threads)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("--threads")?;
    let whom = inputs::index_model(&a.dir);
    let start = Instant::now();
    let hits: Vec<Vec<codedb::Hit>> = if let Some(f) = &a.classifier {
        let c = read_classifier(f)?;
        let d = model.project_dim();
        if c.weights.len() != d {
            bail!(
                "--classifier {}: {} values, but {whom} scores codes of {d} dimensions: give \
                 D + 1 = {} (the weights, then the bias)",
                f.display(),
                c.weights.len() + 1,
                d + 1
            );
        }
        vec![
            pool.install(|| snap.search_classifier(&c, &search))
                .with_context(|| format!("--classifier {} on {}", f.display(), a.dir.display()))?,
        ]
    } else {
        let Some(f) = &a.examples else {
            crate::args::usage!("search: pass --examples or --classifier");
        };
        let pos = examples("--examples", f, model.input_dim(), &whom)?;
        let given = match &a.negatives {
            Some(n) => Some(examples("--negatives", n, model.input_dim(), &whom)?),
            None => None,
        };
        let negatives = match (&given, a.random_negatives) {
            (Some(g), _) => Negatives::Given(g.view()),
            (None, Some(count)) => {
                let live = snap.live_rows() as usize;
                if count > live {
                    bail!(
                        "--random-negatives {count}: {} has {live} live rows; give \
                         --negatives F, or ask for at most {live}",
                        a.dir.display()
                    );
                }
                Negatives::Sampled {
                    count,
                    seed: a.seed,
                }
            }
            (None, None) => {
                let live = snap.live_rows() as usize;
                if live == 0 {
                    bail!(
                        "{} has no live rows to draw negatives from; give --negatives F",
                        a.dir.display()
                    );
                }
                let count = DEFAULT_RANDOM_NEGATIVES.min(live);
                errln!(
                    "note: no --negatives: drawing {count} random live rows as negatives \
                     (--random-negatives N, --seed S)"
                );
                Negatives::Sampled {
                    count,
                    seed: a.seed,
                }
            }
        };
        let mut params = ExampleParams::new(search);
        params.svm.seed = a.seed;
        if let Some(c) = a.svm_c {
            params.svm.c = c;
        }
        let on = || format!("--examples {} on {}", f.display(), a.dir.display());
        if let Some(g) = &a.example_groups {
            let sets = grouped_sets(&a, g, &pos, given.as_ref())?;
            let views: Vec<ExampleSet<'_>> = sets
                .iter()
                .map(|(p, n)| ExampleSet {
                    positives: p.view(),
                    negatives: match n {
                        Some(n) => Negatives::Given(n.view()),
                        None => negatives,
                    },
                })
                .collect();
            pool.install(|| snap.search_examples_batch(&views, &params))
                .with_context(on)?
        } else {
            let c = pool
                .install(|| snap.train_examples(pos.view(), negatives, &params))
                .with_context(on)?;
            if a.verbose {
                errln!(
                    "svm: {} positives, {} negatives, {} passes{}",
                    c.positives,
                    c.negatives,
                    c.iterations,
                    if c.converged { "" } else { " (not converged)" }
                );
            }
            vec![
                pool.install(|| snap.search_trained(&c, &params.search))
                    .with_context(on)?,
            ]
        }
    };
    if a.verbose {
        errln!(
            "search: {}, {} codes, {} rows, {:.3} s (SVM training and scan)",
            if a.classifier.is_some() {
                "classifier"
            } else {
                "examples"
            },
            model.code_kind().name(),
            snap.live_rows(),
            start.elapsed().as_secs_f64()
        );
    }
    let with = super::search::with_values(&snap, &hits, &a)?;
    if let Err(e) = write_hits(&hits, &a.format, with.as_ref()) {
        crate::out::failed(&e);
    }
    Ok(ExitCode::SUCCESS)
}
