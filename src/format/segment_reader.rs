//! Validating, zero-copy reader of segment files (FORMAT.md §3).
//!
//! After validation the columns are typed views straight into the mapping: `&[u64]` ids,
//! `&[u8]` codes of `code_bytes` per row, `&[u32]` labels and list ids. Views are made with
//! `bytemuck::try_cast_slice`, which checks alignment and length, so no `unsafe` is needed here.
//!
//! 4-bit PQ segments of format 1.2 store their codes block-interleaved (section
//! `codes_fastscan`, [`super::fastscan_layout`]): [`SegmentReader::fastscan_codes`] is that
//! column in place for the fast-scan kernel, [`SegmentReader::row_code`] /
//! [`SegmentReader::codes_into`] give rows in row-major form without touching the rest, and
//! [`SegmentReader::codes`] — the row-major column every other reader sees — is unpacked once,
//! on first use, and kept (O(rows) memory: for whole-column consumers only).
//!
//! **Checked bytes.** The column views are the file's bytes as they are: a reader opened with
//! `ChecksumPolicy::All` checked every one of them, one opened with `SkipColumns` (large segments,
//! O(1) open) none. [`SegmentReader::check_rows`] checks the blocks of a column that hold some rows
//! against the segment's block checksums (FORMAT.md §3.5; a segment older than 1.4 has one block
//! per column, its section CRC) and remembers the blocks it found good, so each block is
//! checksummed at most once per open segment. Code that answers queries from a segment reads its
//! rows through the checked accessors of `storage::Block`, which call it first.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use super::attribute_index::{self as attribute_index, AttributeIndex, IndexSource};
use super::block_checksums::{self, ColumnCheck};
use super::container::Codec;
use super::container::FileKind;
use super::container_reader::{ChecksumPolicy, Container};
use super::error::{FormatError, Result};
use super::fastscan_layout::{self as fsl, MAX_M};
use super::file_bytes::LoadMode;
use super::le::{checked_mul, to_usize};
use super::mih_tables::MihTables;
use super::model_file::CodeKind;
use super::section_kind::{
    self, META, SEG_BLOCK_CHECKSUMS, SEG_CODES, SEG_CODES_FASTSCAN, SEG_IDS, SEG_LABELS,
    SEG_LIST_INDEX, SEG_LISTS, SEG_MIH, SEG_VECTORS,
};
use super::segment_meta::{SegmentMeta, VectorDType};
use super::segment_vectors::VectorSlice;
use super::{
    attribute_columns::{self, Attributes},
    section_kind::{SEG_ATTRIBUTE_POSTINGS, SEG_ATTRIBUTE_ZONES, SEG_ATTRIBUTES},
};

/// One entry of a segment's list index (FORMAT.md §3.3): the rows of list `list` start at
/// `first_row` and run to the next entry's first row (or the end of the segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListEntry {
    /// The list id.
    pub list: u32,
    /// Index of the first row of the list in the segment.
    pub first_row: u64,
}

const LIST_ENTRY_LEN: usize = 16;

/// A row column of a segment (see [`SegmentReader::check_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowColumn {
    /// The id column (`ids`).
    Ids,
    /// The code column, row-major (`codes`) or fast-scan (`codes_fastscan`).
    Codes,
    /// The label column (`labels`).
    Labels,
    /// The list-id column (`lists`).
    Lists,
    /// The stored-vector column (`vectors`).
    Vectors,
}

impl RowColumn {
    /// Every row column, in section order.
    pub const ALL: [RowColumn; 5] = [
        RowColumn::Ids,
        RowColumn::Codes,
        RowColumn::Labels,
        RowColumn::Lists,
        RowColumn::Vectors,
    ];
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    /// Whether to mmap the file or read it into memory.
    pub load: LoadMode,
    /// Which row columns to checksum when the file is opened.
    pub checksums: ChecksumPolicy,
}

/// Stored vectors of a segment, decoded.
#[derive(Debug)]
pub enum VectorsView<'a> {
    /// Vectors stored as f32.
    F32(Cow<'a, [f32]>),
    /// Vectors stored as IEEE half precision.
    F16(Cow<'a, [half::f16]>),
}

impl VectorsView<'_> {
    /// Row `i` as f32 values.
    pub fn row_f32(&self, i: usize, dim: usize) -> Vec<f32> {
        match self {
            VectorsView::F32(v) => v[i * dim..(i + 1) * dim].to_vec(),
            VectorsView::F16(v) => v[i * dim..(i + 1) * dim]
                .iter()
                .map(|x| x.to_f32())
                .collect(),
        }
    }
}

/// An open, validated segment.
#[derive(Debug)]
pub struct SegmentReader {
    c: Container,
    meta: SegmentMeta,
    ids: usize,
    codes: usize,
    /// `M` when the code column is in the fast-scan layout (section `codes_fastscan`).
    fastscan_m: Option<usize>,
    /// The row-major copy of a fast-scan column, made on first [`SegmentReader::codes`].
    unpacked: OnceLock<Vec<u8>>,
    labels: Option<usize>,
    lists: Option<usize>,
    vectors: Option<usize>,
    /// The list index, when the rows are grouped by list id.
    list_index: Option<Vec<ListEntry>>,
    /// Per present row column: its section and which of its blocks are checked.
    checks: Vec<(RowColumn, usize, ColumnCheck)>,
    /// The multi-index hashing tables' section (format 1.6), if any.
    mih: Option<usize>,
    /// The tables' first-use check (checksum, offsets, row bounds): `Err((checksum, detail))`.
    mih_checked: OnceLock<std::result::Result<(), (bool, String)>>,
    /// The attribute columns' section (format 1.7), if any.
    attributes: Option<usize>,
    /// The columns, decoded and checked on first touch: `Err((checksum, section, detail))`.
    attributes_read: OnceLock<std::result::Result<Attributes, (bool, String, String)>>,
    /// The stored tag postings and zone maps' sections (format 1.8), if any.
    attribute_postings: Option<usize>,
    attribute_zones: Option<usize>,
    /// The columns' tag postings and zone maps, read from their sections (checked) or built
    /// on the first filter that reads them: `Err((checksum, section, detail))`.
    attribute_index: OnceLock<std::result::Result<AttributeIndex, (bool, String, String)>>,
}

/// Checks that each row column holds `rows` × its width bytes (the ids 8, the codes
/// `code_bytes` or the fast-scan layout's blocks of 32 rows, labels and lists 4, vectors `d` ×
/// the element size; FORMAT.md §3.2, §3.4) and that stored vectors and the meta agree, before
/// any column is viewed.
fn check_column_sizes(
    c: &Container,
    meta: &SegmentMeta,
    [ids, codes]: [usize; 2],
    fastscan_m: Option<usize>,
    [labels, lists, vectors]: [Option<usize>; 3],
) -> Result<()> {
    let path = c.path().to_path_buf();
    let rows = meta.rows;
    let expect = |i: usize, width: u64, what: &str| -> Result<()> {
        let want = checked_mul(rows, width, &path, what, "column size")?;
        let e = &c.entries()[i];
        if e.raw_len != want {
            return Err(FormatError::Corrupt {
                path: path.clone(),
                section: what.to_string(),
                detail: format!("{} bytes, expected {rows} rows x {width}", e.raw_len),
            });
        }
        to_usize(want, &path, what, "column size").map(|_| ())
    };
    expect(ids, 8, "ids")?;
    match fastscan_m {
        None => expect(codes, meta.code_bytes as u64, "codes")?,
        Some(m) => {
            let want = fsl::packed_len(rows, m)
                .ok_or_else(|| c.corrupt("codes_fastscan", "column size overflows"))?;
            let e = &c.entries()[codes];
            if e.raw_len != want {
                return Err(c.corrupt(
                    "codes_fastscan",
                    &format!(
                        "{} bytes, expected {} blocks of 32 rows x {} bytes for {rows} rows",
                        e.raw_len,
                        rows.div_ceil(fsl::BLOCK_ROWS as u64),
                        fsl::block_bytes(m)
                    ),
                ));
            }
            to_usize(want, &path, "codes_fastscan", "column size")?;
        }
    }
    if let Some(i) = labels {
        expect(i, 4, "labels")?;
    }
    if let Some(i) = lists {
        expect(i, 4, "lists")?;
    }
    match (vectors, meta.vectors) {
        (Some(i), Some((t, d))) => {
            let width = checked_mul(d as u64, t.size(), &path, "vectors", "row size")?;
            expect(i, width, "vectors")?;
        }
        (None, None) => {}
        (Some(_), None) => {
            return Err(c.corrupt("vectors", "stored vectors present but meta declares none"));
        }
        (None, Some(_)) => {
            return Err(c.corrupt("vectors", "meta declares stored vectors, section missing"));
        }
    }
    Ok(())
}

/// Section `kind` if present, read as a reader of the file's version would: in a file older
/// than `since` (the version that defined the kind) it is unknown, so skipped when optional
/// and refused when required (FORMAT.md §1.2).
fn section_since(c: &Container, kind: u32, since: (u16, u16)) -> Result<Option<usize>> {
    match c.find_one(kind)? {
        Some(i) if c.version() < since => {
            if c.entries()[i].required() {
                return Err(FormatError::UnknownRequiredSection {
                    path: c.path().to_path_buf(),
                    section: format!("section kind {kind}"),
                });
            }
            Ok(None)
        }
        found => Ok(found),
    }
}

impl SegmentReader {
    /// Opens and validates the segment at `path`.
    pub fn open(path: &Path, opts: OpenOptions) -> Result<SegmentReader> {
        let c = Container::open(path, opts.load, Some(FileKind::Segment))?;
        SegmentReader::from_container(c, opts.checksums)
    }

    /// Parses a segment from bytes in memory, checksumming every column.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<SegmentReader> {
        let c = Container::from_slice(bytes, path, Some(FileKind::Segment))?;
        SegmentReader::from_container(c, ChecksumPolicy::All)
    }

    /// Validates an opened container as a segment, checking the columns `policy` names.
    pub fn from_container(c: Container, policy: ChecksumPolicy) -> Result<SegmentReader> {
        let path = c.path().to_path_buf();
        let mi = c.require(META)?;
        c.verify_section(mi)?;
        let meta = SegmentMeta::decode(c.stored(mi), &path, !c.is_newer_minor())?;
        let ids = c.require(SEG_IDS)?;
        let (codes, fastscan_m) = match (c.find_one(SEG_CODES)?, c.find_one(SEG_CODES_FASTSCAN)?) {
            (Some(i), None) => (i, None),
            (None, Some(i)) => (i, Some(fastscan_m(&c, &meta)?)),
            (None, None) => return Err(c.corrupt("codes", "required section is missing")),
            (Some(_), Some(_)) => {
                return Err(c.corrupt("codes", "both a row-major and a fast-scan code column"));
            }
        };
        let labels = c.find_one(SEG_LABELS)?;
        let lists = c.find_one(SEG_LISTS)?;
        let vectors = c.find_one(SEG_VECTORS)?;
        check_column_sizes(
            &c,
            &meta,
            [ids, codes],
            fastscan_m,
            [labels, lists, vectors],
        )?;
        let rows = meta.rows;
        let list_index = match c.find_one(SEG_LIST_INDEX)? {
            None => None,
            Some(i) => {
                if lists.is_none() {
                    return Err(c.corrupt("list_index", "a list index without a lists column"));
                }
                c.verify_section(i)?;
                Some(decode_list_index(&c, c.stored(i), rows)?)
            }
        };
        let mih = match section_since(&c, SEG_MIH, (1, 6))? {
            Some(_) if meta.code_kind != CodeKind::Binary => {
                return Err(c.corrupt(
                    "mih",
                    &format!(
                        "multi-index hashing tables in a segment of {} codes",
                        meta.code_kind.name()
                    ),
                ));
            }
            found => found,
        };
        let attributes = section_since(&c, SEG_ATTRIBUTES, (1, 7))?;
        let [attribute_postings, attribute_zones] = [
            (SEG_ATTRIBUTE_POSTINGS, attribute_index::POSTINGS_SECTION),
            (SEG_ATTRIBUTE_ZONES, attribute_index::ZONES_SECTION),
        ]
        .map(|(kind, name)| -> Result<Option<usize>> {
            match section_since(&c, kind, (1, 8))? {
                Some(_) if attributes.is_none() => {
                    Err(c.corrupt(name, "an index of attribute columns the segment lacks"))
                }
                found => Ok(found),
            }
        });
        let (attribute_postings, attribute_zones) = (attribute_postings?, attribute_zones?);
        let checks = column_checks(
            &c,
            [
                (RowColumn::Ids, Some(ids)),
                (RowColumn::Codes, Some(codes)),
                (RowColumn::Labels, labels),
                (RowColumn::Lists, lists),
                (RowColumn::Vectors, vectors),
            ],
        )?;
        let r = SegmentReader {
            c,
            meta,
            ids,
            codes,
            fastscan_m,
            unpacked: OnceLock::new(),
            labels,
            lists,
            vectors,
            list_index,
            checks,
            mih,
            mih_checked: OnceLock::new(),
            attributes,
            attributes_read: OnceLock::new(),
            attribute_postings,
            attribute_zones,
            attribute_index: OnceLock::new(),
        };
        r.check_on_open(policy)?;
        Ok(r)
    }

    /// The checks of an open (FORMAT.md §1.3-1.4): the typed columns' alignment always, and
    /// under [`ChecksumPolicy::All`] every section's checksum, every block, and every rule a
    /// lazy reader would otherwise check on first use; else the last block's padding only
    /// (O(1), so even an unchecked open refuses dirty padding).
    fn check_on_open(&self, policy: ChecksumPolicy) -> Result<()> {
        let r = self;
        for (i, what) in [(r.ids, "ids")]
            .into_iter()
            .chain(r.labels.map(|i| (i, "labels")))
            .chain(r.lists.map(|i| (i, "lists")))
        {
            if bytemuck::try_cast_slice::<u8, u32>(r.c.stored(i)).is_err() {
                return Err(r.c.corrupt(what, "column is not aligned for a typed view"));
            }
        }
        if policy == ChecksumPolicy::All {
            for i in 0..r.c.entries().len() {
                r.c.verify_section(i)?;
            }
            r.check_all_blocks()?;
            r.check_id_range()?;
            r.check_list_index()?;
            r.vectors()?;
            r.check_code_padding(true)?;
            r.check_mih()?;
            r.attributes()?;
            if r.attribute_index_source() == Some(IndexSource::Stored) {
                // The stored indexes' sections and rules; a 1.7 segment builds its indexes on
                // the first filter, as before.
                r.attribute_index()?;
            }
        } else {
            // The last block only: O(1), so even an unchecked open refuses dirty padding.
            r.check_code_padding(false)?;
        }
        Ok(())
    }

    /// The lists column agrees with the list index (an O(rows) check; nothing to check without
    /// an index).
    pub fn check_list_index(&self) -> Result<()> {
        let (Some(index), Some(lists)) = (&self.list_index, self.lists()) else {
            return Ok(());
        };
        for (k, e) in index.iter().enumerate() {
            let end = index
                .get(k + 1)
                .map_or(lists.len(), |n| n.first_row as usize);
            let run = lists.get(e.first_row as usize..end).unwrap_or(&[]);
            if let Some(p) = run.iter().position(|&l| l != e.list) {
                return Err(self.c.corrupt(
                    "list_index",
                    &format!(
                        "row {} has list {}, the index puts it in list {}",
                        e.first_row as usize + p,
                        run[p],
                        e.list
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the blocks of column `col` that hold rows `rows` (clamped to the segment) and
    /// were not checked before (FORMAT.md §3.5). A block that does not match its checksum is
    /// [`FormatError::BlockChecksumMismatch`], naming the file, the section and the block's rows;
    /// a column the segment does not have is fine.
    pub fn check_rows(&self, col: RowColumn, rows: Range<usize>) -> Result<()> {
        self.check_rows_par(col, rows, 1)
    }

    /// [`SegmentReader::check_rows`] on up to `threads` threads of the current rayon pool (the
    /// first scan of a large segment checksums every block it reads).
    pub fn check_rows_par(&self, col: RowColumn, rows: Range<usize>, threads: usize) -> Result<()> {
        let Some((_, section, chk)) = self.checks.iter().find(|(c, ..)| *c == col) else {
            return Ok(());
        };
        let blocks = chk.blocks_of(self.byte_span(col, rows));
        chk.check_par(self.c.stored(*section), blocks, false, threads, |b| {
            self.block_error(col, *section, chk, b)
        })
    }

    /// [`SegmentReader::check_rows`] over every row of `col`.
    pub fn check_column(&self, col: RowColumn) -> Result<()> {
        self.check_rows(col, 0..self.rows())
    }

    /// Checks every block of every column against its checksum, including blocks checked
    /// before (`codedb verify`, and opening with `ChecksumPolicy::All`).
    pub fn check_all_blocks(&self) -> Result<()> {
        for (col, section, chk) in &self.checks {
            chk.check(self.c.stored(*section), 0..chk.count(), true, |b| {
                self.block_error(*col, *section, chk, b)
            })?;
        }
        Ok(())
    }

    /// Records every block as checked: the caller has just verified every column's section
    /// checksum, which covers the same bytes.
    pub(crate) fn mark_all_blocks_checked(&self) {
        for (_, _, chk) in &self.checks {
            chk.mark_all_good();
        }
    }

    /// `(checked, total)` blocks of column `col` (`(0, 0)` when the segment does not have it).
    pub fn checked_blocks(&self, col: RowColumn) -> (usize, usize) {
        self.checks
            .iter()
            .find(|(c, ..)| *c == col)
            .map_or((0, 0), |(_, _, chk)| (chk.good_count(), chk.count()))
    }

    /// Whether column `col` has block checksums (format 1.4), rather than one checksum for the
    /// whole column.
    pub fn has_block_checksums(&self, col: RowColumn) -> bool {
        self.checks
            .iter()
            .any(|(c, _, chk)| *c == col && !chk.is_whole())
    }

    /// Bytes per row of `col` (`None`: the fast-scan code column or a compressed vectors
    /// column, which are not row-major in the file).
    fn row_width(&self, col: RowColumn) -> Option<u64> {
        match col {
            RowColumn::Ids => Some(8),
            RowColumn::Labels | RowColumn::Lists => Some(4),
            RowColumn::Codes => self
                .fastscan_m
                .is_none()
                .then_some(self.meta.code_bytes as u64),
            RowColumn::Vectors => {
                let (t, d) = self.meta.vectors?;
                (!self.vectors_compressed()).then_some(t.size() * d as u64)
            }
        }
    }

    /// The bytes of `col`'s stored section that hold rows `rows`.
    fn byte_span(&self, col: RowColumn, rows: Range<usize>) -> Range<u64> {
        let (a, b) = (
            rows.start.min(self.rows()) as u64,
            rows.end.min(self.rows()) as u64,
        );
        if a >= b {
            return 0..0;
        }
        match (self.row_width(col), col, self.fastscan_m) {
            (Some(w), ..) => a * w..b * w,
            (None, RowColumn::Codes, Some(m)) => {
                let (g, bb) = (fsl::BLOCK_ROWS as u64, fsl::block_bytes(m) as u64);
                a / g * bb..b.div_ceil(g) * bb
            }
            // A compressed column is checked (and decoded) whole.
            _ => 0..u64::MAX,
        }
    }

    fn block_error(
        &self,
        col: RowColumn,
        section: usize,
        chk: &ColumnCheck,
        block: usize,
    ) -> FormatError {
        let span = chk.block_span(block);
        let n = self.meta.rows;
        let (first_row, end_row) = match (self.row_width(col), col, self.fastscan_m) {
            (Some(w), ..) if w > 0 => (span.start / w, span.end.div_ceil(w).min(n)),
            (None, RowColumn::Codes, Some(m)) => {
                let (g, bb) = (fsl::BLOCK_ROWS as u64, fsl::block_bytes(m) as u64);
                (span.start / bb * g, (span.end.div_ceil(bb) * g).min(n))
            }
            _ => (0, n),
        };
        FormatError::BlockChecksumMismatch {
            path: self.path().to_path_buf(),
            section: self.c.label(section),
            block: block as u64,
            first_row,
            end_row,
        }
    }

    /// The multi-index hashing tables (format 1.6, FORMAT.md §3.6), `None` when the segment has
    /// none. The first call checks the section's checksum, its offsets and that every stored
    /// row exists (O(section)), and remembers the outcome: a damaged section is
    /// [`FormatError::ChecksumMismatch`] or [`FormatError::Corrupt`] naming the file and section
    /// `mih` on every call.
    pub fn mih_tables(&self) -> Result<Option<MihTables<'_>>> {
        let Some(i) = self.mih else {
            return Ok(None);
        };
        let first = self.mih_checked.get_or_init(|| {
            if self.c.verify_section(i).is_err() {
                return Err((true, String::new()));
            }
            match self.parse_mih(i, true) {
                Ok(_) => Ok(()),
                Err(FormatError::Corrupt { detail, .. }) => Err((false, detail)),
                Err(_) => Err((false, "the tables cannot be read".into())),
            }
        });
        match first {
            Ok(()) => self.parse_mih(i, false).map(Some),
            Err((true, _)) => Err(FormatError::ChecksumMismatch {
                path: self.path().to_path_buf(),
                section: "mih".into(),
            }),
            Err((false, detail)) => Err(self.c.corrupt("mih", detail)),
        }
    }

    /// The rows' attribute columns (format 1.7, FORMAT.md §3.7), `None` when the segment has
    /// none. The first call checks the section's checksum, decodes it and checks it (lengths,
    /// UTF-8, dictionary codes and tag offsets in range: [`ColumnData::check`](
    /// super::attribute_columns::ColumnData::check)) — on first touch, like a code block — and
    /// remembers the outcome: a damaged section is [`FormatError::ChecksumMismatch`] or
    /// [`FormatError::Corrupt`] naming the file and the section `attributes` on every call.
    pub fn attributes(&self) -> Result<Option<&Attributes>> {
        let Some(i) = self.attributes else {
            return Ok(None);
        };
        let first = self.attributes_read.get_or_init(|| {
            if self.c.verify_section(i).is_err() {
                return Err((true, "attributes".into(), String::new()));
            }
            match attribute_columns::decode(
                self.c.stored(i),
                self.meta.rows,
                self.path(),
                "attributes",
            ) {
                Ok(a) => Ok(a),
                Err(
                    FormatError::Corrupt {
                        section, detail, ..
                    }
                    | FormatError::Truncated {
                        section, detail, ..
                    },
                ) => Err((false, section, detail)),
                Err(e) => Err((false, "attributes".into(), e.to_string())),
            }
        });
        match first {
            Ok(a) => Ok(Some(a)),
            Err((true, _, _)) => Err(FormatError::ChecksumMismatch {
                path: self.path().to_path_buf(),
                section: "attributes".into(),
            }),
            Err((false, section, detail)) => Err(FormatError::Corrupt {
                path: self.path().to_path_buf(),
                section: section.clone(),
                detail: detail.clone(),
            }),
        }
    }

    /// The tag postings and zone maps of the segment's columns ([`AttributeIndex`]), `None`
    /// when the segment stores no columns. Its columns are read (and checked) first. A
    /// segment of format 1.8 stores them (sections `attribute_postings` and
    /// `attribute_zones`, FORMAT.md §3.8): the first call checks those sections' checksums
    /// and structure — on first touch, like a code block — and remembers the outcome, so a
    /// damaged section is [`FormatError::ChecksumMismatch`] or [`FormatError::Corrupt`] naming
    /// the file and the section on every call (never a silent rebuild). A segment without the
    /// sections (format 1.7) builds them from its columns on first use; either way the result
    /// is kept with the open segment.
    pub fn attribute_index(&self) -> Result<Option<&AttributeIndex>> {
        let Some(a) = self.attributes()? else {
            return Ok(None);
        };
        let first = self.attribute_index.get_or_init(|| {
            if self.attribute_postings.is_none() && self.attribute_zones.is_none() {
                return Ok(AttributeIndex::build(a));
            }
            let mut stored = [None, None];
            for (k, (i, name)) in [
                (self.attribute_postings, attribute_index::POSTINGS_SECTION),
                (self.attribute_zones, attribute_index::ZONES_SECTION),
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(i) = i {
                    if self.c.verify_section(i).is_err() {
                        return Err((true, name.to_string(), String::new()));
                    }
                    stored[k] = Some(self.c.stored(i));
                }
            }
            AttributeIndex::decode(stored[0], stored[1], a, self.path()).map_err(|e| {
                let (section, detail) = attribute_index::error_parts(e, "attribute index");
                (false, section, detail)
            })
        });
        match first {
            Ok(ix) => Ok(Some(ix)),
            Err((true, section, _)) => Err(FormatError::ChecksumMismatch {
                path: self.path().to_path_buf(),
                section: section.clone(),
            }),
            Err((false, section, detail)) => Err(FormatError::Corrupt {
                path: self.path().to_path_buf(),
                section: section.clone(),
                detail: detail.clone(),
            }),
        }
    }

    /// Where the segment's attribute index comes from (nothing read): stored sections (format
    /// 1.8) or built in memory on first use; `None` when the segment stores no columns.
    pub fn attribute_index_source(&self) -> Option<IndexSource> {
        self.attributes?;
        Some(
            if self.attribute_postings.is_some() || self.attribute_zones.is_some() {
                IndexSource::Stored
            } else {
                IndexSource::Built
            },
        )
    }

    /// The stored indexes checked against the columns (`codedb verify`, O(rows)): rebuilt from
    /// the decoded columns and compared. A difference is [`FormatError::Corrupt`] naming the
    /// file, the section and the column. Nothing to check without stored indexes.
    pub fn check_attribute_index(&self) -> Result<()> {
        let (Some(a), Some(stored)) = (self.attributes()?, self.attribute_index()?) else {
            return Ok(());
        };
        if stored.source() != IndexSource::Stored {
            return Ok(());
        }
        let rebuilt = AttributeIndex::build(a);
        if let Some((i, section)) = stored.first_difference(&rebuilt) {
            let name = a.schema().columns().get(i).map_or("?", |c| c.0.as_str());
            return Err(self.c.corrupt(
                section,
                &format!("column {name}: the stored index differs from the one its values give"),
            ));
        }
        Ok(())
    }

    /// Whether the segment stores attribute columns (nothing read).
    pub fn has_attributes(&self) -> bool {
        self.attributes.is_some()
    }

    fn parse_mih(&self, i: usize, deep: bool) -> Result<MihTables<'_>> {
        MihTables::parse(
            self.c.stored(i),
            self.meta.code_bytes,
            self.meta.rows,
            deep,
            |d| self.c.corrupt("mih", &d),
        )
    }

    /// The tables hold every row exactly once per table, in the bucket of its own substring
    /// (O(m × rows); `ChecksumPolicy::All` and `codedb verify`). Nothing to check without
    /// tables.
    pub fn check_mih(&self) -> Result<()> {
        match self.mih_tables()? {
            None => Ok(()),
            Some(t) => t.check_against(self.codes(), self.meta.code_bytes as usize, |d| {
                self.c.corrupt("mih", &d)
            }),
        }
    }

    /// The list index: present when the rows are grouped by list id (each list's rows
    /// contiguous, lists in increasing order), which segments written by format 1.1 always are
    /// when their lists column allows it.
    pub fn list_index(&self) -> Option<&[ListEntry]> {
        self.list_index.as_deref()
    }

    /// The stored vectors as a zero-copy view of the mapping, when the column is stored
    /// uncompressed (the engine always writes it so). `None` without vectors or when the
    /// column is zstd-compressed (use [`SegmentReader::vectors`], which decodes it).
    pub fn vector_column(&self) -> Option<VectorSlice<'_>> {
        let (i, (t, _)) = (self.vectors?, self.meta.vectors?);
        if self.c.entries()[i].codec != Codec::None {
            return None;
        }
        let b = self.c.stored(i);
        Some(match t {
            VectorDType::F32 => VectorSlice::F32(bytemuck::try_cast_slice(b).ok()?),
            VectorDType::F16 => VectorSlice::F16(bytemuck::try_cast_slice(b).ok()?),
        })
    }

    /// Whether the stored vectors column is zstd-compressed.
    pub fn vectors_compressed(&self) -> bool {
        self.vectors
            .is_some_and(|i| self.c.entries()[i].codec != Codec::None)
    }

    /// Every id lies in the range the metadata declares (an O(rows) check).
    pub fn check_id_range(&self) -> Result<()> {
        let (lo, hi) = (self.meta.min_id, self.meta.max_id);
        if let Some(pos) = self.ids().iter().position(|&id| id < lo || id > hi) {
            return Err(self.c.corrupt(
                "ids",
                &format!("row {pos} has id {} outside [{lo}, {hi}]", self.ids()[pos]),
            ));
        }
        if self.meta.rows > 0 {
            let min = self.ids().iter().copied().min().unwrap_or(0);
            let max = self.ids().iter().copied().max().unwrap_or(0);
            if min != lo || max != hi {
                return Err(self.c.corrupt(
                    "meta",
                    &format!("id range [{lo}, {hi}] but ids span [{min}, {max}]"),
                ));
            }
        }
        Ok(())
    }

    /// The segment's metadata (FORMAT.md §3.1).
    pub fn meta(&self) -> &SegmentMeta {
        &self.meta
    }
    /// The underlying container.
    pub fn container(&self) -> &Container {
        &self.c
    }
    /// The file the segment was read from.
    pub fn path(&self) -> &Path {
        self.c.path()
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.meta.rows as usize
    }

    fn view<T: bytemuck::Pod>(&self, i: usize) -> &[T] {
        // Sections start at multiples of 64 in a 64-aligned buffer and their lengths were
        // checked against rows x width, so the cast cannot fail; an empty slice is the fallback
        // that keeps this panic-free even if that reasoning were wrong.
        bytemuck::try_cast_slice(self.c.stored(i)).unwrap_or(&[])
    }

    /// Row ids.
    pub fn ids(&self) -> &[u64] {
        self.view(self.ids)
    }
    /// The code column, `code_bytes` per row, row-major: a view of the mapping, or for a
    /// fast-scan segment a copy unpacked on first call and kept (prefer
    /// [`SegmentReader::fastscan_codes`], [`SegmentReader::row_code`] and
    /// [`SegmentReader::codes_into`] there).
    pub fn codes(&self) -> &[u8] {
        match self.fastscan_m {
            None => self.c.stored(self.codes),
            Some(m) => self.unpacked.get_or_init(|| {
                let mut out = Vec::new();
                fsl::unpack_rows_into(self.c.stored(self.codes), m, 0..self.rows(), &mut out);
                out
            }),
        }
    }
    /// The code of row `row` (row-major; see [`SegmentReader::codes`]).
    pub fn code(&self, row: usize) -> Option<&[u8]> {
        let w = self.meta.code_bytes as usize;
        self.codes().get(row * w..(row + 1) * w)
    }
    /// The code of row `row` in row-major form, borrowed from the mapping when the column is
    /// row-major and unpacked from its block when it is in the fast-scan layout.
    pub fn row_code(&self, row: usize) -> Option<Cow<'_, [u8]>> {
        match self.fastscan_m {
            None => {
                let w = self.meta.code_bytes as usize;
                self.c
                    .stored(self.codes)
                    .get(row * w..(row + 1) * w)
                    .map(Cow::Borrowed)
            }
            Some(m) => (row < self.rows()).then(|| {
                let mut out = Vec::new();
                fsl::unpack_row_into(self.c.stored(self.codes), m, row, &mut out);
                Cow::Owned(out)
            }),
        }
    }
    /// Appends the codes of rows `rows` in row-major form to `out` (streaming copies such as
    /// compaction: never the whole column at once). Rows past the end are not appended.
    pub fn codes_into(&self, rows: Range<usize>, out: &mut Vec<u8>) {
        let rows = rows.start.min(self.rows())..rows.end.min(self.rows());
        match self.fastscan_m {
            None => {
                let w = self.meta.code_bytes as usize;
                if let Some(b) = self.c.stored(self.codes).get(rows.start * w..rows.end * w) {
                    out.extend_from_slice(b);
                }
            }
            Some(m) => fsl::unpack_rows_into(self.c.stored(self.codes), m, rows, out),
        }
    }
    /// The code column in the fast-scan layout, viewed in place (64-byte aligned), with its
    /// number of sub-quantisers `M`; `None` when the column is row-major (formats 1.0/1.1, and
    /// kinds other than 4-bit PQ).
    pub fn fastscan_codes(&self) -> Option<(&[u8], usize)> {
        self.fastscan_m.map(|m| (self.c.stored(self.codes), m))
    }
    /// The stored code column as it lies in the file (row-major or fast-scan): what a scan
    /// reads, for bandwidth measurements.
    pub fn stored_codes(&self) -> &[u8] {
        self.c.stored(self.codes)
    }
    /// The must-be-zero nibbles of 4-bit PQ codes are zero (FORMAT.md §3.1, §3.4). Fast-scan
    /// column: the padding rows of the last block always, and with `all_blocks` the padding
    /// sub-quantiser of an odd `M` in every block. Row-major column of an odd `M`: with
    /// `all_blocks`, the unused high nibble of every code. `all_blocks` is O(rows) (checked
    /// with `ChecksumPolicy::All` and by `codedb verify`); other kinds have nothing to check.
    pub fn check_code_padding(&self, all_blocks: bool) -> Result<()> {
        let odd_pq4 = self.meta.code_kind == CodeKind::Pq4 && self.meta.code_bits % 8 == 4;
        if self.fastscan_m.is_none() && odd_pq4 && all_blocks {
            let w = self.meta.code_bytes as usize;
            let col = self.c.stored(self.codes);
            let dirty = |c: &[u8]| c.last().is_some_and(|b| b & 0xf0 != 0);
            if let Some(r) = col.chunks_exact(w).position(dirty) {
                return Err(self.c.corrupt(
                    "codes",
                    &format!("row {r}: the unused high nibble of an odd-M pq4 code is not zero"),
                ));
            }
        }
        let Some(m) = self.fastscan_m else {
            return Ok(());
        };
        let n = self.rows();
        let col = self.c.stored(self.codes);
        let from = if all_blocks {
            0
        } else {
            n.saturating_sub(1) / fsl::BLOCK_ROWS * fsl::block_bytes(m)
        };
        let first_row = from / fsl::block_bytes(m) * fsl::BLOCK_ROWS;
        let tail = col.get(from..).unwrap_or(&[]);
        match fsl::first_nonzero_padding(tail, m, n - first_row.min(n)) {
            None => Ok(()),
            Some((r, j)) => Err(self.c.corrupt(
                "codes_fastscan",
                &format!(
                    "padding nibble of row {} sub-quantiser {j} is not zero ({} rows, M = {m})",
                    first_row + r,
                    n
                ),
            )),
        }
    }

    /// The label column ([`NO_LABEL`](super::append_log::NO_LABEL) for unlabelled rows), if the segment has one.
    pub fn labels(&self) -> Option<&[u32]> {
        self.labels.map(|i| self.view(i))
    }
    /// The list-id column, if the segment has one.
    pub fn lists(&self) -> Option<&[u32]> {
        self.lists.map(|i| self.view(i))
    }

    /// Stored vectors (decompressed if stored with zstd). Non-finite values are an error.
    pub fn vectors(&self) -> Result<Option<VectorsView<'_>>> {
        let (Some(i), Some((t, _))) = (self.vectors, self.meta.vectors) else {
            return Ok(None);
        };
        let bytes = self.c.decoded(i)?;
        let view = match t {
            VectorDType::F32 => VectorsView::F32(cast_cow::<f32>(bytes)),
            VectorDType::F16 => VectorsView::F16(cast_cow::<half::f16>(bytes)),
        };
        let finite = match &view {
            VectorsView::F32(v) => v.iter().all(|x| x.is_finite()),
            VectorsView::F16(v) => v.iter().all(|x| x.is_finite()),
        };
        if !finite {
            return Err(self
                .c
                .corrupt("vectors", "stored vectors contain NaN or Inf"));
        }
        Ok(Some(view))
    }
}

/// The block checks of the row columns `columns` (kind, section if present): from the
/// `block_checksums` section where it covers a column, else one block per column with the
/// section's own CRC. The section itself is small and always checksummed here.
fn column_checks(
    c: &Container,
    columns: [(RowColumn, Option<usize>); 5],
) -> Result<Vec<(RowColumn, usize, ColumnCheck)>> {
    let mut stored = match c.find_one(SEG_BLOCK_CHECKSUMS)? {
        None => Vec::new(),
        Some(i) => {
            if c.version() < (1, 4) {
                return Err(c.corrupt(
                    "block_checksums",
                    &format!(
                        "block checksums in a format {}.{} file (defined by 1.4)",
                        c.version().0,
                        c.version().1
                    ),
                ));
            }
            c.verify_section(i)?;
            block_checksums::decode(c.stored(i), c.path())?
        }
    };
    let mut out = Vec::new();
    for (col, section) in columns {
        let Some(i) = section else { continue };
        let e = c.entries()[i];
        let check = match stored.iter().position(|s| s.kind == e.kind) {
            None => ColumnCheck::whole(e.stored_len, e.crc32),
            Some(k) => {
                let s = stored.swap_remove(k);
                if e.codec != Codec::None || s.len != e.stored_len {
                    return Err(c.corrupt(
                        "block_checksums",
                        &format!(
                            "checksums of {} bytes of {} ({}), the column has {} bytes",
                            s.len,
                            c.label(i),
                            e.codec.name(),
                            e.stored_len
                        ),
                    ));
                }
                ColumnCheck::blocks(s)
            }
        };
        out.push((col, i, check));
    }
    if let Some(s) = stored.first() {
        return Err(c.corrupt(
            "block_checksums",
            &format!(
                "checksums for {}, which is not a row column of this segment (or is listed twice)",
                section_kind::label(FileKind::Segment, s.kind)
            ),
        ));
    }
    Ok(out)
}

/// `M` of a fast-scan code column: only 4-bit PQ of 1 to [`MAX_M`] sub-quantisers, and only in
/// files of format 1.2 or later (the version that defines the section).
fn fastscan_m(c: &Container, meta: &SegmentMeta) -> Result<usize> {
    if c.version() < (1, 2) {
        return Err(c.corrupt(
            "codes_fastscan",
            &format!(
                "a fast-scan code column in a format {}.{} file (defined by 1.2)",
                c.version().0,
                c.version().1
            ),
        ));
    }
    let m = (meta.code_bits / 4) as usize;
    if meta.code_kind != CodeKind::Pq4 || !(1..=MAX_M).contains(&m) {
        return Err(c.corrupt(
            "codes_fastscan",
            &format!(
                "the fast-scan layout holds 4-bit PQ codes of 1 to {MAX_M} sub-quantisers, \
                 the segment has {} codes of {} bits",
                meta.code_kind.name(),
                meta.code_bits
            ),
        ));
    }
    Ok(m)
}

/// Decodes and structurally checks a list index of a segment of `rows` rows: first rows start
/// at 0 and strictly increase below `rows`, list ids strictly increase, reserved bytes are zero.
fn decode_list_index(c: &Container, b: &[u8], rows: u64) -> Result<Vec<ListEntry>> {
    if !b.len().is_multiple_of(LIST_ENTRY_LEN) {
        return Err(c.corrupt(
            "list_index",
            &format!("{} bytes is not a whole number of 16-byte entries", b.len()),
        ));
    }
    let mut out: Vec<ListEntry> = Vec::with_capacity(b.len() / LIST_ENTRY_LEN);
    for (k, e) in b.chunks_exact(LIST_ENTRY_LEN).enumerate() {
        let list = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let mut f = [0u8; 8];
        f.copy_from_slice(&e[8..16]);
        let first_row = u64::from_le_bytes(f);
        if e[4..8] != [0; 4] {
            return Err(c.corrupt("list_index", &format!("entry {k}: reserved bytes set")));
        }
        let ok = match out.last() {
            None => first_row == 0,
            Some(p) => list > p.list && first_row > p.first_row,
        };
        if !ok || first_row >= rows {
            return Err(c.corrupt(
                "list_index",
                &format!("entry {k} (list {list}, first row {first_row}) is out of order"),
            ));
        }
        out.push(ListEntry { list, first_row });
    }
    if rows > 0 && out.is_empty() {
        return Err(c.corrupt("list_index", "no entry for a non-empty segment"));
    }
    Ok(out)
}

fn cast_cow<T: bytemuck::Pod>(b: Cow<'_, [u8]>) -> Cow<'_, [T]> {
    match b {
        Cow::Borrowed(s) => Cow::Borrowed(bytemuck::try_cast_slice(s).unwrap_or(&[])),
        Cow::Owned(v) => Cow::Owned(bytemuck::pod_collect_to_vec(&v)),
    }
}
