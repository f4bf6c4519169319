//! Per-block checksums of a segment's row columns (section `block_checksums`, FORMAT.md §3.5,
//! format 1.4) and the record of which blocks a reader has checked.
//!
//! Why: a large segment is opened without checksumming its columns, so that opening stays O(1);
//! but no answer may be computed from bytes nobody checked. Each row column is cut into blocks
//! of [`BLOCK_BYTES`] with one CRC-32 per block; a reader checks the blocks a scan touches the
//! first time it touches them and remembers them in an atomic bitset ([`ColumnCheck`]), so the
//! first scan pays the checksums once and later scans one atomic load per block. Columns of
//! segments written before 1.4 have no block checksums: they count as a single block whose CRC
//! is the column's own section checksum, checked as a whole on first touch.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::container::CHECKSUM_CRC32;
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter};

/// Bytes per block written by this build: 64 KiB. CRC-32 (crc32fast) runs at the same speed
/// for blocks of 4 KiB to 256 MiB, so the size only trades the bytes a sparse read checks
/// (a re-ranked row checks its whole block) against 4 bytes per block of checksums; 64 KiB
/// keeps both small (BENCHMARKS.md, "Checked scans").
pub const BLOCK_BYTES: u64 = 64 << 10;
/// Smallest and largest block size a reader accepts (powers of two only).
pub const MIN_BLOCK_BYTES: u64 = 4 << 10;
/// Largest block size a reader accepts (1 GiB).
pub const MAX_BLOCK_BYTES: u64 = 1 << 30;

const ENTRY_LEN: usize = 32;

/// The stored checksums of one column: the column's section kind, its block size and length,
/// and one CRC-32 per block (the last block may be shorter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnBlockCrcs {
    /// Section kind of the column.
    pub kind: u32,
    /// Bytes per block, a power of two.
    pub block_bytes: u64,
    /// Length of the column in bytes.
    pub len: u64,
    /// CRC-32 of each block, in order.
    pub crcs: Vec<u32>,
}

/// Encodes the section (FORMAT.md §3.5).
pub fn encode(columns: &[ColumnBlockCrcs]) -> Vec<u8> {
    let mut w = LeWriter::new();
    w.u32(columns.len() as u32).u8(CHECKSUM_CRC32).zeros(11);
    for c in columns {
        w.u32(c.kind)
            .u32(0)
            .u64(c.block_bytes)
            .u64(c.len)
            .u64(c.crcs.len() as u64);
    }
    for c in columns {
        for &crc in &c.crcs {
            w.u32(crc);
        }
    }
    w.into_inner()
}

/// Decodes the section and checks its own structure: checksum type, reserved bytes, block
/// sizes, block counts, exact length. Whether the columns exist is the segment reader's check.
pub fn decode(b: &[u8], path: &Path) -> Result<Vec<ColumnBlockCrcs>> {
    const S: &str = "block_checksums";
    let corrupt = |detail: String| FormatError::Corrupt {
        path: path.to_path_buf(),
        section: S.into(),
        detail,
    };
    let mut r = LeReader::new(b, path, S);
    let n = r.u32()? as usize;
    let kind = r.u8()?;
    r.zeros(11, "header")?;
    if kind != CHECKSUM_CRC32 {
        return Err(corrupt(format!("unknown checksum type {kind}")));
    }
    if n > r.remaining() / ENTRY_LEN {
        return Err(corrupt(format!(
            "{n} columns do not fit in {} bytes",
            b.len()
        )));
    }
    let mut heads = Vec::with_capacity(n);
    let mut total: u64 = 0;
    for i in 0..n {
        let kind = r.u32()?;
        r.zeros(4, "column entry")?;
        let block_bytes = r.u64()?;
        let len = r.u64()?;
        let blocks = r.u64()?;
        if !block_bytes.is_power_of_two()
            || !(MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&block_bytes)
        {
            return Err(corrupt(format!(
                "column {i}: block size {block_bytes} is not a power of two from \
                 {MIN_BLOCK_BYTES} to {MAX_BLOCK_BYTES}"
            )));
        }
        if blocks != len.div_ceil(block_bytes) {
            return Err(corrupt(format!(
                "column {i}: {blocks} blocks for {len} bytes in blocks of {block_bytes}"
            )));
        }
        total = total.saturating_add(blocks);
        heads.push((kind, block_bytes, len, blocks));
    }
    let want = total.saturating_mul(4);
    if want != r.remaining() as u64 {
        return Err(corrupt(format!(
            "{} bytes of checksums, the columns need {total} x 4",
            r.remaining()
        )));
    }
    let mut out = Vec::with_capacity(n);
    for (kind, block_bytes, len, blocks) in heads {
        let crcs = (0..blocks).map(|_| r.u32()).collect::<Result<Vec<u32>>>()?;
        out.push(ColumnBlockCrcs {
            kind,
            block_bytes,
            len,
            crcs,
        });
    }
    r.finish()?;
    Ok(out)
}

/// Computes block CRCs while a column is streamed out, and folds each finished block into the
/// whole section's CRC (`crc32fast::Hasher::combine`), so every byte is hashed once.
#[derive(Debug)]
pub struct BlockHasher {
    block_bytes: u64,
    block: crc32fast::Hasher,
    filled: u64,
    crcs: Vec<u32>,
}

impl BlockHasher {
    /// A hasher cutting a column into blocks of `block_bytes`.
    pub fn new(block_bytes: u64) -> BlockHasher {
        BlockHasher {
            block_bytes,
            block: crc32fast::Hasher::new(),
            filled: 0,
            crcs: Vec::new(),
        }
    }

    /// Bytes per block.
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Hashes `bytes` into the current block(s) and every finished block into `whole`.
    pub fn update(&mut self, mut bytes: &[u8], whole: &mut crc32fast::Hasher) {
        while !bytes.is_empty() {
            let room = (self.block_bytes - self.filled).min(bytes.len() as u64) as usize;
            self.block.update(&bytes[..room]);
            self.filled += room as u64;
            bytes = &bytes[room..];
            if self.filled == self.block_bytes {
                self.close_block(whole);
            }
        }
    }

    fn close_block(&mut self, whole: &mut crc32fast::Hasher) {
        let done = std::mem::take(&mut self.block);
        whole.combine(&done);
        self.crcs.push(done.finalize());
        self.filled = 0;
    }

    /// The CRC of every block, after folding a last partial block into `whole`.
    pub fn finish(mut self, whole: &mut crc32fast::Hasher) -> Vec<u32> {
        if self.filled > 0 {
            self.close_block(whole);
        }
        self.crcs
    }
}

/// One column of an open segment: its expected block CRCs and the blocks already found good.
#[derive(Debug)]
pub struct ColumnCheck {
    block_bytes: u64,
    len: u64,
    crcs: Vec<u32>,
    /// Bit `b % 64` of word `b / 64`: block `b` matched its CRC.
    good: Vec<AtomicU64>,
    /// One block, the whole column, checked against its section CRC (no block checksums).
    whole: bool,
}

impl ColumnCheck {
    /// A column with block checksums.
    pub fn blocks(c: ColumnBlockCrcs) -> ColumnCheck {
        ColumnCheck::new(c.block_bytes, c.len, c.crcs, false)
    }

    /// A column without: one block, the whole column, checked against its section CRC.
    pub fn whole(len: u64, crc: u32) -> ColumnCheck {
        let crcs = if len == 0 { vec![] } else { vec![crc] };
        ColumnCheck::new(len.max(1), len, crcs, true)
    }

    fn new(block_bytes: u64, len: u64, crcs: Vec<u32>, whole: bool) -> ColumnCheck {
        let good = (0..crcs.len().div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        ColumnCheck {
            block_bytes,
            len,
            crcs,
            good,
            whole,
        }
    }

    /// Whether the column has no block checksums and is checked as one block.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Number of blocks.
    pub fn count(&self) -> usize {
        self.crcs.len()
    }

    /// Block size in bytes (the whole column for a column without block checksums).
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Bytes `[start, end)` of the column that block `b` covers.
    pub fn block_span(&self, b: usize) -> Range<u64> {
        let start = b as u64 * self.block_bytes;
        start..(start + self.block_bytes).min(self.len)
    }

    /// The blocks that hold any of `bytes` (clamped to the column).
    pub fn blocks_of(&self, bytes: Range<u64>) -> Range<usize> {
        let end = bytes.end.min(self.len);
        if bytes.start >= end {
            return 0..0;
        }
        (bytes.start / self.block_bytes) as usize..end.div_ceil(self.block_bytes) as usize
    }

    /// True once block `b` has been checked and matched.
    pub fn is_good(&self, b: usize) -> bool {
        self.good
            .get(b / 64)
            .is_some_and(|w| w.load(Ordering::Acquire) >> (b % 64) & 1 == 1)
    }

    fn set_good(&self, b: usize) {
        if let Some(w) = self.good.get(b / 64) {
            w.fetch_or(1 << (b % 64), Ordering::Release);
        }
    }

    /// Marks every block good (the caller checked the whole column another way).
    pub fn mark_all_good(&self) {
        for b in 0..self.count() {
            self.set_good(b);
        }
    }

    /// Blocks found good so far.
    pub fn good_count(&self) -> usize {
        self.good
            .iter()
            .map(|w| w.load(Ordering::Acquire).count_ones() as usize)
            .sum()
    }

    /// Whether block `b` of `column` matches its CRC; remembers it when it does.
    fn check_one(&self, column: &[u8], b: usize) -> bool {
        let span = self.block_span(b);
        let bytes = column.get(span.start as usize..span.end as usize);
        match (bytes, self.crcs.get(b)) {
            (Some(bytes), Some(&want)) if crc32fast::hash(bytes) == want => {
                self.set_good(b);
                true
            }
            _ => false,
        }
    }

    /// Checks blocks `blocks` of `column` (the column's stored bytes) that were not checked
    /// before; the first that fails gives `fail(block)`. `force` re-checks good blocks too.
    pub fn check(
        &self,
        column: &[u8],
        blocks: Range<usize>,
        force: bool,
        fail: impl Fn(usize) -> FormatError,
    ) -> Result<()> {
        self.check_par(column, blocks, force, 1, fail)
    }

    /// [`ColumnCheck::check`] split into `threads` contiguous runs of the unchecked blocks on
    /// the current rayon pool (when there are enough to be worth it). The error names the
    /// first failing block in column order, whatever the threads.
    pub fn check_par(
        &self,
        column: &[u8],
        blocks: Range<usize>,
        force: bool,
        threads: usize,
        fail: impl Fn(usize) -> FormatError,
    ) -> Result<()> {
        use rayon::prelude::*;
        /// Below this many unchecked blocks per thread, one thread does them all.
        const MIN_BLOCKS_PER_THREAD: usize = 16;
        let todo: Vec<usize> = blocks.filter(|&b| force || !self.is_good(b)).collect();
        let first_bad = |run: &[usize]| run.iter().copied().find(|&b| !self.check_one(column, b));
        let bad = if threads > 1 && todo.len() >= 2 * MIN_BLOCKS_PER_THREAD {
            let run = todo.len().div_ceil(threads).max(MIN_BLOCKS_PER_THREAD);
            let found: Vec<Option<usize>> = todo.par_chunks(run).map(first_bad).collect();
            found.into_iter().flatten().next()
        } else {
            first_bad(&todo)
        };
        match bad {
            Some(b) => Err(fail(b)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_hasher_matches_plain_crcs_for_any_write_sizes() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let bs = 4096u64;
        let want: Vec<u32> = data.chunks(bs as usize).map(crc32fast::hash).collect();
        for step in [1usize, 7, 4096, 4097, 20_000] {
            let mut whole = crc32fast::Hasher::new();
            let mut h = BlockHasher::new(bs);
            for c in data.chunks(step) {
                h.update(c, &mut whole);
            }
            assert_eq!(h.finish(&mut whole), want, "writes of {step}");
            assert_eq!(whole.finalize(), crc32fast::hash(&data), "writes of {step}");
        }
    }

    #[test]
    fn sections_round_trip_and_bad_ones_are_refused() {
        let cols = vec![
            ColumnBlockCrcs {
                kind: 2,
                block_bytes: 4096,
                len: 9000,
                crcs: vec![1, 2, 3],
            },
            ColumnBlockCrcs {
                kind: 3,
                block_bytes: 65536,
                len: 0,
                crcs: vec![],
            },
        ];
        let b = encode(&cols);
        let p = Path::new("<memory>");
        assert_eq!(decode(&b, p).unwrap(), cols);
        let mut bad = b.clone();
        bad[4] = 2; // checksum type
        assert!(decode(&bad, p).is_err());
        let mut bad = b.clone();
        bad[16 + 8] = 0x01; // block size 4097
        assert!(decode(&bad, p).is_err());
        let mut bad = b.clone();
        bad[16 + 24] = 2; // block count
        assert!(decode(&bad, p).is_err());
        assert!(decode(&b[..b.len() - 4], p).is_err());
        let mut bad = b.clone();
        bad[0] = 0xff; // column count
        assert!(decode(&bad, p).is_err());
    }

    #[test]
    fn a_column_check_remembers_good_blocks_and_names_a_bad_one() {
        let mut data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let crcs = data.chunks(4096).map(crc32fast::hash).collect();
        let c = ColumnCheck::blocks(ColumnBlockCrcs {
            kind: 3,
            block_bytes: 4096,
            len: 10_000,
            crcs,
        });
        assert_eq!(c.blocks_of(4095..4097), 0..2);
        assert_eq!(c.blocks_of(9000..20_000), 2..3);
        c.check(&data, 0..1, false, |_| unreachable!()).unwrap();
        assert_eq!(c.good_count(), 1);
        data[5000] ^= 1;
        let err = c
            .check(&data, 0..3, false, |b| FormatError::Corrupt {
                path: "x".into(),
                section: "codes".into(),
                detail: format!("block {b}"),
            })
            .unwrap_err();
        assert!(err.to_string().contains("block 1"), "{err}");
        assert!(c.is_good(0) && !c.is_good(1) && !c.is_good(2));
        let whole = ColumnCheck::whole(10_000, crc32fast::hash(&data));
        assert_eq!(whole.count(), 1);
        whole.check(&data, 0..1, false, |_| unreachable!()).unwrap();
        assert_eq!(ColumnCheck::whole(0, 0).count(), 0);
    }
}
