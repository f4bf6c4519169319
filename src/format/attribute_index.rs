//! Per-segment indexes over the attribute columns, which a filter's evaluation uses instead
//! of a pass over a column (docs/filtering.md, "How a filter runs"):
//!
//! - **tag postings**: per dictionary code of a `tags` column, the ascending row numbers of the
//!   rows holding it, so `HAS` / `HAS ANY` / `HAS ALL` cost O(rows holding the tags) — the
//!   inverted file of a text index (Manning et al., "Introduction to Information Retrieval",
//!   §1.2), here over one segment's rows;
//! - **zone maps**: per zone of [`ZONE_ROWS`] rows, the minimum and maximum of an `int`,
//!   `timestamp` or `float` column (the "small materialized aggregates" of Moerkotte, VLDB
//!   1998), so a comparison decides whole zones — none or every row passing — and reads only
//!   the rows of zones that straddle its value: few on a column clustered in row order (an
//!   insertion time). A float zone's bounds are over its non-NaN rows and it says whether it
//!   holds a NaN, which passes only `!=`: so a zone never rules out a row that passes.
//!
//! Since format 1.8 a segment stores both (FORMAT.md §3.8, sections `attribute_postings` and
//! `attribute_zones`, written with the columns by sealing, compaction and build): opening one
//! reads them, checked on first touch like a code block, instead of rebuilding them. A segment
//! of format 1.7 builds them in memory from its decoded columns on the first filter that reads
//! it — the same indexes ([`AttributeIndex::build`], which `codedb verify` compares the stored
//! ones against). [`SegmentReader`](crate::format::segment_reader::SegmentReader) keeps them
//! with its columns, made once, thread-safe.

use std::path::Path;

use super::attribute_columns::{Attributes, ColumnData, ColumnType};
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, to_usize};

/// Rows per zone of a zone map.
pub const ZONE_ROWS: usize = 4096;

/// The name of the stored postings section (FORMAT.md §3.8).
pub const POSTINGS_SECTION: &str = "attribute_postings";
/// The name of the stored zone-map section (FORMAT.md §3.8).
pub const ZONES_SECTION: &str = "attribute_zones";

/// The index of one column.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnIndex {
    /// No index (booleans, strings).
    None,
    /// Tag postings: the rows holding dictionary code `c` are `rows[starts[c]..starts[c + 1]]`,
    /// ascending.
    Postings {
        /// Dictionary size + 1 offsets into `rows`.
        starts: Vec<u32>,
        /// Row numbers, grouped by code.
        rows: Vec<u32>,
    },
    /// Per zone of [`ZONE_ROWS`] rows of an `int` or `timestamp` column: (minimum, maximum).
    Zones(Vec<(i64, i64)>),
    /// Per zone of [`ZONE_ROWS`] rows of a `float` column: (minimum, maximum) of its non-NaN
    /// rows (`(+∞, −∞)` when it has none), and bit `z % 64` of word `z / 64` of `nan` set when
    /// zone `z` holds a NaN.
    FloatZones {
        /// Bounds per zone.
        zones: Vec<(f64, f64)>,
        /// Which zones hold a NaN.
        nan: Vec<u64>,
    },
}

/// (minimum, maximum) of `z`'s non-NaN values and whether it holds a NaN.
fn float_zone(z: &[f64]) -> ((f64, f64), bool) {
    z.iter().fold(
        ((f64::INFINITY, f64::NEG_INFINITY), false),
        |((lo, hi), n), &v| {
            if v.is_nan() {
                ((lo, hi), true)
            } else {
                (
                    (if v < lo { v } else { lo }, if v > hi { v } else { hi }),
                    n,
                )
            }
        },
    )
}

impl ColumnIndex {
    /// The index of `column`.
    pub fn build(column: &ColumnData<'_>) -> ColumnIndex {
        match *column {
            ColumnData::Int(x) | ColumnData::Timestamp(x) => ColumnIndex::Zones(
                x.chunks(ZONE_ROWS)
                    .map(|z| {
                        z.iter()
                            .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
                    })
                    .collect(),
            ),
            ColumnData::Float(x) => {
                let mut zones = Vec::with_capacity(x.len().div_ceil(ZONE_ROWS));
                let mut nan = vec![0u64; x.len().div_ceil(ZONE_ROWS).div_ceil(64)];
                for (k, z) in x.chunks(ZONE_ROWS).enumerate() {
                    let (b, n) = float_zone(z);
                    zones.push(b);
                    nan[k / 64] |= u64::from(n) << (k % 64);
                }
                ColumnIndex::FloatZones { zones, nan }
            }
            ColumnData::Tags {
                offsets,
                values,
                dict,
            } => {
                let rows = offsets.len().saturating_sub(1);
                let codes_of = |r: usize| {
                    let (a, b) = (offsets[r] as usize, offsets[r + 1] as usize);
                    values.get(a..b).unwrap_or(&[])
                };
                // Counting sort: counts per code, their prefix sums, then the rows in order.
                let mut starts = vec![0u32; dict.len() + 1];
                for r in 0..rows {
                    for &c in codes_of(r) {
                        if let Some(s) = starts.get_mut(c as usize + 1) {
                            *s += 1;
                        }
                    }
                }
                for c in 1..starts.len() {
                    starts[c] += starts[c - 1];
                }
                let mut next: Vec<u32> = starts.clone();
                let mut out = vec![0u32; *starts.last().unwrap_or(&0) as usize];
                for r in 0..rows {
                    for &c in codes_of(r) {
                        if let Some(n) = next.get_mut(c as usize)
                            && let Some(slot) = out.get_mut(*n as usize)
                        {
                            *slot = r as u32;
                            *n += 1;
                        }
                    }
                }
                ColumnIndex::Postings { starts, rows: out }
            }
            _ => ColumnIndex::None,
        }
    }

    /// The rows holding tag code `code`, ascending (empty without postings).
    pub fn posting(&self, code: u32) -> &[u32] {
        match self {
            ColumnIndex::Postings { starts, rows } => {
                let c = code as usize;
                match (starts.get(c), starts.get(c + 1)) {
                    (Some(&a), Some(&b)) => rows.get(a as usize..b as usize).unwrap_or(&[]),
                    _ => &[],
                }
            }
            _ => &[],
        }
    }

    /// Bytes the index holds in memory.
    pub fn bytes(&self) -> usize {
        match self {
            ColumnIndex::None => 0,
            ColumnIndex::Postings { starts, rows } => 4 * (starts.len() + rows.len()),
            ColumnIndex::Zones(z) => 16 * z.len(),
            ColumnIndex::FloatZones { zones, nan } => 16 * zones.len() + 8 * nan.len(),
        }
    }

    /// What the index is (`postings`, `zones`; `None` without one) and how many entries it
    /// holds (row numbers of the postings, zones of a zone map), for `inspect`.
    pub fn describe(&self) -> Option<(&'static str, usize)> {
        match self {
            ColumnIndex::None => None,
            ColumnIndex::Postings { rows, .. } => Some(("postings", rows.len())),
            ColumnIndex::Zones(z) => Some(("zones", z.len())),
            ColumnIndex::FloatZones { zones, .. } => Some(("zones", zones.len())),
        }
    }

    /// The same index, compared bit for bit (float bounds by their bits: `verify`).
    fn same(&self, other: &ColumnIndex) -> bool {
        match (self, other) {
            (
                ColumnIndex::FloatZones { zones: a, nan: na },
                ColumnIndex::FloatZones { zones: b, nan: nb },
            ) => {
                na == nb
                    && a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.0.to_bits() == y.0.to_bits() && x.1.to_bits() == y.1.to_bits()
                    })
            }
            _ => self == other,
        }
    }
}

/// Where a segment's [`AttributeIndex`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexSource {
    /// Read from the segment's sections `attribute_postings` and `attribute_zones` (format 1.8).
    Stored,
    /// Built in memory from the decoded columns on first use (a segment of format 1.7).
    Built,
}

impl IndexSource {
    /// The words `inspect` uses.
    pub fn name(self) -> &'static str {
        match self {
            IndexSource::Stored => "stored",
            IndexSource::Built => "built in memory on first use",
        }
    }
}

/// The indexes of a segment's columns, in the order of its [`Attributes`]' columns.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeIndex {
    columns: Vec<ColumnIndex>,
    /// Bytes of each column's entry in its stored section (0 when built in memory).
    stored_bytes: Vec<u64>,
    source: IndexSource,
}

/// Column type codes of a zone-map entry (those of FORMAT.md §3.7).
fn zone_type(t: ColumnType) -> Option<u8> {
    matches!(
        t,
        ColumnType::Int | ColumnType::Float | ColumnType::Timestamp
    )
    .then(|| t.code())
}

fn put_u32s(w: &mut LeWriter, v: &[u32]) {
    for &x in v {
        w.u32(x);
    }
    w.align8();
}

fn read_u32s(r: &mut LeReader<'_>, n: u64, what: &str) -> Result<Vec<u32>> {
    let n = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(4))
        .ok_or_else(|| r.corrupt(format!("{what}: count overflows")))?;
    let b = r.take(n)?;
    r.align8()?;
    Ok(b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl AttributeIndex {
    /// The indexes of every column of `attributes`, built in memory.
    pub fn build(attributes: &Attributes) -> AttributeIndex {
        let columns: Vec<ColumnIndex> = (0..attributes.schema().len())
            .map(|i| {
                attributes
                    .column(i)
                    .map_or(ColumnIndex::None, |c| ColumnIndex::build(&c))
            })
            .collect();
        AttributeIndex {
            stored_bytes: vec![0; columns.len()],
            columns,
            source: IndexSource::Built,
        }
    }

    /// The index of column `i` of the attributes it was built from.
    pub fn column(&self, i: usize) -> Option<&ColumnIndex> {
        self.columns.get(i)
    }

    /// Where the indexes came from.
    pub fn source(&self) -> IndexSource {
        self.source
    }

    /// Bytes of column `i`'s entry in its stored section (0 when built in memory).
    pub fn stored_bytes(&self, i: usize) -> u64 {
        self.stored_bytes.get(i).copied().unwrap_or(0)
    }

    /// The first column whose index differs from `other`'s (`verify`: stored against rebuilt),
    /// with the section that holds it.
    pub fn first_difference(&self, other: &AttributeIndex) -> Option<(usize, &'static str)> {
        let n = self.columns.len().max(other.columns.len());
        (0..n).find_map(|i| {
            let (a, b) = (self.columns.get(i), other.columns.get(i));
            let same = match (a, b) {
                (Some(a), Some(b)) => a.same(b),
                _ => false,
            };
            (!same).then(|| {
                let kind = a.or(b).and_then(ColumnIndex::describe).map(|d| d.0);
                let section = if kind == Some("postings") {
                    POSTINGS_SECTION
                } else {
                    ZONES_SECTION
                };
                (i, section)
            })
        })
    }

    /// The bytes of the two sections (FORMAT.md §3.8) for `attributes`: (postings, zones).
    pub fn encode(attributes: &Attributes) -> (Vec<u8>, Vec<u8>) {
        let built = AttributeIndex::build(attributes);
        let mut p = LeWriter::new();
        let mut z = LeWriter::new();
        let tagged: Vec<usize> = (0..built.columns.len())
            .filter(|&i| matches!(built.columns[i], ColumnIndex::Postings { .. }))
            .collect();
        let zoned: Vec<usize> = (0..built.columns.len())
            .filter(|&i| {
                matches!(
                    built.columns[i],
                    ColumnIndex::Zones(_) | ColumnIndex::FloatZones { .. }
                )
            })
            .collect();
        p.u32(tagged.len() as u32).u32(0);
        for &i in &tagged {
            if let ColumnIndex::Postings { starts, rows } = &built.columns[i] {
                p.u32(i as u32)
                    .u32(0)
                    .u64(starts.len().saturating_sub(1) as u64)
                    .u64(rows.len() as u64);
                put_u32s(&mut p, starts);
                put_u32s(&mut p, rows);
            }
        }
        z.u32(ZONE_ROWS as u32).u32(zoned.len() as u32);
        for &i in &zoned {
            let t = attributes
                .schema()
                .columns()
                .get(i)
                .and_then(|c| zone_type(c.1))
                .unwrap_or(0);
            z.u32(i as u32).u8(t).zeros(3);
            match &built.columns[i] {
                ColumnIndex::Zones(b) => {
                    z.u64(b.len() as u64);
                    for &(lo, hi) in b {
                        z.u64(lo as u64).u64(hi as u64);
                    }
                }
                ColumnIndex::FloatZones { zones, nan } => {
                    z.u64(zones.len() as u64);
                    for &(lo, hi) in zones {
                        z.u64(lo.to_bits()).u64(hi.to_bits());
                    }
                    for &w in nan {
                        z.u64(w);
                    }
                }
                _ => {}
            }
        }
        (p.into_inner(), z.into_inner())
    }

    /// The indexes of `attributes` (a segment's `rows` rows, already checked) from the stored
    /// sections' bytes (`None`: the segment lacks that section, and those indexes are built
    /// in memory). Checks the rules of FORMAT.md §3.8 that need no pass over the columns:
    /// one entry per column of its kind, in column order, each of the column's type and
    /// sizes; offsets that tile the row numbers; row numbers ascending per code and below
    /// `rows`; zone counts; bounds ordered; padding zero. A broken rule is
    /// [`FormatError::Corrupt`] (or `Truncated`) naming `path` and the section.
    pub fn decode(
        postings: Option<&[u8]>,
        zones: Option<&[u8]>,
        attributes: &Attributes,
        path: &Path,
    ) -> Result<AttributeIndex> {
        let mut out =
            AttributeIndex::build_without(attributes, postings.is_some(), zones.is_some());
        out.source = IndexSource::Stored;
        if let Some(b) = postings {
            out.read_postings(b, attributes, path)?;
        }
        if let Some(b) = zones {
            out.read_zones(b, attributes, path)?;
        }
        Ok(out)
    }

    /// [`AttributeIndex::build`] but for the kinds a stored section gives.
    fn build_without(attributes: &Attributes, postings: bool, zones: bool) -> AttributeIndex {
        let columns = (0..attributes.schema().len())
            .map(|i| match attributes.column(i) {
                Some(c @ ColumnData::Tags { .. }) if !postings => ColumnIndex::build(&c),
                Some(ColumnData::Tags { .. }) => ColumnIndex::None,
                Some(
                    c @ (ColumnData::Int(_) | ColumnData::Timestamp(_) | ColumnData::Float(_)),
                ) if !zones => ColumnIndex::build(&c),
                _ => ColumnIndex::None,
            })
            .collect::<Vec<_>>();
        AttributeIndex {
            stored_bytes: vec![0; columns.len()],
            columns,
            source: IndexSource::Built,
        }
    }

    fn read_postings(&mut self, bytes: &[u8], attributes: &Attributes, path: &Path) -> Result<()> {
        let rows = attributes.rows();
        let mut r = LeReader::new(bytes, path, POSTINGS_SECTION);
        let n = r.u32()? as usize;
        r.zeros(4, "column count reserved")?;
        let want: Vec<usize> = (0..attributes.schema().len())
            .filter(|&i| matches!(attributes.column(i), Some(ColumnData::Tags { .. })))
            .collect();
        if n != want.len() {
            return Err(r.corrupt(format!(
                "{n} columns of postings, the segment has {} tags columns",
                want.len()
            )));
        }
        for &i in &want {
            let at = bytes.len() - r.remaining();
            let name = &attributes.schema().columns()[i].0;
            let col = r.u32()? as usize;
            r.zeros(4, "column reserved")?;
            if col != i {
                return Err(r.corrupt(format!(
                    "an entry for column {col} where the tags column {name} ({i}) comes"
                )));
            }
            let Some(ColumnData::Tags { values, dict, .. }) = attributes.column(i) else {
                return Err(r.corrupt(format!("column {name} is not a tags column")));
            };
            let (d, p) = (r.u64()?, r.u64()?);
            if d != dict.len() as u64 || p != values.len() as u64 {
                return Err(r.corrupt(format!(
                    "column {name}: postings of {d} tags and {p} rows, the column has {} tags \
                     and {} values",
                    dict.len(),
                    values.len()
                )));
            }
            let starts = read_u32s(&mut r, d + 1, name)?;
            let list = read_u32s(&mut r, p, name)?;
            if starts.first() != Some(&0)
                || starts.windows(2).any(|w| w[0] > w[1])
                || starts.last().map(|&s| s as u64) != Some(p)
            {
                return Err(r.corrupt(format!(
                    "column {name}: posting offsets do not tile the row numbers"
                )));
            }
            for (c, w) in starts.windows(2).enumerate() {
                let run = &list[w[0] as usize..w[1] as usize];
                if run.windows(2).any(|x| x[0] >= x[1])
                    || run.last().is_some_and(|&x| x as usize >= rows)
                {
                    return Err(r.corrupt(format!(
                        "column {name}: the rows of tag {:?} are not ascending below {rows}",
                        dict.get(c).map_or("", String::as_str)
                    )));
                }
            }
            self.columns[i] = ColumnIndex::Postings { starts, rows: list };
            self.stored_bytes[i] = (bytes.len() - r.remaining() - at) as u64;
        }
        r.finish()
    }

    fn read_zones(&mut self, bytes: &[u8], attributes: &Attributes, path: &Path) -> Result<()> {
        let rows = attributes.rows();
        let mut r = LeReader::new(bytes, path, ZONES_SECTION);
        let zone_rows = r.u32()?;
        if zone_rows as usize != ZONE_ROWS {
            return Err(r.corrupt(format!(
                "zones of {zone_rows} rows (this build: {ZONE_ROWS})"
            )));
        }
        let n = r.u32()? as usize;
        let cols = attributes.schema().columns();
        let want: Vec<usize> = (0..cols.len())
            .filter(|&i| zone_type(cols[i].1).is_some())
            .collect();
        if n != want.len() {
            return Err(r.corrupt(format!(
                "{n} columns of zones, the segment has {} int, float or timestamp columns",
                want.len()
            )));
        }
        let z_want = rows.div_ceil(ZONE_ROWS);
        for &i in &want {
            let at = bytes.len() - r.remaining();
            let (name, t) = &cols[i];
            let col = r.u32()? as usize;
            let code = r.u8()?;
            r.zeros(3, "column reserved")?;
            if col != i || Some(code) != zone_type(*t) {
                return Err(r.corrupt(format!(
                    "an entry for column {col} of type {code} where column {name} ({i}, {}) \
                     comes",
                    t.name()
                )));
            }
            let z = to_usize(r.u64()?, path, ZONES_SECTION, "zone count")?;
            if z != z_want {
                return Err(r.corrupt(format!(
                    "column {name}: {z} zones for {rows} rows (expected {z_want})"
                )));
            }
            let b = r.take(
                z.checked_mul(16)
                    .ok_or_else(|| r.corrupt("zone count overflows"))?,
            )?;
            let pairs = b.chunks_exact(16).map(|c| {
                let (lo, hi) = c.split_at(8);
                (
                    u64::from_le_bytes(lo.try_into().unwrap_or([0; 8])),
                    u64::from_le_bytes(hi.try_into().unwrap_or([0; 8])),
                )
            });
            if *t == ColumnType::Float {
                let zones: Vec<(f64, f64)> = pairs
                    .map(|(a, b)| (f64::from_bits(a), f64::from_bits(b)))
                    .collect();
                let nan = read_u64s(&mut r, z.div_ceil(64))?;
                let tail = z % 64;
                if tail != 0 && nan.last().is_some_and(|&w| w >> tail != 0) {
                    return Err(r.corrupt(format!("column {name}: NaN bits past the last zone")));
                }
                // A zone's bounds are ordered, or the empty pair (+∞, −∞) of a zone whose rows
                // are all NaN; never NaN.
                for (k, &(lo, hi)) in zones.iter().enumerate() {
                    let has_nan = nan[k / 64] >> (k % 64) & 1 == 1;
                    let empty = lo == f64::INFINITY && hi == f64::NEG_INFINITY && has_nan;
                    if !(lo <= hi || empty) {
                        return Err(
                            r.corrupt(format!("column {name}: zone {k} has bounds {lo}..{hi}"))
                        );
                    }
                }
                self.columns[i] = ColumnIndex::FloatZones { zones, nan };
            } else {
                let zones: Vec<(i64, i64)> = pairs.map(|(a, b)| (a as i64, b as i64)).collect();
                if let Some(k) = zones.iter().position(|&(lo, hi)| lo > hi) {
                    return Err(r.corrupt(format!(
                        "column {name}: zone {k} has bounds {}..{}",
                        zones[k].0, zones[k].1
                    )));
                }
                self.columns[i] = ColumnIndex::Zones(zones);
            }
            self.stored_bytes[i] = (bytes.len() - r.remaining() - at) as u64;
        }
        r.finish()
    }
}

fn read_u64s(r: &mut LeReader<'_>, n: usize) -> Result<Vec<u64>> {
    let b = r.take(
        n.checked_mul(8)
            .ok_or_else(|| r.corrupt("count overflows"))?,
    )?;
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// A stored-index error's parts, remembered by a segment after its first touch.
pub(crate) fn error_parts(e: FormatError, section: &str) -> (String, String) {
    match e {
        FormatError::Corrupt {
            section, detail, ..
        }
        | FormatError::Truncated {
            section, detail, ..
        } => (section, detail),
        e => (section.to_string(), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::attribute_columns::Column;

    #[test]
    fn postings_list_the_rows_of_each_tag_and_zones_their_bounds() {
        let tags = Column::tags(&[vec!["a", "b"], vec![], vec!["b"], vec!["c", "a"]]);
        let ix = ColumnIndex::build(&tags.view());
        let ColumnData::Tags { dict, .. } = tags.view() else {
            panic!("not tags")
        };
        let code = |t: &str| dict.iter().position(|d| d == t).unwrap() as u32;
        assert_eq!(ix.posting(code("a")), &[0, 3]);
        assert_eq!(ix.posting(code("b")), &[0, 2]);
        assert_eq!(ix.posting(code("c")), &[3]);
        assert_eq!(ix.posting(99), &[] as &[u32]);
        let n = ZONE_ROWS * 2 + 5;
        let ints = Column::Int((0..n as i64).map(|i| (i * 7) % 10_000 - 3).collect());
        let ColumnIndex::Zones(z) = ColumnIndex::build(&ints.view()) else {
            panic!("no zones")
        };
        assert_eq!(z.len(), 3);
        for (k, &(lo, hi)) in z.iter().enumerate() {
            let rows = k * ZONE_ROWS..((k + 1) * ZONE_ROWS).min(n);
            let vals: Vec<i64> = rows.map(|i| (i as i64 * 7) % 10_000 - 3).collect();
            assert_eq!(lo, *vals.iter().min().unwrap());
            assert_eq!(hi, *vals.iter().max().unwrap());
        }
    }
}
