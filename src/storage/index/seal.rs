//! Sealing: the active log's live rows written as one sorted, immutable segment, and the
//! segment writer that sealing and compaction share.

use std::sync::Arc;

use crate::format::mih_tables::MihShape;
use crate::format::{
    CodeKind, FileId, FileKind, FileRef, SegmentEntry, SegmentLayout, SegmentWriter, VectorBuf,
    append_log::{NO_LABEL, NO_LIST},
};

use super::handle::Index;
use super::writer_state::LogWriter;
use crate::format::{AttributesBuilder, Schema};
use crate::storage::attributes::conformed;
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::data_file_name;
use crate::storage::loaded_version::SegmentSlot;
use crate::storage::open_segment::OpenSegment;
use crate::storage::publish::publish;
use crate::storage::segment_columns::{Column, Fill, SegmentColumns};

/// Rows per chunk when streaming a sealed segment.
const SEAL_CHUNK: usize = 64 * 1024;

impl Index {
    /// Writes the log's live rows as a new segment (`None` if none is live): sorted by id, or
    /// by (list id, id) when any row has a list id (rows without one get [`NO_LIST`], last).
    pub(super) fn seal(&self, log: &LogWriter, schema: &Schema) -> Result<Option<SegmentSlot>> {
        let has_lists = log.batches.iter().any(|b| b.batch.lists.is_some());
        let mut order: Vec<(u32, u64, u32, u32)> = Vec::with_capacity(log.rows as usize);
        for (bi, b) in log.batches.iter().enumerate() {
            for (r, &id) in b.batch.ids.iter().enumerate() {
                if !log.is_deleted(b.first_row + r as u64) {
                    let list = match &b.batch.lists {
                        Some(l) => l[r],
                        None if has_lists => NO_LIST,
                        None => 0,
                    };
                    order.push((list, id, bi as u32, r as u32));
                }
            }
        }
        if order.is_empty() {
            return Ok(None);
        }
        order.sort_unstable();
        let cols = SegmentColumns {
            labels: log.batches.iter().any(|b| b.batch.labels.is_some()),
            lists: has_lists,
            vectors: self.shared.vectors,
            attributes: !schema.is_empty(),
        };
        // Every batch's columns as the schema's (a batch written before a column was added
        // lacks it: it takes the default).
        let attrs = if schema.is_empty() {
            Vec::new()
        } else {
            log.batches
                .iter()
                .map(|b| conformed(schema, b.batch.attributes.as_ref(), b.batch.rows()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| StorageError::attributes(&self.shared.dir, e))?
        };
        let batch = |b: u32| &log.batches[b as usize].batch;
        let w = log.meta.code_bytes as usize;
        let codes_of = |chunk: &[(u32, u64, u32, u32)], buf: &mut Vec<u8>| {
            buf.clear();
            for &(_, _, b, r) in chunk {
                let codes = &batch(b).codes;
                buf.extend_from_slice(&codes[r as usize * w..(r as usize + 1) * w]);
            }
        };
        let slot = self.write_segment(order.len() as u64, cols, |f| {
            let (col, out) = match f {
                Fill::Column(col, out) => (col, out),
                Fill::CodesAgain(sink) => {
                    let mut buf = Vec::new();
                    for chunk in order.chunks(SEAL_CHUNK) {
                        codes_of(chunk, &mut buf);
                        sink(&buf);
                    }
                    return Ok(());
                }
            };
            if col == Column::Attributes {
                // Runs of consecutive rows of one batch are copied at once.
                let mut b = AttributesBuilder::new(schema);
                let mut run: Option<(u32, u32, u32)> = None; // (batch, first row, end row)
                for &(_, _, bi, r) in &order {
                    run = match run {
                        Some((rb, a, e)) if rb == bi && e == r => Some((rb, a, e + 1)),
                        Some((rb, a, e)) => {
                            b.push(&attrs[rb as usize], a as usize..e as usize);
                            Some((bi, r, r + 1))
                        }
                        None => Some((bi, r, r + 1)),
                    };
                }
                if let Some((rb, a, e)) = run {
                    b.push(&attrs[rb as usize], a as usize..e as usize);
                }
                return Ok(out.attributes(&b.finish())?);
            }
            for chunk in order.chunks(SEAL_CHUNK) {
                match col {
                    Column::Attributes => {}
                    Column::Ids => out.ids(&chunk.iter().map(|c| c.1).collect::<Vec<_>>())?,
                    Column::Codes => {
                        let mut buf = Vec::new();
                        codes_of(chunk, &mut buf);
                        out.codes(&buf)?
                    }
                    Column::Labels => out.labels(
                        &chunk
                            .iter()
                            .map(|&(_, _, b, r)| {
                                batch(b).labels.as_ref().map_or(NO_LABEL, |l| l[r as usize])
                            })
                            .collect::<Vec<_>>(),
                    )?,
                    Column::Lists => out.lists(&chunk.iter().map(|c| c.0).collect::<Vec<_>>())?,
                    Column::Vectors => {
                        let Some(spec) = cols.vectors else {
                            continue;
                        };
                        let dim = spec.dim as usize;
                        let mut buf = VectorBuf::empty(spec.dtype);
                        for &(_, _, b, r) in chunk {
                            let r = r as usize;
                            let ok = batch(b).vectors.as_ref().is_some_and(|v| {
                                buf.extend_from(v.as_slice(), r * dim, (r + 1) * dim)
                            });
                            if !ok {
                                return Err(self.invalid(
                                    "vectors",
                                    format!("internal: log row {r} of batch {b} has no vector"),
                                ));
                            }
                        }
                        out.vector_rows(spec, buf.as_slice())?
                    }
                }
            }
            Ok(())
        })?;
        Ok(Some(slot))
    }

    /// Publishes a new segment whose columns `fill(Fill::Column(column, writer))` streams,
    /// column by column in file order, and opens it. Binary codes of 32-256 bits also get
    /// multi-index hashing tables (format 1.6), built from `fill(Fill::CodesAgain(sink))`
    /// passes over the codes (`SegmentWriter::mih_tables`).
    pub(crate) fn write_segment(
        &self,
        rows: u64,
        cols: SegmentColumns,
        mut fill: impl FnMut(Fill<'_, '_>) -> Result<()>,
    ) -> Result<SegmentSlot> {
        let model = self.shared.model.file();
        let id = FileId::generate();
        let name = data_file_name(FileKind::Segment, id);
        let layout = SegmentLayout {
            code_kind: model.code_kind,
            code_bytes: model.code_bytes,
            code_bits: model.code_bits,
            model_id: model.model_id,
        };
        let dir = &self.shared.dir;
        let (meta, _) = publish(&*self.shared.config.fs, dir, &name, |out, path| {
            let mut sw = SegmentWriter::new(out, id, layout, path)?;
            fill(Fill::Column(Column::Ids, &mut sw))?;
            fill(Fill::Column(Column::Codes, &mut sw))?;
            if cols.labels {
                fill(Fill::Column(Column::Labels, &mut sw))?;
            }
            if cols.lists {
                fill(Fill::Column(Column::Lists, &mut sw))?;
            }
            if cols.vectors.is_some() {
                fill(Fill::Column(Column::Vectors, &mut sw))?;
            }
            if cols.attributes {
                fill(Fill::Column(Column::Attributes, &mut sw))?;
            }
            let mih = match layout.code_kind {
                CodeKind::Binary if self.shared.config.mih_tables => {
                    MihShape::choose(layout.code_bytes, rows)
                }
                _ => None,
            };
            if let Some(shape) = mih {
                sw.mih_tables(shape, |sink| fill(Fill::CodesAgain(sink)))?;
            }
            Ok(sw.finish()?.1)
        })?;
        if meta.rows != rows || meta.vectors != cols.vectors.map(|v| v.pair()) {
            return Err(self.invalid(
                "segment",
                format!(
                    "internal: wrote {} rows with vectors {:?}, expected {rows} with {:?}",
                    meta.rows, meta.vectors, cols.vectors
                ),
            ));
        }
        let seg = OpenSegment::open(&dir.join(&name), &self.shared.config.read)?;
        Ok(SegmentSlot {
            entry: SegmentEntry {
                segment: FileRef { id, name },
                rows,
                deleted: 0,
                deletions: None,
            },
            seg: Arc::new(seg),
            deletions: None,
        })
    }
}
