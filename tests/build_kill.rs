//! A build killed with SIGKILL at any instant leaves no index or the whole built index, never an
//! empty one: the same build, run again, succeeds with every row (FORMAT.md §11.8).
//!
//! The build runs in a child process (this test binary re-run with `--ignored --exact
//! build_kill_child`), killed after a seeded random delay spread over a build's lifetime; the
//! parent then reruns the same build and checks the rows and their attribute columns.
#![cfg(unix)]
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use codedb::format::ModelFile;
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{Attributes, BuildOptions, Column, Index, Snapshot, StorageError, Value};
use ndarray::Array2;

const ROWS: usize = 60_000;
const DIM: usize = 48;
const KILLS: u64 = 24;
const DIR_VAR: &str = "CODEDB_BUILD_KILL_DIR";
const MODEL_VAR: &str = "CODEDB_BUILD_KILL_MODEL";

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The rows every build adds: seeded, so parent and child agree.
fn rows() -> Array2<f32> {
    let mut s = 11;
    Array2::from_shape_fn((ROWS, DIM), |(r, c)| {
        let u = (splitmix(&mut s) >> 40) as f32 / (1u64 << 24) as f32;
        u + (r % 7) as f32 * 0.25 + (c % 5) as f32 * 0.1
    })
}

fn ids() -> Vec<u64> {
    (0..ROWS as u64).map(|i| i * 3 + 1).collect()
}

/// Row `r`'s attribute values: `year` and one tag.
fn year(r: usize) -> i64 {
    1990 + (r % 37) as i64
}

fn attributes() -> Attributes {
    Attributes::new(
        ROWS,
        vec![
            ("year".into(), Column::Int((0..ROWS).map(year).collect())),
            (
                "tags".into(),
                Column::tags(
                    &(0..ROWS)
                        .map(|r| vec![format!("t{}", r % 5)])
                        .collect::<Vec<_>>(),
                ),
            ),
        ],
    )
    .unwrap()
}

/// The build under test, as `codedb build` and `Index.build` run it.
fn build(dir: &Path, model: &Model) -> Result<Index, StorageError> {
    let x = rows();
    let ids = ids();
    let labels: Vec<u32> = (0..ROWS as u32).map(|i| i % 7).collect();
    let attrs = attributes();
    Index::build(
        dir,
        model,
        x.view(),
        &BuildOptions {
            ids: Some(&ids),
            labels: Some(&labels),
            attributes: Some(&attrs),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
}

fn load_model(path: &Path) -> Model {
    Model::from_model_file(&ModelFile::open(path).unwrap()).unwrap()
}

/// The child: one build, then exit. Run only by `build_killed_at_random_instants_reruns_whole`.
#[test]
#[ignore = "the child process of build_killed_at_random_instants_reruns_whole"]
fn build_kill_child() {
    let (Some(dir), Some(model)) = (std::env::var_os(DIR_VAR), std::env::var_os(MODEL_VAR)) else {
        return;
    };
    build(Path::new(&dir), &load_model(Path::new(&model))).unwrap();
}

fn spawn_child(dir: &Path, model: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "build_kill_child",
            "--test-threads",
            "1",
        ])
        .env(DIR_VAR, dir)
        .env(MODEL_VAR, model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Checks `dir` holds the whole build: one version (2) with every row and the class table.
fn check_full(dir: &Path) {
    let snap = Snapshot::open(dir).unwrap();
    assert_eq!(snap.live_rows(), ROWS as u64, "{}", dir.display());
    assert_eq!(snap.version(), 2, "{}", dir.display());
    let classes = snap.classes().unwrap();
    assert_eq!(classes.classes.len(), 7);
    let counted: u64 = classes.classes.iter().map(|c| c.count).sum();
    assert_eq!(counted, ROWS as u64);
    // Every row carries its attribute columns.
    let v = snap.attribute_values(&ids(), &["year", "tags"]).unwrap();
    for r in 0..ROWS {
        assert_eq!(
            v.column(0).unwrap().value(r),
            Some(Value::Int(year(r))),
            "row {r}"
        );
        assert_eq!(
            v.column(1).unwrap().value(r),
            Some(Value::Tags(vec![format!("t{}", r % 5)])),
            "row {r}"
        );
    }
}

#[test]
fn build_killed_at_random_instants_reruns_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let x = rows();
    let (model, _) = train(
        &PipelineSpec::parse("pca-itq:32").unwrap(),
        x.slice(ndarray::s![..4000, ..]),
        &TrainOptions::default(),
    )
    .unwrap();
    let model_path = tmp.path().join("m.model");
    model
        .to_model_file()
        .write_to(std::fs::File::create(&model_path).unwrap(), &model_path)
        .unwrap();

    // How long one build takes, start to exit: the kills are spread over it.
    let t0 = Instant::now();
    let status = spawn_child(&tmp.path().join("timed"), &model_path)
        .wait()
        .unwrap();
    assert!(status.success());
    let span = t0.elapsed();

    let mut seed = 2026;
    let mut writing = 0;
    for k in 0..KILLS {
        let dir: PathBuf = tmp.path().join(format!("k{k}"));
        let frac = (splitmix(&mut seed) % 1000) as f64 / 1000.0;
        let mut child = spawn_child(&dir, &model_path);
        if k % 2 == 0 {
            // Anywhere in the build's life.
            std::thread::sleep(span.mul_f64(1.2 * frac));
        } else {
            // While it writes: from the moment its directory appears.
            while !dir.exists() && child.try_wait().unwrap().is_none() {
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            std::thread::sleep(span.mul_f64(0.3 * frac));
        }
        let wrote = dir.exists();
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if !status.success() && wrote {
            writing += 1;
        }
        // The same build again: it succeeds, or the killed one had already committed its rows
        // (then the directory is a finished index, which a build never overwrites).
        match build(&dir, &model) {
            Ok(index) => drop(index),
            Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => panic!("kill {k}: the rerun failed: {e}"),
        }
        check_full(&dir);
    }
    assert!(
        writing >= KILLS / 4,
        "only {writing} of {KILLS} kills cut a build that was writing"
    );
}
