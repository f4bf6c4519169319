//! The index's attribute schema: the columns writes give and filters test (docs/filtering.md).
//! Fixed at create (`CreateOptions::attributes`); a column may be added later, never removed
//! or retyped, so every stored row keeps a value of every column (its default when it was
//! stored before the column existed).

use super::handle::Index;
use crate::format::{ColumnType, Schema, Value};
use crate::storage::error::{Result, StorageError};

impl Index {
    /// Adds attribute column `name` of type `t`: every row already stored, and every later
    /// write that leaves the column out, holds `default` (of type `t`). Staged like a write —
    /// visible, and durable, at the next commit (which publishes the new schema in its
    /// manifest, FORMAT.md §7.4); rows added before that commit may already give the column.
    /// A name that is taken or not a column name (`[A-Za-z_][A-Za-z0-9_]*`, not `id`), or a
    /// default of another type, is refused naming the column, and nothing changes.
    pub fn add_column(&self, name: &str, t: ColumnType, default: Value) -> Result<()> {
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let schema = w
            .schema()
            .with_column(name, t, default)
            .map_err(|e| StorageError::attributes(&self.shared.dir, e))?;
        w.pending.schema = Some(schema);
        w.pending.changed = true;
        Ok(())
    }

    /// The attribute columns writes are checked against: the committed schema with the
    /// columns added since ([`Index::add_column`]). A snapshot's (what its filters test) is
    /// `Snapshot::attribute_schema`.
    pub fn attribute_schema(&self) -> Schema {
        self.shared.writer.lock().schema().clone()
    }
}
