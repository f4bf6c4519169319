//! Fuzz target `filter`: arbitrary text through the filter language's parser, type check and
//! evaluation over columns of every type (see `codedb_fuzz::filter`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    codedb_fuzz::filter::filter_text(data);
});
