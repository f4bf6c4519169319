//! Fuzz target `manifest`: arbitrary bytes, as is and with checksums fixed, through the manifest parser;
//! whatever parses must round-trip (see `src/roundtrip.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    codedb_fuzz::run(data, codedb_fuzz::roundtrip::manifest);
});
