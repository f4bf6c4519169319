//! Fuzz target `deletion_bitmap`: arbitrary bytes, as is and with checksums fixed, through the deletion_bitmap parser;
//! whatever parses must round-trip (see `src/roundtrip.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    codedb_fuzz::run(data, codedb_fuzz::roundtrip::deletion_bitmap);
});
