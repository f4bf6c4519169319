//! Files on disk in tests: a directory's files as bytes (to show that a refused write changed
//! nothing) and a damaged byte. Shared by the engine's tests and, through `#[path]`, the CLI's
//! `cli/tests/cli_support`.

use std::collections::BTreeMap;
use std::path::Path;

/// Every file of `dir` (not its subdirectories) with its bytes.
pub fn dir_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Flips a byte in the middle of `path` (a published file is read-only).
pub fn flip_middle(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    let mut p = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(path, p).unwrap();
    std::fs::write(path, bytes).unwrap();
}
