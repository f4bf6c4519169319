//! A parsed filter expression: the text a caller wrote and its syntax tree, whose names and
//! types are checked against a schema when a search runs (docs/filtering.md, "The language").

use super::block_filter::{CompiledFilter, select_rows};
use super::check::{self, Expr};
use super::parse;
use super::schema::Schema;
use crate::format::attribute_columns::Attributes;
use crate::search::error::{FilterError, SearchError};

/// A parsed filter expression (docs/filtering.md, "The language"). Parsing needs no index; the
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
        self.typed(schema).map(|_| ())
    }

    /// The typed expression over `schema`'s columns: what a search evaluates per block.
    pub(super) fn typed(&self, schema: &Schema) -> Result<Expr, FilterError> {
        check::check(&self.ast, schema)
    }

    /// Which of `attributes`' rows (ids `ids`, one per row) pass: the same evaluation a search
    /// runs per block (and the same as [`RowFilter::select`](super::row_filter::RowFilter::select)
    /// of this predicate alone).
    pub fn select(&self, ids: &[u64], attributes: &Attributes) -> Result<Vec<bool>, SearchError> {
        select_rows(ids, attributes, |schema| {
            let expr = self.typed(schema).map_err(SearchError::Filter)?;
            Ok(CompiledFilter::new(Some(expr), None, schema))
        })
    }
}
