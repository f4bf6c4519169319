//! The records of a sharded index. The layout record of a shard (FORMAT.md §8.1):
//! `SHARD.json` in a shard's directory says it is shard `i` of `N` of one sharded index (a
//! layout id) made with one model; the cut record (§8.2): `CUT.json` in shard 0's directory
//! names every shard's version at the last sharded commit, so readers pin whole sharded
//! commits. The sharded layer (`python/codedb/distributed/`) writes them — the layout record
//! before the shard's first manifest — and checks them on every sharded open, since rows route
//! to shards by position; the engine only keeps them (GC removes codedb names only), checks
//! them (`verify`) and shows the layout record (`inspect`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The layout record's file name in a shard directory.
pub const SHARD_LAYOUT_FILE: &str = "SHARD.json";
/// Layout version of [`ShardLayout`] records: 1 (rows partitioned by id) or 2 (by inverted
/// list: `partition` and `list_shards`).
pub const SHARD_LAYOUT_FORMAT: u32 = 2;

/// A shard's place in its sharded index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardLayout {
    /// The record's format (1, or 2 for a sharded index partitioned by list).
    pub format: u32,
    /// The sharded index's identity: 32 lowercase hex digits, the same in every shard.
    pub layout: String,
    /// This shard's position, `0 ≤ shard < shards`.
    pub shard: u64,
    /// How many shards the sharded index has.
    pub shards: u64,
    /// The model's file id (32 hex digits), the same in every shard.
    pub model: String,
    /// Format 2: `"list"` — every inverted list of the model lives whole on one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Format 2: the shard of every inverted list (`list_shards[l]` holds list `l`'s rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_shards: Option<Vec<u64>>,
}

/// Why a layout record does not read.
#[derive(Debug, thiserror::Error)]
pub enum ShardLayoutError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Read(#[from] std::io::Error),
    /// The JSON line is not a record.
    #[error("not a record: {0}")]
    Parse(#[from] serde_json::Error),
    /// The bytes break a rule of FORMAT.md §8.1 (checksum, lines, values).
    #[error("{0}")]
    Invalid(String),
}

/// The JSON line of a record (layout or cut: a JSON line, then `crc32 <8 hex digits>` of its
/// bytes, each line ending in `\n`), once its lines and checksum are checked.
fn checked_body(bytes: &[u8]) -> Result<&str, ShardLayoutError> {
    let invalid = |s: &str| ShardLayoutError::Invalid(s.to_string());
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("not UTF-8"))?;
    let mut lines = text.split('\n');
    let (Some(body), Some(crc), Some(""), None) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return Err(invalid("expected a JSON line and a crc32 line"));
    };
    let want = crc
        .strip_prefix("crc32 ")
        .filter(|h| h.len() == 8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| invalid("the crc32 line is not `crc32` and 8 hex digits"))?;
    if crc32fast::hash(body.as_bytes()) != want {
        return Err(invalid("checksum mismatch: the file is damaged"));
    }
    Ok(body)
}

/// Parses a record: a compact JSON line, then `crc32 <8 hex digits>` of that line's bytes,
/// each line ending in `\n`. The error says what is wrong.
pub fn parse_shard_layout(bytes: &[u8]) -> Result<ShardLayout, ShardLayoutError> {
    let r: ShardLayout = serde_json::from_str(checked_body(bytes)?)?;
    let invalid = |s: String| Err(ShardLayoutError::Invalid(s));
    match (r.format, r.partition.as_deref(), &r.list_shards) {
        (1, None, None) => {}
        (1, _, _) => return invalid("format 1 has no partition or list_shards".into()),
        (2, Some("list"), Some(l)) if !l.is_empty() && l.iter().all(|&s| s < r.shards) => {}
        (2, Some("list"), _) => {
            return invalid(format!(
                "list_shards is not one shard (0 ≤ s < {}) per list",
                r.shards
            ));
        }
        (2, p, _) => return invalid(format!("partition {p:?}, expected \"list\"")),
        (f, _, _) => {
            return invalid(format!(
                "format {f}, this build reads 1 and {SHARD_LAYOUT_FORMAT}"
            ));
        }
    }
    if r.shard >= r.shards {
        return Err(ShardLayoutError::Invalid(format!(
            "shard {} of {}",
            r.shard, r.shards
        )));
    }
    for (name, v) in [("layout", &r.layout), ("model", &r.model)] {
        if v.len() != 32 || !v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(ShardLayoutError::Invalid(format!(
                "{name} {v:?} is not 32 lowercase hex digits"
            )));
        }
    }
    Ok(r)
}

/// The layout record of the directory `dir`: `None` when it has none (not a shard, or a shard
/// made before records), else the record or why it does not read, with its path.
pub fn read_shard_layout(dir: &Path) -> Option<(PathBuf, Result<ShardLayout, ShardLayoutError>)> {
    let path = dir.join(SHARD_LAYOUT_FILE);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some((path, Err(e.into()))),
        Ok(b) => Some((path, parse_shard_layout(&b))),
    }
}

/// The cut record's file name, in shard 0's directory (FORMAT.md §8.2).
pub const SHARD_CUT_FILE: &str = "CUT.json";
/// Layout version of [`ShardCut`] records.
pub const SHARD_CUT_FORMAT: u32 = 1;

/// One version of a whole sharded index: shard `s` at version `versions[s]`, published by the
/// sharded layer after every shard's commit of a sharded commit returned, so that readers
/// pinning it see whole sharded commits only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardCut {
    /// The record's format (1).
    pub format: u32,
    /// The sharded index's identity (its layout records' `layout`).
    pub layout: String,
    /// The cut's number: 1 for the first, one more for each published after it.
    pub cut: u64,
    /// Each shard's version, in shard order.
    pub versions: Vec<u64>,
}

/// Parses a cut record: the same two lines as a layout record (a compact JSON line, then
/// `crc32 <8 hex digits>` of its bytes).
pub fn parse_shard_cut(bytes: &[u8]) -> Result<ShardCut, ShardLayoutError> {
    let invalid = |s: &str| ShardLayoutError::Invalid(s.to_string());
    let r: ShardCut = serde_json::from_str(checked_body(bytes)?)?;
    if r.format != SHARD_CUT_FORMAT {
        return Err(ShardLayoutError::Invalid(format!(
            "format {}, this build reads {SHARD_CUT_FORMAT}",
            r.format
        )));
    }
    if r.cut == 0 || r.versions.is_empty() || r.versions.contains(&0) {
        return Err(invalid(
            "cut and versions must be at least 1, one version per shard",
        ));
    }
    if r.layout.len() != 32
        || !r
            .layout
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(ShardLayoutError::Invalid(format!(
            "layout {:?} is not 32 lowercase hex digits",
            r.layout
        )));
    }
    Ok(r)
}

/// The cut record of the directory `dir` (shard 0 of a sharded index): `None` when it has none.
pub fn read_shard_cut(dir: &Path) -> Option<(PathBuf, Result<ShardCut, ShardLayoutError>)> {
    let path = dir.join(SHARD_CUT_FILE);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some((path, Err(e.into()))),
        Ok(b) => Some((path, parse_shard_cut(&b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"format":1,"layout":"0123456789abcdef0123456789abcdef","shard":2,"shards":4,"model":"00000000000000000000000000000abc"}"#;

    fn record(body: &str) -> Vec<u8> {
        format!("{body}\ncrc32 {:08x}\n", crc32fast::hash(body.as_bytes())).into_bytes()
    }

    #[test]
    fn a_record_reads_and_any_flipped_byte_is_refused() {
        let good = record(BODY);
        let r = parse_shard_layout(&good).unwrap();
        assert_eq!((r.shard, r.shards), (2, 4));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            assert!(parse_shard_layout(&bad).is_err(), "byte {i}");
        }
        let out_of_range = BODY.replace("\"shard\":2", "\"shard\":4");
        assert!(parse_shard_layout(&record(&out_of_range)).is_err());
        let upper = BODY.replace("abcdef0", "ABCDEF0");
        assert!(parse_shard_layout(&record(&upper)).is_err());
    }

    #[test]
    fn a_list_partitioned_record_reads_and_a_bad_placement_is_refused() {
        let body = BODY
            .replace("\"format\":1", "\"format\":2")
            .replace("}", ",\"partition\":\"list\",\"list_shards\":[0,3,1,2,0]}");
        let r = parse_shard_layout(&record(&body)).unwrap();
        assert_eq!(r.list_shards.as_deref(), Some(&[0u64, 3, 1, 2, 0][..]));
        for bad in [
            body.replace("[0,3,1,2,0]", "[0,4]"),
            body.replace("[0,3,1,2,0]", "[]"),
            body.replace("\"list\",", "\"id\","),
            body.replace("\"format\":2", "\"format\":1"),
            body.replace("\"format\":2", "\"format\":3"),
            BODY.replace("\"format\":1", "\"format\":2"),
        ] {
            assert!(parse_shard_layout(&record(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cut_reads_and_any_flipped_byte_is_refused() {
        let body = r#"{"format":1,"layout":"0123456789abcdef0123456789abcdef","cut":3,"versions":[4,2,7]}"#;
        let good = record(body);
        let c = parse_shard_cut(&good).unwrap();
        assert_eq!((c.cut, c.versions.as_slice()), (3, &[4u64, 2, 7][..]));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            assert!(parse_shard_cut(&bad).is_err(), "byte {i}");
        }
        assert!(parse_shard_cut(&record(&body.replace("[4,2,7]", "[4,0,7]"))).is_err());
        assert!(parse_shard_cut(&record(&body.replace("[4,2,7]", "[]"))).is_err());
    }
}
