//! The single-writer lock (FORMAT.md §11.3): an exclusive OS lock (`flock` on Unix,
//! `LockFileEx` on Windows, through `std::fs::File::try_lock`) on `DIR/LOCK`.
//!
//! The OS releases the lock when the holding process exits, however it exits (a SIGKILL
//! included), so a crashed writer never leaves a stale lock behind. The lock belongs to the open
//! file description: a second `Index::open` in the same process is refused exactly like one in
//! another process. Readers never take it.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use super::error::{Result, StorageError};
use super::layout::LOCK_FILE;

/// An acquired writer lock; released on drop.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` or fails at once with [`StorageError::Locked`].
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(StorageError::io(&path, "open lock file"))?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(StorageError::Locked {
                dir: dir.to_path_buf(),
            }),
            Err(TryLockError::Error(e)) => Err(StorageError::io(&path, "lock")(e)),
        }
    }
}
