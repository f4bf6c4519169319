//! A global allocator that aborts on any single allocation above [`MAX_ALLOC`].
//!
//! Why: the targets run with `-s none` on stable Rust, where no sanitizer hooks `malloc`, so
//! libFuzzer's `-malloc_limit_mb` cannot see a huge allocation, and on Linux a huge
//! `Vec::with_capacity` usually "succeeds" (overcommit) without touching RSS. A parser that
//! allocates gigabytes because a small input declared a huge length is still a bug (the
//! format promises every length is checked before use), so this allocator turns it into an
//! abort, which libFuzzer records as a crash with its input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// Fuzz inputs are at most a few KB (`-max_len`); no honest parse of them needs more than this.
pub const MAX_ALLOC: usize = 64 << 20;

pub struct LimitAlloc;

#[cold]
fn too_big() -> ! {
    // Unbuffered stderr with a static message: no allocation on the way out.
    let _ = std::io::stderr().write_all(b"\n== codedb-fuzz: allocation above MAX_ALLOC (64 MiB)\n");
    std::process::abort()
}

// SAFETY: every method forwards to `System` unchanged, after an optional abort; the size check
// neither reads nor writes the memory being managed.
unsafe impl GlobalAlloc for LimitAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            too_big();
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            too_big();
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOC {
            too_big();
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
