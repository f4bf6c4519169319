//! The active segment's append log (FORMAT.md §10): the one codedb file that grows.
//!
//! ```text
//! 0        64          128
//! +--------+-----------+----------------+----------------+---
//! | header | log meta  | batch record 0 | batch record 1 | ...
//! +--------+-----------+----------------+----------------+---
//! record = 32-byte record header | ids u64×rows | codes | labels u32×rows (optional)
//!          | lists u32×rows (optional) | vectors rows×dim f32/f16 (iff the log stores them) | pad to 8
//! ```
//!
//! Rows added to an index are appended here as checksummed batch records; a commit fsyncs the
//! file and publishes its *committed length* in the manifest (§10.4). Every record carries two
//! CRCs (its header and its payload), so a reader finds exactly where valid records end: the
//! bytes before the committed length must all be valid records (anything else is corruption),
//! and the bytes after it are an uncommitted or torn tail that the writer cuts off on open.
//! The committed prefix is never rewritten, which is what lets readers in other processes read
//! it while the writer appends.

use std::path::Path;

use super::attribute_columns::{self, Attributes};
use super::container::{FileId, FileKind, FormatVersion, HEADER_LEN, Header};
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, to_usize};
use super::model_file::CodeKind;
use super::segment_meta::VectorDType;
use super::segment_vectors::{VectorBuf, VectorSpec};

/// Length of the log meta block that follows the header.
pub const LOG_META_LEN: usize = 64;
/// Offset of the first batch record (header + log meta).
pub const LOG_DATA_START: u64 = (HEADER_LEN + LOG_META_LEN) as u64;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 32;
/// Record kind of a batch of rows (the only kind in 1.0).
pub const RECORD_KIND_BATCH: u32 = 1;
/// Batch flag: the payload holds a labels column.
pub const BATCH_FLAG_LABELS: u32 = 1;
/// Batch flag (format 1.1): the payload holds a list-id column.
pub const BATCH_FLAG_LISTS: u32 = 2;
/// Batch flag (format 1.1): the payload holds stored vectors; set exactly when the log meta
/// declares them.
pub const BATCH_FLAG_VECTORS: u32 = 4;
/// Batch flag (format 1.7): the payload ends with the rows' attribute columns (the bytes of
/// FORMAT.md §3.7), after the fixed-width columns and their padding.
pub const BATCH_FLAG_ATTRIBUTES: u32 = 8;
const KNOWN_FLAGS: u32 =
    BATCH_FLAG_LABELS | BATCH_FLAG_LISTS | BATCH_FLAG_VECTORS | BATCH_FLAG_ATTRIBUTES;
/// Most rows one record may hold: bounds what a reader allocates before the payload CRC is
/// checked. Writers split larger batches.
pub const MAX_BATCH_ROWS: u32 = 1 << 20;
/// The label value meaning "this row has no label" (class ids never take it: FORMAT.md §5).
pub const NO_LABEL: u32 = u32::MAX;
/// The list id meaning "this row belongs to no list" (in segments that mix rows with and
/// without list ids).
pub const NO_LIST: u32 = u32::MAX;

/// The fixed properties of every row in a log (the layout of the model that encoded them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogMeta {
    /// How codes are laid out.
    pub code_kind: CodeKind,
    /// Bytes per code.
    pub code_bytes: u32,
    /// Meaningful bits per code.
    pub code_bits: u32,
    /// The model that encoded every row of the log.
    pub model_id: FileId,
    /// Stored vectors every record carries (format 1.1; `None` in 1.0 logs).
    pub vectors: Option<VectorSpec>,
}

impl LogMeta {
    /// `code_bytes u32 | code kind u8 | vector dtype u8 | zero[2] | code_bits u32 | vector dim
    /// u32 | model id [16] | zero[28] | CRC-32 of bytes 0..60`. Without vectors, the bytes are
    /// exactly a 1.0 log meta.
    pub fn encode(&self) -> [u8; LOG_META_LEN] {
        let (vdt, vdim) = self.vectors.map_or((0, 0), |v| (v.dtype as u8, v.dim));
        let mut w = LeWriter::new();
        w.u32(self.code_bytes)
            .u8(self.code_kind as u8)
            .u8(vdt)
            .zeros(2)
            .u32(self.code_bits)
            .u32(vdim)
            .bytes(&self.model_id.0)
            .zeros(28);
        let crc = crc32fast::hash(&w.buf);
        w.u32(crc);
        let mut out = [0u8; LOG_META_LEN];
        out.copy_from_slice(&w.buf);
        out
    }

    /// Decodes and validates the 64-byte log meta (FORMAT.md §10.1).
    pub fn decode(bytes: &[u8], path: &Path) -> Result<LogMeta> {
        let mut r = LeReader::new(bytes, path, "log meta");
        let block = r.take(LOG_META_LEN)?;
        let mut r = LeReader::new(block, path, "log meta");
        let code_bytes = r.u32()?;
        let kind = r.u8()?;
        let vdt = r.u8()?;
        r.zeros(2, "reserved")?;
        let code_bits = r.u32()?;
        let vdim = r.u32()?;
        let model_id = FileId(r.array()?);
        r.zeros(28, "reserved")?;
        let crc = r.u32()?;
        if crc32fast::hash(&block[..60]) != crc {
            return Err(FormatError::ChecksumMismatch {
                path: path.to_path_buf(),
                section: "log meta".into(),
            });
        }
        let code_kind = CodeKind::from_u8(kind)
            .ok_or_else(|| r.corrupt(format!("unknown code kind {kind}")))?;
        if !code_kind.consistent(code_bytes, code_bits) {
            return Err(r.corrupt(format!(
                "{} codes of {code_bytes} bytes cannot hold {code_bits} bits",
                code_kind.name()
            )));
        }
        let vectors = match (vdt, vdim) {
            (0, 0) => None,
            (t, d) => {
                let dtype = VectorDType::from_u8(t)
                    .ok_or_else(|| r.corrupt(format!("unknown vector type {t}")))?;
                if d == 0 {
                    return Err(r.corrupt("stored vectors with dimension 0"));
                }
                Some(VectorSpec::new(dtype, d))
            }
        };
        Ok(LogMeta {
            code_kind,
            code_bytes,
            code_bits,
            model_id,
            vectors,
        })
    }
}

/// The first [`LOG_DATA_START`] bytes of a new, empty log: header (kind 6) and log meta.
pub fn encode_prelude(file_id: FileId, meta: &LogMeta) -> Vec<u8> {
    let (major, minor) = FormatVersion::CURRENT.numbers();
    let header = Header {
        major,
        minor,
        kind: FileKind::AppendLog,
        file_id,
    };
    let mut out = Vec::with_capacity(LOG_DATA_START as usize);
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&meta.encode());
    out
}

/// One batch of rows: ids, codes (`code_bytes` per row, row-major), optional labels and list
/// ids, and the stored vectors when the log keeps them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogBatch {
    /// Row ids.
    pub ids: Vec<u64>,
    /// Codes, `code_bytes` per row, row-major.
    pub codes: Vec<u8>,
    /// Per-row labels ([`NO_LABEL`] for none), when the batch has them.
    pub labels: Option<Vec<u32>>,
    /// Per-row list ids ([`NO_LIST`] for none), when the batch has them.
    pub lists: Option<Vec<u32>>,
    /// `rows × dim` values of the log meta's vector type.
    pub vectors: Option<VectorBuf>,
    /// The rows' attribute columns (format 1.7), when the index has any.
    pub attributes: Option<Attributes>,
}

impl LogBatch {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// Payload bytes of a record of `rows` rows (ids, codes, labels, lists, vectors, padded
    /// to 8) in a log with meta `meta`.
    pub fn payload_len(rows: u64, meta: &LogMeta, labels: bool, lists: bool) -> Option<u64> {
        let width = (8u64 + meta.code_bytes as u64)
            .checked_add(if labels { 4 } else { 0 })?
            .checked_add(if lists { 4 } else { 0 })?
            .checked_add(meta.vectors.map_or(0, |v| v.row_bytes()))?;
        rows.checked_mul(width)?.checked_add(7).map(|x| x / 8 * 8)
    }

    /// The whole record (header and payload) for this batch, in a log with meta `meta`.
    pub fn encode(&self, meta: &LogMeta, path: &Path) -> Result<Vec<u8>> {
        let code_bytes = meta.code_bytes;
        let rows = self.ids.len();
        let bad = |detail: String| FormatError::InvalidArgument {
            path: path.to_path_buf(),
            argument: "batch".into(),
            detail,
        };
        if rows == 0 || rows > MAX_BATCH_ROWS as usize {
            return Err(bad(format!(
                "{rows} rows (a record holds 1..={MAX_BATCH_ROWS})"
            )));
        }
        if self.codes.len() as u64 != rows as u64 * code_bytes as u64 {
            return Err(bad(format!(
                "{} code bytes are not {rows} codes of {code_bytes} bytes",
                self.codes.len()
            )));
        }
        if let Some(l) = &self.labels
            && l.len() != rows
        {
            return Err(bad(format!("{} labels for {rows} rows", l.len())));
        }
        if let Some(l) = &self.lists
            && l.len() != rows
        {
            return Err(bad(format!("{} list ids for {rows} rows", l.len())));
        }
        match (&self.vectors, meta.vectors) {
            (None, None) => {}
            (Some(v), Some(spec)) => {
                if v.dtype() != spec.dtype || v.len() as u64 != rows as u64 * spec.dim as u64 {
                    return Err(bad(format!(
                        "{} {} values are not {rows} vectors of {} {}",
                        v.len(),
                        v.dtype().name(),
                        spec.dim,
                        spec.dtype.name()
                    )));
                }
                if !v.as_slice().all_finite() {
                    return Err(bad("stored vectors must be finite".into()));
                }
            }
            (Some(_), None) => return Err(bad("this log stores no vectors".into())),
            (None, Some(_)) => return Err(bad("this log stores a vector per row".into())),
        }
        let has_labels = self.labels.is_some();
        let has_lists = self.lists.is_some();
        let attrs = match &self.attributes {
            None => None,
            Some(a) if a.rows() != rows => {
                return Err(bad(format!(
                    "{} rows of attributes for {rows} rows",
                    a.rows()
                )));
            }
            Some(a) => Some(
                attribute_columns::encode(a).map_err(|e| attribute_columns::invalid(path, e))?,
            ),
        };
        let fixed_len = LogBatch::payload_len(rows as u64, meta, has_labels, has_lists)
            .ok_or_else(|| bad("record size overflows".into()))?;
        let payload_len = fixed_len + attrs.as_ref().map_or(0, |a| a.len() as u64);
        let mut payload = Vec::with_capacity(payload_len as usize);
        for id in &self.ids {
            payload.extend_from_slice(&id.to_le_bytes());
        }
        payload.extend_from_slice(&self.codes);
        for l in [&self.labels, &self.lists].into_iter().flatten() {
            for v in l {
                payload.extend_from_slice(&v.to_le_bytes());
            }
        }
        if let Some(v) = &self.vectors {
            payload.extend_from_slice(v.as_slice().as_bytes());
        }
        payload.resize(fixed_len as usize, 0);
        if let Some(a) = &attrs {
            payload.extend_from_slice(a);
        }
        let flags = if has_labels { BATCH_FLAG_LABELS } else { 0 }
            | if has_lists { BATCH_FLAG_LISTS } else { 0 }
            | if self.vectors.is_some() {
                BATCH_FLAG_VECTORS
            } else {
                0
            }
            | if attrs.is_some() {
                BATCH_FLAG_ATTRIBUTES
            } else {
                0
            };
        let mut h = LeWriter::new();
        h.u32(RECORD_KIND_BATCH)
            .u32(rows as u32)
            .u32(flags)
            .u32(0)
            .u64(payload_len)
            .u32(crc32fast::hash(&payload));
        let hcrc = crc32fast::hash(&h.buf);
        h.u32(hcrc);
        let mut out = h.into_inner();
        out.extend_from_slice(&payload);
        Ok(out)
    }
}

/// What follows the last record read: uncommitted whole records and torn bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogTail {
    /// All bytes after the end of the records read.
    pub bytes: u64,
    /// Whole, checksum-valid batch records in the tail (written, never committed).
    pub complete_batches: u64,
    /// Rows in those records.
    pub complete_rows: u64,
    /// Bytes after the complete records that do not form a valid record (a torn write).
    pub torn_bytes: u64,
    /// Why the torn bytes are not a record (`None` when there are none).
    pub torn_reason: Option<String>,
}

/// A parsed log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogContents {
    /// The log's file id.
    pub file_id: FileId,
    /// The log meta.
    pub meta: LogMeta,
    /// The batch records read, in order.
    pub batches: Vec<LogBatch>,
    /// Offset just past the last record read (the committed length when one was given).
    pub end: u64,
    /// Rows in `batches`.
    pub rows: u64,
    /// What follows the records read.
    pub tail: LogTail,
}

/// What is wrong with a record's attribute block, for its fault's detail (the record's
/// reader names the record and its offset; the block's decoder names only its part).
fn attribute_fault(e: &FormatError) -> String {
    match e {
        FormatError::Corrupt {
            section, detail, ..
        }
        | FormatError::Truncated {
            section, detail, ..
        } => format!("attribute block, {section}: {detail}"),
        other => format!("attribute block: {other}"),
    }
}

/// Why a record could not be read, and whether more bytes could have completed it.
struct RecordFault {
    truncated: bool,
    detail: String,
}

/// Parses one record at `pos`; `decode` copies the columns out (otherwise only checks them).
fn parse_record(
    bytes: &[u8],
    pos: usize,
    meta: &LogMeta,
    decode: bool,
) -> std::result::Result<(Option<LogBatch>, u64, usize), RecordFault> {
    let code_bytes = meta.code_bytes;
    let fault = |truncated: bool, detail: String| RecordFault { truncated, detail };
    let rest = &bytes[pos..];
    if rest.len() < RECORD_HEADER_LEN {
        return Err(fault(
            true,
            format!(
                "{} bytes, a record header needs {RECORD_HEADER_LEN}",
                rest.len()
            ),
        ));
    }
    let h = &rest[..RECORD_HEADER_LEN];
    let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let kind = u32_at(0);
    let rows = u32_at(4);
    let flags = u32_at(8);
    let zero = u32_at(12);
    let mut len8 = [0u8; 8];
    len8.copy_from_slice(&h[16..24]);
    let payload_len = u64::from_le_bytes(len8);
    let payload_crc = u32_at(24);
    let header_crc = u32_at(28);
    if crc32fast::hash(&h[..28]) != header_crc {
        return Err(fault(false, "record header checksum mismatch".into()));
    }
    if kind != RECORD_KIND_BATCH {
        return Err(fault(false, format!("unknown record kind {kind}")));
    }
    if zero != 0 || flags & !KNOWN_FLAGS != 0 {
        return Err(fault(false, "reserved record header bits are set".into()));
    }
    if (flags & BATCH_FLAG_VECTORS != 0) != meta.vectors.is_some() {
        return Err(fault(
            false,
            "the vectors flag disagrees with the log meta (every record of a log that stores \
             vectors carries them, no other record does)"
                .into(),
        ));
    }
    if rows == 0 || rows > MAX_BATCH_ROWS {
        return Err(fault(
            false,
            format!("{rows} rows (a record holds 1..={MAX_BATCH_ROWS})"),
        ));
    }
    let has_labels = flags & BATCH_FLAG_LABELS != 0;
    let has_lists = flags & BATCH_FLAG_LISTS != 0;
    let has_attrs = flags & BATCH_FLAG_ATTRIBUTES != 0;
    let want = LogBatch::payload_len(rows as u64, meta, has_labels, has_lists);
    // With attributes the payload continues past the fixed columns' padding with at least the
    // attribute block's 16-byte header; its own lengths then account for every byte.
    let fits = match want {
        Some(w) if has_attrs => payload_len >= w.saturating_add(16) && payload_len % 8 == 0,
        w => w == Some(payload_len),
    };
    if !fits {
        return Err(fault(
            false,
            format!("payload length {payload_len} does not match {rows} rows"),
        ));
    }
    let avail = (rest.len() - RECORD_HEADER_LEN) as u64;
    if payload_len > avail {
        return Err(fault(
            true,
            format!("payload of {payload_len} bytes, only {avail} present"),
        ));
    }
    let payload = &rest[RECORD_HEADER_LEN..RECORD_HEADER_LEN + payload_len as usize];
    if crc32fast::hash(payload) != payload_crc {
        return Err(fault(false, "payload checksum mismatch".into()));
    }
    let n = rows as usize;
    let cb = code_bytes as usize;
    let codes_end = n * 8 + n * cb;
    let labels_end = codes_end + if has_labels { n * 4 } else { 0 };
    let lists_end = labels_end + if has_lists { n * 4 } else { 0 };
    let vectors_end = lists_end + meta.vectors.map_or(0, |v| n * v.row_bytes() as usize);
    let fixed_end = vectors_end.div_ceil(8) * 8;
    let (pad_end, attr_bytes) = if has_attrs {
        (fixed_end, Some(&payload[fixed_end..]))
    } else {
        (payload.len(), None)
    };
    if payload[vectors_end..pad_end].iter().any(|&b| b != 0) {
        return Err(fault(false, "record padding is not zero".into()));
    }
    let vectors = meta
        .vectors
        .map(|v| VectorBuf::from_le_bytes(v.dtype, &payload[lists_end..vectors_end]));
    if vectors.as_ref().is_some_and(|v| !v.as_slice().all_finite()) {
        return Err(fault(false, "stored vectors are not finite".into()));
    }
    let u32s = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    // The attribute block is checked whole (structure, UTF-8, codes in range) even when only
    // checking records, so a committed record never holds columns a reader would refuse.
    let attributes = match attr_bytes {
        None => None,
        Some(b) => Some(
            attribute_columns::decode(b, rows as u64, Path::new("log record"), "attributes")
                .map_err(|e| fault(false, attribute_fault(&e)))?,
        ),
    };
    let batch = decode.then(|| LogBatch {
        ids: payload[..n * 8]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
        codes: payload[n * 8..codes_end].to_vec(),
        labels: has_labels.then(|| u32s(&payload[codes_end..labels_end])),
        lists: has_lists.then(|| u32s(&payload[labels_end..lists_end])),
        vectors,
        attributes,
    });
    Ok((
        batch,
        rows as u64,
        pos + RECORD_HEADER_LEN + payload_len as usize,
    ))
}

/// Reads a log from its bytes.
///
/// With `committed = Some(len)`, the records must tile `[128, len)` exactly: a record there
/// that is short, fails a checksum or is malformed is an error naming the record (that data
/// was acknowledged, so losing it is corruption, not a torn write). Bytes after `len` form the
/// tail, which is summarised (whole uncommitted records, torn bytes) but not returned.
/// With `None` (reading a log file on its own), records are read up to the first one that is
/// incomplete or invalid, and everything after it is the tail.
pub fn read_log(bytes: &[u8], path: &Path, committed: Option<u64>) -> Result<LogContents> {
    let (header, meta) = read_prelude(bytes, path)?;
    let file_len = bytes.len() as u64;
    let limit = match committed {
        Some(len) => {
            if len < LOG_DATA_START {
                return Err(FormatError::Corrupt {
                    path: path.to_path_buf(),
                    section: "log".into(),
                    detail: format!("committed length {len} is inside the log prelude"),
                });
            }
            if len > file_len {
                return Err(FormatError::Truncated {
                    path: path.to_path_buf(),
                    section: "log".into(),
                    detail: format!(
                        "the manifest commits {len} bytes, the file has only {file_len}"
                    ),
                });
            }
            len
        }
        None => file_len,
    };
    let limit = to_usize(limit, path, "log", "length")?;
    let mut pos = LOG_DATA_START as usize;
    let mut batches = Vec::new();
    let mut rows = 0u64;
    let mut record = 0u64;
    while pos < limit {
        match parse_record(&bytes[..limit], pos, &meta, true) {
            Ok((batch, n, next)) => {
                batches.extend(batch);
                rows += n;
                pos = next;
                record += 1;
            }
            Err(f) if committed.is_some() => {
                let section = format!("log record {record} at offset {pos}");
                return Err(if f.truncated {
                    FormatError::Truncated {
                        path: path.to_path_buf(),
                        section,
                        detail: format!("{} (inside the committed length)", f.detail),
                    }
                } else {
                    FormatError::Corrupt {
                        path: path.to_path_buf(),
                        section,
                        detail: format!("{} (inside the committed length)", f.detail),
                    }
                });
            }
            Err(_) => break,
        }
    }
    let end = pos as u64;
    let tail = scan_tail(bytes, pos, &meta);
    Ok(LogContents {
        file_id: header.file_id,
        meta,
        batches,
        end,
        rows,
        tail,
    })
}

/// Reads a log's prelude (its first [`LOG_DATA_START`] bytes): header (kind 6) and log meta.
pub fn read_prelude(bytes: &[u8], path: &Path) -> Result<(Header, LogMeta)> {
    let header = Header::decode(bytes, path)?;
    if header.kind != FileKind::AppendLog {
        return Err(FormatError::WrongKind {
            path: path.to_path_buf(),
            expected: FileKind::AppendLog.name(),
            found: header.kind.name().to_string(),
        });
    }
    let meta = LogMeta::decode(&bytes[HEADER_LEN..], path)?;
    Ok((header, meta))
}

/// Whole, valid records found after a damaged one (see [`records_after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaterRecords {
    /// Number of such records.
    pub records: u64,
    /// Rows in them.
    pub rows: u64,
    /// Offset of the first of them.
    pub first_offset: Option<u64>,
}

/// The whole, valid records after the damaged record at `damaged` (an offset where reading
/// stopped), found by trying every 8-byte-aligned offset past it (records start at such offsets
/// and carry two CRCs, so a false find needs two 32-bit checksums to match by chance). An
/// append only ever adds bytes at the end, so a crash leaves damage only in the last record:
/// valid records after damaged bytes mean the damage is inside the log. O(bytes past
/// `damaged`); for `codedb verify`, not on the read path.
pub fn records_after(bytes: &[u8], meta: &LogMeta, damaged: u64) -> LaterRecords {
    let mut out = LaterRecords::default();
    let mut pos = damaged as usize + 8;
    while pos + RECORD_HEADER_LEN <= bytes.len() {
        match parse_record(bytes, pos, meta, false) {
            Ok((_, rows, next)) => {
                out.records += 1;
                out.rows += rows;
                out.first_offset.get_or_insert(pos as u64);
                pos = next;
            }
            Err(_) => pos += 8,
        }
    }
    out
}

/// Summarises the bytes from `pos` to the end of the file.
fn scan_tail(bytes: &[u8], mut pos: usize, meta: &LogMeta) -> LogTail {
    let mut tail = LogTail {
        bytes: (bytes.len() - pos) as u64,
        ..LogTail::default()
    };
    while pos < bytes.len() {
        match parse_record(bytes, pos, meta, false) {
            Ok((_, n, next)) => {
                tail.complete_batches += 1;
                tail.complete_rows += n;
                pos = next;
            }
            Err(f) => {
                tail.torn_bytes = (bytes.len() - pos) as u64;
                tail.torn_reason = Some(f.detail);
                break;
            }
        }
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> LogMeta {
        LogMeta {
            code_kind: CodeKind::Binary,
            code_bytes: 2,
            code_bits: 16,
            model_id: FileId::from_u128(7),
            vectors: None,
        }
    }

    fn log_with(batches: &[LogBatch]) -> (Vec<u8>, Vec<u64>) {
        let mut bytes = encode_prelude(FileId::from_u128(9), &meta());
        let mut ends = Vec::new();
        for b in batches {
            bytes.extend(b.encode(&meta(), Path::new("t")).unwrap());
            ends.push(bytes.len() as u64);
        }
        (bytes, ends)
    }

    fn batch(ids: &[u64], labels: bool) -> LogBatch {
        LogBatch {
            ids: ids.to_vec(),
            codes: ids.iter().flat_map(|&i| [i as u8, 0xa0]).collect(),
            labels: labels.then(|| ids.iter().map(|&i| i as u32 * 3).collect()),
            lists: None,
            vectors: None,
            attributes: None,
        }
    }

    #[test]
    fn batches_round_trip_and_the_committed_length_bounds_what_is_read() {
        let bs = [batch(&[1, 2, 3], true), batch(&[9], false)];
        let (bytes, ends) = log_with(&bs);
        let all = read_log(&bytes, Path::new("t"), Some(ends[1])).unwrap();
        assert_eq!(all.batches, bs);
        assert_eq!((all.rows, all.end, all.tail.bytes), (4, ends[1], 0));
        let first = read_log(&bytes, Path::new("t"), Some(ends[0])).unwrap();
        assert_eq!(first.batches, bs[..1]);
        assert_eq!(first.tail.complete_batches, 1);
        assert_eq!(first.tail.complete_rows, 1);
        assert_eq!(first.tail.torn_bytes, 0);
        let empty = read_log(&bytes, Path::new("t"), Some(LOG_DATA_START)).unwrap();
        assert!(empty.batches.is_empty());
    }

    #[test]
    fn a_torn_tail_is_summarised_and_a_fault_inside_the_committed_length_is_an_error() {
        let bs = [batch(&[1, 2], false), batch(&[3, 4, 5], true)];
        let (bytes, ends) = log_with(&bs);
        for cut in ends[0] + 1..ends[1] {
            let torn = &bytes[..cut as usize];
            let c = read_log(torn, Path::new("t"), Some(ends[0])).unwrap();
            assert_eq!(c.batches.len(), 1);
            assert_eq!(c.tail.torn_bytes, cut - ends[0]);
            assert_eq!(c.tail.complete_batches, 0);
            assert!(c.tail.torn_reason.is_some());
            // Without a committed length the reader stops at the same place.
            let c = read_log(torn, Path::new("t"), None).unwrap();
            assert_eq!(c.end, ends[0]);
            // Claiming the torn record is committed is an error.
            assert!(read_log(torn, Path::new("t"), Some(cut)).is_err());
        }
        for i in ends[0] as usize..ends[1] as usize {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let c = read_log(&b, Path::new("t"), Some(ends[0])).unwrap();
            assert_eq!(c.tail.complete_batches, 0, "flipped byte {i}");
            let err = read_log(&b, Path::new("t"), Some(ends[1])).unwrap_err();
            assert!(err.to_string().contains("log record 1"), "{err}");
        }
    }

    #[test]
    fn records_after_damage_are_found_and_a_torn_tail_has_none() {
        let bs = [
            batch(&[1, 2], false),
            batch(&[3, 4, 5], true),
            batch(&[6], false),
        ];
        let (bytes, ends) = log_with(&bs);
        let p = Path::new("t");
        // A byte flipped in record 0 (header or payload): reading stops there, and records 1
        // and 2 are found after it.
        for i in [LOG_DATA_START as usize + 3, LOG_DATA_START as usize + 40] {
            let mut b = bytes.clone();
            b[i] ^= 0x04;
            let c = read_log(&b, p, None).unwrap();
            assert_eq!(c.end, LOG_DATA_START);
            let later = records_after(&b, &meta(), c.end);
            assert_eq!((later.records, later.rows), (2, 4), "flipped byte {i}");
            assert_eq!(later.first_offset, Some(ends[0]));
        }
        // A cut anywhere inside the last record leaves no record after the damage.
        for cut in ends[1] + 1..ends[2] {
            let c = read_log(&bytes[..cut as usize], p, None).unwrap();
            assert_eq!(c.end, ends[1]);
            let later = records_after(&bytes[..cut as usize], &meta(), c.end);
            assert_eq!(later, LaterRecords::default(), "cut at {cut}");
        }
    }

    #[test]
    fn prelude_faults_are_refused() {
        let (bytes, ends) = log_with(&[batch(&[1], false)]);
        for i in 0..LOG_DATA_START as usize {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(
                read_log(&b, Path::new("t"), Some(ends[0])).is_err(),
                "byte {i}"
            );
        }
        assert!(read_log(&bytes, Path::new("t"), Some(ends[0] + 1)).is_err());
        assert!(read_log(&bytes, Path::new("t"), Some(10)).is_err());
    }

    #[test]
    fn encode_checks_shapes() {
        let p = Path::new("t");
        let m = meta();
        assert!(LogBatch::default().encode(&m, p).is_err());
        let mut b = batch(&[1, 2], true);
        b.codes.pop();
        assert!(b.encode(&m, p).is_err());
        let mut b = batch(&[1, 2], true);
        b.labels = Some(vec![1]);
        assert!(b.encode(&m, p).is_err());
        let mut b = batch(&[1, 2], true);
        b.lists = Some(vec![1]);
        assert!(b.encode(&m, p).is_err());
        // Vectors exactly when the meta declares them, of its type and dimension, finite.
        let mut b = batch(&[1, 2], false);
        b.vectors = Some(VectorBuf::from_f32(VectorDType::F32, [0.0; 4]));
        assert!(b.encode(&m, p).is_err());
        let vm = LogMeta {
            vectors: Some(VectorSpec::new(VectorDType::F32, 2)),
            ..m
        };
        assert!(b.encode(&vm, p).is_ok());
        b.vectors = Some(VectorBuf::from_f32(VectorDType::F16, [0.0; 4]));
        assert!(b.encode(&vm, p).is_err());
        b.vectors = Some(VectorBuf::from_f32(VectorDType::F32, [0.0; 3]));
        assert!(b.encode(&vm, p).is_err());
        b.vectors = Some(VectorBuf::from_f32(
            VectorDType::F32,
            [0.0, 1.0, f32::INFINITY, 0.0],
        ));
        assert!(b.encode(&vm, p).is_err());
        b.vectors = None;
        assert!(b.encode(&vm, p).is_err());
    }

    #[test]
    fn lists_and_vectors_round_trip_in_a_1_1_log() {
        for dtype in [VectorDType::F32, VectorDType::F16] {
            let m = LogMeta {
                vectors: Some(VectorSpec::new(dtype, 3)),
                ..meta()
            };
            let p = Path::new("t");
            let mut bytes = encode_prelude(FileId::from_u128(9), &m);
            assert_eq!(bytes[8..10], [1, 0]);
            let minor = crate::format::container::FormatVersion::MINOR.to_le_bytes();
            assert!(minor[0] >= 1, "1.1 added these fields");
            assert_eq!(bytes[10..12], minor, "written as the current format");
            let mut want = Vec::new();
            for (k, ids) in [&[4u64, 5][..], &[6]].into_iter().enumerate() {
                let mut b = batch(ids, k == 0);
                b.lists = (k == 1).then(|| vec![7]);
                b.vectors = Some(VectorBuf::from_f32(
                    dtype,
                    (0..ids.len() * 3).map(|x| x as f32 * 0.5 - 1.0),
                ));
                bytes.extend(b.encode(&m, p).unwrap());
                want.push(b);
            }
            let c = read_log(&bytes, p, Some(bytes.len() as u64)).unwrap();
            assert_eq!(c.meta, m);
            assert_eq!(c.batches, want);
            // A log meta claiming no vectors cannot read these records.
            let mut plain = bytes.clone();
            plain[64..128].copy_from_slice(&meta().encode());
            assert!(read_log(&plain, p, Some(bytes.len() as u64)).is_err());
        }
    }
}
