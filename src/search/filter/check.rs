//! Syntax tree + schema → typed expression: every name resolved to the row id or a column, every
//! value converted to the column's type, every operator checked against it. What reaches the
//! evaluator cannot fail on types.

use super::parse::{Ast, CmpOp, HasHow, Lit, Name, Value};
use super::schema::{ColumnType, ID_COLUMN, Schema, parse_timestamp};
use crate::search::error::FilterError;

/// A typed filter expression; columns are positions in the schema it was checked against.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Const(bool),
    /// `id op v` (v in the integers, compared as i128).
    IdCmp(CmpOp, i128),
    /// `id IN (…)`, sorted and deduplicated.
    IdIn(Vec<u64>),
    /// An int or timestamp column against a value.
    IntCmp(usize, CmpOp, i64),
    /// An int or timestamp column in a set (sorted, deduplicated).
    IntIn(usize, Vec<i64>),
    FloatCmp(usize, CmpOp, f64),
    FloatIn(usize, Vec<f64>),
    /// A boolean column equal to the value.
    BoolIs(usize, bool),
    /// A string column in a set (`=` is a set of one).
    StrIn(usize, Vec<String>),
    /// A tag-set column holding any / all of the values.
    Tags(usize, HasHow, Vec<String>),
}

fn type_err(column: usize, detail: String) -> FilterError {
    FilterError::Type { column, detail }
}

/// The names the expression refers to resolved against `schema`, `None` for the row id.
fn resolve(schema: &Schema, name: &Name) -> Result<Option<(usize, ColumnType)>, FilterError> {
    if name.text == ID_COLUMN {
        return Ok(None);
    }
    schema
        .find(&name.text)
        .map(Some)
        .ok_or_else(|| FilterError::UnknownColumn {
            column: name.column,
            name: name.text.clone(),
            known: schema.known(),
        })
}

fn wrong_value(name: &Name, ty: &str, v: &Value, want: &str) -> FilterError {
    type_err(
        v.column,
        format!(
            "{} is {ty} column; {} is {}, compare it with {want}",
            name.text,
            show(&v.lit),
            v.lit.kind()
        ),
    )
}

fn show(l: &Lit) -> String {
    match l {
        Lit::Int(v) => v.to_string(),
        Lit::Float(v) => v.to_string(),
        Lit::Str(s) => format!("'{s}'"),
        Lit::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Lit::Timestamp(s) => format!("TIMESTAMP '{s}'"),
    }
}

fn id_value(name: &Name, v: &Value) -> Result<i128, FilterError> {
    match v.lit {
        Lit::Int(x) => Ok(x),
        _ => Err(wrong_value(
            name,
            "the row id, an unsigned integer",
            v,
            "an integer",
        )),
    }
}

fn int_value(name: &Name, ty: ColumnType, v: &Value) -> Result<i64, FilterError> {
    match (&v.lit, ty) {
        (Lit::Int(x), _) => i64::try_from(*x).map_err(|_| {
            type_err(
                v.column,
                format!(
                    "{x} is outside the signed 64-bit range of column {}",
                    name.text
                ),
            )
        }),
        (Lit::Str(s) | Lit::Timestamp(s), ColumnType::Timestamp) => parse_timestamp(s, v.column),
        (_, ColumnType::Timestamp) => Err(wrong_value(
            name,
            "a timestamp",
            v,
            "TIMESTAMP 'YYYY-MM-DD…', a quoted date or microseconds since 1970",
        )),
        _ => Err(wrong_value(name, "an integer", v, "an integer")),
    }
}

fn float_value(name: &Name, v: &Value) -> Result<f64, FilterError> {
    match v.lit {
        // Exact up to 2^53; beyond, the nearest double (what a float column can hold anyway).
        Lit::Int(x) => Ok(x as f64),
        Lit::Float(x) => Ok(x),
        _ => Err(wrong_value(name, "a float", v, "a number")),
    }
}

fn str_value(name: &Name, ty: &str, v: &Value) -> Result<String, FilterError> {
    match &v.lit {
        Lit::Str(s) => Ok(s.clone()),
        _ => Err(wrong_value(name, ty, v, "a quoted string")),
    }
}

/// Checks `ast` against `schema`.
pub(crate) fn check(ast: &Ast, schema: &Schema) -> Result<Expr, FilterError> {
    Ok(match ast {
        Ast::And(xs) => Expr::And(
            xs.iter()
                .map(|x| check(x, schema))
                .collect::<Result<_, _>>()?,
        ),
        Ast::Or(xs) => Expr::Or(
            xs.iter()
                .map(|x| check(x, schema))
                .collect::<Result<_, _>>()?,
        ),
        Ast::Not(x) => Expr::Not(Box::new(check(x, schema)?)),
        Ast::Const(b) => Expr::Const(*b),
        Ast::Bare(name) => match resolve(schema, name)? {
            Some((c, ColumnType::Bool)) => Expr::BoolIs(c, true),
            r => {
                return Err(type_err(
                    name.column,
                    format!(
                        "{} is {}, not a boolean column: compare it with a value",
                        name.text,
                        r.map_or("the row id".into(), |(_, t)| format!(
                            "a {} column",
                            t.name()
                        ))
                    ),
                ));
            }
        },
        Ast::Cmp(name, op, v) => check_cmp(schema, name, *op, v)?,
        Ast::In(name, negated, vs) => {
            let e = check_in(schema, name, vs)?;
            if *negated { Expr::Not(Box::new(e)) } else { e }
        }
        Ast::Has(name, how, vs) => match resolve(schema, name)? {
            Some((c, ColumnType::Tags)) => Expr::Tags(
                c,
                *how,
                vs.iter()
                    .map(|v| str_value(name, "a tag-set", v))
                    .collect::<Result<_, _>>()?,
            ),
            r => {
                return Err(type_err(
                    name.column,
                    format!(
                        "HAS tests a tag-set column, and {} is {}",
                        name.text,
                        r.map_or("the row id".into(), |(_, t)| format!(
                            "a {} column",
                            t.name()
                        ))
                    ),
                ));
            }
        },
    })
}

/// `name op v` (docs/filtering.md): the row id and int, timestamp and float
/// columns take every operator; boolean and string columns only `=` and `!=` (`!=` is the
/// negated `=`); a tag-set column none.
fn check_cmp(schema: &Schema, name: &Name, op: CmpOp, v: &Value) -> Result<Expr, FilterError> {
    let ordered = !matches!(op, CmpOp::Eq | CmpOp::Ne);
    let negate = |e: Expr| {
        if op == CmpOp::Ne {
            Expr::Not(Box::new(e))
        } else {
            e
        }
    };
    Ok(match resolve(schema, name)? {
        None => Expr::IdCmp(op, id_value(name, v)?),
        Some((c, ty @ (ColumnType::Int | ColumnType::Timestamp))) => {
            Expr::IntCmp(c, op, int_value(name, ty, v)?)
        }
        Some((c, ColumnType::Float)) => Expr::FloatCmp(c, op, float_value(name, v)?),
        Some((c, ty @ (ColumnType::Bool | ColumnType::Str))) if ordered => {
            let _ = c;
            return Err(type_err(
                name.column,
                format!(
                    "{} is a {} column: it takes = and != (and IN), not {}",
                    name.text,
                    ty.name(),
                    op.symbol()
                ),
            ));
        }
        Some((c, ColumnType::Bool)) => match v.lit {
            Lit::Bool(b) => negate(Expr::BoolIs(c, b)),
            _ => return Err(wrong_value(name, "a boolean", v, "TRUE or FALSE")),
        },
        Some((c, ColumnType::Str)) => negate(Expr::StrIn(c, vec![str_value(name, "a string", v)?])),
        Some((_, ColumnType::Tags)) => {
            return Err(type_err(
                name.column,
                format!(
                    "{} is a tag-set column: test it with HAS 'x', HAS ANY (…) or HAS \
                     ALL (…)",
                    name.text
                ),
            ));
        }
    })
}

/// `name IN (…)` (without its NOT): each value converted to the column's type, the set sorted
/// and deduplicated where the evaluator searches it; a negative id matches nothing, a boolean
/// set folds to a constant or one test, a tag-set column refuses IN for HAS ANY.
fn check_in(schema: &Schema, name: &Name, vs: &[Value]) -> Result<Expr, FilterError> {
    Ok(match resolve(schema, name)? {
        None => {
            let mut ids: Vec<u64> = Vec::with_capacity(vs.len());
            for v in vs {
                // A negative id matches nothing; it is not an error.
                if let Ok(x) = u64::try_from(id_value(name, v)?) {
                    ids.push(x);
                }
            }
            ids.sort_unstable();
            ids.dedup();
            Expr::IdIn(ids)
        }
        Some((c, ty @ (ColumnType::Int | ColumnType::Timestamp))) => {
            let mut xs = vs
                .iter()
                .map(|v| int_value(name, ty, v))
                .collect::<Result<Vec<_>, _>>()?;
            xs.sort_unstable();
            xs.dedup();
            Expr::IntIn(c, xs)
        }
        Some((c, ColumnType::Float)) => Expr::FloatIn(
            c,
            vs.iter()
                .map(|v| float_value(name, v))
                .collect::<Result<_, _>>()?,
        ),
        Some((c, ColumnType::Str)) => Expr::StrIn(
            c,
            vs.iter()
                .map(|v| str_value(name, "a string", v))
                .collect::<Result<_, _>>()?,
        ),
        Some((c, ColumnType::Bool)) => {
            let mut any = [false; 2];
            for v in vs {
                match v.lit {
                    Lit::Bool(b) => any[usize::from(b)] = true,
                    _ => return Err(wrong_value(name, "a boolean", v, "TRUE or FALSE")),
                }
            }
            match any {
                [true, true] => Expr::Const(true),
                [false, true] => Expr::BoolIs(c, true),
                _ => Expr::BoolIs(c, false),
            }
        }
        Some((_, ColumnType::Tags)) => {
            return Err(type_err(
                name.column,
                format!("{} is a tag-set column: use HAS ANY (…), not IN", name.text),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            ("year".into(), ColumnType::Int),
            ("score".into(), ColumnType::Float),
            ("taken".into(), ColumnType::Timestamp),
            ("public".into(), ColumnType::Bool),
            ("licence".into(), ColumnType::Str),
            ("tags".into(), ColumnType::Tags),
        ])
        .unwrap()
    }

    fn err(text: &str) -> FilterError {
        check(&parse(text).unwrap(), &schema()).unwrap_err()
    }

    #[test]
    fn well_typed_expressions_check() {
        for ok in [
            "year >= 2010 AND tags HAS 'cat' AND licence IN ('cc0','cc-by') AND id NOT IN (3, 7)",
            "score < 1 OR score >= 2.5e-3",
            "taken >= '2010-01-01' AND taken < TIMESTAMP '2011-01-01T00:00:00Z'",
            "public AND NOT public = FALSE",
            "licence != 'x' AND tags HAS ALL ('a', 'b') AND tags HAS ANY ('c')",
            "id = 3 OR id > 18446744073709551615 OR id IN (-1)",
        ] {
            check(&parse(ok).unwrap(), &schema()).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn type_errors_name_the_place() {
        assert!(matches!(
            err("yaer > 3"),
            FilterError::UnknownColumn { column: 1, .. }
        ));
        assert_eq!(err("year = 'x'").column(), 8);
        assert_eq!(err("year = 2.5").column(), 8);
        assert_eq!(err("licence < 'b'").column(), 1);
        assert_eq!(err("tags = 'cat'").column(), 1);
        assert_eq!(err("tags IN ('cat')").column(), 1);
        assert_eq!(err("year HAS 'x'").column(), 1);
        assert_eq!(err("year > 1 AND id = 'x'").column(), 19);
        assert_eq!(err("taken > '2010-02-30'").column(), 9);
        assert_eq!(err("public = 1").column(), 10);
        assert_eq!(err("year").column(), 1);
        assert_eq!(err("year = 18446744073709551615").column(), 8);
        let e = err("yaer > 3").to_string();
        assert!(e.contains("year, score"), "{e}");
    }
}
