//! Per-block checksum checks (FORMAT.md §3.5): the speed of checking a 64 MiB column in blocks
//! of 4 KiB to 16 MiB, which is what chose the 64 KiB block size (the speed is flat, so the
//! smallest block that keeps the checksum section small wins), and the cost of a later check
//! of the same column, once every block is remembered as good.
//!
//! `cargo bench --bench block_checks`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::format::FormatError;
use codedb::format::block_checksums::{ColumnBlockCrcs, ColumnCheck};
use divan::Bencher;
use divan::counter::BytesCount;

fn main() {
    divan::main();
}

const COLUMN: usize = 64 << 20;

fn column() -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..COLUMN)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (s >> 56) as u8
        })
        .collect()
}

fn checks(col: &[u8], block: usize) -> ColumnCheck {
    ColumnCheck::blocks(ColumnBlockCrcs {
        kind: 3,
        block_bytes: block as u64,
        len: col.len() as u64,
        crcs: col.chunks(block).map(crc32fast::hash).collect(),
    })
}

fn fail(b: usize) -> FormatError {
    FormatError::Corrupt {
        path: "bench".into(),
        section: "codes".into(),
        detail: format!("block {b}"),
    }
}

/// Every block checksummed (a first scan), one thread.
#[divan::bench(args = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 16 << 20])]
fn first_check(bencher: Bencher, block: usize) {
    let col = column();
    let c = checks(&col, block);
    bencher
        .counter(BytesCount::new(COLUMN))
        .bench(|| c.check(&col, 0..c.count(), true, fail).unwrap());
}

/// Every block already remembered (a later scan): one atomic load per block.
#[divan::bench(args = [4 << 10, 64 << 10, 1 << 20])]
fn later_check(bencher: Bencher, block: usize) {
    let col = column();
    let c = checks(&col, block);
    c.check(&col, 0..c.count(), false, fail).unwrap();
    bencher
        .counter(BytesCount::new(COLUMN))
        .bench(|| c.check(&col, 0..c.count(), false, fail).unwrap());
}
