//! Fuzz target `block_checks`: arbitrary bytes, as is and with the container's checksums fixed
//! (which leaves the per-block checksums stale wherever a column changed), opened as a segment
//! without column checksums, then every column's blocks checked against an oracle; see
//! `roundtrip::block_checks`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    codedb_fuzz::run(data, codedb_fuzz::roundtrip::block_checks);
});
