//! Naming a class: by id or by name, resolved against a class table.

use std::collections::HashMap;
use std::fmt;

use crate::format::{ClassRecord, ClassTable};

use super::error::{ClassError, Result};

/// A class named by its id or its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClassRef {
    /// A class by its numeric id.
    Id(u32),
    /// A class by its name.
    Name(String),
}

impl fmt::Display for ClassRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClassRef::Id(id) => write!(f, "id {id}"),
            ClassRef::Name(n) => write!(f, "{n:?}"),
        }
    }
}

impl From<u32> for ClassRef {
    fn from(id: u32) -> Self {
        ClassRef::Id(id)
    }
}

impl From<&str> for ClassRef {
    fn from(name: &str) -> Self {
        ClassRef::Name(name.to_string())
    }
}

/// Id and name look-ups over a table's records (built once per call, O(C)).
#[derive(Debug)]
pub(crate) struct ClassLookup<'a> {
    by_id: HashMap<u32, &'a ClassRecord>,
    by_name: HashMap<&'a str, &'a ClassRecord>,
}

impl<'a> ClassLookup<'a> {
    pub(crate) fn new(table: Option<&'a ClassTable>) -> Self {
        let classes = table.map_or(&[][..], |t| &t.classes[..]);
        ClassLookup {
            by_id: classes.iter().map(|c| (c.id, c)).collect(),
            by_name: classes.iter().map(|c| (c.name.as_str(), c)).collect(),
        }
    }

    pub(crate) fn by_id(&self, id: u32) -> Option<&'a ClassRecord> {
        self.by_id.get(&id).copied()
    }

    pub(crate) fn by_name(&self, name: &str) -> Option<&'a ClassRecord> {
        self.by_name.get(name).copied()
    }

    /// The record `r` names, or `UnknownClass` naming `argument`.
    pub(crate) fn resolve(&self, r: &ClassRef, argument: &str) -> Result<&'a ClassRecord> {
        let found = match r {
            ClassRef::Id(id) => self.by_id(*id),
            ClassRef::Name(n) => self.by_name(n),
        };
        found.ok_or_else(|| ClassError::UnknownClass {
            argument: argument.to_string(),
            class: r.to_string(),
        })
    }
}
