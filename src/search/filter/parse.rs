//! The filter language's text → syntax tree (docs/filtering.md, "Grammar"). A hand-written
//! recursive-descent parser: precedence NOT > AND > OR, keywords case-insensitive, every node
//! remembering the character column it starts at so that the type check can point at it.
//!
//! ```text
//! expr  := and ( OR and )*
//! and   := unary ( AND unary )*
//! unary := NOT unary | '(' expr ')' | TRUE | FALSE | test
//! test  := name op value                     op: = == != <> < <= > >=
//!        | name [NOT] IN '(' value (',' value)* ')'
//!        | name HAS value
//!        | name HAS (ANY | ALL) '(' value (',' value)* ')'
//!        | name                              a boolean column
//! value := integer | float | 'string' | TRUE | FALSE | TIMESTAMP 'iso-8601'
//! name  := [A-Za-z_][A-Za-z0-9_]* | "quoted"
//! ```

use crate::search::error::FilterError;

/// The longest expression accepted, in bytes: a filter is typed by a person or built by a
/// program from a few values; a megabyte of text is a mistake, and the parser's recursion
/// depth is bounded by it too (see [`MAX_DEPTH`]).
pub const MAX_FILTER_BYTES: usize = 1 << 20;

/// The deepest nesting of parentheses and NOTs accepted: deeper would risk the stack.
pub const MAX_DEPTH: usize = 128;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=` (or `==`)
    Eq,
    /// `!=` (or `<>`)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as written in the language.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Whether `a op b` holds for an ordering `a.cmp(b)`.
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => o == Equal,
            CmpOp::Ne => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::Le => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::Ge => o != Less,
        }
    }
}

/// How a tag-set test combines its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasHow {
    /// `HAS ANY (…)` (and `HAS 'x'`): at least one of the values is among the row's tags.
    Any,
    /// `HAS ALL (…)`: every value is among the row's tags.
    All,
}

/// A literal value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    /// An integer (wide enough for every `u64` id and every `i64`).
    Int(i128),
    /// A number with a fraction or an exponent (finite).
    Float(f64),
    /// A quoted string.
    Str(String),
    /// `TRUE` or `FALSE`.
    Bool(bool),
    /// `TIMESTAMP '…'`: the text between the quotes (parsed by the type check).
    Timestamp(String),
}

impl Lit {
    /// The literal's kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Lit::Int(_) => "an integer",
            Lit::Float(_) => "a float",
            Lit::Str(_) => "a string",
            Lit::Bool(_) => "a boolean",
            Lit::Timestamp(_) => "a timestamp",
        }
    }
}

/// A value with the column it starts at.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    /// The literal.
    pub lit: Lit,
    /// 1-based character column.
    pub column: usize,
}

/// A column name with the column of the text it starts at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// The name (unquoted).
    pub text: String,
    /// 1-based character column.
    pub column: usize,
}

/// The syntax tree of a filter expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Ast {
    /// Every operand holds (n-ary, so a long chain of ANDs is no deep tree).
    And(Vec<Ast>),
    /// Some operand holds.
    Or(Vec<Ast>),
    /// Does not hold.
    Not(Box<Ast>),
    /// `TRUE` / `FALSE`.
    Const(bool),
    /// `name op value`.
    Cmp(Name, CmpOp, Value),
    /// `name [NOT] IN (values)`; `true` when negated.
    In(Name, bool, Vec<Value>),
    /// `name HAS …`.
    Has(Name, HasHow, Vec<Value>),
    /// A boolean column on its own.
    Bare(Name),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Quoted(String),
    Str(String),
    Int(i128),
    Float(f64),
    Op(CmpOp),
    LParen,
    RParen,
    Comma,
    End,
}

/// Tokens with their 1-based character columns.
fn lex(text: &str) -> Result<Vec<(Tok, usize)>, FilterError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |column: usize, detail: String| FilterError::Syntax { column, detail };
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let op2 = match two.as_str() {
            "<=" => Some(CmpOp::Le),
            ">=" => Some(CmpOp::Ge),
            "!=" | "<>" => Some(CmpOp::Ne),
            "==" => Some(CmpOp::Eq),
            _ => None,
        };
        if let Some(op) = op2 {
            out.push((Tok::Op(op), col));
            i += 2;
            continue;
        }
        match c {
            '(' => out.push((Tok::LParen, col)),
            ')' => out.push((Tok::RParen, col)),
            ',' => out.push((Tok::Comma, col)),
            '=' => out.push((Tok::Op(CmpOp::Eq), col)),
            '<' => out.push((Tok::Op(CmpOp::Lt), col)),
            '>' => out.push((Tok::Op(CmpOp::Gt), col)),
            '\'' | '"' => {
                // A quote inside is written twice ('it''s').
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err(err(col, format!("unterminated {c}quote{c}"))),
                        Some(&d) if d == c => {
                            if chars.get(j + 1) == Some(&c) {
                                s.push(c);
                                j += 2;
                            } else {
                                break;
                            }
                        }
                        Some(&d) => {
                            s.push(d);
                            j += 1;
                        }
                    }
                }
                out.push((
                    if c == '"' {
                        Tok::Quoted(s)
                    } else {
                        Tok::Str(s)
                    },
                    col,
                ));
                i = j + 1;
                continue;
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+' || c == '.')
                    && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                let mut j = i + 1;
                while let Some(&d) = chars.get(j) {
                    let exp_sign =
                        (d == '-' || d == '+') && matches!(chars.get(j - 1), Some('e' | 'E'));
                    if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exp_sign {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let word: String = chars[i..j].iter().filter(|&&d| d != '_').collect();
                let is_float = word.contains(['.', 'e', 'E']) && !word.starts_with("0x");
                let tok = if is_float {
                    match word.parse::<f64>() {
                        Ok(v) if v.is_finite() => Tok::Float(v),
                        _ => return Err(err(col, format!("{word:?} is not a finite number"))),
                    }
                } else {
                    match word.parse::<i128>() {
                        Ok(v) if v >= i128::from(i64::MIN) && v <= i128::from(u64::MAX) => {
                            Tok::Int(v)
                        }
                        Ok(_) => {
                            return Err(err(col, format!("{word} is outside the 64-bit integers")));
                        }
                        Err(_) => return Err(err(col, format!("{word:?} is not a number"))),
                    }
                };
                out.push((tok, col));
                i = j;
                continue;
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut j = i + 1;
                while chars
                    .get(j)
                    .is_some_and(|d| d.is_alphanumeric() || *d == '_')
                {
                    j += 1;
                }
                out.push((Tok::Ident(chars[i..j].iter().collect()), col));
                i = j;
                continue;
            }
            c => return Err(err(col, format!("unexpected character {c:?}"))),
        }
        i += 1;
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
    depth: usize,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("{s:?}"),
        Tok::Quoted(s) => format!("\"{s}\""),
        Tok::Str(s) => format!("'{s}'"),
        Tok::Int(v) => v.to_string(),
        Tok::Float(v) => v.to_string(),
        Tok::Op(o) => format!("'{}'", o.symbol()),
        Tok::LParen => "'('".into(),
        Tok::RParen => "')'".into(),
        Tok::Comma => "','".into(),
        Tok::End => "the end of the filter".into(),
    }
}

/// Whether `t` is the keyword `kw` (upper case).
fn is_kw(t: &Tok, kw: &str) -> bool {
    matches!(t, Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
}

const KEYWORDS: [&str; 10] = [
    "AND",
    "OR",
    "NOT",
    "IN",
    "HAS",
    "ANY",
    "ALL",
    "TRUE",
    "FALSE",
    "TIMESTAMP",
];

impl Parser {
    fn peek(&self) -> &(Tok, usize) {
        // `lex` always ends with `End`, and `bump` never passes it.
        &self.toks[self.at.min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> (Tok, usize) {
        let t = self.peek().clone();
        if self.at < self.toks.len() - 1 {
            self.at += 1;
        }
        t
    }

    fn fail<T>(&self, expected: &str) -> Result<T, FilterError> {
        let (t, column) = self.peek();
        Err(FilterError::Syntax {
            column: *column,
            detail: format!("expected {expected}, found {}", describe(t)),
        })
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if is_kw(&self.peek().0, kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn deeper(&mut self) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::Syntax {
                column: self.peek().1,
                detail: format!("nested deeper than {MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Ast, FilterError> {
        let mut terms = vec![self.and()?];
        while self.eat_kw("OR") {
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Ast::Or(terms)
        })
    }

    fn and(&mut self) -> Result<Ast, FilterError> {
        let mut terms = vec![self.unary()?];
        while self.eat_kw("AND") {
            terms.push(self.unary()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Ast::And(terms)
        })
    }

    fn unary(&mut self) -> Result<Ast, FilterError> {
        self.deeper()?;
        let out = self.unary_inner();
        self.depth -= 1;
        out
    }

    fn unary_inner(&mut self) -> Result<Ast, FilterError> {
        if self.eat_kw("NOT") {
            return Ok(Ast::Not(Box::new(self.unary()?)));
        }
        if self.eat_kw("TRUE") {
            return Ok(Ast::Const(true));
        }
        if self.eat_kw("FALSE") {
            return Ok(Ast::Const(false));
        }
        match self.peek().0.clone() {
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                if self.peek().0 != Tok::RParen {
                    return self.fail("')'");
                }
                self.bump();
                Ok(e)
            }
            Tok::Ident(s) if KEYWORDS.iter().any(|k| s.eq_ignore_ascii_case(k)) => {
                self.fail("a column name (quote a column named like a keyword: \"in\")")
            }
            Tok::Ident(text) | Tok::Quoted(text) => {
                let column = self.bump().1;
                self.test(Name { text, column })
            }
            _ => self.fail("a column name, NOT, TRUE, FALSE or '('"),
        }
    }

    fn test(&mut self, name: Name) -> Result<Ast, FilterError> {
        if let Tok::Op(op) = self.peek().0 {
            self.bump();
            let v = self.value()?;
            return Ok(Ast::Cmp(name, op, v));
        }
        if self.eat_kw("NOT") {
            if !self.eat_kw("IN") {
                return self.fail("IN after NOT");
            }
            return Ok(Ast::In(name, true, self.list()?));
        }
        if self.eat_kw("IN") {
            return Ok(Ast::In(name, false, self.list()?));
        }
        if self.eat_kw("HAS") {
            if self.eat_kw("ANY") {
                return Ok(Ast::Has(name, HasHow::Any, self.list()?));
            }
            if self.eat_kw("ALL") {
                return Ok(Ast::Has(name, HasHow::All, self.list()?));
            }
            let v = self.value()?;
            return Ok(Ast::Has(name, HasHow::Any, vec![v]));
        }
        Ok(Ast::Bare(name))
    }

    fn list(&mut self) -> Result<Vec<Value>, FilterError> {
        if self.peek().0 != Tok::LParen {
            return self.fail("'(' opening a list of values");
        }
        self.bump();
        let mut out = vec![self.value()?];
        loop {
            match self.peek().0 {
                Tok::Comma => {
                    self.bump();
                    out.push(self.value()?);
                }
                Tok::RParen => {
                    self.bump();
                    return Ok(out);
                }
                _ => return self.fail("',' or ')'"),
            }
        }
    }

    fn value(&mut self) -> Result<Value, FilterError> {
        let (t, column) = self.peek().clone();
        let lit = match t {
            Tok::Int(v) => Lit::Int(v),
            Tok::Float(v) => Lit::Float(v),
            Tok::Str(s) => Lit::Str(s),
            Tok::Ident(s) if s.eq_ignore_ascii_case("TRUE") => Lit::Bool(true),
            Tok::Ident(s) if s.eq_ignore_ascii_case("FALSE") => Lit::Bool(false),
            Tok::Ident(s) if s.eq_ignore_ascii_case("TIMESTAMP") => {
                self.bump();
                let (t, _) = self.peek().clone();
                let Tok::Str(s) = t else {
                    return self.fail("a quoted date after TIMESTAMP ('2010-01-31T12:00:00Z')");
                };
                Lit::Timestamp(s)
            }
            _ => {
                return self.fail(
                    "a value (an integer, a float, a 'string', TRUE, FALSE or TIMESTAMP '…')",
                );
            }
        };
        self.bump();
        Ok(Value { lit, column })
    }
}

/// Parses a filter expression.
pub fn parse(text: &str) -> Result<Ast, FilterError> {
    if text.len() > MAX_FILTER_BYTES {
        return Err(FilterError::Syntax {
            column: 1,
            detail: format!(
                "{} bytes; a filter holds at most {MAX_FILTER_BYTES} (give many ids as an id \
                 selector instead)",
                text.len()
            ),
        });
    }
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        at: 0,
        depth: 0,
    };
    if p.peek().0 == Tok::End {
        return p.fail("an expression");
    }
    let e = p.expr()?;
    if p.peek().0 != Tok::End {
        return p.fail("AND, OR or the end of the filter");
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(text: &str) -> usize {
        parse(text).unwrap_err().column()
    }

    #[test]
    fn precedence_not_and_or() {
        let e = parse("a OR b AND NOT c").unwrap();
        let Ast::Or(terms) = e else { panic!("{e:?}") };
        assert!(matches!(&terms[0], Ast::Bare(n) if n.text == "a"));
        let Ast::And(and) = &terms[1] else { panic!() };
        assert!(matches!(and[1], Ast::Not(_)));
    }

    #[test]
    fn the_issue_example_parses() {
        parse(
            "year >= 2010 AND tags HAS 'cat' AND licence IN ('cc0','cc-by') AND id NOT IN (3, 7)",
        )
        .unwrap();
        parse("tags HAS ALL ('a', 'b') or tags has any ('c') and not (x <> -1.5e3)").unwrap();
        parse("\"and\" = 'it''s' AND t < TIMESTAMP '2010-01-01'").unwrap();
    }

    #[test]
    fn errors_name_the_column() {
        assert_eq!(col("year >= "), 9);
        assert_eq!(col("year >= 2010 AND"), 17);
        assert_eq!(col("(a = 1"), 7);
        assert_eq!(col("a = 1 b"), 7);
        assert_eq!(col("a IN 3"), 6);
        assert_eq!(col("a = 'x"), 5);
        assert_eq!(col("a = 1 # c"), 7);
        assert_eq!(col("IN = 3"), 1);
        assert_eq!(col(""), 1);
        assert_eq!(col("a = 99999999999999999999999"), 5);
        assert_eq!(col("a NOT 3"), 7);
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(parse(&deep), Err(FilterError::Syntax { .. })));
        let nots = format!("{}a", "NOT ".repeat(10_000));
        assert!(matches!(parse(&nots), Err(FilterError::Syntax { .. })));
    }
}
