//! Which rows a search may return: an id selector, a predicate, or both; built and checked
//! once for every front end (docs/filtering.md).

use super::block_filter::{CompiledFilter, select_rows};
use super::predicate::Predicate;
use super::schema::Schema;
use super::selector::IdSelector;
use crate::format::attribute_columns::Attributes;
use crate::search::error::{FilterError, SearchError};

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
    /// names its 1-based character column (docs/filtering.md, "The language"). This is the one
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
            Some(p) => Some(p.typed(schema).map_err(SearchError::Filter)?),
            None => None,
        };
        let ids = self.ids.as_ref().map(IdSelector::ids);
        Ok(CompiledFilter::new(expr, ids, schema))
    }

    /// Which of `attributes`' rows (ids `ids`) pass.
    pub fn select(&self, ids: &[u64], attributes: &Attributes) -> Result<Vec<bool>, SearchError> {
        select_rows(ids, attributes, |schema| self.compile(schema))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::attribute_columns::Column;

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

    #[test]
    fn a_predicate_selects_what_its_row_filter_selects() {
        let attrs = Attributes::new(
            3,
            vec![("year".into(), Column::Int(vec![2009, 2010, 2011]))],
        )
        .unwrap();
        let ids = [7, 8, 9];
        for text in ["year > 2009", "id = 7 OR year = 2011", "NOT year IN (2010)"] {
            let p = Predicate::parse(text).unwrap();
            let by_filter = RowFilter::predicate(p.clone())
                .select(&ids, &attrs)
                .unwrap();
            assert_eq!(p.select(&ids, &attrs).unwrap(), by_filter, "{text}");
        }
        assert_eq!(
            Predicate::parse("year > 2009")
                .unwrap()
                .select(&ids, &attrs)
                .unwrap(),
            vec![false, true, true]
        );
        // Both refuse a row count that is not the attributes' before the names: the id count
        // is the first thing named, then the unknown column.
        let p = Predicate::parse("yaer > 1").unwrap();
        for e in [
            p.select(&ids[..2], &attrs).unwrap_err(),
            RowFilter::predicate(p.clone())
                .select(&ids[..2], &attrs)
                .unwrap_err(),
        ] {
            assert!(e.to_string().contains("2 ids for 3 rows"), "{e}");
        }
        for e in [
            p.select(&ids, &attrs).unwrap_err(),
            RowFilter::predicate(p.clone())
                .select(&ids, &attrs)
                .unwrap_err(),
        ] {
            assert!(
                matches!(e, SearchError::Filter(FilterError::UnknownColumn { .. })),
                "{e}"
            );
        }
    }
}
