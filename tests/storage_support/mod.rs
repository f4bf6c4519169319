//! Helpers shared by the storage-engine tests: a small model, deterministic codes, and the
//! live rows of a snapshot as a map (what every test compares against its in-memory model).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use codedb::admin::FileSystem;
use codedb::format::{
    ClassRecord, CodeKind, FileId, ModelFile, StageRecord, Tensor, TensorData, stage_kind,
};
use codedb::{Config, Retention, Snapshot};

/// Bytes per code of [`model`] (64-bit binary codes).
pub const CODE_BYTES: usize = 8;

/// A 4-D → 64-bit binary model (the engine stores it; it does not interpret the stages).
pub fn model() -> ModelFile {
    ModelFile {
        model_id: FileId::from_u128(0xC0DE_DB00_0000_0000_0000_0000_0000_0001),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: CODE_BYTES as u32,
        code_bits: 64,
        stages: vec![StageRecord {
            kind: stage_kind::CENTER,
            required: true,
            tensors: vec![Tensor::new("mean", &[4], TensorData::F32(vec![0.0; 4]))],
        }],
        skipped_stages: vec![],
    }
}

/// The code stored for `id` in a given "generation" (upserts change the generation).
pub fn code(id: u64, generation: u64) -> [u8; CODE_BYTES] {
    let x = id
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(generation.wrapping_mul(0xD1B5_4A32_D192_ED03));
    (x ^ (x >> 29)).to_le_bytes()
}

/// Codes for `ids`, concatenated.
pub fn codes(ids: &[u64], generation: u64) -> Vec<u8> {
    ids.iter().flat_map(|&i| code(i, generation)).collect()
}

/// A live row as tests see it.
pub type RowMap = BTreeMap<u64, (Vec<u8>, Option<u32>)>;

/// Every live row of a snapshot, by id; panics if an id is live twice.
pub fn rows_of(s: &Snapshot) -> RowMap {
    let mut out = RowMap::new();
    for r in s.rows().unwrap() {
        let prev = out.insert(r.id, (r.code.to_vec(), r.label));
        assert!(
            prev.is_none(),
            "id {} is live twice in version {}",
            r.id,
            s.version()
        );
    }
    assert_eq!(
        out.len() as u64,
        s.live_rows(),
        "live row count of version {}",
        s.version()
    );
    out
}

/// List id and stored vector of a live row.
pub type Extras = BTreeMap<u64, (Option<u32>, Option<Vec<f32>>)>;

/// The list id and stored vector of every live row, read through the block accessors. Checks
/// on the way that every block with list ids is grouped by list (the engine writes them so)
/// and that `list_range` and `rows_in_lists` agree with the list column.
pub fn extras_of(s: &Snapshot) -> Extras {
    let mut out = Extras::new();
    for b in s.blocks() {
        if let Some(lists) = b.lists().unwrap() {
            assert!(
                b.list_index().is_some(),
                "a block with list ids is not grouped by list in version {}",
                s.version()
            );
            let mut distinct: Vec<u32> = lists.to_vec();
            distinct.dedup();
            for &l in &distinct {
                let want: Vec<usize> = (0..b.rows()).filter(|&i| lists[i] == l).collect();
                let got: Vec<usize> = b.list_range(l).unwrap().collect();
                assert_eq!(got, want, "rows of list {l}");
                let scan: Vec<usize> = b
                    .rows_in_lists(&[l])
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .collect();
                if l == u32::MAX {
                    assert!(scan.is_empty(), "rows without a list id belong to no list");
                } else {
                    assert_eq!(scan, want);
                }
            }
        }
        for i in 0..b.rows() {
            if !b.is_deleted(i) {
                out.insert(
                    b.ids().unwrap()[i],
                    (b.list(i).unwrap(), b.vector(i).unwrap()),
                );
            }
        }
    }
    out
}

/// A config with a small seal threshold and no time-based retention, so tests exercise sealing
/// and GC quickly.
pub fn small_config(seal_bytes: u64) -> Config {
    Config {
        seal_bytes,
        retention: Retention {
            keep_versions: 2,
            keep_for: std::time::Duration::ZERO,
        },
        ..Config::default()
    }
}

pub fn with_fs(mut c: Config, fs: Arc<dyn FileSystem>) -> Config {
    c.fs = fs;
    c
}

/// A class record with a sum of `dim` values.
pub fn class(
    id: u32,
    name: &str,
    parent: Option<u32>,
    count: u64,
    dim: usize,
    v: f64,
) -> ClassRecord {
    ClassRecord {
        id,
        name: name.into(),
        parent,
        count,
        sum: vec![v; dim],
        centroids: vec![],
        removed: 0,
    }
}

/// File names in `dir`, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `codedb verify` on the directory: no problems.
pub fn assert_verifies(dir: &Path) {
    let r = codedb::admin::verify_path(dir, &mut |_| {});
    assert!(
        r.ok(),
        "verify found problems in {}: {:#?}",
        dir.display(),
        r.problems
    );
}

/// A file-system operation, as the seam sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Create,
    OpenAppend,
    Write,
    Sync,
    Truncate,
    Rename,
    Remove,
    SetReadOnly,
    SyncDir,
}

impl Op {
    pub const ALL: [Op; 9] = [
        Op::Create,
        Op::OpenAppend,
        Op::Write,
        Op::Sync,
        Op::Truncate,
        Op::Rename,
        Op::Remove,
        Op::SetReadOnly,
        Op::SyncDir,
    ];
}

/// What a hook makes an operation do instead of succeeding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fail with EIO (a write writes nothing).
    Eio,
    /// Fail with ENOSPC; a write first writes half of its buffer (a torn write).
    NoSpace,
}

impl Fault {
    fn error(self) -> std::io::Error {
        match self {
            Fault::Eio => std::io::Error::other("injected I/O error"),
            Fault::NoSpace => std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            ),
        }
    }
}

type Hook = dyn Fn(Op, &Path, u64) -> Option<Fault> + Send + Sync;

/// The real file system behind a hook that sees every operation (with its 1-based count per
/// kind) and may make it fail.
pub struct HookFs {
    counts: std::sync::Mutex<std::collections::HashMap<Op, u64>>,
    hook: Box<Hook>,
}

impl std::fmt::Debug for HookFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookFs")
            .field("counts", &self.counts)
            .finish()
    }
}

impl HookFs {
    pub fn new(
        hook: impl Fn(Op, &Path, u64) -> Option<Fault> + Send + Sync + 'static,
    ) -> Arc<HookFs> {
        Arc::new(HookFs {
            counts: Default::default(),
            hook: Box::new(hook),
        })
    }

    /// Counts only.
    pub fn counting() -> Arc<HookFs> {
        HookFs::new(|_, _, _| None)
    }

    /// Fails the `n`-th call of `op` with `fault`.
    pub fn failing(op: Op, n: u64, fault: Fault) -> Arc<HookFs> {
        HookFs::new(move |o, _, k| (o == op && k == n).then_some(fault))
    }

    pub fn count(&self, op: Op) -> u64 {
        self.counts.lock().unwrap().get(&op).copied().unwrap_or(0)
    }

    fn check(&self, op: Op, path: &Path) -> Option<Fault> {
        let n = {
            let mut c = self.counts.lock().unwrap();
            let e = c.entry(op).or_insert(0);
            *e += 1;
            *e
        };
        (self.hook)(op, path, n)
    }
}

struct HookFile {
    fs: Arc<HookFs>,
    path: std::path::PathBuf,
    inner: Box<dyn codedb::admin::WriteFile>,
}

impl codedb::admin::WriteFile for HookFile {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self.fs.check(Op::Write, &self.path) {
            None => self.inner.write_all(buf),
            Some(f) => {
                if f == Fault::NoSpace {
                    self.inner.write_all(&buf[..buf.len() / 2])?;
                }
                Err(f.error())
            }
        }
    }
    fn sync(&mut self) -> std::io::Result<()> {
        match self.fs.check(Op::Sync, &self.path) {
            None => self.inner.sync(),
            Some(f) => Err(f.error()),
        }
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        match self.fs.check(Op::Truncate, &self.path) {
            None => self.inner.truncate(len),
            Some(f) => Err(f.error()),
        }
    }
}

/// `Arc<HookFs>` as the engine's seam.
#[derive(Debug, Clone)]
pub struct Hooked(pub Arc<HookFs>);

impl FileSystem for Hooked {
    fn create_new(&self, path: &Path) -> std::io::Result<Box<dyn codedb::admin::WriteFile>> {
        if let Some(f) = self.0.check(Op::Create, path) {
            return Err(f.error());
        }
        Ok(Box::new(HookFile {
            fs: self.0.clone(),
            path: path.to_path_buf(),
            inner: codedb::admin::StdFs.create_new(path)?,
        }))
    }
    fn open_append(&self, path: &Path) -> std::io::Result<Box<dyn codedb::admin::WriteFile>> {
        if let Some(f) = self.0.check(Op::OpenAppend, path) {
            return Err(f.error());
        }
        Ok(Box::new(HookFile {
            fs: self.0.clone(),
            path: path.to_path_buf(),
            inner: codedb::admin::StdFs.open_append(path)?,
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        match self.0.check(Op::Rename, to) {
            None => codedb::admin::StdFs.rename(from, to),
            Some(f) => Err(f.error()),
        }
    }
    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        match self.0.check(Op::Remove, path) {
            None => codedb::admin::StdFs.remove_file(path),
            Some(f) => Err(f.error()),
        }
    }
    fn set_read_only(&self, path: &Path) -> std::io::Result<()> {
        match self.0.check(Op::SetReadOnly, path) {
            None => codedb::admin::StdFs.set_read_only(path),
            Some(f) => Err(f.error()),
        }
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        match self.0.check(Op::SyncDir, dir) {
            None => codedb::admin::StdFs.sync_dir(dir),
            Some(f) => Err(f.error()),
        }
    }
}

/// A scratch directory on a RAM file system when there is one (fsync is free there, and the
/// tests that use it check error paths, not durability), else in the default temp location.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}
