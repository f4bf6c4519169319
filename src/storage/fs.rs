//! The file-system seam: every file operation the engine uses to *change* the disk goes through
//! [`FileSystem`], so tests can make a write, an fsync, a rename or a removal fail (or return
//! ENOSPC) at a chosen call and check that the index still opens at its last good version.
//!
//! Reads (mapping segments, reading manifests and the log) go straight to the OS: a failing
//! read cannot damage an index, it only fails the read.

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// A file open for writing through the seam.
pub trait WriteFile: Send {
    /// Writes all of `buf` at the end of what was written so far.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes everything written so far durable (`fdatasync`: the data and the metadata needed to
    /// read it back, including the file length).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file to `len` bytes (used to remove a torn log tail); later writes append there.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

/// The operations that change an index directory.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates a new file for writing; fails if `path` exists.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;
    /// Opens an existing file to append to it (the active log).
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;
    /// Atomically renames `from` to `to` (within the index directory, or into its `recovered/`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Unlinks a file (mappings of it stay valid on POSIX systems).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes a published file read-only (mode 0444), so no tool rewrites it by accident.
    fn set_read_only(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system (`std::fs`).
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

struct StdFile(File);

impl WriteFile for StdFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl FileSystem for StdFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(StdFile(f)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let f = OpenOptions::new().append(true).open(path)?;
        Ok(Box::new(StdFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn set_read_only(&self, path: &Path) -> io::Result<()> {
        let mut p = std::fs::metadata(path)?.permissions();
        p.set_readonly(true);
        std::fs::set_permissions(path, p)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            // Directories cannot be opened for syncing on Windows; NTFS journals renames.
            let _ = dir;
            Ok(())
        }
    }
}

/// Adapts a [`WriteFile`] to `std::io::Write` so the format writers can stream into it.
pub(crate) struct SeamWriter {
    pub(crate) file: Box<dyn WriteFile>,
    pub(crate) written: u64,
}

impl Write for SeamWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
