//! Typed expression + a run of rows → a bitmap of the rows that pass (bit `i % 64` of word
//! `i / 64` = row `i`), the form the scan kernels' deletion masks take. AND, OR and NOT are
//! word operations; each test is one pass over its column.

use std::collections::HashSet;

use super::ColumnData;
use super::check::Expr;
use super::parse::{CmpOp, HasHow};

/// Words for `rows` rows with every bit set (tail bits clear).
pub(crate) fn all_words(rows: usize) -> Vec<u64> {
    let mut w = vec![u64::MAX; rows.div_ceil(64)];
    if !rows.is_multiple_of(64)
        && let Some(last) = w.last_mut()
    {
        *last = (1u64 << (rows % 64)) - 1;
    }
    w
}

fn from_fn(rows: usize, f: impl Fn(usize) -> bool) -> Vec<u64> {
    let mut w = vec![0u64; rows.div_ceil(64)];
    for i in 0..rows {
        if f(i) {
            w[i / 64] |= 1 << (i % 64);
        }
    }
    w
}

/// The rows whose id `set` (ascending, no repeats) holds. Rows in id order (a segment's, most
/// often) are matched by one merge of the two sorted lists, O(rows + |set|); otherwise each id
/// is looked up by binary search, O(rows log |set|), whose cache misses cost some 40× the merge
/// on a set of 10⁵ ids.
pub(crate) fn ids_in(ids: &[u64], set: &[u64]) -> Vec<u64> {
    if !ids.windows(2).all(|w| w[0] < w[1]) {
        return from_fn(ids.len(), |i| set.binary_search(&ids[i]).is_ok());
    }
    let mut w = vec![0u64; ids.len().div_ceil(64)];
    let mut j = 0;
    for (i, id) in ids.iter().enumerate() {
        while set.get(j).is_some_and(|s| s < id) {
            j += 1;
        }
        match set.get(j) {
            Some(s) if s == id => w[i / 64] |= 1 << (i % 64),
            Some(_) => {}
            None => break,
        }
    }
    w
}

/// Which rows a column the expression reads is missing from (its schema position).
#[derive(Debug)]
pub(crate) struct MissingColumn(pub usize);

/// The pass bitmap of `expr` over rows with these `ids`; `column(i)`: schema column `i` over
/// the same rows (callers check its length and dictionary codes first, see
/// [`ColumnData::check`]).
pub(crate) fn eval<'c>(
    expr: &Expr,
    ids: &[u64],
    column: &dyn Fn(usize) -> Option<ColumnData<'c>>,
) -> Result<Vec<u64>, MissingColumn> {
    let rows = ids.len();
    let col = |c: usize| {
        column(c)
            .filter(|d| d.rows() == rows)
            .ok_or(MissingColumn(c))
    };
    Ok(match expr {
        Expr::Const(true) => all_words(rows),
        Expr::Const(false) => vec![0; rows.div_ceil(64)],
        Expr::And(xs) => {
            let mut acc = all_words(rows);
            for x in xs {
                if acc.iter().all(|&w| w == 0) {
                    break;
                }
                for (a, b) in acc.iter_mut().zip(eval(x, ids, column)?) {
                    *a &= b;
                }
            }
            acc
        }
        Expr::Or(xs) => {
            let mut acc = vec![0; rows.div_ceil(64)];
            for x in xs {
                for (a, b) in acc.iter_mut().zip(eval(x, ids, column)?) {
                    *a |= b;
                }
            }
            acc
        }
        Expr::Not(x) => {
            let mut w = eval(x, ids, column)?;
            for (a, m) in w.iter_mut().zip(all_words(rows)) {
                *a = !*a & m;
            }
            w
        }
        Expr::IdCmp(op, v) => from_fn(rows, |i| op.holds(i128::from(ids[i]).cmp(v))),
        Expr::IdIn(set) => ids_in(ids, set),
        Expr::IntCmp(c, op, v) => match col(*c)? {
            ColumnData::Int(x) | ColumnData::Timestamp(x) => {
                from_fn(rows, |i| op.holds(x[i].cmp(v)))
            }
            _ => return Err(MissingColumn(*c)),
        },
        Expr::IntIn(c, set) => match col(*c)? {
            ColumnData::Int(x) | ColumnData::Timestamp(x) => {
                from_fn(rows, |i| set.binary_search(&x[i]).is_ok())
            }
            _ => return Err(MissingColumn(*c)),
        },
        Expr::FloatCmp(c, op, v) => match col(*c)? {
            ColumnData::Float(x) => from_fn(rows, |i| match x[i].partial_cmp(v) {
                Some(o) => op.holds(o),
                // IEEE: NaN is unequal to everything and ordered with nothing.
                None => *op == CmpOp::Ne,
            }),
            _ => return Err(MissingColumn(*c)),
        },
        Expr::FloatIn(c, set) => match col(*c)? {
            ColumnData::Float(x) => from_fn(rows, |i| set.contains(&x[i])),
            _ => return Err(MissingColumn(*c)),
        },
        Expr::BoolIs(c, b) => match col(*c)? {
            ColumnData::Bool(x) => from_fn(rows, |i| x[i] == *b),
            _ => return Err(MissingColumn(*c)),
        },
        Expr::StrIn(c, vals) => match col(*c)? {
            ColumnData::Str { codes, dict } => {
                let wanted: HashSet<&str> = vals.iter().map(String::as_str).collect();
                let hit: Vec<bool> = dict.iter().map(|d| wanted.contains(d.as_str())).collect();
                if !hit.contains(&true) {
                    vec![0; rows.div_ceil(64)]
                } else {
                    from_fn(rows, |i| hit.get(codes[i] as usize) == Some(&true))
                }
            }
            _ => return Err(MissingColumn(*c)),
        },
        Expr::Tags(c, how, vals) => match col(*c)? {
            ColumnData::Tags {
                offsets,
                values,
                dict,
            } => {
                let wanted: HashSet<&str> = vals.iter().map(String::as_str).collect();
                let codes: Vec<u32> = (0..dict.len() as u32)
                    .filter(|&d| wanted.contains(dict[d as usize].as_str()))
                    .collect();
                let tags = |i: usize| {
                    let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
                    values.get(a..b).unwrap_or(&[])
                };
                match how {
                    HasHow::Any => from_fn(rows, |i| tags(i).iter().any(|t| codes.contains(t))),
                    // Every wanted tag must exist in the dictionary to be held by some row.
                    HasHow::All if codes.len() < wanted.len() => vec![0; rows.div_ceil(64)],
                    HasHow::All => from_fn(rows, |i| {
                        let t = tags(i);
                        codes.iter().all(|c| t.contains(c))
                    }),
                }
            }
            _ => return Err(MissingColumn(*c)),
        },
    })
}
