//! The bytes of one codedb file, either memory-mapped or read into an aligned buffer.
//!
//! This file holds the crate's only `unsafe` mmap site. Why a mapping is sound here:
//! codedb files are write-once. A writer creates every file under a temporary name, fsyncs it,
//! makes it read-only (mode 0444) and renames it into place; after that no codedb code opens it
//! for writing again, and garbage collection only *unlinks* files, which leaves existing mappings
//! valid on POSIX systems. The remaining hazard is another program truncating or rewriting a
//! mapped file behind codedb's back (a SIGBUS or changed bytes); FORMAT.md documents that
//! contract, and callers that cannot rule it out use [`LoadMode::Read`], which copies the file
//! into memory once and never maps it.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use super::error::{FormatError, Result};

/// How a file's bytes are brought into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadMode {
    /// Map the file read-only (zero-copy scans straight from the page cache).
    #[default]
    Mmap,
    /// Read the whole file into an owned, 64-byte aligned buffer.
    Read,
}

/// A 64-byte aligned block, so owned buffers give the same alignment guarantees as a mapping
/// (sections start at multiples of 64, so typed views of `u64`/`f32`/`f64` are aligned).
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Block([u8; 64]);

enum Backing {
    Mmap(Mmap),
    Owned { blocks: Vec<Block>, len: usize },
}

/// Immutable bytes of a file with its path, for error messages.
pub struct FileBytes {
    backing: Backing,
}

impl FileBytes {
    /// Opens `path` with the given load mode.
    pub fn open(path: &Path, mode: LoadMode) -> Result<FileBytes> {
        let io = |source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let len = usize::try_from(len).map_err(|_| FormatError::Corrupt {
            path: path.to_path_buf(),
            section: "file".into(),
            detail: format!("file of {len} bytes does not fit in the address space"),
        })?;
        match mode {
            // An empty file cannot be mapped on every platform; it is read (and then refused by
            // the header check) instead.
            LoadMode::Mmap if len > 0 => {
                // SAFETY: the mapping is read-only and codedb never writes to a published file
                // (see the module comment: files are written under a temporary name, fsynced,
                // made read-only and renamed into place; GC only unlinks). Every byte is
                // validated before a typed view is made over it, so changed contents can only
                // yield a checksum or structure error, never a wrong typed view.
                let map = unsafe { Mmap::map(&file) }.map_err(io)?;
                Ok(FileBytes {
                    backing: Backing::Mmap(map),
                })
            }
            _ => {
                use std::io::Read;
                let mut blocks = vec![Block([0; 64]); len.div_ceil(64)];
                let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut blocks);
                (&file).read_exact(&mut buf[..len]).map_err(io)?;
                Ok(FileBytes {
                    backing: Backing::Owned { blocks, len },
                })
            }
        }
    }

    /// Copies `bytes` into an aligned owned buffer (used for in-memory parsing and fuzzing).
    pub fn from_slice(bytes: &[u8]) -> FileBytes {
        let mut blocks = vec![Block([0; 64]); bytes.len().div_ceil(64)];
        let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut blocks);
        buf[..bytes.len()].copy_from_slice(bytes);
        FileBytes {
            backing: Backing::Owned {
                blocks,
                len: bytes.len(),
            },
        }
    }

    /// The file's bytes; the start is at least 64-byte aligned.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Mmap(m) => m,
            Backing::Owned { blocks, len } => &bytemuck::cast_slice(blocks)[..*len],
        }
    }

    /// True when the bytes are memory-mapped rather than read into memory.
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mmap(_))
    }
}

/// Asks the kernel to drop `path`'s pages from the page cache (posix_fadvise DONTNEED), for
/// cold-cache benchmarks. Pages still mapped by a live [`FileBytes`] may stay resident, so drop
/// mappings first. Returns an error naming why when the platform cannot do it.
pub fn evict_from_page_cache(path: &Path) -> std::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let file = File::open(path)?;
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
        Ok(())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = path;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "posix_fadvise is not available on this platform",
        ))
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileBytes")
            .field("len", &self.as_bytes().len())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}
