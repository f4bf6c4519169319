//! The single-writer lock (FORMAT.md §11.3): an exclusive OS lock (`flock` on Unix,
//! `LockFileEx` on Windows, through `std::fs::File::try_lock`) on `DIR/LOCK`.
//!
//! The OS releases the lock when the holding process exits, however it exits (a SIGKILL
//! included), so a crashed writer never leaves a stale lock behind. The lock belongs to the open
//! file description: a second `Index::open` in the same process is refused exactly like one in
//! another process. Readers never take it.
//!
//! Why acquisition retries for a moment (`Config::lock_wait`): when any thread of the process
//! spawns a child, the child holds copies of all the parent's descriptors between `fork` and
//! `exec` (close-on-exec only closes them at `exec`). A writer dropped and reopened in that
//! window would find its own lock still held by the half-started child. A real second writer
//! holds the lock for longer than the wait and still gets [`StorageError::Locked`].

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{Result, StorageError};
use super::layout::LOCK_FILE;

/// An acquired writer lock; released on drop.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir`, retrying for up to `wait`, or fails with
    /// [`StorageError::Locked`].
    pub(crate) fn acquire(dir: &Path, wait: Duration) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(StorageError::io(&path, "open lock file"))?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(DirLock { _file: file }),
                Err(TryLockError::WouldBlock) if start.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(StorageError::Locked {
                        dir: dir.to_path_buf(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(StorageError::io(&path, "lock")(e)),
            }
        }
    }
}
