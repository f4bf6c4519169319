//! Per-segment indexes over the attribute columns, which a filter's evaluation uses instead
//! of a pass over a column (docs/filtering.md, "How a filter runs"):
//!
//! - **tag postings**: per dictionary code of a `tags` column, the ascending row numbers of the
//!   rows holding it, so `HAS` / `HAS ANY` / `HAS ALL` cost O(rows holding the tags) — the
//!   inverted file of a text index (Manning et al., "Introduction to Information Retrieval",
//!   §1.2), here over one segment's rows;
//! - **zone maps**: per zone of [`ZONE_ROWS`] rows, the minimum and maximum of an `int` or
//!   `timestamp` column (the "small materialized aggregates" of Moerkotte, VLDB 1998), so a
//!   comparison decides whole zones — none or every row passing — and reads only the rows of
//!   zones that straddle its value: few on a column clustered in row order (an insertion time).
//!
//! Both are built in memory from a segment's decoded columns on the first filter that reads
//! the segment ([`crate::format::SegmentReader`] keeps them with its columns, built once,
//! thread-safe), not stored in the file.

use super::attribute_columns::{Attributes, ColumnData};

/// Rows per zone of a zone map.
pub const ZONE_ROWS: usize = 4096;

/// The index of one column.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnIndex {
    /// No index (floats, booleans, strings).
    None,
    /// Tag postings: the rows holding dictionary code `c` are `rows[starts[c]..starts[c + 1]]`,
    /// ascending.
    Postings {
        /// Dictionary size + 1 offsets into `rows`.
        starts: Vec<u32>,
        /// Row numbers, grouped by code.
        rows: Vec<u32>,
    },
    /// Per zone of [`ZONE_ROWS`] rows: (minimum, maximum).
    Zones(Vec<(i64, i64)>),
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
        }
    }
}

/// The indexes of a segment's columns, in the order of its [`Attributes`]' columns.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeIndex {
    columns: Vec<ColumnIndex>,
}

impl AttributeIndex {
    /// The indexes of every column of `attributes`.
    pub fn build(attributes: &Attributes) -> AttributeIndex {
        AttributeIndex {
            columns: (0..attributes.schema().len())
                .map(|i| {
                    attributes
                        .column(i)
                        .map_or(ColumnIndex::None, |c| ColumnIndex::build(&c))
                })
                .collect(),
        }
    }

    /// The index of column `i` of the attributes it was built from.
    pub fn column(&self, i: usize) -> Option<&ColumnIndex> {
        self.columns.get(i)
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
