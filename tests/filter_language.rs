//! The filter language under random and mutated input: the fuzz target `filter`'s check
//! (`fuzz/src/filter.rs`) over random strings, over random splices of valid expressions, and
//! over hand-picked edge cases — no panic, errors point inside the text, evaluation is
//! deterministic.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../fuzz/src/filter.rs"]
mod filter_check;

use codedb::RowFilter;
use filter_check::{columns, filter_text};
use proptest::prelude::*;

const VALID: [&str; 8] = [
    "year >= 2010 AND tags HAS 'cat' AND licence IN ('cc0','cc-by') AND id NOT IN (3, 7)",
    "score < 1 OR score >= 2.5e-3 OR score != 0",
    "taken >= '2010-01-01' AND taken < TIMESTAMP '2011-01-01T00:00:00Z'",
    "public AND NOT public = FALSE OR (public != TRUE)",
    "licence != 'x''y' AND tags HAS ALL ('a', 'b') AND tags HAS ANY ('', 'dog')",
    "id = 3 OR id > 18446744073709551614 OR id IN (-1, 0)",
    "NOT (year IN (0, -9223372036854775808) OR year < -5)",
    "\"year\" = 2009 or TRUE and false",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(s in "\\PC{0,80}") {
        filter_text(s.as_bytes());
    }

    #[test]
    fn random_tokens_never_panic(toks in prop::collection::vec(prop::sample::select(vec![
        "year", "score", "taken", "public", "licence", "tags", "id", "nope", "AND", "OR", "NOT",
        "IN", "HAS", "ANY", "ALL", "TRUE", "FALSE", "TIMESTAMP", "(", ")", ",", "=", "!=", "<",
        "<=", ">", ">=", "'cat'", "'2010-01-01'", "'", "3", "-7", "2.5", "1e400", "\"", "",
    ]), 0..16)) {
        filter_text(toks.join(" ").as_bytes());
    }

    #[test]
    fn splices_of_valid_expressions_never_panic(
        a in 0usize..VALID.len(), b in 0usize..VALID.len(), i in 0usize..200, j in 0usize..200,
    ) {
        let (x, y) = (VALID[a].as_bytes(), VALID[b].as_bytes());
        let mut s = x[..i.min(x.len())].to_vec();
        s.extend_from_slice(&y[j.min(y.len())..]);
        filter_text(&s);
    }
}

#[test]
fn the_valid_expressions_evaluate() {
    let (ids, attrs) = columns();
    for v in VALID {
        RowFilter::parse(v)
            .unwrap()
            .select(&ids, &attrs)
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        filter_text(v.as_bytes());
    }
}

#[test]
fn edge_cases_never_panic() {
    for s in [
        "",
        "(",
        ")",
        "'",
        "\"",
        "id IN ()",
        "tags HAS ALL ()",
        "tags HAS",
        "-",
        "1e",
        "0x10 = id",
        "year = 1_000",
        "taken = TIMESTAMP",
        "taken = TIMESTAMP 3",
        "taken = '9999-12-31T23:59:59.999999Z'",
        "taken = '0000-01-01'",
        "é = 'ü' AND \u{0} = 1",
    ] {
        filter_text(s.as_bytes());
    }
    let long_and = vec!["id > 1"; 50_000].join(" AND ");
    filter_text(long_and.as_bytes());
    let deep = format!("{}id = 1{}", "(".repeat(5000), ")".repeat(5000));
    filter_text(deep.as_bytes());
}
