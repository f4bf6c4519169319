//! Building the multi-index hashing tables of a binary segment (FORMAT.md §3.6; the layout
//! and its reader are [`super::mih_tables`]), as segments are written.
//!
//! Writing streams ([`MihBuild`]): one pass over the code column counts every table (the
//! offsets), then a few fill passes ([`MihBuild::passes`]), each staging the rows of as many
//! whole partitions (values sharing their top [`PART_BITS`] bits) of consecutive tables as
//! [`BUILD_BYTES`] holds, then sorting each partition by its low bits in cache. Memory is the
//! counts plus [`BUILD_BYTES`], never `m × n`; at 10^8 64-bit codes that is 4 passes in all
//! where filling one table window at a time took 10, and 5.4× faster (BENCHMARKS.md).

use std::path::Path;

use super::error::{FormatError, Result};
use super::mih_tables::{MihShape, substring};

/// Bytes a table build holds besides its counts (which become the offsets): the stage of one
/// fill pass (8 bytes per row) and the sort of its widest partition (4 bytes per row). 1 GiB
/// fills the 3 × 10^8 rows of 10^8 64-bit codes in 3 passes over the codes.
pub const BUILD_BYTES: usize = 1 << 30;
/// Rows the counting pass buffers (their codes, then 8 bytes each while counting): 2^22 rows
/// of 8-byte codes is 64 MiB, well inside [`BUILD_BYTES`].
pub const COUNT_ROWS: usize = 1 << 22;
/// Top bits of a substring value that pick its partition in a fill pass: 2^10 write streams
/// while staging (few enough for the caches and the TLB), and each partition's low bits are
/// then sorted within a few hundred KiB.
pub const PART_BITS: u32 = 10;

/// A table section being built: the counts of the first pass, then the fill passes
/// ([`MihBuild::passes`]).
#[derive(Debug)]
pub struct MihBuild {
    shape: MihShape,
    code_bytes: usize,
    rows: u64,
    /// Per table, the count of each substring value, then (after [`MihBuild::offsets`]) the
    /// prefix sums.
    counts: Vec<Vec<u32>>,
    seen: u64,
    /// Codes of the counting pass not yet counted (up to [`COUNT_ROWS`]).
    pending: Vec<u8>,
}

impl MihBuild {
    /// A build of `shape` over `rows` codes of `code_bytes` bytes.
    pub fn new(shape: MihShape, code_bytes: usize, rows: u64) -> MihBuild {
        let counts = (0..shape.m)
            .map(|j| vec![0u32; shape.offsets_len(j)])
            .collect();
        MihBuild {
            shape,
            code_bytes,
            rows,
            counts,
            seen: 0,
            pending: Vec::new(),
        }
    }

    /// First pass: counts whole codes (row-major, any chunking), [`COUNT_ROWS`] at a time.
    pub fn count(&mut self, codes: &[u8]) {
        let full = COUNT_ROWS * self.code_bytes;
        let mut rest = &codes[..codes.len() - codes.len() % self.code_bytes];
        self.seen += (rest.len() / self.code_bytes) as u64;
        while !rest.is_empty() {
            let take = (full - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == full {
                self.count_pending();
            }
        }
    }

    /// Adds the buffered codes to every table's counts. A direct count would make one random
    /// access into up to 64 MiB of counts per row and table (a cache and TLB miss each); the
    /// values are first grouped by partition (2^[`PART_BITS`] streams), so that the counts are
    /// then swept in order, one partition's few KiB at a time.
    fn count_pending(&mut self) {
        let (mut vals, mut grouped) = (Vec::new(), Vec::new());
        for j in 0..self.shape.m {
            let (s, l) = self.shape.sub(j);
            let low = self.low_bits(j);
            vals.clear();
            vals.extend((self.pending.chunks_exact(self.code_bytes)).map(|c| substring(c, s, l)));
            let counts = &mut self.counts[j as usize];
            if low == 0 {
                for &v in &vals {
                    counts[v as usize + 1] += 1;
                }
                continue;
            }
            let mut at = vec![0usize; (1 << (l - low)) + 1];
            for &v in &vals {
                at[(v >> low) as usize + 1] += 1;
            }
            for p in 1..at.len() {
                at[p] += at[p - 1];
            }
            grouped.clear();
            grouped.resize(vals.len(), 0u32);
            for &v in &vals {
                let c = &mut at[(v >> low) as usize];
                grouped[*c] = v;
                *c += 1;
            }
            for &v in &grouped {
                counts[v as usize + 1] += 1;
            }
        }
        self.pending.clear();
    }

    /// Ends the first pass: the offsets of every table (prefix sums of the counts), or an
    /// error naming `path` when the pass saw a number of codes other than `rows`.
    pub fn offsets(&mut self, path: &Path) -> Result<()> {
        self.count_pending();
        self.pending = Vec::new();
        if self.seen != self.rows {
            return Err(differs(
                path,
                format!(
                    "the code pass gave {} rows, the segment has {}",
                    self.seen, self.rows
                ),
            ));
        }
        for c in &mut self.counts {
            for v in 1..c.len() {
                c[v] += c[v - 1];
            }
        }
        Ok(())
    }

    /// The offsets of table `j` (after [`MihBuild::offsets`]).
    pub fn table_offsets(&self, j: u32) -> &[u32] {
        &self.counts[j as usize]
    }

    /// Bits of table `j`'s values below the [`PART_BITS`] that pick the partition.
    fn low_bits(&self, j: u32) -> u32 {
        self.shape.sub(j).1.saturating_sub(PART_BITS)
    }

    /// Positions `[start, end)` of partition `p` of table `j` in that table's rows.
    fn part(&self, j: u32, p: u32) -> (usize, usize) {
        let low = self.low_bits(j);
        let o = &self.counts[j as usize];
        (
            o[(p as usize) << low] as usize,
            o[(p as usize + 1) << low] as usize,
        )
    }

    /// The fill passes (after [`MihBuild::offsets`]) that give every table's rows in section
    /// order, each holding at most `budget` bytes: runs of whole partitions, staged at 8
    /// bytes per row plus the widest one's sort at 4; a partition too large for that (many
    /// rows sharing their top bits) alone, in slices of `budget / 4` positions.
    pub fn passes(&self, budget: usize) -> Vec<MihPass> {
        let mut plan = Plan::default();
        for j in 0..self.shape.m {
            let parts = 1u32 << (self.shape.sub(j).1 - self.low_bits(j));
            for p in 0..parts {
                let (a, b) = self.part(j, p);
                let size = b - a;
                if 8 * (plan.staged + size) + 4 * plan.widest.max(size) > budget {
                    plan.close();
                    if 12 * size > budget {
                        let w = (budget / 4).max(1);
                        let mut s = a;
                        while s < b {
                            plan.out.push(MihPass::Slice {
                                j,
                                window: (s, (s + w).min(b)),
                            });
                            s += w;
                        }
                        continue;
                    }
                }
                match plan.group.last_mut() {
                    Some(t) if t.j == j => {
                        t.p1 = p + 1;
                        t.staged += size;
                    }
                    _ => plan.group.push(PassTable {
                        j,
                        p0: p,
                        p1: p + 1,
                        at: plan.staged,
                        staged: size,
                    }),
                }
                plan.staged += size;
                plan.widest = plan.widest.max(size);
            }
        }
        plan.close();
        plan.out
    }

    /// The running state of `pass`, staging into `stage` (grown as needed, kept across passes).
    pub fn fill<'b>(&'b self, pass: &MihPass, stage: &'b mut Vec<u64>) -> MihFill<'b> {
        let kind = match pass {
            MihPass::Parts {
                tables,
                staged,
                widest,
            } => {
                if stage.len() < *staged {
                    stage.resize(*staged, 0);
                }
                let tables = tables
                    .iter()
                    .map(|t| {
                        let first = self.part(t.j, t.p0).0;
                        PartFill {
                            table: t.clone(),
                            sub: self.shape.sub(t.j),
                            low: self.low_bits(t.j),
                            cursor: (t.p0..t.p1)
                                .map(|p| t.at + self.part(t.j, p).0 - first)
                                .collect(),
                        }
                    })
                    .collect();
                FillKind::Parts {
                    tables,
                    stage: &mut stage[..*staged],
                    widest: *widest,
                }
            }
            MihPass::Slice { j, window } => {
                // The slice's rows take the budget: the stage goes until a run needs it again.
                *stage = Vec::new();
                let off = &self.counts[*j as usize];
                let (p0, p1) = (window.0 as u32, window.1 as u32);
                // The buckets the window overlaps: first whose end passes p0, last whose start
                // is < p1.
                let va = off.partition_point(|&o| o <= p0).saturating_sub(1);
                let vb = off.partition_point(|&o| o < p1).saturating_sub(1).max(va);
                FillKind::Slice {
                    j: *j,
                    sub: self.shape.sub(*j),
                    window: (p0, p1),
                    va: va as u32,
                    cursor: off[va..=vb.min(off.len() - 2)].to_vec(),
                    out: vec![0u32; window.1 - window.0],
                }
            }
        };
        MihFill {
            build: self,
            kind,
            row: 0,
            overrun: false,
        }
    }
}

/// Rows of a table pass: [`MihBuild::passes`] being assembled.
#[derive(Default)]
struct Plan {
    out: Vec<MihPass>,
    group: Vec<PassTable>,
    staged: usize,
    widest: usize,
}

impl Plan {
    /// Ends the current run of partitions (if it holds any rows).
    fn close(&mut self) {
        self.group.retain(|t| t.staged > 0);
        if !self.group.is_empty() {
            self.out.push(MihPass::Parts {
                tables: std::mem::take(&mut self.group),
                staged: self.staged,
                widest: self.widest,
            });
        }
        self.group.clear();
        (self.staged, self.widest) = (0, 0);
    }
}

/// What one pass over the codes fills ([`MihBuild::passes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MihPass {
    /// Consecutive whole partitions (values sharing their top [`PART_BITS`] bits) of one or
    /// more tables: each row is staged with its partition, then each partition is sorted by
    /// its low bits in cache.
    Parts {
        /// Per table touched, its partitions.
        tables: Vec<PassTable>,
        /// Rows staged.
        staged: usize,
        /// Rows of the largest partition.
        widest: usize,
    },
    /// Positions `window` of table `j`'s rows (a partition larger than a pass), with a cursor
    /// per bucket.
    Slice {
        /// The table.
        j: u32,
        /// Positions in its rows.
        window: (usize, usize),
    },
}

/// The partitions `p0..p1` of table `j` in a [`MihPass::Parts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassTable {
    j: u32,
    p0: u32,
    p1: u32,
    /// Where the first partition's rows start in the stage.
    at: usize,
    /// Rows of these partitions.
    staged: usize,
}

#[derive(Debug)]
struct PartFill {
    table: PassTable,
    sub: (u32, u32),
    low: u32,
    /// Next free stage place of each partition.
    cursor: Vec<usize>,
}

#[derive(Debug)]
enum FillKind<'b> {
    Parts {
        tables: Vec<PartFill>,
        stage: &'b mut [u64],
        widest: usize,
    },
    Slice {
        j: u32,
        sub: (u32, u32),
        window: (u32, u32),
        va: u32,
        /// Next free place of each bucket the window overlaps (buckets `va..va + len`).
        cursor: Vec<u32>,
        out: Vec<u32>,
    },
}

/// One fill pass ([`MihBuild::fill`]): fed every code in row order, then
/// [`MihFill::finish`] writes its rows.
#[derive(Debug)]
pub struct MihFill<'b> {
    build: &'b MihBuild,
    kind: FillKind<'b>,
    row: u64,
    /// More codes than rows came, or a row landed outside its place.
    overrun: bool,
}

impl MihFill<'_> {
    /// Feeds whole codes (row-major, in row order, any chunking).
    pub fn add(&mut self, codes: &[u8]) {
        let cb = self.build.code_bytes;
        let n = (codes.len() / cb) as u64;
        if self.row + n > self.build.rows {
            self.overrun = true;
            self.row += n;
            return;
        }
        let row0 = self.row;
        self.row += n;
        match &mut self.kind {
            FillKind::Parts { tables, stage, .. } => {
                // Table by table over the chunk: one table's cursors and write streams at a
                // time, the chunk itself stays in cache.
                for t in tables.iter_mut() {
                    let (s, l) = t.sub;
                    let mask = (1u32 << t.low) - 1;
                    let p0 = t.table.p0;
                    for (i, code) in codes.chunks_exact(cb).enumerate() {
                        let v = substring(code, s, l);
                        let p = ((v >> t.low).wrapping_sub(p0)) as usize;
                        if let Some(c) = t.cursor.get_mut(p) {
                            match stage.get_mut(*c) {
                                Some(e) => *e = ((row0 + i as u64) << 32) | u64::from(v & mask),
                                None => self.overrun = true,
                            }
                            *c += 1;
                        }
                    }
                }
            }
            FillKind::Slice {
                sub,
                window,
                va,
                cursor,
                out,
                ..
            } => {
                let (s, l) = *sub;
                let (p0, p1) = *window;
                for (i, code) in codes.chunks_exact(cb).enumerate() {
                    let v = substring(code, s, l).wrapping_sub(*va);
                    if let Some(c) = cursor.get_mut(v as usize) {
                        let p = *c;
                        *c += 1;
                        if p >= p0 && p < p1 {
                            out[(p - p0) as usize] = (row0 + i as u64) as u32;
                        }
                    }
                }
            }
        }
    }

    /// Sorts the pass's rows into their places and hands them to `write` in section order,
    /// as little-endian bytes; an error naming `path` when the codes of this pass were not
    /// those of the counting pass (other rows, or other substrings).
    pub fn finish(self, path: &Path, write: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let b = self.build;
        if self.row != b.rows || self.overrun {
            return Err(differs(
                path,
                format!(
                    "a fill pass gave {} rows, the counting pass {}",
                    self.row, b.rows
                ),
            ));
        }
        let other = || {
            differs(
                path,
                "a fill pass gave other codes than the counting pass".into(),
            )
        };
        match self.kind {
            FillKind::Parts {
                tables,
                stage,
                widest,
            } => {
                let mut sorted = vec![0u32; widest];
                let mut cur: Vec<u32> = Vec::new();
                for t in &tables {
                    let off = &b.counts[t.table.j as usize];
                    let first = b.part(t.table.j, t.table.p0).0;
                    for p in t.table.p0..t.table.p1 {
                        let (pa, pb) = b.part(t.table.j, p);
                        let at = t.table.at + pa - first;
                        if t.cursor[(p - t.table.p0) as usize] != at + pb - pa {
                            return Err(other());
                        }
                        if pa == pb {
                            continue;
                        }
                        // A counting sort of the partition by its low bits, stable: the
                        // staged rows are in row order.
                        let lo = (p as usize) << t.low;
                        cur.clear();
                        cur.extend(off[lo..lo + (1 << t.low)].iter().map(|&o| o - pa as u32));
                        let out = &mut sorted[..pb - pa];
                        for &e in &stage[at..at + pb - pa] {
                            let c = &mut cur[(e as u32) as usize];
                            *out.get_mut(*c as usize).ok_or_else(other)? = (e >> 32) as u32;
                            *c += 1;
                        }
                        let full = (cur.iter().zip(&off[lo + 1..]))
                            .all(|(&c, &end)| c as usize + pa == end as usize);
                        if !full {
                            return Err(other());
                        }
                        write(le_bytes(out))?;
                    }
                }
            }
            FillKind::Slice {
                j,
                va,
                cursor,
                mut out,
                ..
            } => {
                let off = &b.counts[j as usize][va as usize + 1..];
                if cursor.iter().zip(off).any(|(c, e)| c != e) {
                    return Err(other());
                }
                write(le_bytes(&mut out))?;
            }
        }
        Ok(())
    }
}

/// `v` as little-endian bytes, in place.
fn le_bytes(v: &mut [u32]) -> &[u8] {
    for x in v.iter_mut() {
        *x = x.to_le();
    }
    bytemuck::cast_slice(v)
}

/// The error of a pass over the codes that disagrees with the first.
fn differs(path: &Path, detail: String) -> FormatError {
    FormatError::InvalidArgument {
        path: path.to_path_buf(),
        argument: "mih".into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The rows arrays by the definition: per table, rows sorted stably by substring value.
    fn by_definition(codes: &[u8], cb: usize, shape: MihShape) -> Vec<u8> {
        let mut out = Vec::new();
        for j in 0..shape.m {
            let (s, l) = shape.sub(j);
            let mut rows: Vec<(u32, u32)> = (codes.chunks_exact(cb).enumerate())
                .map(|(r, c)| (substring(c, s, l), r as u32))
                .collect();
            rows.sort();
            out.extend(rows.iter().flat_map(|r| r.1.to_le_bytes()));
        }
        out
    }

    /// The rows arrays as the writer builds them, `chunk` rows per feed, or the error.
    fn built(
        codes: &[u8],
        cb: usize,
        shape: MihShape,
        budget: usize,
        chunk: usize,
    ) -> Result<Vec<u8>> {
        let rows = (codes.len() / cb) as u64;
        let p = Path::new("<memory>");
        let mut b = MihBuild::new(shape, cb, rows);
        codes.chunks(chunk * cb).for_each(|c| b.count(c));
        b.offsets(p)?;
        let (mut out, mut stage) = (Vec::new(), Vec::new());
        for pass in b.passes(budget) {
            let mut fill = b.fill(&pass, &mut stage);
            codes.chunks(chunk * cb).for_each(|c| fill.add(c));
            fill.finish(p, &mut |bytes| {
                out.extend_from_slice(bytes);
                Ok(())
            })?;
        }
        Ok(out)
    }

    fn codes(rng: &mut StdRng, rows: usize, cb: usize, distinct: usize) -> Vec<u8> {
        let centres: Vec<u8> = (0..distinct * cb).map(|_| rng.random()).collect();
        let mut out = Vec::with_capacity(rows * cb);
        for _ in 0..rows {
            let c = rng.random_range(0..distinct);
            out.extend_from_slice(&centres[c * cb..(c + 1) * cb]);
            // A few rows get a random bit flipped, so buckets differ in size.
            if rng.random_bool(0.3) {
                let n = out.len();
                out[n - cb + rng.random_range(0..cb)] ^= 1 << rng.random_range(0..8);
            }
        }
        out
    }

    #[test]
    fn every_budget_gives_the_rows_by_definition() {
        let mut rng = StdRng::seed_from_u64(21);
        // (rows, code bytes, distinct codes, substrings): short substrings (one bucket per
        // partition), 21-24-bit ones (partitions of many buckets), one value for every row.
        for (rows, cb, distinct, m) in [
            (3000, 8, 3000, 3),
            (3000, 8, 7, 3),
            (2000, 4, 1, 2),
            (1500, 32, 40, 11),
            (2500, 6, 2500, 2),
            (1, 4, 1, 4),
        ] {
            let codes = codes(&mut rng, rows, cb, distinct);
            let shape = MihShape::new(8 * cb as u32, m).expect("shape");
            let want = by_definition(&codes, cb, shape);
            for budget in [1, 13, 100, 4096, 50_000, BUILD_BYTES] {
                for chunk in [1, 7, 1000] {
                    let got = built(&codes, cb, shape, budget, chunk).expect("build");
                    assert!(
                        got == want,
                        "rows {rows}, m {m}, budget {budget}, chunk {chunk}"
                    );
                }
            }
        }
    }

    #[test]
    fn passes_stay_within_the_budget_and_cover_every_row_once() {
        let mut rng = StdRng::seed_from_u64(5);
        let (cb, rows) = (8, 5000);
        let codes = codes(&mut rng, rows, cb, 50);
        let shape = MihShape::new(64, 3).expect("shape");
        let mut b = MihBuild::new(shape, cb, rows as u64);
        b.count(&codes);
        b.offsets(Path::new("<memory>")).expect("offsets");
        for budget in [64, 1000, 20_000, 100_000] {
            let mut covered = 0;
            for pass in b.passes(budget) {
                match pass {
                    MihPass::Parts {
                        staged,
                        widest,
                        tables,
                    } => {
                        assert!(8 * staged + 4 * widest <= budget, "budget {budget}");
                        assert_eq!(tables.iter().map(|t| t.staged).sum::<usize>(), staged);
                        covered += staged;
                    }
                    MihPass::Slice { window, .. } => {
                        assert!(
                            4 * (window.1 - window.0) <= budget.max(4),
                            "budget {budget}"
                        );
                        covered += window.1 - window.0;
                    }
                }
            }
            assert_eq!(covered, 3 * rows, "budget {budget}");
        }
    }

    #[test]
    fn a_fill_pass_with_other_codes_is_an_error_not_a_panic() {
        let mut rng = StdRng::seed_from_u64(9);
        let cb = 8;
        let codes = codes(&mut rng, 2000, cb, 2000);
        let shape = MihShape::new(64, 3).expect("shape");
        let p = Path::new("<memory>");
        let mut changed = codes.clone();
        changed[5 * cb] ^= 0xff;
        let cases: [(&str, &[u8]); 3] = [
            ("fewer rows", &codes[..1999 * cb]),
            ("more rows", &[codes.as_slice(), &codes[..cb]].concat()),
            ("other codes", &changed),
        ];
        for (what, again) in cases {
            for budget in [100, 4096, BUILD_BYTES] {
                let mut b = MihBuild::new(shape, cb, 2000);
                b.count(&codes);
                b.offsets(p).expect("offsets");
                let mut stage = Vec::new();
                let mut failed = false;
                for pass in b.passes(budget) {
                    let mut fill = b.fill(&pass, &mut stage);
                    again.chunks(64 * cb).for_each(|c| fill.add(c));
                    if let Err(e) = fill.finish(p, &mut |_| Ok(())) {
                        assert!(e.to_string().contains("mih"), "{what}: {e}");
                        failed = true;
                        break;
                    }
                }
                assert!(failed, "{what}, budget {budget}: no error");
            }
        }
    }
}
