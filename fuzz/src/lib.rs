//! Shared code of codedb's fuzz targets: the round-trip property each target checks, the
//! checksum fix-up that lets mutated inputs reach the validation behind the CRCs, and an
//! allocation limit. Each target in `fuzz_targets/` runs its parser on the input as is and on
//! the input with checksums recomputed (see [`run`]).

pub mod alloc_limit;
pub mod checksums;
pub mod filter;
pub mod roundtrip;

#[global_allocator]
static ALLOC: alloc_limit::LimitAlloc = alloc_limit::LimitAlloc;

/// Runs `check` on `data` and on `data` with every checksum recomputed.
pub fn run(data: &[u8], check: fn(&[u8])) {
    check(data);
    let fixed = checksums::with_fixed_checksums(data);
    if fixed != data {
        check(&fixed);
    }
}

/// [`run`] for append logs, whose checksums sit in records rather than a section table.
pub fn run_log(data: &[u8], check: fn(&[u8])) {
    check(data);
    let fixed = checksums::with_fixed_log_checksums(data);
    if fixed != data {
        check(&fixed);
    }
}
