//! The filter language's check (fuzz target `filter`, replayed by `tests/filter_language.rs`):
//! any text through the parser, and what parses through the type check and the evaluation over
//! a fixed set of columns of every type. Nothing may panic; an error must point inside the
//! text (or one past its end); a filter that evaluates must give one answer per row, and the
//! same one when its text is parsed again.

use codedb::{Attributes, Column, FilterError, RowFilter, SearchError};

/// Columns of every type, five rows (ids 0, 7, 10, 2⁶³, 2⁶⁴ − 1).
pub fn columns() -> (Vec<u64>, Attributes) {
    let attrs = Attributes::new(
        5,
        vec![
            (
                "year".into(),
                Column::Int(vec![2009, 2010, i64::MIN, i64::MAX, 0]),
            ),
            (
                "score".into(),
                Column::Float(vec![0.5, f64::NAN, -0.0, f64::INFINITY, 1e300]),
            ),
            (
                "taken".into(),
                Column::Timestamp(vec![0, -1, 1_262_304_000_000_000, 5, 6]),
            ),
            (
                "public".into(),
                Column::Bool(vec![true, false, true, false, true]),
            ),
            (
                "licence".into(),
                Column::strings(&["cc0", "cc-by", "", "cc0", "x'y"]),
            ),
            (
                "tags".into(),
                Column::tags(&[
                    vec!["cat", "dog"],
                    vec!["cat"],
                    vec![],
                    vec!["dog"],
                    vec![""],
                ]),
            ),
        ],
    )
    .expect("the fixed columns are well formed");
    (vec![0, 7, 10, 1 << 63, u64::MAX], attrs)
}

/// The check on one input.
pub fn filter_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let chars = text.chars().count();
    let (ids, attrs) = columns();
    match RowFilter::parse(&text) {
        Err(e) => assert!(
            e.column() >= 1 && e.column() <= chars + 1,
            "{e} in {text:?}"
        ),
        Ok(f) => match f.select(&ids, &attrs) {
            Ok(rows) => {
                assert_eq!(rows.len(), ids.len());
                let again = RowFilter::parse(&text).expect("parses twice");
                assert_eq!(again.select(&ids, &attrs).expect("evaluates twice"), rows);
            }
            Err(SearchError::Filter(
                e @ (FilterError::Type { .. } | FilterError::UnknownColumn { .. }),
            )) => {
                assert!(
                    e.column() >= 1 && e.column() <= chars + 1,
                    "{e} in {text:?}"
                )
            }
            Err(e) => panic!("a parsed filter failed otherwise than by type: {e} ({text:?})"),
        },
    }
}
