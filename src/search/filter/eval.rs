//! Typed expression + a run of rows → a bitmap of the rows that pass (bit `i % 64` of word
//! `i / 64` = row `i`), the form the scan kernels' deletion masks take. AND, OR and NOT are
//! word operations; each test is one pass over its column.

use std::collections::HashSet;

use super::check::Expr;
use super::parse::{CmpOp, HasHow};
use crate::format::attribute_columns::ColumnData;
use crate::format::attribute_index::{ColumnIndex, ZONE_ROWS};

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

/// The bitmap of the rows `f` passes, built a 64-row word at a time in a register (one store
/// per word rather than a read-modify-write per passing row, and no bounds check per row).
fn from_fn(rows: usize, f: impl Fn(usize) -> bool) -> Vec<u64> {
    let mut w = Vec::with_capacity(rows.div_ceil(64));
    let mut start = 0;
    while start < rows {
        let end = (start + 64).min(rows);
        let mut word = 0u64;
        for i in start..end {
            word |= u64::from(f(i)) << (i - start);
        }
        w.push(word);
        start = end;
    }
    w
}

/// The rows of a tag column holding a tag whose code `hit` accepts. One pass over the flat
/// array of every row's tag codes (`values`, a branch-free compare the compiler vectorises),
/// then, for each accepted position, its row: the last row whose offset is at or before it,
/// found by galloping forward from the previous accepted position's row (positions ascend).
/// A rare tag costs the pass and O(log gap) per holder; a frequent one a step or two per
/// holder — instead of a walk of every row's tag list, which cost 15 ns a row.
fn rows_holding(offsets: &[u32], values: &[u32], hit: impl Fn(u32) -> bool) -> Vec<u64> {
    let rows = offsets.len().saturating_sub(1);
    let mut w = vec![0u64; rows.div_ceil(64)];
    if rows == 0 {
        return w;
    }
    let (first, end) = (offsets[0] as usize, offsets[rows] as usize);
    let Some(span) = values.get(first..end.max(first)) else {
        return w;
    };
    // Invariant: offsets[row] <= every position still to come.
    let mut row = 0usize;
    for (k, &v) in span.iter().enumerate() {
        if !hit(v) {
            continue;
        }
        let j = (first + k) as u32;
        // The first p in row + 1 ..= rows with offsets[p] > j exists (offsets[rows] > j);
        // the row holding position j is p - 1.
        let base = row + 1;
        let mut len = 1;
        while base + len <= rows && offsets[base + len - 1] <= j {
            len *= 2;
        }
        let lim = (base + len).min(rows + 1);
        row = base + offsets[base..lim].partition_point(|&o| o <= j) - 1;
        w[row / 64] |= 1 << (row % 64);
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

/// Where a filter is evaluated: rows with these `ids`, the first being row `start` of its
/// block; `column(i)`: schema column `i` over the same rows (callers check its length and
/// dictionary codes first, see [`ColumnData::check`]); `index(i)`: its tag postings or zone map
/// over the whole block, when the block has them ([`ColumnIndex`]).
pub(crate) struct Rows<'r, 'c> {
    pub ids: &'r [u64],
    pub start: usize,
    pub column: &'r dyn Fn(usize) -> Option<ColumnData<'c>>,
    pub index: &'r dyn Fn(usize) -> Option<&'c ColumnIndex>,
}

/// The dictionary codes of the wanted strings `vals` that `dict` holds, ascending, and how many
/// distinct strings were wanted. Evaluated per range a search reads (per list under IVF), so a
/// few wanted strings are looked up one by one — not every dictionary entry hashed.
fn dict_codes(dict: &[String], vals: &[String]) -> (Vec<u32>, usize) {
    let mut want: Vec<&str> = vals.iter().map(String::as_str).collect();
    want.sort_unstable();
    want.dedup();
    let mut codes: Vec<u32> = if want.len() <= 16 {
        want.iter()
            .filter_map(|v| dict.iter().position(|d| d == v))
            .filter_map(|c| u32::try_from(c).ok())
            .collect()
    } else {
        let set: HashSet<&str> = want.iter().copied().collect();
        (0..dict.len())
            .filter(|&c| dict.get(c).is_some_and(|d| set.contains(d.as_str())))
            .filter_map(|c| u32::try_from(c).ok())
            .collect()
    };
    codes.sort_unstable();
    codes.dedup();
    (codes, want.len())
}

/// Bits `from..to` set.
fn set_range(w: &mut [u64], from: usize, to: usize) {
    let mut i = from;
    while i < to {
        let (k, b) = (i / 64, i % 64);
        let take = (64 - b).min(to - i);
        let mask = if take == 64 {
            u64::MAX
        } else {
            ((1u64 << take) - 1) << b
        };
        if let Some(x) = w.get_mut(k) {
            *x |= mask;
        }
        i += take;
    }
}

/// The rows (of `rows` from block row `start`) holding tag `code`, from its posting list:
/// O(log postings + rows holding it in range).
fn posting_words(ix: &ColumnIndex, code: u32, start: usize, rows: usize) -> Vec<u64> {
    let mut w = vec![0u64; rows.div_ceil(64)];
    let p = ix.posting(code);
    let lo = p.partition_point(|&r| (r as usize) < start);
    for &r in &p[lo..] {
        let i = r as usize - start;
        if i >= rows {
            break;
        }
        w[i / 64] |= 1 << (i % 64);
    }
    w
}

/// `x[i] op v` for every row, 64 rows to a word: the operator chosen once, outside the rows,
/// so each word is a plain comparison loop the compiler vectorises (a whole segment's int
/// column is read when its zones straddle `v`, as a uniform column's do: docs/filtering.md).
/// The same bits as `op.holds(x[i].cmp(&v))` row by row (tested).
fn cmp_words(x: &[i64], op: CmpOp, v: i64) -> Vec<u64> {
    fn words(x: &[i64], f: impl Fn(i64) -> bool) -> Vec<u64> {
        x.chunks(64)
            .map(|c| {
                let mut w = 0u64;
                for (j, &a) in c.iter().enumerate() {
                    w |= u64::from(f(a)) << j;
                }
                w
            })
            .collect()
    }
    match op {
        CmpOp::Eq => words(x, |a| a == v),
        CmpOp::Ne => words(x, |a| a != v),
        CmpOp::Lt => words(x, |a| a < v),
        CmpOp::Le => words(x, |a| a <= v),
        CmpOp::Gt => words(x, |a| a > v),
        CmpOp::Ge => words(x, |a| a >= v),
    }
}

/// Whether a zone of values in `lo..=hi` passes `op v` for none, every or some of its rows.
fn zone_says(op: CmpOp, v: i64, lo: i64, hi: i64) -> Option<bool> {
    match op {
        CmpOp::Eq | CmpOp::Ne => {
            let eq = (lo == v && hi == v).then_some(true);
            let ne = (v < lo || v > hi).then_some(false);
            let s = eq.or(ne)?;
            Some(if op == CmpOp::Eq { s } else { !s })
        }
        // Monotone in the value: the zone's bounds agree, so does every row between.
        _ => {
            let (a, b) = (op.holds(lo.cmp(&v)), op.holds(hi.cmp(&v)));
            (a == b).then_some(a)
        }
    }
}

/// `x op v` over `rows` rows from block row `start`, deciding whole zones by their bounds
/// (`zones`, over the block) and reading only the rows of zones that straddle `v`; when those
/// are most of the rows (a column not clustered in row order), one pass over the column.
fn zoned_cmp(x: &[i64], op: CmpOp, v: i64, start: usize, zones: &[(i64, i64)]) -> Vec<u64> {
    let rows = x.len();
    let end = start + rows;
    let spans = || {
        (start / ZONE_ROWS..end.div_ceil(ZONE_ROWS)).map(move |z| {
            let (a, b) = ((z * ZONE_ROWS).max(start), ((z + 1) * ZONE_ROWS).min(end));
            let say = zones.get(z).and_then(|&(lo, hi)| zone_says(op, v, lo, hi));
            (a - start, b - start, say)
        })
    };
    let straddling: usize = spans().filter(|s| s.2.is_none()).map(|s| s.1 - s.0).sum();
    if 2 * straddling > rows {
        return cmp_words(x, op, v);
    }
    let mut w = vec![0u64; rows.div_ceil(64)];
    for (a, b, say) in spans() {
        match say {
            Some(true) => set_range(&mut w, a, b),
            Some(false) => {}
            None => {
                for i in a..b {
                    if op.holds(x[i].cmp(&v)) {
                        w[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
    }
    w
}

/// `x[i] op v` with IEEE semantics (NaN passes only `!=`).
fn float_holds(x: f64, op: CmpOp, v: f64) -> bool {
    match x.partial_cmp(&v) {
        Some(o) => op.holds(o),
        None => op == CmpOp::Ne,
    }
}

/// Whether a float zone whose non-NaN rows lie in `lo..=hi` (`lo > hi`: none) and which holds
/// a NaN when `nan` passes `op v` for none, every or some of its rows (FORMAT.md §3.8: a NaN
/// row passes only `!=`, so a zone holding one is never "every row" for another operator).
fn float_zone_says(op: CmpOp, v: f64, lo: f64, hi: f64, nan: bool) -> Option<bool> {
    if v.is_nan() {
        return None;
    }
    if lo > hi {
        return Some(op == CmpOp::Ne);
    }
    match op {
        CmpOp::Eq | CmpOp::Ne if lo == v && hi == v && !nan => Some(op == CmpOp::Eq),
        CmpOp::Eq | CmpOp::Ne if v < lo || v > hi => Some(op == CmpOp::Ne),
        CmpOp::Eq | CmpOp::Ne => None,
        _ => match (float_holds(lo, op, v), float_holds(hi, op, v)) {
            (false, false) => Some(false),
            (true, true) if !nan => Some(true),
            _ => None,
        },
    }
}

/// [`zoned_cmp`] for a float column: `x op v` over `rows` rows from block row `start`, whole
/// zones decided by their bounds and NaN bits (`zones`, `nan`, over the block).
fn zoned_float_cmp(
    x: &[f64],
    op: CmpOp,
    v: f64,
    start: usize,
    zones: &[(f64, f64)],
    nan: &[u64],
) -> Vec<u64> {
    let (rows, end) = (x.len(), start + x.len());
    let mut w = vec![0u64; rows.div_ceil(64)];
    for z in start / ZONE_ROWS..end.div_ceil(ZONE_ROWS) {
        let (a, b) = ((z * ZONE_ROWS).max(start), ((z + 1) * ZONE_ROWS).min(end));
        let has_nan = nan.get(z / 64).is_some_and(|w| w >> (z % 64) & 1 == 1);
        match zones
            .get(z)
            .and_then(|&(lo, hi)| float_zone_says(op, v, lo, hi, has_nan))
        {
            Some(true) => set_range(&mut w, a - start, b - start),
            Some(false) => {}
            None => {
                for i in a - start..b - start {
                    if float_holds(x[i], op, v) {
                        w[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
    }
    w
}

/// The pass bitmap of `expr` over `at`'s rows.
pub(crate) fn eval(expr: &Expr, at: &Rows<'_, '_>) -> Result<Vec<u64>, MissingColumn> {
    let (ids, column) = (at.ids, at.column);
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
                for (a, b) in acc.iter_mut().zip(eval(x, at)?) {
                    *a &= b;
                }
            }
            acc
        }
        Expr::Or(xs) => {
            let mut acc = vec![0; rows.div_ceil(64)];
            for x in xs {
                for (a, b) in acc.iter_mut().zip(eval(x, at)?) {
                    *a |= b;
                }
            }
            acc
        }
        Expr::Not(x) => {
            let mut w = eval(x, at)?;
            for (a, m) in w.iter_mut().zip(all_words(rows)) {
                *a = !*a & m;
            }
            w
        }
        Expr::IdCmp(op, v) => from_fn(rows, |i| op.holds(i128::from(ids[i]).cmp(v))),
        Expr::IdIn(set) => ids_in(ids, set),
        Expr::IntCmp(c, op, v) => match col(*c)? {
            ColumnData::Int(x) | ColumnData::Timestamp(x) => match (at.index)(*c) {
                Some(ColumnIndex::Zones(z)) => zoned_cmp(x, *op, *v, at.start, z),
                _ => cmp_words(x, *op, *v),
            },
            _ => return Err(MissingColumn(*c)),
        },
        Expr::IntIn(c, set) => match col(*c)? {
            ColumnData::Int(x) | ColumnData::Timestamp(x) => {
                from_fn(rows, |i| set.binary_search(&x[i]).is_ok())
            }
            _ => return Err(MissingColumn(*c)),
        },
        Expr::FloatCmp(c, op, v) => match col(*c)? {
            ColumnData::Float(x) => match (at.index)(*c) {
                Some(ColumnIndex::FloatZones { zones, nan }) => {
                    zoned_float_cmp(x, *op, *v, at.start, zones, nan)
                }
                // IEEE: NaN is unequal to everything and ordered with nothing.
                _ => from_fn(rows, |i| float_holds(x[i], *op, *v)),
            },
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
                let (wanted, _) = dict_codes(dict, vals);
                let mut hit = vec![false; dict.len()];
                for &w in &wanted {
                    if let Some(h) = hit.get_mut(w as usize) {
                        *h = true;
                    }
                }
                if wanted.is_empty() {
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
                let (codes, wanted) = dict_codes(dict, vals);
                let postings = (at.index)(*c).filter(|i| matches!(i, ColumnIndex::Postings { .. }));
                match (how, codes.as_slice(), postings) {
                    // Every wanted tag must exist in the dictionary to be held by some row.
                    (HasHow::All, _, _) if codes.len() < wanted => {
                        vec![0; rows.div_ceil(64)]
                    }
                    (_, [], _) => vec![0; rows.div_ceil(64)],
                    // Postings: the rows holding each tag, ORed (HAS, HAS ANY) or ANDed.
                    (how, _, Some(ix)) => {
                        let mut acc = match how {
                            HasHow::All => all_words(rows),
                            _ => vec![0; rows.div_ceil(64)],
                        };
                        for &code in &codes {
                            let p = posting_words(ix, code, at.start, rows);
                            for (a, b) in acc.iter_mut().zip(p) {
                                match how {
                                    HasHow::All => *a &= b,
                                    _ => *a |= b,
                                }
                            }
                        }
                        acc
                    }
                    (_, &[one], None) => rows_holding(offsets, values, |v| v == one),
                    (HasHow::Any, _, None) => {
                        let mut table = vec![false; dict.len()];
                        for &c in &codes {
                            table[c as usize] = true;
                        }
                        rows_holding(offsets, values, |v| table.get(v as usize) == Some(&true))
                    }
                    // A row holds every wanted tag: the AND of the rows holding each.
                    (HasHow::All, _, None) => {
                        let mut acc = all_words(rows);
                        for &c in &codes {
                            for (a, b) in acc
                                .iter_mut()
                                .zip(rows_holding(offsets, values, |v| v == c))
                            {
                                *a &= b;
                            }
                        }
                        acc
                    }
                }
            }
            _ => return Err(MissingColumn(*c)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time comparison gives the row-by-row bits, for every operator, at
    /// lengths around a word's edge and values at, between and beyond the column's.
    #[test]
    fn int_comparison_words_equal_the_row_by_row_test() {
        let ops = [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ];
        for n in [0usize, 1, 63, 64, 65, 130, 1000] {
            // A repeatable spread of values with duplicates and both extremes.
            let x: Vec<i64> = (0..n as i64)
                .map(|i| match i % 97 {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    _ => (i * 7919) % 41 - 20,
                })
                .collect();
            for op in ops {
                for v in [i64::MIN, -21, -20, -3, 0, 5, 20, 21, i64::MAX] {
                    let want = from_fn(n, |i| op.holds(x[i].cmp(&v)));
                    assert_eq!(cmp_words(&x, op, v), want, "n {n} {op:?} {v}");
                }
            }
        }
    }

    /// The pass over the flat tag codes finds the same rows as a walk of every row's tags, on
    /// columns with empty rows, runs of empty rows, rare and frequent tags (seeded).
    #[test]
    fn tag_pass_equals_the_row_walk() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for rows in [0usize, 1, 63, 64, 65, 1000, 5000] {
            let mut offsets = vec![0u32];
            let mut values = Vec::new();
            for _ in 0..rows {
                // Mostly short lists, sometimes long runs of empty rows.
                let n = if next(10) < 3 { 0 } else { next(5) };
                let mut tags: Vec<u32> = (0..n)
                    .map(|_| {
                        let spread = 1 + next(40);
                        next(spread) as u32
                    })
                    .collect();
                tags.sort_unstable();
                tags.dedup();
                values.extend(tags);
                offsets.push(values.len() as u32);
            }
            for want in [vec![0u32], vec![3], vec![39], vec![1, 7, 30], vec![]] {
                let got = rows_holding(&offsets, &values, |v| want.contains(&v));
                let walk = from_fn(rows, |i| {
                    values[offsets[i] as usize..offsets[i + 1] as usize]
                        .iter()
                        .any(|t| want.contains(t))
                });
                assert_eq!(got, walk, "{rows} rows, tags {want:?}");
            }
        }
    }

    /// Zone maps decide whole zones and read the straddling ones: the same bits as a pass over
    /// the column, for every operator, on clustered and uniform columns, over ranges starting
    /// anywhere in the block.
    #[test]
    fn zoned_comparisons_equal_the_pass() {
        let n = 5 * ZONE_ROWS + 77;
        let clustered: Vec<i64> = (0..n as i64).map(|i| i / 3 + (i * 7919) % 50).collect();
        let uniform: Vec<i64> = (0..n as i64).map(|i| (i * 2_654_435_761) % 9973).collect();
        let constant: Vec<i64> = vec![42; n];
        for col in [&clustered, &uniform, &constant] {
            let zones = match ColumnIndex::build(&ColumnData::Int(col)) {
                ColumnIndex::Zones(z) => z,
                other => panic!("{other:?}"),
            };
            for op in [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ] {
                for v in [-1, 0, 42, 500, 4000, 9000, 20_000] {
                    for (a, b) in [
                        (0, n),
                        (1, n - 3),
                        (ZONE_ROWS - 5, 3 * ZONE_ROWS + 9),
                        (100, 164),
                    ] {
                        let x = &col[a..b];
                        let got = zoned_cmp(x, op, v, a, &zones);
                        let want = from_fn(x.len(), |i| op.holds(x[i].cmp(&v)));
                        assert_eq!(got, want, "{op:?} {v} rows {a}..{b}");
                    }
                }
            }
        }
    }

    /// Float zone maps (bounds over the non-NaN rows, a NaN bit per zone) decide whole zones
    /// and read the others: the same bits as a pass over the column, NaN rows included, for
    /// every operator, over ranges starting anywhere in the block.
    #[test]
    fn zoned_float_comparisons_equal_the_pass() {
        let n = 4 * ZONE_ROWS + 77;
        let clustered: Vec<f64> = (0..n)
            .map(|i| {
                if i % 997 == 0 {
                    f64::NAN
                } else {
                    i as f64 / 3.0
                }
            })
            .collect();
        let uniform: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 - 0.5).collect();
        // A zone of NaN only, a constant zone with and without NaN, -0.0 beside 0.0.
        let mixed: Vec<f64> = (0..n)
            .map(|i| match i / ZONE_ROWS {
                0 => f64::NAN,
                1 => 42.0,
                2 if i % 100 == 0 => f64::NAN,
                2 => 42.0,
                _ if i % 2 == 0 => -0.0,
                _ => 0.0,
            })
            .collect();
        for col in [&clustered, &uniform, &mixed] {
            let (zones, nan) = match ColumnIndex::build(&ColumnData::Float(col)) {
                ColumnIndex::FloatZones { zones, nan } => (zones, nan),
                other => panic!("{other:?}"),
            };
            for op in [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ] {
                for v in [-1.0, 0.0, -0.0, 42.0, 500.5, 4000.0, 1e9, f64::NAN] {
                    for (a, b) in [(0, n), (1, n - 3), (ZONE_ROWS - 5, 3 * ZONE_ROWS + 9)] {
                        let x = &col[a..b];
                        let got = zoned_float_cmp(x, op, v, a, &zones, &nan);
                        let want = from_fn(x.len(), |i| float_holds(x[i], op, v));
                        assert_eq!(got, want, "{op:?} {v} rows {a}..{b}");
                    }
                }
            }
        }
    }

    /// Postings give the rows of a tag over any range of the block, as the pass over the flat
    /// tag codes does.
    #[test]
    fn postings_equal_the_tag_pass() {
        let rows = 3000usize;
        let mut offsets = vec![0u32];
        let mut values = Vec::new();
        for r in 0..rows {
            let mut t: Vec<u32> = (0..(r % 4) as u32)
                .map(|j| (r as u32 * 31 + j * 7) % 20)
                .collect();
            t.sort_unstable();
            t.dedup();
            values.extend(t);
            offsets.push(values.len() as u32);
        }
        let dict: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
        let col = ColumnData::Tags {
            offsets: &offsets,
            values: &values,
            dict: &dict,
        };
        let ix = ColumnIndex::build(&col);
        for code in [0u32, 3, 19] {
            for (a, b) in [(0, rows), (1, 65), (700, 2999), (64, 128)] {
                let got = posting_words(&ix, code, a, b - a);
                let want = rows_holding(&offsets[a..=b], &values, |v| v == code);
                assert_eq!(got, want, "tag {code} rows {a}..{b}");
            }
        }
    }

    #[test]
    fn words_hold_the_rows_that_pass() {
        for rows in [0usize, 1, 64, 100, 129] {
            let w = from_fn(rows, |i| i % 3 == 0);
            assert_eq!(w.len(), rows.div_ceil(64));
            for i in 0..w.len() * 64 {
                let bit = (w[i / 64] >> (i % 64)) & 1 == 1;
                assert_eq!(bit, i < rows && i % 3 == 0, "{rows} rows, row {i}");
            }
        }
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
            let w = ids_in(ids, &set);
            assert_eq!(w.len(), ids.len().div_ceil(64));
            for (i, id) in ids.iter().enumerate() {
                let bit = (w[i / 64] >> (i % 64)) & 1 == 1;
                assert_eq!(bit, set.contains(id), "{ids:?} row {i}");
            }
        }
    }
}
