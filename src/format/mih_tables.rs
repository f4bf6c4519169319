//! Multi-index hashing tables of a binary segment (format 1.6, section kind 10 `mih`,
//! optional; FORMAT.md §3.6): the code's `q` bits split into `m` disjoint substrings, and per
//! substring a direct-addressed table from substring value to the rows holding it, so that an
//! exact k-NN search probes buckets near the query instead of scanning every row (Norouzi,
//! Punjani, Fleet, *Fast search in Hamming space with multi-index hashing*, CVPR 2012).
//!
//! ```text
//! header 32 B | offsets of table 0 .. m-1 (2^len_j + 1 u32 each) | rows of table 0 .. m-1 (n u32 each)
//! ```
//!
//! Table `j`'s rows are grouped by substring value (a counting sort, stable: rows of one value
//! in increasing row order): value `v`'s rows are `rows_j[offsets_j[v] .. offsets_j[v + 1]]`.
//!
//! Substring widths: `s = clamp(round(log2 n), 8, 24)` bits, `m = ceil(q / s)` tables, the
//! `q mod m` first substrings one bit longer (§3.6). `s ≈ log2 n` is the paper's choice (one
//! row per bucket on average); the cap at 24 bits keeps a table's offsets (4 · 2^s bytes) no
//! larger than its rows (4n bytes) and at most 64 MiB, so direct addressing never costs more
//! than the rows themselves.
//!
//! The tables are built, streaming, by the crate's `format/mih_build.rs`.

use super::error::{FormatError, Result};

/// Length of the section header in bytes.
pub const HEADER_LEN: usize = 32;
/// Fewest and most bits a code may have to carry tables (32 to 256, FORMAT.md §3.6).
pub const BITS: std::ops::RangeInclusive<u32> = 32..=256;
/// Longest substring, in bits (offsets of 2^24 + 1 u32 = 64 MiB per table).
pub const MAX_SUB_BITS: u32 = 24;
/// Shortest substring the writer chooses, in bits.
pub const MIN_SUB_BITS: u32 = 8;
/// How a code is split: `q` bits into `m` substrings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MihShape {
    /// Bits per code covered by the tables: every bit of the code's bytes (`8 × code_bytes`).
    pub bits: u32,
    /// Number of substrings (tables).
    pub m: u32,
}

impl MihShape {
    /// The writer's shape for `rows` codes of `code_bytes` bytes, `None` when tables do not
    /// apply (codes outside 32-256 bits, no rows, or 2^32 rows or more: row numbers are u32).
    pub fn choose(code_bytes: u32, rows: u64) -> Option<MihShape> {
        let bits = code_bytes.checked_mul(8)?;
        if !BITS.contains(&bits) || rows == 0 || rows >= u32::MAX as u64 {
            return None;
        }
        let s = ((rows as f64).log2().round() as u32).clamp(MIN_SUB_BITS, MAX_SUB_BITS);
        MihShape::new(bits, bits.div_ceil(s))
    }

    /// The shape of `m` substrings of `bits`, `None` unless `bits` is in [`BITS`] and every
    /// substring has 1 to [`MAX_SUB_BITS`] bits.
    pub fn new(bits: u32, m: u32) -> Option<MihShape> {
        let ok = BITS.contains(&bits) && m >= 1 && m <= bits && bits.div_ceil(m) <= MAX_SUB_BITS;
        ok.then_some(MihShape { bits, m })
    }

    /// First bit and length of substring `j`: the first `bits mod m` substrings have
    /// `ceil(bits / m)` bits, the others `floor(bits / m)`.
    pub fn sub(&self, j: u32) -> (u32, u32) {
        let (base, extra) = (self.bits / self.m, self.bits % self.m);
        let len = base + u32::from(j < extra);
        (j * base + j.min(extra), len)
    }

    /// u32 entries of table `j`'s offsets: `2^len_j + 1`.
    pub fn offsets_len(&self, j: u32) -> usize {
        (1usize << self.sub(j).1) + 1
    }

    /// Bytes of the section for `rows` rows.
    pub fn section_len(&self, rows: u64) -> u64 {
        let offs: u64 = (0..self.m).map(|j| self.offsets_len(j) as u64).sum();
        HEADER_LEN as u64 + 4 * offs + 4 * self.m as u64 * rows
    }

    /// The section header.
    pub fn encode_header(&self, rows: u64) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..4].copy_from_slice(&self.m.to_le_bytes());
        h[4..8].copy_from_slice(&self.bits.to_le_bytes());
        h[8..16].copy_from_slice(&rows.to_le_bytes());
        h
    }
}

/// Bits `[start, start + len)` of `code` (bit `i` is bit `i % 8` of byte `i / 8`), `len ≤ 24`.
#[inline]
pub fn substring(code: &[u8], start: u32, len: u32) -> u32 {
    let b = (start / 8) as usize;
    if let Some(w) = code.get(b..b + 4) {
        let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        return (w >> (start % 8)) & ((1u32 << len) - 1);
    }
    let mut w = [0u8; 4];
    let avail = code.len().saturating_sub(b).min(4);
    w[..avail].copy_from_slice(&code[b..b + avail]);
    (u32::from_le_bytes(w) >> (start % 8)) & ((1u32 << len) - 1)
}

/// The validated tables of a segment, viewed in place.
#[derive(Debug, Clone)]
pub struct MihTables<'a> {
    shape: MihShape,
    offsets: Vec<&'a [u32]>,
    rows: Vec<&'a [u32]>,
}

impl<'a> MihTables<'a> {
    /// Parses and structurally checks a section of a segment of `rows` rows whose codes have
    /// `code_bytes` bytes: header, exact length, every table's offsets start at 0, never
    /// decrease and end at `rows`, every stored row is below `rows`; without `deep` only the
    /// header, the length and the ends of each offsets array (O(m)).
    /// `corrupt(detail)` makes the error (naming the file and the section).
    pub fn parse(
        b: &'a [u8],
        code_bytes: u32,
        rows: u64,
        deep: bool,
        corrupt: impl Fn(String) -> FormatError,
    ) -> Result<MihTables<'a>> {
        if b.len() < HEADER_LEN {
            return Err(corrupt(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                b.len()
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let (m, bits) = (u32_at(0), u32_at(4));
        let mut n = [0u8; 8];
        n.copy_from_slice(&b[8..16]);
        let n = u64::from_le_bytes(n);
        if b[16..HEADER_LEN].iter().any(|&x| x != 0) {
            return Err(corrupt("reserved header bytes are not zero".into()));
        }
        if n != rows {
            return Err(corrupt(format!(
                "tables of {n} rows in a segment of {rows}"
            )));
        }
        if code_bytes.checked_mul(8) != Some(bits) {
            return Err(corrupt(format!(
                "tables of {bits}-bit codes in a segment of {code_bytes}-byte codes"
            )));
        }
        let shape = MihShape::new(bits, m).ok_or_else(|| {
            corrupt(format!(
                "{m} substrings of {bits} bits (each must have 1 to {MAX_SUB_BITS} bits, codes \
                 32 to 256 bits)"
            ))
        })?;
        if rows >= u32::MAX as u64 || shape.section_len(rows) != b.len() as u64 {
            return Err(corrupt(format!(
                "{} bytes, expected {} for {m} tables of {rows} rows",
                b.len(),
                shape.section_len(rows)
            )));
        }
        let all: &[u32] = bytemuck::try_cast_slice(&b[HEADER_LEN..])
            .map_err(|_| corrupt("section is not aligned for a typed view".into()))?;
        let (mut offsets, mut tables, mut at) = (Vec::new(), Vec::new(), 0usize);
        for j in 0..m {
            let len = shape.offsets_len(j);
            let o = &all[at..at + len];
            at += len;
            if o[0] != 0 || o[len - 1] as u64 != rows {
                return Err(corrupt(format!(
                    "table {j}: offsets run from {} to {}, expected 0 to {rows}",
                    o[0],
                    o[len - 1]
                )));
            }
            if deep && let Some(v) = o.windows(2).position(|w| w[1] < w[0]) {
                return Err(corrupt(format!("table {j}: offsets decrease at value {v}")));
            }
            offsets.push(o);
        }
        for j in 0..m {
            let t = &all[at..at + rows as usize];
            at += rows as usize;
            if deep && let Some(p) = t.iter().position(|&r| r as u64 >= rows) {
                return Err(corrupt(format!(
                    "table {j}: entry {p} names row {}, the segment has {rows}",
                    t[p]
                )));
            }
            tables.push(t);
        }
        Ok(MihTables {
            shape,
            offsets,
            rows: tables,
        })
    }

    /// How the codes are split.
    pub fn shape(&self) -> MihShape {
        self.shape
    }

    /// The rows whose substring `j` equals `v` (empty for a value out of range).
    #[inline]
    pub fn bucket(&self, j: u32, v: u32) -> &'a [u32] {
        let (o, t) = (self.offsets[j as usize], self.rows[j as usize]);
        let (a, b) = (o.get(v as usize), o.get(v as usize + 1));
        match (a, b) {
            (Some(&a), Some(&b)) => t.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Checks that every row is in every table exactly once, in the bucket of its own
    /// substring, rows of a bucket increasing (O(m n); `codedb verify` and full opens).
    /// `codes` is the segment's row-major code column.
    pub fn check_against(
        &self,
        codes: &[u8],
        code_bytes: usize,
        corrupt: impl Fn(String) -> FormatError,
    ) -> Result<()> {
        for j in 0..self.shape.m {
            let (s, l) = self.shape.sub(j);
            let o = self.offsets[j as usize];
            for v in 0..o.len() - 1 {
                let bucket = self.bucket(j, v as u32);
                for (k, &r) in bucket.iter().enumerate() {
                    let code = codes
                        .get(r as usize * code_bytes..(r as usize + 1) * code_bytes)
                        .ok_or_else(|| corrupt(format!("table {j}: row {r} out of range")))?;
                    if substring(code, s, l) != v as u32 {
                        return Err(corrupt(format!(
                            "table {j}: row {r} is in bucket {v}, its substring is {}",
                            substring(code, s, l)
                        )));
                    }
                    if k > 0 && bucket[k - 1] >= r {
                        return Err(corrupt(format!(
                            "table {j}: rows of bucket {v} are not increasing"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}
