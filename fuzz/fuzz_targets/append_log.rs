//! Fuzz target `append_log`: arbitrary bytes, as is and with the log's record checksums fixed,
//! through the append-log reader, on its own and at committed lengths (the path of a
//! manifest's active log and of `codedb verify`); see `roundtrip::append_log`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    codedb_fuzz::run_log(data, codedb_fuzz::roundtrip::append_log);
});
