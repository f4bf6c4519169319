//! Section kind numbers (the `kind` column of the section table) and their names.
//!
//! Numbers are global across file kinds so that a section is never misread as another file
//! kind's section; each file kind accepts only its own list (see FORMAT.md §3-§7).

use super::container::FileKind;

/// Fixed-size metadata of the file (every kind has exactly one).
pub const META: u32 = 1;

// segment (FORMAT.md §3)
/// Segment row ids, `u64` per row (FORMAT.md §3.2).
pub const SEG_IDS: u32 = 2;
/// Segment codes, row-major (FORMAT.md §3.2).
pub const SEG_CODES: u32 = 3;
/// Segment labels, `u32` per row (FORMAT.md §3.2).
pub const SEG_LABELS: u32 = 4;
/// Segment list ids, `u32` per row (FORMAT.md §3.2).
pub const SEG_LISTS: u32 = 5;
/// Segment stored vectors (FORMAT.md §3.2).
pub const SEG_VECTORS: u32 = 6;
/// Where each list's rows start, in a segment whose rows are grouped by list id (format 1.1,
/// optional: a reader that does not know it reads the segment without the shortcut).
pub const SEG_LIST_INDEX: u32 = 7;
/// The code column of a 4-bit PQ segment in the block-interleaved fast-scan layout (format
/// 1.2, required; replaces [`SEG_CODES`] in such segments, FORMAT.md §3.4).
pub const SEG_CODES_FASTSCAN: u32 = 8;
/// One CRC-32 per block of every row column (format 1.4, optional: a reader that does not know
/// it checks whole columns instead; FORMAT.md §3.5).
pub const SEG_BLOCK_CHECKSUMS: u32 = 9;
/// Multi-index hashing tables of a binary segment (format 1.6, optional: a reader that does
/// not know it scans the segment linearly; FORMAT.md §3.6).
pub const SEG_MIH: u32 = 10;
/// The rows' attribute columns (format 1.7, required: a reader that does not know it would
/// drop the columns on compaction; FORMAT.md §3.7).
pub const SEG_ATTRIBUTES: u32 = 11;
/// The tag postings of a segment's `tags` columns (format 1.8, optional: a reader that does
/// not know it builds them from the columns; FORMAT.md §3.8).
pub const SEG_ATTRIBUTE_POSTINGS: u32 = 12;
/// The zone maps of a segment's `int`, `float` and `timestamp` columns (format 1.8, optional:
/// a reader that does not know it builds them from the columns; FORMAT.md §3.8).
pub const SEG_ATTRIBUTE_ZONES: u32 = 13;

// model (§4)
/// One model stage; one section per stage, in pipeline order (FORMAT.md §4.2).
pub const MODEL_STAGE: u32 = 16;

// class table (§5)
/// Class records, 40 bytes each (FORMAT.md §5.2).
pub const CLS_RECORDS: u32 = 32;
/// Class names, concatenated in record order (FORMAT.md §5.2).
pub const CLS_NAMES: u32 = 33;
/// Per-class f64 descriptor sums (FORMAT.md §5.2).
pub const CLS_SUMS: u32 = 34;
/// NCMC centroid vectors (FORMAT.md §5.2).
pub const CLS_CENTROIDS: u32 = 35;
/// NCMC centroid weights (FORMAT.md §5.2).
pub const CLS_CENTROID_WEIGHTS: u32 = 36;
/// Images each record of a delta removes from its class (format 1.3, required; only in deltas
/// that remove images, FORMAT.md §5.2).
pub const CLS_REMOVED: u32 = 37;

// deletion bitmap (§6)
/// Deletion bits, one per segment row (FORMAT.md §6.2).
pub const DEL_BITS: u32 = 48;

// manifest (§7)
/// File names the manifest refers to, concatenated (FORMAT.md §7.2).
pub const MAN_STRINGS: u32 = 64;
/// The manifest's segment records (FORMAT.md §7.2).
pub const MAN_SEGMENTS: u32 = 65;
/// The manifest's class-file records (FORMAT.md §7.2).
pub const MAN_CLASS_FILES: u32 = 66;
/// The active append log and its committed length (FORMAT.md §10.4); present only while the
/// index has an active log, so manifests without one keep their 1.0 bytes.
pub const MAN_ACTIVE_LOG: u32 = 67;
/// The index's stored-vector setting (format 1.1, required): present only when the index
/// stores vectors, so other manifests keep their 1.0 layout.
pub const MAN_VECTORS: u32 = 68;
/// The index's attribute schema: names, types and defaults (format 1.7, required; present only
/// when the index has attribute columns, FORMAT.md §7.4).
pub const MAN_ATTRIBUTE_SCHEMA: u32 = 69;

/// The name of a section kind inside a file kind, or `None` when this build does not know it.
pub fn name(file: FileKind, kind: u32) -> Option<&'static str> {
    let n = match (file, kind) {
        (_, META) => "meta",
        (FileKind::Segment, SEG_IDS) => "ids",
        (FileKind::Segment, SEG_CODES) => "codes",
        (FileKind::Segment, SEG_LABELS) => "labels",
        (FileKind::Segment, SEG_LISTS) => "lists",
        (FileKind::Segment, SEG_VECTORS) => "vectors",
        (FileKind::Segment, SEG_LIST_INDEX) => "list_index",
        (FileKind::Segment, SEG_CODES_FASTSCAN) => "codes_fastscan",
        (FileKind::Segment, SEG_BLOCK_CHECKSUMS) => "block_checksums",
        (FileKind::Segment, SEG_MIH) => "mih",
        (FileKind::Segment, SEG_ATTRIBUTES) => "attributes",
        (FileKind::Segment, SEG_ATTRIBUTE_POSTINGS) => "attribute_postings",
        (FileKind::Segment, SEG_ATTRIBUTE_ZONES) => "attribute_zones",
        (FileKind::Model, MODEL_STAGE) => "stage",
        (FileKind::ClassTable, CLS_RECORDS) => "classes",
        (FileKind::ClassTable, CLS_NAMES) => "names",
        (FileKind::ClassTable, CLS_SUMS) => "sums",
        (FileKind::ClassTable, CLS_CENTROIDS) => "centroids",
        (FileKind::ClassTable, CLS_CENTROID_WEIGHTS) => "centroid_weights",
        (FileKind::ClassTable, CLS_REMOVED) => "removed",
        (FileKind::DeletionBitmap, DEL_BITS) => "bits",
        (FileKind::Manifest, MAN_STRINGS) => "strings",
        (FileKind::Manifest, MAN_SEGMENTS) => "segments",
        (FileKind::Manifest, MAN_CLASS_FILES) => "class_files",
        (FileKind::Manifest, MAN_ACTIVE_LOG) => "active_log",
        (FileKind::Manifest, MAN_VECTORS) => "vectors",
        (FileKind::Manifest, MAN_ATTRIBUTE_SCHEMA) => "attribute_schema",
        _ => return None,
    };
    Some(n)
}

/// Whether a section kind may be stored compressed. Only stored vectors may: every other section
/// is scanned or viewed in place.
pub fn compressible(file: FileKind, kind: u32) -> bool {
    file == FileKind::Segment && kind == SEG_VECTORS
}

/// A label for messages: `codes`, or `section kind 77` when unknown.
pub fn label(file: FileKind, kind: u32) -> String {
    match name(file, kind) {
        Some(n) => n.to_string(),
        None => format!("section kind {kind}"),
    }
}
