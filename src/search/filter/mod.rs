//! Filtered search: which rows a query may return, decided before the scan (docs/filtering.md).
//!
//! A [`RowFilter`] is an id selector ([`IdSelector`], FAISS's `IDSelectorBatch`), a predicate
//! in the filter language ([`Predicate`]), or both (AND). A search checks the predicate against
//! the index's schema (the row id and its attribute columns: [`Schema`]) before anything is
//! read, then per block of rows turns the filter into a bitmap of the rows that pass
//! ([`BlockFilter`]). The scans honour it through the block's deletion mask — a row the filter
//! rejects is, for that search, a deleted row — so every kernel, the multi-index hashing
//! tables, re-ranking, IVF and radius lookups skip it exactly as they skip deletions:
//!
//! - a block with no passing row is not read at all;
//! - a filter passing few rows of a block (under [`SPARSE_FRACTION`]) scans only the runs of
//!   64-row words holding a passing row (a prefilter);
//! - a broad one, searched for enough queries, scans its passing rows gathered into one buffer;
//!   for few queries, the block's ranges whole, masking rejected rows in the top-k collector.
//!
//! So without IVF a filtered top-k is the brute-force top-k over the passing rows, ties by id
//! included.

mod check;
mod eval;
mod parse;
mod schema;

use std::ops::Range;

pub use super::error::FilterError;
pub use crate::format::attribute_columns::{
    AttributeError, Attributes, AttributesBuilder, Column, ColumnBuilder, ColumnData, Value,
};
pub use parse::{MAX_DEPTH as MAX_FILTER_DEPTH, MAX_FILTER_BYTES};
pub use schema::{ColumnType, ID_COLUMN, Schema, parse_timestamp};

use crate::format::attribute_index::ColumnIndex;
use check::Expr;
use eval::{MissingColumn, eval};

use super::error::{SearchError, invalid};
use crate::storage::Block;

/// A block is scanned as runs of its passing rows' words (a prefilter) when fewer than this
/// fraction of its rows pass; otherwise whole, masked. A 64-row word scanned for one passing
/// row costs 64 rows of kernel time at worst, so below 1/8 the runs cost less than the block.
pub const SPARSE_FRACTION: f64 = 0.125;

/// A parsed filter expression (docs/filtering.md, "Grammar"). Parsing needs no index; the
/// column names and types are checked when a search runs (or by [`Predicate::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    text: String,
    ast: parse::Ast,
}

// The only floats in a syntax tree are literals, and the lexer refuses non-finite ones, so
// equality is reflexive.
impl Eq for Predicate {}

impl Predicate {
    /// Parses `text`; a syntax error names the character column.
    pub fn parse(text: &str) -> Result<Predicate, FilterError> {
        Ok(Predicate {
            text: text.to_owned(),
            ast: parse::parse(text)?,
        })
    }

    /// The expression as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Checks the names and types against `schema` (what a search does first).
    pub fn check(&self, schema: &Schema) -> Result<(), FilterError> {
        check::check(&self.ast, schema).map(|_| ())
    }

    /// Which of `attributes`' rows (ids `ids`, one per row) pass: the same evaluation a search
    /// runs per block.
    pub fn select(&self, ids: &[u64], attributes: &Attributes) -> Result<Vec<bool>, SearchError> {
        RowFilter::predicate(self.clone()).select(ids, attributes)
    }
}

/// A set of row ids (FAISS's `IDSelectorBatch`): a search returns only rows whose id it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSelector {
    ids: Vec<u64>,
}

impl IdSelector {
    /// The selector of these ids (any order, repeats allowed).
    pub fn new(ids: impl IntoIterator<Item = u64>) -> IdSelector {
        let mut ids: Vec<u64> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        IdSelector { ids }
    }

    /// The ids, ascending, without repeats.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Whether `id` is selected.
    pub fn contains(&self, id: u64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }
}

/// Which rows a search may return: an id selector, a predicate, or both (a row must pass both).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowFilter {
    /// Only these ids.
    pub ids: Option<IdSelector>,
    /// Only rows satisfying this expression.
    pub predicate: Option<Predicate>,
}

impl RowFilter {
    /// Rows whose id `ids` holds.
    pub fn ids(ids: IdSelector) -> RowFilter {
        RowFilter {
            ids: Some(ids),
            predicate: None,
        }
    }

    /// Rows satisfying `predicate`.
    pub fn predicate(predicate: Predicate) -> RowFilter {
        RowFilter {
            ids: None,
            predicate: Some(predicate),
        }
    }

    /// Parses `text` into a filter of rows satisfying it.
    pub fn parse(text: &str) -> Result<RowFilter, FilterError> {
        Ok(RowFilter::predicate(Predicate::parse(text)?))
    }

    /// A query's filter from what a caller names: an expression in the filter language and an
    /// id list, a row passing both (AND); `Ok(None)` when neither is given, so an unfiltered
    /// query takes the unfiltered scans. The expression is parsed and checked against `schema`
    /// (the index's row id and attribute columns) here, before anything is read, so a refusal
    /// names its 1-based character column (docs/filtering.md, "Grammar"). This is the one
    /// place the CLI's `--where`/`--ids` and Python's `where=`/`ids=` become a filter; each
    /// front end only names the argument in the error.
    pub fn checked(
        expression: Option<&str>,
        ids: Option<IdSelector>,
        schema: &Schema,
    ) -> Result<Option<RowFilter>, FilterError> {
        let predicate = match expression {
            Some(text) => {
                let p = Predicate::parse(text)?;
                p.check(schema)?;
                Some(p)
            }
            None => None,
        };
        Ok((predicate.is_some() || ids.is_some()).then_some(RowFilter { ids, predicate }))
    }

    /// The same filter, also requiring `ids`.
    pub fn and_ids(self, ids: IdSelector) -> RowFilter {
        RowFilter {
            ids: Some(ids),
            ..self
        }
    }

    /// The filter checked against `schema`, ready to run on blocks.
    pub(crate) fn compile(&self, schema: &Schema) -> Result<CompiledFilter<'_>, SearchError> {
        let expr = match &self.predicate {
            Some(p) => Some(check::check(&p.ast, schema).map_err(SearchError::Filter)?),
            None => None,
        };
        Ok(CompiledFilter {
            expr,
            ids: self.ids.as_ref().map(|s| s.ids.as_slice()),
            schema: schema.clone(),
        })
    }

    /// Which of `attributes`' rows (ids `ids`) pass.
    pub fn select(&self, ids: &[u64], attributes: &Attributes) -> Result<Vec<bool>, SearchError> {
        if ids.len() != attributes.rows() {
            return Err(invalid(
                "ids",
                format!(
                    "{} ids for {} rows of attributes",
                    ids.len(),
                    attributes.rows()
                ),
            ));
        }
        let c = self.compile(attributes.schema())?;
        let words = c.pass_words(&eval::Rows {
            ids,
            start: 0,
            column: &|i| attributes.column(i),
            index: &|_| None,
        })?;
        Ok((0..ids.len())
            .map(|i| (words[i / 64] >> (i % 64)) & 1 == 1)
            .collect())
    }
}

/// A [`RowFilter`] checked against a schema.
#[derive(Debug)]
pub(crate) struct CompiledFilter<'f> {
    expr: Option<Expr>,
    ids: Option<&'f [u64]>,
    /// The schema the expression was checked against: its column `i` is what `eval` reads.
    schema: Schema,
}

/// What a filter makes of one block: its pass bitmap and hidden-row mask (the complement, what
/// the block's deletion mask adds), and how many live rows pass.
#[derive(Debug)]
pub(crate) struct BlockFilter {
    /// Bit set = the row passes (deleted rows included).
    pub pass: Vec<u64>,
    /// Bit set = the row is hidden from this search (the complement of `pass`).
    pub hidden: Vec<u64>,
    /// Rows that pass and are not deleted.
    pub live_passing: u64,
}

impl CompiledFilter<'_> {
    fn pass_words(&self, at: &eval::Rows<'_, '_>) -> Result<Vec<u64>, SearchError> {
        let ids = at.ids;
        let mut w = match &self.expr {
            Some(e) => eval(e, at).map_err(|MissingColumn(c)| {
                invalid(
                    "filter",
                    format!(
                        "schema column {c} is missing from a block of {} rows",
                        ids.len()
                    ),
                )
            })?,
            None => eval::all_words(ids.len()),
        };
        if let Some(sel) = self.ids {
            for (a, b) in w.iter_mut().zip(eval::ids_in(ids, sel)) {
                *a &= b;
            }
        }
        Ok(w)
    }

    /// The filter over `block` (its ids checked first).
    pub(crate) fn block(&self, block: &Block<'_>) -> Result<BlockFilter, SearchError> {
        let ids = block.ids()?;
        let pass = self.pass_in(block, 0..ids.len())?;
        let all = eval::all_words(ids.len());
        let hidden: Vec<u64> = pass.iter().zip(&all).map(|(p, a)| !p & a).collect();
        let deleted = block.deleted_words();
        let live_passing = pass
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let d = deleted
                    .as_deref()
                    .and_then(|d| d.get(i))
                    .copied()
                    .unwrap_or(0);
                u64::from((p & !d).count_ones())
            })
            .sum();
        Ok(BlockFilter {
            pass,
            hidden,
            live_passing,
        })
    }

    /// The pass bitmap of the filter over rows `range` of `block` alone (bit `j` = row
    /// `range.start + j`): each test reads only those rows of its column, so a search that
    /// reads a few lists of a segment evaluates the filter over those lists' rows, not the
    /// segment (docs/filtering.md, "IVF").
    pub(crate) fn pass_in(
        &self,
        block: &Block<'_>,
        range: Range<usize>,
    ) -> Result<Vec<u64>, SearchError> {
        let ids = block.ids_in(range.clone())?;
        let rows = ids.len();
        let whole = block.rows();
        // The block's stored columns, read (and checked, on first touch) only when the
        // expression reads a column, found by name: a block written before a column was added
        // lacks it, and its rows hold the column's default, made only if the expression reads
        // it. A column stored with another type or length is an error, never read.
        let stored = std::cell::OnceCell::new();
        let fault: std::cell::RefCell<Option<SearchError>> = Default::default();
        let unread = std::cell::Cell::new(false);
        let defaults: Vec<std::cell::OnceCell<Column>> =
            (0..self.schema.len()).map(|_| Default::default()).collect();
        let column = |i: usize| -> Option<ColumnData<'_>> {
            let (name, t) = self.schema.columns().get(i)?;
            let attrs = match stored.get_or_init(|| block.attributes()) {
                Ok(a) => *a,
                Err(_) => {
                    // Reported below: the segment remembers the failure and says it again.
                    unread.set(true);
                    return None;
                }
            };
            match attrs.and_then(|a| a.column_named(name)) {
                Some(v) if v.column_type() == *t && v.rows() == whole => v.slice(range.clone()),
                Some(v) => {
                    *fault.borrow_mut() = Some(invalid(
                        "filter",
                        format!(
                            "a block stores column {name} as {} of {} rows, the index as {} of \
                             {whole}",
                            v.column_type().name(),
                            v.rows(),
                            t.name()
                        ),
                    ));
                    None
                }
                None => {
                    let d = self.schema.default_value(i)?;
                    Some(defaults[i].get_or_init(|| Column::filled(d, rows)).view())
                }
            }
        };
        // The block's postings and zone maps of a stored column (never of a default).
        let built = std::cell::OnceCell::new();
        let index = |i: usize| -> Option<&ColumnIndex> {
            let (name, _) = self.schema.columns().get(i)?;
            let attrs = (*stored.get()?.as_ref().ok()?)?;
            let (j, _) = attrs.schema().find(name)?;
            let ix = (*built
                .get_or_init(|| block.attribute_index())
                .as_ref()
                .ok()?)?;
            ix.column(j)
        };
        let pass = self.pass_words(&eval::Rows {
            ids,
            start: range.start,
            column: &column,
            index: &index,
        });
        if unread.get() {
            block.attributes()?;
        }
        if built.get().is_some_and(|r| r.is_err()) {
            // A damaged stored index: the segment remembers the failure and says it again.
            block.attribute_index()?;
        }
        if let Some(e) = fault.into_inner() {
            return Err(e);
        }
        pass
    }
}

/// The parts of `ranges` (ascending, disjoint) a scan under `pass` visits: nothing when no row
/// passes; the runs of 64-row words holding a passing row when under [`SPARSE_FRACTION`] of the
/// block's rows pass; else `ranges` unchanged (the mask does the rest).
pub(crate) fn filter_ranges(
    ranges: &[Range<usize>],
    pass: &[u64],
    rows: usize,
) -> Vec<Range<usize>> {
    let passing: u64 = pass.iter().map(|w| u64::from(w.count_ones())).sum();
    if passing == 0 {
        return Vec::new();
    }
    if passing as f64 >= SPARSE_FRACTION * rows as f64 {
        return ranges.to_vec();
    }
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (w, &bits) in pass.iter().enumerate() {
        if bits == 0 {
            continue;
        }
        let r = w * 64..((w + 1) * 64).min(rows);
        match runs.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => runs.push(r),
        }
    }
    // Intersect the two ascending lists of disjoint ranges.
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ranges.len() && j < runs.len() {
        let (a, b) = (&ranges[i], &runs[j]);
        let (s, e) = (a.start.max(b.start), a.end.min(b.end));
        if s < e {
            out.push(s..e);
        }
        if a.end <= b.end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // a list of one range is what is meant
    fn ranges_follow_the_density() {
        let rows: usize = 1000;
        let mut pass = vec![0u64; rows.div_ceil(64)];
        assert!(filter_ranges(&[0..rows], &pass, rows).is_empty());
        pass[2] = 1; // row 128
        pass[3] = 1 << 5; // row 197
        pass[10] = 1;
        assert_eq!(
            filter_ranges(&[0..rows], &pass, rows),
            vec![128..256, 640..704]
        );
        assert_eq!(
            filter_ranges(&[0..150, 600..650], &pass, rows),
            vec![128..150, 640..650]
        );
        let dense = eval::all_words(rows);
        assert_eq!(filter_ranges(&[3..9], &dense, rows), vec![3..9]);
    }

    #[test]
    fn select_evaluates_every_type() {
        let attrs = Attributes::new(
            4,
            vec![
                ("year".into(), Column::Int(vec![2009, 2010, 2011, 2012])),
                (
                    "score".into(),
                    Column::Float(vec![0.5, f64::NAN, 2.0, -1.0]),
                ),
                (
                    "taken".into(),
                    Column::Timestamp(vec![0, 1_262_304_000_000_000, -5, i64::MAX]),
                ),
                (
                    "public".into(),
                    Column::Bool(vec![true, false, true, false]),
                ),
                (
                    "licence".into(),
                    Column::strings(&["cc0", "cc-by", "x", "cc0"]),
                ),
                (
                    "tags".into(),
                    Column::tags(&[vec!["cat", "dog"], vec!["cat"], vec![], vec!["dog", "dog"]]),
                ),
            ],
        )
        .unwrap();
        let ids = [10, 11, 12, 13];
        let sel = |t: &str| -> Vec<usize> {
            let m = RowFilter::parse(t).unwrap().select(&ids, &attrs).unwrap();
            (0..4).filter(|&i| m[i]).collect()
        };
        assert_eq!(sel("year >= 2010"), vec![1, 2, 3]);
        assert_eq!(sel("year IN (2009, 2012) AND NOT public"), vec![3]);
        assert_eq!(sel("score > 0"), vec![0, 2]);
        assert_eq!(sel("score != 2"), vec![0, 1, 3]);
        assert_eq!(sel("taken >= '2010-01-01'"), vec![1, 3]);
        assert_eq!(
            sel("taken < 0 OR taken = TIMESTAMP '1970-01-01'"),
            vec![0, 2]
        );
        assert_eq!(sel("public = TRUE"), vec![0, 2]);
        assert_eq!(sel("licence IN ('cc0', 'nope')"), vec![0, 3]);
        assert_eq!(sel("licence != 'cc0'"), vec![1, 2]);
        assert_eq!(sel("tags HAS 'cat'"), vec![0, 1]);
        assert_eq!(sel("tags HAS ALL ('cat', 'dog')"), vec![0]);
        assert_eq!(sel("tags HAS ALL ('cat', 'bird')"), Vec::<usize>::new());
        assert_eq!(sel("tags HAS ANY ('bird', 'dog')"), vec![0, 3]);
        assert_eq!(sel("NOT tags HAS ANY ('cat', 'dog')"), vec![2]);
        assert_eq!(
            sel("id NOT IN (11, 12) AND (year < 2010 OR licence = 'cc0')"),
            vec![0, 3]
        );
        assert_eq!(sel("id > 11 OR FALSE"), vec![2, 3]);
        let both = RowFilter::parse("year > 2009")
            .unwrap()
            .and_ids(IdSelector::new([13, 11, 99]));
        assert_eq!(
            both.select(&ids, &attrs).unwrap(),
            vec![false, true, false, true]
        );
        assert!(matches!(
            RowFilter::parse("yaer > 1").unwrap().select(&ids, &attrs),
            Err(SearchError::Filter(FilterError::UnknownColumn { .. }))
        ));
    }

    #[test]
    fn id_sets_match_by_merge_or_search_alike() {
        let set = [2u64, 5, 9, 10, 64, 70, 1000];
        let sorted: Vec<u64> = (0..130).collect();
        let mut shuffled = sorted.clone();
        shuffled.reverse();
        shuffled.swap(3, 77);
        for ids in [
            &sorted[..],
            &shuffled[..],
            &[9, 10][..],
            &[1001, 1002][..],
            &[][..],
        ] {
            let w = eval::ids_in(ids, &set);
            assert_eq!(w.len(), ids.len().div_ceil(64));
            for (i, id) in ids.iter().enumerate() {
                let bit = (w[i / 64] >> (i % 64)) & 1 == 1;
                assert_eq!(bit, set.contains(id), "{ids:?} row {i}");
            }
        }
    }

    #[test]
    fn attributes_refuse_ragged_columns() {
        assert!(Attributes::new(3, vec![("a".into(), Column::Int(vec![1, 2]))]).is_err());
        let bad = Column::Str {
            codes: vec![0, 5],
            dict: vec!["x".into()],
        };
        assert!(Attributes::new(2, vec![("a".into(), bad)]).is_err());
    }

    #[test]
    fn checked_builds_the_query_filter_or_refuses_naming_the_column() {
        let attrs =
            Attributes::new(2, vec![("year".into(), Column::Int(vec![2009, 2010]))]).unwrap();
        let schema = attrs.schema();
        assert_eq!(RowFilter::checked(None, None, schema).unwrap(), None);
        let f = RowFilter::checked(Some("year > 2009"), None, schema)
            .unwrap()
            .unwrap();
        assert_eq!(f.ids, None);
        assert_eq!(
            f.predicate.as_ref().map(Predicate::text),
            Some("year > 2009")
        );
        let both = RowFilter::checked(Some("id < 5"), Some(IdSelector::new([3, 1, 3])), schema)
            .unwrap()
            .unwrap();
        assert_eq!(both.ids.as_ref().map(IdSelector::ids), Some(&[1u64, 3][..]));
        assert!(both.predicate.is_some());
        // An empty id list is a filter passing no row, not "no filter".
        let none = RowFilter::checked(None, Some(IdSelector::new([])), schema).unwrap();
        assert_eq!(none, Some(RowFilter::ids(IdSelector::new([]))));
        // Syntax and schema refusals, each naming its 1-based character column.
        let syntax = RowFilter::checked(Some("year >"), None, schema).unwrap_err();
        assert!(
            matches!(syntax, FilterError::Syntax { column: 7, .. }),
            "{syntax}"
        );
        let unknown =
            RowFilter::checked(Some("id < 3 AND colour = 'red'"), None, schema).unwrap_err();
        assert!(
            matches!(unknown, FilterError::UnknownColumn { column: 12, ref name, .. } if name == "colour"),
            "{unknown}"
        );
        let typed = RowFilter::checked(Some("year = 'x'"), None, schema).unwrap_err();
        assert!(matches!(typed, FilterError::Type { .. }), "{typed}");
    }
}
