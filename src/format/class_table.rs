//! Class tables and their deltas (FORMAT.md §5).
//!
//! Per class: id, name, parent (hierarchy), image count, the *sum* of its descriptors in f64
//! (means stay exact under millions of incremental updates: mean = sum / count) and optional
//! centroids with weights. A delta file has the same layout with the `DELTA` flag and the id of
//! the table it applies to; folding a delta adds counts and sums per class id, subtracts the
//! images it removes (format 1.3: deletes of labelled rows) and creates the classes that are new.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use super::container::{FileId, FileKind};
use super::container_reader::Container;
use super::container_writer::ContainerWriter;
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, checked_mul, to_usize};
use super::section_kind::{
    CLS_CENTROID_WEIGHTS, CLS_CENTROIDS, CLS_NAMES, CLS_RECORDS, CLS_REMOVED, CLS_SUMS, META,
};

/// Parent id meaning "no parent".
pub const NO_PARENT: u32 = u32::MAX;
/// Longest class name in bytes.
pub const MAX_CLASS_NAME: usize = 255;
const RECORD_LEN: usize = 40;

/// Why `name` cannot be the name of a new class, or `None` when it can: 1..=255 bytes and no
/// control character (Unicode category Cc: C0, DEL, C1). Names are printed in TSV columns and
/// on terminals, where a tab, a newline or an ESC would break the columns or drive the
/// terminal. Files are not refused for them (older writers allowed them); writers refuse them
/// for every class they create.
pub fn class_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_CLASS_NAME {
        return Some(format!(
            "{name:?}: a class name is 1..={MAX_CLASS_NAME} bytes"
        ));
    }
    let (at, c) = name.char_indices().find(|(_, c)| c.is_control())?;
    Some(format!(
        "{name:?}: control character U+{:04X} at byte {at} (class names are printed in TSV \
         and on terminals, so tabs, newlines, ESC and other control characters are refused)",
        c as u32
    ))
}

const FLAG_DELTA: u32 = 1;

/// One centroid of a class (NCMC, Mensink et al. eq. 16).
#[derive(Debug, Clone, PartialEq)]
pub struct Centroid {
    /// Weight of the centroid in its class's mixture (eq. 16).
    pub weight: f32,
    /// The centroid, of the table's dimension.
    pub vector: Vec<f32>,
}

/// One class of a class table (FORMAT.md §5.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRecord {
    /// Class id, unique in the table (never [`NO_LABEL`](super::append_log::NO_LABEL)).
    pub id: u32,
    /// Class name, UTF-8 without control characters.
    pub name: String,
    /// Parent class id in the class hierarchy, if any.
    pub parent: Option<u32>,
    /// Images in the class (in a delta: images added).
    pub count: u64,
    /// Sum of the class's descriptors (length = table dimension). In a delta: the net change,
    /// descriptors added minus descriptors removed.
    pub sum: Vec<f64>,
    /// NCMC centroids of the class (empty for a plain class mean).
    pub centroids: Vec<Centroid>,
    /// Images this record removes from the class (a delta only, format 1.3; always 0 in a base
    /// table): folding adds `count`, then subtracts `removed`.
    pub removed: u64,
}

/// Class means and counts of an index, whole (a base table) or as a delta on one (FORMAT.md §5).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassTable {
    /// The table's own file id (a delta names its base by it).
    pub file_id: FileId,
    /// Descriptor dimension of every sum and centroid.
    pub dim: u32,
    /// For a delta: the table it applies to.
    pub delta_of: Option<FileId>,
    /// The classes, in record order.
    pub classes: Vec<ClassRecord>,
}

impl ClassTable {
    fn validate(&self, path: &Path, section: &str) -> Result<()> {
        let bad = |detail: String| FormatError::Corrupt {
            path: path.to_path_buf(),
            section: section.to_string(),
            detail,
        };
        if self.dim == 0 {
            return Err(bad("dimension is 0".into()));
        }
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        for c in &self.classes {
            let at = format!("class {} ({:?})", c.id, c.name);
            if c.id == NO_PARENT {
                return Err(bad(format!("{at}: id {NO_PARENT} is reserved")));
            }
            if !ids.insert(c.id) {
                return Err(bad(format!("{at}: duplicate class id")));
            }
            if c.name.is_empty() || c.name.len() > MAX_CLASS_NAME {
                return Err(bad(format!(
                    "{at}: name must be 1..={MAX_CLASS_NAME} bytes"
                )));
            }
            if !names.insert(c.name.as_str()) {
                return Err(bad(format!("{at}: duplicate class name")));
            }
            if c.parent == Some(c.id) || c.parent == Some(NO_PARENT) {
                return Err(bad(format!("{at}: invalid parent")));
            }
            if c.removed > 0 && self.delta_of.is_none() {
                return Err(bad(format!(
                    "{at}: a base table holds counts, it removes no images"
                )));
            }
            if c.sum.len() != self.dim as usize || c.sum.iter().any(|v| !v.is_finite()) {
                return Err(bad(format!("{at}: sum must be {} finite values", self.dim)));
            }
            for (k, ct) in c.centroids.iter().enumerate() {
                if ct.vector.len() != self.dim as usize
                    || !ct.weight.is_finite()
                    || ct.vector.iter().any(|v| !v.is_finite())
                {
                    return Err(bad(format!(
                        "{at}: centroid {k} must be {} finite values with a finite weight",
                        self.dim
                    )));
                }
            }
        }
        if self.delta_of.is_none() {
            // A base table is closed: parents exist and the hierarchy has no cycle. Each chain
            // is walked until it reaches a class already known to end at a root, so the check
            // is linear in the number of classes.
            let parent: HashMap<u32, Option<u32>> =
                self.classes.iter().map(|c| (c.id, c.parent)).collect();
            let mut rooted: HashSet<u32> = HashSet::with_capacity(self.classes.len());
            for c in &self.classes {
                let mut path = Vec::new();
                let mut on_path = HashSet::new();
                let mut cur = Some(c.id);
                while let Some(id) = cur {
                    if rooted.contains(&id) {
                        break;
                    }
                    if !on_path.insert(id) {
                        return Err(bad(format!("class {}: parent chain has a cycle", c.id)));
                    }
                    path.push(id);
                    let Some(&next) = parent.get(&id) else {
                        return Err(bad(format!(
                            "class {}: parent {id} does not exist",
                            path.get(path.len().wrapping_sub(2))
                                .copied()
                                .unwrap_or(c.id)
                        )));
                    };
                    cur = next;
                }
                rooted.extend(path);
            }
        }
        Ok(())
    }

    /// Serialises the table after checking it.
    pub fn write_to<W: Write>(&self, out: W, path: &Path) -> Result<W> {
        self.validate(path, "classes")?;
        let mut w = ContainerWriter::new(out, FileKind::ClassTable, self.file_id, path)?;
        let total_centroids: u64 = self.classes.iter().map(|c| c.centroids.len() as u64).sum();
        let mut m = LeWriter::new();
        m.u64(self.classes.len() as u64)
            .u32(self.dim)
            .u32(if self.delta_of.is_some() {
                FLAG_DELTA
            } else {
                0
            })
            .bytes(&self.delta_of.unwrap_or(FileId::ZERO).0)
            .u64(total_centroids)
            .zeros(8);
        w.section(META, true, &m.buf)?;
        let mut recs = LeWriter::new();
        let mut names = Vec::new();
        let mut start = 0u64;
        for c in &self.classes {
            recs.u32(c.id)
                .u32(c.parent.unwrap_or(NO_PARENT))
                .u64(c.count)
                .u32(names.len() as u32)
                .u32(c.name.len() as u32)
                .u64(start)
                .u32(c.centroids.len() as u32)
                .u32(0);
            names.extend_from_slice(c.name.as_bytes());
            start += c.centroids.len() as u64;
        }
        w.section(CLS_RECORDS, true, &recs.buf)?;
        w.section(CLS_NAMES, true, &names)?;
        w.begin_section(CLS_SUMS, true)?;
        for c in &self.classes {
            let b: Vec<u8> = c.sum.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write(&b)?;
        }
        w.end_section()?;
        if total_centroids > 0 {
            w.begin_section(CLS_CENTROIDS, true)?;
            for ct in self.classes.iter().flat_map(|c| &c.centroids) {
                let b: Vec<u8> = ct.vector.iter().flat_map(|v| v.to_le_bytes()).collect();
                w.write(&b)?;
            }
            w.end_section()?;
            let wts: Vec<u8> = (self.classes.iter().flat_map(|c| &c.centroids))
                .flat_map(|ct| ct.weight.to_le_bytes())
                .collect();
            w.section(CLS_CENTROID_WEIGHTS, true, &wts)?;
        }
        if self.classes.iter().any(|c| c.removed > 0) {
            let mut removed = LeWriter::new();
            for c in &self.classes {
                removed.u64(c.removed);
            }
            w.section(CLS_REMOVED, true, &removed.buf)?;
        }
        w.finish()
    }

    /// Serialises the table into a byte vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.write_to(Vec::new(), Path::new("<memory>"))
    }

    /// Reads and validates the class table at `path`.
    pub fn open(path: &Path) -> Result<ClassTable> {
        let c = Container::open(
            path,
            super::file_bytes::LoadMode::Read,
            Some(FileKind::ClassTable),
        )?;
        ClassTable::from_container(&c)
    }

    /// Parses a class table from bytes in memory.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<ClassTable> {
        let c = Container::from_slice(bytes, path, Some(FileKind::ClassTable))?;
        ClassTable::from_container(&c)
    }

    /// Reads a class table from an opened container, checking every section.
    pub fn from_container(c: &Container) -> Result<ClassTable> {
        c.verify_all(|_| {})?;
        let path = c.path();
        let mut r = LeReader::new(c.stored(c.require(META)?), path, "meta");
        let count = r.u64()?;
        let dim = r.u32()?;
        let flags = r.u32()?;
        let base = FileId(r.array()?);
        let total_centroids = r.u64()?;
        r.zeros(8, "reserved")?;
        if !c.is_newer_minor() {
            r.finish()?;
        }
        if flags & !FLAG_DELTA != 0 {
            return Err(r.corrupt(format!("unknown flags {flags:#x}")));
        }
        let delta_of = if flags & FLAG_DELTA != 0 {
            Some(base)
        } else if base.is_zero() {
            None
        } else {
            return Err(r.corrupt("base table id set on a non-delta table"));
        };
        let size = |n: u64, w: u64, s: &str| section_size(path, n, w, s);
        let recs = c.stored(c.require(CLS_RECORDS)?);
        if recs.len() != size(count, RECORD_LEN as u64, "classes")? {
            return Err(c.corrupt("classes", &format!("length does not match {count} classes")));
        }
        let names = c.stored(c.require(CLS_NAMES)?);
        let sums = c.stored(c.require(CLS_SUMS)?);
        if sums.len() != size(count, dim as u64 * 8, "sums")? {
            return Err(c.corrupt(
                "sums",
                &format!("length does not match {count} x {dim} f64"),
            ));
        }
        let (cents, wts) = centroid_sections(c, total_centroids, dim)?;
        let removed = removed_section(c, count, delta_of.is_some())?;
        let classes = read_records(
            c,
            &Sections {
                recs,
                names,
                sums,
                cents,
                wts,
                removed,
            },
            count,
            dim,
            total_centroids,
        )?;
        let t = ClassTable {
            file_id: c.header().file_id,
            dim,
            delta_of,
            classes,
        };
        t.validate(path, "classes")?;
        Ok(t)
    }

    /// Folds `delta` into this table: per class id, the delta's count adds and its `removed`
    /// images are subtracted (refused if the class has fewer), sums add (a delta's sum is the
    /// net change), new classes are appended, centroids of a class present in the delta replace
    /// the old ones. A class left with no images gets an exact zero sum (what remains of its
    /// sum is rounding). Folding a delta into a delta (a writer merging staged changes) adds
    /// counts, removals and sums.
    pub fn fold(&mut self, delta: &ClassTable, path: &Path) -> Result<()> {
        let bad = |detail: String| FormatError::Corrupt {
            path: path.to_path_buf(),
            section: "classes".into(),
            detail,
        };
        if delta.delta_of != Some(self.file_id) {
            // Deltas name the table they were written against; applying one to another table
            // would silently mix class ids.
            return Err(bad(format!(
                "file {} is not a delta of table {}",
                delta.file_id, self.file_id
            )));
        }
        if delta.dim != self.dim {
            return Err(bad(format!(
                "delta dimension {} != {}",
                delta.dim, self.dim
            )));
        }
        let into_delta = self.delta_of.is_some();
        let apply = |c: &mut ClassRecord, dc: &ClassRecord| -> Result<()> {
            let overflow = || bad(format!("class {}: image count overflows", dc.id));
            let added = c.count.checked_add(dc.count).ok_or_else(overflow)?;
            for (s, v) in c.sum.iter_mut().zip(&dc.sum) {
                *s += v;
            }
            if into_delta {
                c.count = added;
                c.removed = c.removed.checked_add(dc.removed).ok_or_else(overflow)?;
                return Ok(());
            }
            c.count = added.checked_sub(dc.removed).ok_or_else(|| {
                bad(format!(
                    "class {} ({:?}): {} image(s) removed, it has {added}",
                    dc.id, dc.name, dc.removed
                ))
            })?;
            if c.count == 0 {
                c.sum.iter_mut().for_each(|s| *s = 0.0);
            }
            Ok(())
        };
        let mut out = self.clone();
        for dc in &delta.classes {
            match out.classes.iter_mut().find(|c| c.id == dc.id) {
                Some(c) => {
                    if c.name != dc.name || c.parent != dc.parent {
                        return Err(bad(format!(
                            "class {}: delta changes its name or parent",
                            dc.id
                        )));
                    }
                    apply(c, dc)?;
                    if !dc.centroids.is_empty() {
                        c.centroids = dc.centroids.clone();
                    }
                }
                None => {
                    let mut c = ClassRecord {
                        count: 0,
                        sum: vec![0f64; dc.sum.len()],
                        removed: 0,
                        ..dc.clone()
                    };
                    apply(&mut c, dc)?;
                    out.classes.push(c);
                }
            }
        }
        out.validate(path, "classes")?;
        *self = out;
        Ok(())
    }
}

/// `n` × `w` bytes, the length section `s` must have (an overflow is a corrupt size).
fn section_size(path: &Path, n: u64, w: u64, s: &str) -> Result<usize> {
    to_usize(checked_mul(n, w, path, s, "size")?, path, s, "size")
}

/// The centroid sections (FORMAT.md §5.2): `total_centroids` vectors of `dim` f32 and their
/// weights, both required when the meta declares centroids and refused when it declares none.
fn centroid_sections(c: &Container, total_centroids: u64, dim: u32) -> Result<(&[u8], &[u8])> {
    let size = |n: u64, w: u64, s: &str| section_size(c.path(), n, w, s);
    Ok(if total_centroids > 0 {
        let a = c.stored(c.require(CLS_CENTROIDS)?);
        let b = c.stored(c.require(CLS_CENTROID_WEIGHTS)?);
        if a.len() != size(total_centroids, dim as u64 * 4, "centroids")?
            || b.len() != size(total_centroids, 4, "centroid_weights")?
        {
            return Err(c.corrupt(
                "centroids",
                &format!("length does not match {total_centroids} centroids"),
            ));
        }
        (a, b)
    } else {
        if c.find_one(CLS_CENTROIDS)?.is_some() || c.find_one(CLS_CENTROID_WEIGHTS)?.is_some() {
            return Err(c.corrupt("centroids", "present but meta declares none"));
        }
        (&[], &[])
    })
}

/// Format 1.3's `removed` section (FORMAT.md §5.2): what each record of a delta removes, one
/// u64 per class; refused in an older file and in a base table (`delta` false).
fn removed_section(c: &Container, count: u64, delta: bool) -> Result<Option<&[u8]>> {
    let size = |n: u64, w: u64, s: &str| section_size(c.path(), n, w, s);
    Ok(match c.find_one(CLS_REMOVED)? {
        None => None,
        Some(i) => {
            if c.version() < (1, 3) {
                return Err(c.corrupt(
                    "removed",
                    &format!(
                        "a removed section in a format {}.{} file (defined by 1.3)",
                        c.version().0,
                        c.version().1
                    ),
                ));
            }
            if !delta {
                return Err(c.corrupt("removed", "a base table removes no images"));
            }
            let b = c.stored(i);
            if b.len() != size(count, 8, "removed")? {
                return Err(c.corrupt("removed", &format!("length does not match {count} classes")));
            }
            Some(b)
        }
    })
}

/// A class table's sections, their lengths checked against the meta.
struct Sections<'a> {
    recs: &'a [u8],
    names: &'a [u8],
    sums: &'a [u8],
    cents: &'a [u8],
    wts: &'a [u8],
    removed: Option<&'a [u8]>,
}

/// The class records (FORMAT.md §5.2), each with its name, sum, centroids and removed count.
/// Names and centroid ranges must tile their sections in record order, as the writer lays
/// them out, so a file cannot carry bytes its writer never wrote.
fn read_records(
    c: &Container,
    secs: &Sections<'_>,
    count: u64,
    dim: u32,
    total_centroids: u64,
) -> Result<Vec<ClassRecord>> {
    let f64s = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(8)
            .map(|x| f64::from_le_bytes(x.try_into().unwrap_or([0; 8])))
            .collect()
    };
    let f32s = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|x| f32::from_le_bytes(x.try_into().unwrap_or([0; 4])))
            .collect()
    };
    let d = dim as usize;
    let mut rr = LeReader::new(secs.recs, c.path(), "classes");
    let mut classes = Vec::with_capacity(count as usize);
    let mut next_centroid = 0u64;
    let mut next_name = 0usize;
    for i in 0..count as usize {
        let id = rr.u32()?;
        let parent = rr.u32()?;
        let n = rr.u64()?;
        let name_off = rr.u32()? as usize;
        let name_len = rr.u32()? as usize;
        let cstart = rr.u64()?;
        let ccount = rr.u32()? as u64;
        rr.zeros(4, "reserved")?;
        // Names lie back to back in record order, as the writer lays them out: no overlap,
        // no unowned bytes, so a file cannot carry names its writer never wrote.
        if name_off != next_name {
            return Err(c.corrupt(
                "names",
                &format!("class {id}: name at {name_off}, expected {next_name}"),
            ));
        }
        next_name = name_off.saturating_add(name_len);
        let name = secs
            .names
            .get(name_off..name_off.saturating_add(name_len))
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| {
                c.corrupt(
                    "names",
                    &format!("class {id}: name is out of range or not UTF-8"),
                )
            })?;
        if cstart != next_centroid || cstart.saturating_add(ccount) > total_centroids {
            return Err(c.corrupt(
                "classes",
                &format!("class {id}: centroid range {cstart}+{ccount} is not contiguous"),
            ));
        }
        next_centroid += ccount;
        let centroids = (cstart..cstart + ccount)
            .map(|k| {
                let k = k as usize;
                Centroid {
                    weight: f32s(&secs.wts[k * 4..k * 4 + 4])[0],
                    vector: f32s(&secs.cents[k * d * 4..(k + 1) * d * 4]),
                }
            })
            .collect();
        classes.push(ClassRecord {
            id,
            name: name.to_string(),
            parent: (parent != NO_PARENT).then_some(parent),
            count: n,
            sum: f64s(&secs.sums[i * d * 8..(i + 1) * d * 8]),
            centroids,
            removed: secs.removed.map_or(0, |b| {
                u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]))
            }),
        });
    }
    if next_centroid != total_centroids {
        return Err(c.corrupt("classes", "centroids not all owned by a class"));
    }
    if next_name != secs.names.len() {
        return Err(c.corrupt("names", "name bytes not all owned by a class"));
    }
    Ok(classes)
}
