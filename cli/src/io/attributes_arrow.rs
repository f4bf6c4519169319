//! Attribute columns from Apache Parquet and Arrow IPC files (`--attributes F.parquet`,
//! `F.arrow` / `F.feather` / `F.ipc`), read through the arrow-rs crates (`parquet`,
//! `arrow-ipc`) into [`RawColumn`]s, nulls kept (they take the column's default).
//!
//! | Arrow type | attribute type |
//! |---|---|
//! | Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64 (up to 2⁶³ − 1) | int |
//! | Float32, Float64 | float |
//! | Boolean | bool |
//! | Utf8, LargeUtf8, Utf8View, Dictionary(any integer, Utf8 / LargeUtf8) | string |
//! | List / LargeList of Utf8, LargeUtf8 or Utf8View | tags (a null list: the default, no tags; a null element: refused) |
//! | Timestamp (s, ms, µs, ns; any time zone: the stored instants are UTC) | timestamp, in µs (ns floored to the µs below, s and ms multiplied) |
//! | Date32, Date64 | timestamp, midnight UTC of the date, in µs |
//!
//! Anything else (binary, decimal, structs, maps, lists of non-strings, intervals, durations)
//! is refused naming the column and its type. The row count is checked against the data
//! before the columns are decoded (Parquet: from the footer).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use super::attributes_raw::{AttributesInputError, RawColumn, Source};

type Result<T> = std::result::Result<T, AttributesInputError>;

/// Microseconds per day (Date32 counts days).
const DAY_US: i64 = 86_400_000_000;

/// The columns of a Parquet file of `rows` rows.
pub fn read_parquet(src: Source<'_>, rows: usize) -> Result<Vec<(String, RawColumn)>> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = File::open(src.path).map_err(|e| src.io(e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| src.malformed("Parquet", e))?;
    let found = builder.metadata().file_metadata().num_rows();
    if usize::try_from(found).ok() != Some(rows) {
        return Err(src.row_count(found, rows));
    }
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(|e| src.malformed("Parquet", e))?;
    collect(
        src,
        "Parquet",
        schema,
        reader.map(|b| b.map_err(|e| e.to_string())),
        rows,
    )
}

/// The columns of an Arrow IPC file (the random-access format, `ARROW1` magic) or stream of
/// `rows` rows.
pub fn read_ipc(src: Source<'_>, rows: usize) -> Result<Vec<(String, RawColumn)>> {
    use arrow_ipc::reader::{FileReader, StreamReader};
    let mut file = File::open(src.path).map_err(|e| src.io(e))?;
    let mut magic = [0u8; 6];
    let is_file = match file.read_exact(&mut magic) {
        Ok(()) => &magic == b"ARROW1",
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
        Err(e) => return Err(src.io(e)),
    };
    file.seek(SeekFrom::Start(0)).map_err(|e| src.io(e))?;
    if is_file {
        let reader = FileReader::try_new(file, None).map_err(|e| src.malformed("Arrow IPC", e))?;
        let schema = reader.schema();
        collect(
            src,
            "Arrow IPC",
            schema,
            reader.map(|b| b.map_err(|e| e.to_string())),
            rows,
        )
    } else {
        let reader = StreamReader::try_new(BufReader::new(file), None)
            .map_err(|e| src.malformed("Arrow IPC", e))?;
        let schema = reader.schema();
        collect(
            src,
            "Arrow IPC",
            schema,
            reader.map(|b| b.map_err(|e| e.to_string())),
            rows,
        )
    }
}

/// Every column of the batches, checked to be `rows` rows in all (counted as the batches
/// come, so a file longer than the data is refused before its end is decoded).
fn collect(
    src: Source<'_>,
    format: &'static str,
    schema: SchemaRef,
    batches: impl Iterator<Item = std::result::Result<RecordBatch, String>>,
    rows: usize,
) -> Result<Vec<(String, RawColumn)>> {
    // Types first: an unsupported column is refused before any data is decoded.
    for f in schema.fields() {
        check_type(src, f.name(), f.data_type())?;
    }
    let mut columns: Vec<(String, Option<RawColumn>)> = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), None))
        .collect();
    let mut seen = 0usize;
    for batch in batches {
        let batch = batch.map_err(|e| src.malformed(format, e))?;
        seen += batch.num_rows();
        if seen > rows {
            return Err(src.row_count(format!("more than {rows}"), rows));
        }
        let start = seen - batch.num_rows();
        for ((name, acc), array) in columns.iter_mut().zip(batch.columns()) {
            let part = convert(src, name, array, start)?;
            match acc {
                None => *acc = Some(part),
                Some(a) => a.extend(part).map_err(|(was, now)| {
                    src.column(name, format!("{was} in one batch, {now} in another"))
                })?,
            }
        }
    }
    if seen != rows {
        return Err(src.row_count(seen, rows));
    }
    // A file of no batches: each column empty, of its declared type.
    columns
        .into_iter()
        .zip(schema.fields())
        .map(|((n, c), f)| match c {
            Some(c) => Ok((n, c)),
            None => {
                let empty = arrow_array::new_empty_array(f.data_type());
                convert(src, &n, &empty, 0).map(|c| (n, c))
            }
        })
        .collect()
}

/// Refuses a type with no attribute type.
fn check_type(src: Source<'_>, name: &str, t: &DataType) -> Result<()> {
    let ok = match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Boolean
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Timestamp(_, _)
        | DataType::Date32
        | DataType::Date64 => true,
        DataType::Dictionary(k, v) => {
            k.is_dictionary_key_type() && matches!(**v, DataType::Utf8 | DataType::LargeUtf8)
        }
        DataType::List(f) | DataType::LargeList(f) => matches!(
            f.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(src.unsupported(name, format!("Arrow type {t}")))
    }
}

/// A primitive array's values, nulls as `None`, each through `f` (which may refuse a row).
macro_rules! primitive {
    ($array:expr, $t:ty, $f:expr) => {{
        let a = $array.as_primitive::<$t>();
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Ok(None)
                } else {
                    $f(a.value(i)).map(Some).map_err(|e: String| (i, e))
                }
            })
            .collect::<std::result::Result<Vec<_>, (usize, String)>>()
    }};
}

/// A string-like array's values (Utf8, LargeUtf8, Utf8View, dictionary of strings), nulls as
/// `None`; `None` for another type.
fn strings(array: &dyn Array) -> Option<Vec<Option<String>>> {
    let own = |v: Option<&str>| v.map(str::to_owned);
    Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().map(own).collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().map(own).collect(),
        DataType::Utf8View => array.as_string_view().iter().map(own).collect(),
        DataType::Dictionary(_, _) => {
            let d = array.as_any_dictionary_opt()?;
            let values = strings(d.values().as_ref())?;
            let keys = d.normalized_keys();
            (0..array.len())
                .map(|i| {
                    if array.is_null(i) {
                        None
                    } else {
                        values.get(keys[i]).cloned().flatten()
                    }
                })
                .collect()
        }
        _ => return None,
    })
}

/// One batch's array as a raw column; `start` is the batch's first row in the file.
fn convert(src: Source<'_>, name: &str, array: &ArrayRef, start: usize) -> Result<RawColumn> {
    let ok = |x: i64| Ok::<i64, String>(x);
    let float = |x: f64| Ok::<f64, String>(x);
    let at = |(i, e): (usize, String)| src.value(name, start + i, e);
    let ts = |mul: i64, div: i64| {
        move |x: i64| {
            x.checked_mul(mul)
                .map(|v| v.div_euclid(div))
                .ok_or_else(|| format!("{x} is beyond the microsecond range of an i64"))
        }
    };
    Ok(match array.data_type() {
        DataType::Int8 => {
            RawColumn::Int(primitive!(array, Int8Type, |x: i8| ok(x.into())).map_err(at)?)
        }
        DataType::Int16 => {
            RawColumn::Int(primitive!(array, Int16Type, |x: i16| ok(x.into())).map_err(at)?)
        }
        DataType::Int32 => {
            RawColumn::Int(primitive!(array, Int32Type, |x: i32| ok(x.into())).map_err(at)?)
        }
        DataType::Int64 => RawColumn::Int(primitive!(array, Int64Type, ok).map_err(at)?),
        DataType::UInt8 => {
            RawColumn::Int(primitive!(array, UInt8Type, |x: u8| ok(x.into())).map_err(at)?)
        }
        DataType::UInt16 => {
            RawColumn::Int(primitive!(array, UInt16Type, |x: u16| ok(x.into())).map_err(at)?)
        }
        DataType::UInt32 => {
            RawColumn::Int(primitive!(array, UInt32Type, |x: u32| ok(x.into())).map_err(at)?)
        }
        DataType::UInt64 => RawColumn::Int(
            primitive!(array, UInt64Type, |x: u64| i64::try_from(x).map_err(
                |_| format!("{x} is beyond an int column's range (-2^63..2^63)")
            ))
            .map_err(at)?,
        ),
        DataType::Float32 => {
            RawColumn::Float(primitive!(array, Float32Type, |x: f32| float(x.into())).map_err(at)?)
        }
        DataType::Float64 => RawColumn::Float(primitive!(array, Float64Type, float).map_err(at)?),
        DataType::Boolean => RawColumn::Bool(array.as_boolean().iter().collect()),
        DataType::Timestamp(unit, _) => RawColumn::Timestamp(
            match unit {
                TimeUnit::Second => primitive!(array, TimestampSecondType, ts(1_000_000, 1)),
                TimeUnit::Millisecond => primitive!(array, TimestampMillisecondType, ts(1000, 1)),
                TimeUnit::Microsecond => primitive!(array, TimestampMicrosecondType, ok),
                TimeUnit::Nanosecond => primitive!(array, TimestampNanosecondType, ts(1, 1000)),
            }
            .map_err(at)?,
        ),
        DataType::Date32 => RawColumn::Timestamp(
            primitive!(array, Date32Type, |d: i32| ts(DAY_US, 1)(d.into())).map_err(at)?,
        ),
        DataType::Date64 => {
            RawColumn::Timestamp(primitive!(array, Date64Type, ts(1000, 1)).map_err(at)?)
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let (values, offsets, nulls): (ArrayRef, Vec<usize>, Vec<bool>) =
                match array.data_type() {
                    DataType::List(_) => {
                        let l = array.as_list::<i32>();
                        let o = l.value_offsets().iter().map(|&x| x as usize).collect();
                        (
                            l.values().clone(),
                            o,
                            (0..l.len()).map(|i| l.is_null(i)).collect(),
                        )
                    }
                    _ => {
                        let l = array.as_list::<i64>();
                        let o = l.value_offsets().iter().map(|&x| x as usize).collect();
                        (
                            l.values().clone(),
                            o,
                            (0..l.len()).map(|i| l.is_null(i)).collect(),
                        )
                    }
                };
            let Some(items) = strings(values.as_ref()) else {
                return Err(src.unsupported(name, format!("Arrow type {}", array.data_type())));
            };
            let mut out = Vec::with_capacity(nulls.len());
            for (i, null) in nulls.iter().enumerate() {
                if *null {
                    out.push(None);
                    continue;
                }
                let mut tags = Vec::with_capacity(offsets[i + 1] - offsets[i]);
                for item in &items[offsets[i]..offsets[i + 1]] {
                    match item {
                        Some(s) => tags.push(s.clone()),
                        None => {
                            return Err(src.value(
                                name,
                                start + i,
                                "a null tag in the list (a row's tags are strings)",
                            ));
                        }
                    }
                }
                out.push(Some(tags));
            }
            RawColumn::Tags(out)
        }
        t => match strings(array.as_ref()) {
            Some(v) => RawColumn::Str(v),
            None => return Err(src.unsupported(name, format!("Arrow type {t}"))),
        },
    })
}
