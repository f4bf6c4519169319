//! The `.npy` header: magic, version, and the Python-literal dictionary that gives the element
//! type (`descr`), the memory order (`fortran_order`) and the `shape`.
//!
//! Layout (numpy `lib/format.py`, NEP 1): `\x93NUMPY`, major and minor version bytes, the header
//! length (u16 little-endian for version 1.0, u32 for 2.0 and 3.0), then the header text
//! (latin-1 for 1.0/2.0, UTF-8 for 3.0) padded with spaces and ended by `\n` so that the data
//! start on a 64-byte boundary. The dictionary is parsed by a small literal parser here rather
//! than trusted: garbage headers must give an error, never a panic or a huge allocation.

use std::io::Read;
use std::path::Path;

use crate::error::{IoError, IoResult as Result};

/// Magic bytes at the start of every `.npy` file.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Headers larger than this are refused (numpy itself refuses more than 10,000 bytes by
/// default); it bounds the allocation a garbage length field can cause.
const MAX_HEADER_LEN: usize = 1 << 20;

/// Nesting limit of the literal parser, so `((((…` cannot overflow the stack.
const MAX_DEPTH: usize = 32;

/// Element types codedb reads from and writes to `.npy` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NpyDtype {
    F32,
    F64,
    U8,
    I32,
    I64,
    U64,
}

impl NpyDtype {
    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            NpyDtype::U8 => 1,
            NpyDtype::F32 | NpyDtype::I32 => 4,
            NpyDtype::F64 | NpyDtype::I64 | NpyDtype::U64 => 8,
        }
    }

    /// The numpy type name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            NpyDtype::F32 => "float32",
            NpyDtype::F64 => "float64",
            NpyDtype::U8 => "uint8",
            NpyDtype::I32 => "int32",
            NpyDtype::I64 => "int64",
            NpyDtype::U64 => "uint64",
        }
    }

    /// The little-endian `descr` string numpy writes for this type.
    pub fn descr(self) -> &'static str {
        match self {
            NpyDtype::F32 => "<f4",
            NpyDtype::F64 => "<f8",
            NpyDtype::U8 => "|u1",
            NpyDtype::I32 => "<i4",
            NpyDtype::I64 => "<i8",
            NpyDtype::U64 => "<u8",
        }
    }
}

/// A parsed and validated `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version (major, minor): (1,0), (2,0) or (3,0).
    pub version: (u8, u8),
    pub dtype: NpyDtype,
    /// True when the file stores multi-byte elements big-endian (`'>'`); readers convert.
    pub big_endian: bool,
    pub shape: Vec<usize>,
    /// Offset of the first data byte from the start of the file.
    pub data_offset: u64,
}

impl NpyHeader {
    /// Number of elements (product of the shape; 1 for a 0-d array), or an error on overflow.
    pub fn element_count(&self, path: &Path) -> Result<usize> {
        self.shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| IoError::WrongShape {
                path: path.to_path_buf(),
                shape: self.shape.clone(),
                detail: "element count overflows".into(),
            })
    }

    /// Number of data bytes the header announces.
    pub fn data_bytes(&self, path: &Path) -> Result<u64> {
        let n = self.element_count(path)?;
        (n as u64)
            .checked_mul(self.dtype.itemsize() as u64)
            .ok_or_else(|| IoError::WrongShape {
                path: path.to_path_buf(),
                shape: self.shape.clone(),
                detail: "byte count overflows".into(),
            })
    }
}

fn bad(path: &Path, detail: impl Into<String>) -> IoError {
    IoError::BadHeader {
        path: path.to_path_buf(),
        format: ".npy",
        detail: detail.into(),
    }
}

/// A header whose element type is left as numpy wrote it (`descr`, e.g. `|b1`, `<U12`), for
/// readers of types [`NpyDtype`] does not cover (the attribute columns' booleans and strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawNpyHeader {
    /// Format version (major, minor): (1,0), (2,0) or (3,0).
    pub version: (u8, u8),
    /// The type string, e.g. `<f4`, `|b1`, `<U12`.
    pub descr: String,
    pub shape: Vec<usize>,
    /// Offset of the first data byte from the start of the file.
    pub data_offset: u64,
}

/// Reads and validates the header except the element type; on success the reader is
/// positioned at the first data byte.
pub fn read_raw_header<R: Read>(r: &mut R, path: &Path) -> Result<RawNpyHeader> {
    let mut start = [0u8; 8];
    read_full(r, &mut start, path, ".npy magic and version")?;
    if &start[..6] != NPY_MAGIC {
        return Err(IoError::BadMagic {
            path: path.to_path_buf(),
            format: ".npy",
            detail: format!("first bytes are {:02x?}, expected \\x93NUMPY", &start[..6]),
        });
    }
    let version = (start[6], start[7]);
    let (len_bytes, utf8) = match version {
        (1, 0) => (2usize, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        (major, minor) => {
            return Err(bad(
                path,
                format!("unsupported version {major}.{minor} (this build reads 1.0, 2.0, 3.0)"),
            ));
        }
    };
    let mut len_buf = [0u8; 4];
    read_full(r, &mut len_buf[..len_bytes], path, ".npy header length")?;
    let header_len = u32::from_le_bytes(len_buf) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(bad(
            path,
            format!("header length {header_len} exceeds the limit of {MAX_HEADER_LEN} bytes"),
        ));
    }
    let mut text = vec![0u8; header_len];
    read_full(r, &mut text, path, ".npy header")?;
    let text: String = if utf8 {
        String::from_utf8(text).map_err(|_| bad(path, "header is not valid UTF-8"))?
    } else {
        // Latin-1: every byte is the code point of the same value.
        text.iter().map(|&b| char::from(b)).collect()
    };
    let (descr, shape) = parse_dict(&text, path)?;
    Ok(RawNpyHeader {
        version,
        descr,
        shape,
        data_offset: (6 + 2 + len_bytes + header_len) as u64,
    })
}

/// Reads and validates the header; on success the reader is positioned at the first data byte.
pub fn read_header<R: Read>(r: &mut R, path: &Path) -> Result<NpyHeader> {
    let raw = read_raw_header(r, path)?;
    let (dtype, big_endian) = parse_descr(&raw.descr, path)?;
    Ok(NpyHeader {
        version: raw.version,
        dtype,
        big_endian,
        shape: raw.shape,
        data_offset: raw.data_offset,
    })
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8], path: &Path, what: &str) -> Result<()> {
    r.read_exact(buf)
        .map_err(|e| IoError::from_io(path, e, what))
}

/// Encodes a version 1.0 header exactly as numpy ≥ 1.23 writes it: keys in sorted order, a
/// trailing `, ` inside the braces, spaces reserved for the first axis to grow to 21 digits,
/// then padding to a 64-byte boundary and `\n`. Falls back to version 2.0 if the text does not
/// fit a u16 length (only possible for absurdly many dimensions).
pub fn encode_header(dtype: NpyDtype, shape: &[usize]) -> Vec<u8> {
    let shape_text = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        dtype.descr(),
        shape_text
    );
    // numpy reserves room for the first axis to grow in place (GROWTH_AXIS_MAX_DIGITS = 21).
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.push_str(&" ".repeat(21usize.saturating_sub(digits)));
    }
    let encode = |len_bytes: usize, major: u8| -> Vec<u8> {
        let hlen = dict.len() + 1;
        let padlen = 64 - ((6 + 2 + len_bytes + hlen) % 64);
        let total_text = hlen + padlen;
        let mut out = Vec::with_capacity(6 + 2 + len_bytes + total_text);
        out.extend_from_slice(NPY_MAGIC);
        out.push(major);
        out.push(0);
        if len_bytes == 2 {
            out.extend_from_slice(&(total_text as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(total_text as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.extend(std::iter::repeat_n(b' ', padlen));
        out.push(b'\n');
        out
    };
    if dict.len() + 1 + 64 <= u16::MAX as usize {
        encode(2, 1)
    } else {
        encode(4, 2)
    }
}

/// A Python literal as it appears in `.npy` headers.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    None,
    Int(i128),
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct LitParser<'a> {
    chars: Vec<char>,
    pos: usize,
    path: &'a Path,
}

impl LitParser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: char) -> Result<()> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{c}'")))
        }
    }

    fn err(&self, what: &str) -> IoError {
        let found = match self.peek() {
            Some(c) => format!("'{}'", c.escape_default()),
            None => "end of header".to_string(),
        };
        bad(
            self.path,
            format!("{what} at character {}, found {found}", self.pos),
        )
    }

    fn value(&mut self, depth: usize) -> Result<Lit> {
        if depth > MAX_DEPTH {
            return Err(self.err("literal nested too deeply"));
        }
        self.skip_ws();
        match self.peek() {
            Some('{') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some('}') {
                        self.pos += 1;
                        return Ok(Lit::Dict(items));
                    }
                    let key = self.value(depth + 1)?;
                    self.expect(':')?;
                    let val = self.value(depth + 1)?;
                    items.push((key, val));
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some('}') => {}
                        _ => return Err(self.err("expected ',' or '}' in dictionary")),
                    }
                }
            }
            Some(open @ ('(' | '[')) => {
                let close = if open == '(' { ')' } else { ']' };
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        return Ok(if open == '(' {
                            Lit::Tuple(items)
                        } else {
                            Lit::List(items)
                        });
                    }
                    items.push(self.value(depth + 1)?);
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(c) if c == close => {}
                        _ => return Err(self.err(&format!("expected ',' or '{close}'"))),
                    }
                }
            }
            Some(q @ ('\'' | '"')) => {
                self.pos += 1;
                let mut s = String::new();
                loop {
                    match self.peek() {
                        None => return Err(self.err("unterminated string")),
                        Some('\\') => {
                            self.pos += 1;
                            match self.peek() {
                                Some(c) => s.push(c),
                                None => return Err(self.err("unterminated string")),
                            }
                            self.pos += 1;
                        }
                        Some(c) if c == q => {
                            self.pos += 1;
                            return Ok(Lit::Str(s));
                        }
                        Some(c) => {
                            s.push(c);
                            self.pos += 1;
                        }
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => {
                let start = self.pos;
                self.pos += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                // Python 2 wrote long integers with an `L` suffix, e.g. `(3L, 4L)`.
                if matches!(self.peek(), Some('L' | 'l')) {
                    self.pos += 1;
                }
                text.parse::<i128>()
                    .map(Lit::Int)
                    .map_err(|_| bad(self.path, format!("bad integer literal '{text}'")))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let word: String = self.chars[start..self.pos].iter().collect();
                match word.as_str() {
                    "True" => Ok(Lit::Bool(true)),
                    "False" => Ok(Lit::Bool(false)),
                    "None" => Ok(Lit::None),
                    _ => Err(bad(self.path, format!("unexpected name '{word}'"))),
                }
            }
            _ => Err(self.err("expected a literal")),
        }
    }
}

/// Parses the header dictionary into (descr, shape).
fn parse_dict(text: &str, path: &Path) -> Result<(String, Vec<usize>)> {
    let mut p = LitParser {
        chars: text.chars().collect(),
        pos: 0,
        path,
    };
    let lit = p.value(0)?;
    p.skip_ws();
    if p.peek().is_some() {
        return Err(p.err("unexpected text after the header dictionary"));
    }
    let Lit::Dict(items) = lit else {
        return Err(bad(path, "header is not a dictionary"));
    };
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (key, val) in items {
        let Lit::Str(key) = key else {
            return Err(bad(path, "header dictionary has a non-string key"));
        };
        let slot = match key.as_str() {
            "descr" => &mut descr,
            "fortran_order" => &mut fortran,
            "shape" => &mut shape,
            other => return Err(bad(path, format!("unexpected header key '{other}'"))),
        };
        if slot.replace(val).is_some() {
            return Err(bad(path, format!("duplicate header key '{key}'")));
        }
    }
    let descr = descr.ok_or_else(|| bad(path, "missing header key 'descr'"))?;
    let fortran = fortran.ok_or_else(|| bad(path, "missing header key 'fortran_order'"))?;
    let shape = shape.ok_or_else(|| bad(path, "missing header key 'shape'"))?;

    let descr = match descr {
        Lit::Str(s) => s,
        Lit::List(_) => {
            return Err(IoError::UnsupportedDtype {
                path: path.to_path_buf(),
                dtype: "structured".into(),
                detail: "structured (record) arrays are not supported; save a plain numeric array"
                    .into(),
            });
        }
        _ => return Err(bad(path, "'descr' is not a string")),
    };
    match fortran {
        Lit::Bool(false) => {}
        Lit::Bool(true) => {
            // A Fortran-ordered array with at most one non-unit axis has the same bytes as C
            // order, but numpy never needs that exception from us: refuse uniformly.
            return Err(IoError::FortranOrder {
                path: path.to_path_buf(),
            });
        }
        _ => return Err(bad(path, "'fortran_order' is not True or False")),
    }
    let Lit::Tuple(dims) = shape else {
        return Err(bad(path, "'shape' is not a tuple"));
    };
    let mut out = Vec::with_capacity(dims.len());
    for d in dims {
        match d {
            Lit::Int(v) if v >= 0 && v <= usize::MAX as i128 => out.push(v as usize),
            Lit::Int(v) => return Err(bad(path, format!("'shape' has invalid dimension {v}"))),
            _ => return Err(bad(path, "'shape' has a non-integer entry")),
        }
    }
    Ok((descr, out))
}

/// Parses a numpy type string such as `<f4`, `|u1`, `>i8`.
fn parse_descr(s: &str, path: &Path) -> Result<(NpyDtype, bool)> {
    let unsupported = |detail: &str| IoError::UnsupportedDtype {
        path: path.to_path_buf(),
        dtype: format!("'{s}'"),
        detail: detail.to_string(),
    };
    let mut chars = s.chars();
    let order = chars.next().ok_or_else(|| bad(path, "'descr' is empty"))?;
    let (order, code) = match order {
        '<' | '>' | '|' | '=' => (order, chars.as_str()),
        _ => ('?', s),
    };
    if code.starts_with('O') {
        return Err(unsupported(
            "object arrays (pickled Python objects) are not supported",
        ));
    }
    let dtype = match code {
        "f4" => NpyDtype::F32,
        "f8" => NpyDtype::F64,
        "u1" => NpyDtype::U8,
        "i4" => NpyDtype::I32,
        "i8" => NpyDtype::I64,
        "u8" => NpyDtype::U64,
        _ => {
            return Err(unsupported(
                "supported types are float32, float64, uint8, int32, int64, uint64",
            ));
        }
    };
    let big_endian = match order {
        '<' => false,
        '>' => true,
        '=' => cfg!(target_endian = "big"),
        '|' if dtype.itemsize() == 1 => false,
        '|' => {
            return Err(unsupported(
                "'|' (not applicable) byte order on a multi-byte type",
            ));
        }
        _ if dtype.itemsize() == 1 => false,
        _ => return Err(unsupported("missing byte order character")),
    };
    Ok((dtype, big_endian))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(NpyDtype, bool, Vec<usize>)> {
        let path = Path::new("t.npy");
        let (descr, shape) = parse_dict(text, path)?;
        let (dtype, big_endian) = parse_descr(&descr, path)?;
        Ok((dtype, big_endian, shape))
    }

    #[test]
    fn parses_typical_headers() {
        assert_eq!(
            parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }   \n").unwrap(),
            (NpyDtype::F32, false, vec![3, 4])
        );
        assert_eq!(
            parse("{\"shape\": (5,), \"fortran_order\": False, \"descr\": \">i8\"}").unwrap(),
            (NpyDtype::I64, true, vec![5])
        );
        assert_eq!(
            parse("{'descr': '|u1', 'fortran_order': False, 'shape': (2L, 3L)}").unwrap(),
            (NpyDtype::U8, false, vec![2, 3])
        );
        assert_eq!(
            parse("{'descr': '<u8', 'fortran_order': False, 'shape': ()}").unwrap(),
            (NpyDtype::U64, false, vec![])
        );
    }

    #[test]
    fn refuses_bad_headers() {
        let cases = [
            (
                "{'descr': '|O', 'fortran_order': False, 'shape': (3,)}",
                "object",
            ),
            (
                "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2)}",
                "Fortran",
            ),
            (
                "{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}",
                "supported types",
            ),
            (
                "{'descr': '|f4', 'fortran_order': False, 'shape': (3,)}",
                "byte order",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}",
                "structured",
            ),
            ("{'descr': '<f4', 'shape': (3,)}", "fortran_order"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
                "dimension -3",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
                "'x'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk",
                "after",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': [3]}",
                "tuple",
            ),
            ("{'descr': '<f4' 'fortran_order': False}", "expected ','"),
            ("{'descr': '<f4", "unterminated"),
        ];
        for (text, needle) in cases {
            let msg = parse(text).unwrap_err().to_string();
            assert!(msg.contains(needle), "{text:?} gave {msg:?}");
            assert!(msg.contains("t.npy"), "{msg:?} does not name the file");
        }
        let deep = format!("{}{}", "(".repeat(100), ")".repeat(100));
        assert!(parse(&deep).unwrap_err().to_string().contains("deeply"));
    }

    #[test]
    fn encoded_header_is_aligned_and_parses_back() {
        for shape in [
            vec![],
            vec![7],
            vec![3, 4],
            vec![123456789, 1024],
            vec![1; 40],
        ] {
            let bytes = encode_header(NpyDtype::F32, &shape);
            assert_eq!(bytes.len() % 64, 0, "{shape:?}");
            assert_eq!(*bytes.last().unwrap(), b'\n');
            let h = read_header(&mut bytes.as_slice(), Path::new("x.npy")).unwrap();
            assert_eq!(h.shape, shape);
            assert_eq!(h.data_offset as usize, bytes.len());
            assert_eq!(h.version, (1, 0));
        }
    }

    #[test]
    fn header_matches_numpy_byte_for_byte() {
        // Header of np.save(f, np.zeros((3, 4), np.float32)) with numpy 2.4.6: 118 bytes of
        // text (20 spaces reserved for the first axis, then padding) after the 10-byte prefix.
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
        let mut expected = b"\x93NUMPY\x01\x00v\x00".to_vec();
        expected.extend_from_slice(dict.as_bytes());
        expected.resize(127, b' ');
        expected.push(b'\n');
        assert_eq!(encode_header(NpyDtype::F32, &[3, 4]), expected);
    }
}
