//! Publishing a file (FORMAT.md §11.1): write it under `NAME.tmp`, fsync it, make it read-only,
//! rename it to `NAME`. A reader never sees a partly written file under a final name, and a
//! crash leaves at worst a `.tmp` file that the next writer removes.
//!
//! The directory is not synced here: a commit publishes several files and then syncs the
//! directory once, before it publishes the manifest that names them (§11.2).

use std::io::{BufWriter, Write};
use std::path::Path;

use super::error::{Result, StorageError};
use super::fs::{FileSystem, SeamWriter};
use super::layout::tmp_name;

/// Buffer between the format writers and the seam: large sequential writes.
const WRITE_BUFFER: usize = 1 << 20;

/// Publishes `dir/name`: `write` streams the contents into the temporary file (its path is
/// given for error messages); returns what `write` returned and the bytes written.
pub(crate) fn publish<T>(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut BufWriter<SeamWriter>, &Path) -> Result<T>,
) -> Result<(T, u64)> {
    let tmp = dir.join(tmp_name(name));
    let dest = dir.join(name);
    let file = match fs.create_new(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // A leftover of an interrupted write of the same name (only the lock holder writes,
            // so nobody else owns it).
            fs.remove_file(&tmp)
                .map_err(StorageError::io(&tmp, "remove stale temporary file"))?;
            fs.create_new(&tmp)
                .map_err(StorageError::io(&tmp, "create"))?
        }
        Err(e) => return Err(StorageError::io(&tmp, "create")(e)),
    };
    let result = (|| {
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, SeamWriter { file, written: 0 });
        let value = write(&mut out, &tmp)?;
        out.flush().map_err(StorageError::io(&tmp, "write"))?;
        let mut inner = out
            .into_inner()
            .map_err(|e| StorageError::io(&tmp, "write")(e.into_error()))?;
        inner.file.sync().map_err(StorageError::io(&tmp, "fsync"))?;
        let written = inner.written;
        drop(inner);
        fs.set_read_only(&tmp)
            .map_err(StorageError::io(&tmp, "make read-only"))?;
        fs.rename(&tmp, &dest)
            .map_err(StorageError::io(&dest, "rename"))?;
        Ok((value, written))
    })();
    if result.is_err() {
        // Best effort: the next writer (or GC) removes it otherwise.
        let _ = fs.remove_file(&tmp);
    }
    result
}

/// Makes the directory's new entries durable.
pub(crate) fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(StorageError::io(dir, "fsync directory"))
}
