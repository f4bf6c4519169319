//! Attribute columns from a directory of `.npy` files, one per column, the file's stem naming
//! the column (`year.npy` → `year`); other files in the directory are not read. Each array is
//! one-dimensional with one value per row:
//!
//! | `.npy` type | attribute type |
//! |---|---|
//! | int32, int64, uint8, uint64 (up to 2⁶³ − 1) | int |
//! | float32, float64 | float |
//! | bool (`|b1`) | bool |
//! | unicode (`<U…`, numpy's fixed-width strings; trailing NULs dropped, as numpy does) | string |
//!
//! `.npy` has no nulls and no lists: tag sets and absent values come from another format. The
//! columns come in the order of their names (a schema inferred from the directory lists them
//! so).

use std::fs::File;
use std::io::{BufReader, Read};

use super::attributes_raw::{AttributesInputError, RawColumn, Source};
use super::npy_header::read_raw_header;
use super::npy_read::{NpyData, read_npy};

type Result<T> = std::result::Result<T, AttributesInputError>;

/// The columns of the directory `src.path`, `rows` rows each.
pub fn read_npy_dir(src: Source<'_>, rows: usize) -> Result<Vec<(String, RawColumn)>> {
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(src.path).map_err(|e| src.io(e))? {
        let path = entry.map_err(|e| src.io(e))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("npy") || path.is_dir() {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            return Err(src.malformed(
                ".npy directory",
                format!("{}: the file name is not UTF-8", path.display()),
            ));
        };
        files.push((name.to_owned(), path));
    }
    if files.is_empty() {
        return Err(src.malformed(
            ".npy directory",
            "no .npy file (one file per column, named after it: year.npy)",
        ));
    }
    files.sort();
    files
        .into_iter()
        .map(|(name, path)| {
            let col = read_column(Source { path: &path, ..src }, &name, rows)?;
            Ok((name, col))
        })
        .collect()
}

/// One `.npy` file as a column of `rows` rows.
fn read_column(src: Source<'_>, name: &str, rows: usize) -> Result<RawColumn> {
    let file = File::open(src.path).map_err(|e| src.io(e))?;
    let len = file.metadata().map_err(|e| src.io(e))?.len();
    let mut reader = BufReader::new(file);
    let header = read_raw_header(&mut reader, src.path).map_err(|e| src.malformed(".npy", e))?;
    let n = match header.shape[..] {
        [n] => n,
        _ => {
            return Err(src.column(
                name,
                format!(
                    "shape {:?}: a column is a one-dimensional array, one value per row",
                    header.shape
                ),
            ));
        }
    };
    if n != rows {
        return Err(src.row_count(n, rows));
    }
    let descr = header.descr.as_str();
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('?', descr),
    };
    let big_endian = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    // Booleans and fixed-width unicode: read here; numbers through the numeric reader.
    let itemsize = match code {
        "b1" => Some(1usize),
        c if c.starts_with('U') => match c[1..].parse::<usize>() {
            Ok(chars) if chars > 0 => Some(chars * 4),
            _ => return Err(src.unsupported(name, format!(".npy type '{descr}'"))),
        },
        _ => None,
    };
    let Some(itemsize) = itemsize else {
        let array = read_npy(src.path).map_err(|e| src.malformed(".npy", e))?;
        return Ok(match array.data {
            NpyData::I32(v) => RawColumn::Int(v.into_iter().map(|x| Some(x.into())).collect()),
            NpyData::I64(v) => RawColumn::Int(v.into_iter().map(Some).collect()),
            NpyData::U8(v) => RawColumn::Int(v.into_iter().map(|x| Some(x.into())).collect()),
            NpyData::U64(v) => RawColumn::Int(
                v.into_iter()
                    .enumerate()
                    .map(|(i, x)| {
                        i64::try_from(x).map(Some).map_err(|_| {
                            src.value(
                                name,
                                i,
                                format!("{x} is beyond an int column's range (-2^63..2^63)"),
                            )
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            NpyData::F32(v) => RawColumn::Float(v.into_iter().map(|x| Some(x.into())).collect()),
            NpyData::F64(v) => RawColumn::Float(v.into_iter().map(Some).collect()),
        });
    };
    let bytes = n
        .checked_mul(itemsize)
        .ok_or_else(|| src.column(name, "the array's byte count overflows"))?;
    let available = len.saturating_sub(header.data_offset);
    if available != bytes as u64 {
        return Err(src.malformed(
            ".npy",
            format!("shape ({n},) of '{descr}' needs {bytes} data bytes, the file has {available}"),
        ));
    }
    let mut data = vec![0u8; bytes];
    reader.read_exact(&mut data).map_err(|e| src.io(e))?;
    if code == "b1" {
        return data
            .iter()
            .enumerate()
            .map(|(i, &b)| match b {
                0 | 1 => Ok(Some(b == 1)),
                _ => Err(src.value(name, i, format!("byte {b} is not a boolean (0 or 1)"))),
            })
            .collect::<Result<_>>()
            .map(RawColumn::Bool);
    }
    // UTF-32 code units, `itemsize / 4` per value, padded with NULs.
    let mut out = Vec::with_capacity(n);
    for (i, value) in data.chunks_exact(itemsize).enumerate() {
        let mut s = String::new();
        for unit in value.chunks_exact(4) {
            let arr = [unit[0], unit[1], unit[2], unit[3]];
            let u = if big_endian {
                u32::from_be_bytes(arr)
            } else {
                u32::from_le_bytes(arr)
            };
            match char::from_u32(u) {
                Some(c) => s.push(c),
                None => {
                    return Err(src.value(name, i, format!("{u:#x} is not a Unicode code point")));
                }
            }
        }
        s.truncate(s.trim_end_matches('\0').len());
        out.push(Some(s));
    }
    Ok(RawColumn::Str(out))
}
