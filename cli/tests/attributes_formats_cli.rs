//! `--attributes` in Parquet, Arrow IPC (file and stream) and a directory of `.npy` files:
//! the columns stored from each equal those stored from JSON lines of the same values (read
//! back with `search --with --format json`), through build, add and add --upsert; types are
//! inferred from the file; malformed files fail naming the file, the column and the row, with
//! nothing written. The fixtures are written here with the same arrow-rs crates.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{fails, json, ok, s, stdout, train};

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float32Array, Float64Array, Int32Array, Int64Array,
    LargeStringArray, ListArray, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
    TimestampNanosecondArray, UInt64Array,
};
use arrow_schema::{DataType, Field};
use codedb::Snapshot;
use ndarray::s as sl;

/// Rows per test index (the first rows of the digits).
const N: usize = 60;
/// 2009-02-13T23:31:30Z in ms.
const T0_MS: i64 = 1_234_567_890_000;

/// Row `r`'s values: (year, score, flag, licence (absent on rows ≡ 2 mod 5), tags, taken ms).
struct Row {
    year: i32,
    score: f64,
    flag: bool,
    licence: Option<&'static str>,
    tags: Option<Vec<&'static str>>,
    taken_ms: i64,
}

fn row(r: usize) -> Row {
    Row {
        year: 2000 + (r % 20) as i32,
        score: (r % 7) as f64 + 0.5,
        flag: r.is_multiple_of(3),
        licence: (r % 5 != 2).then(|| ["cc0", "cc-by", "all-rights"][r % 3]),
        tags: (r % 4 != 3).then(|| match r % 3 {
            0 => vec!["cat"],
            1 => vec!["cat", "dog"],
            _ => vec![],
        }),
        taken_ms: T0_MS + r as i64 * 86_400_000,
    }
}

/// The JSON lines of rows `rows` (absent values left out; timestamps in µs).
fn write_jsonl(path: &Path, rows: std::ops::Range<usize>) {
    let mut text = String::new();
    for r in rows {
        let v = row(r);
        let mut o = serde_json::Map::new();
        o.insert("year".into(), v.year.into());
        o.insert("score".into(), v.score.into());
        o.insert("flag".into(), v.flag.into());
        if let Some(l) = v.licence {
            o.insert("licence".into(), l.into());
        }
        if let Some(t) = v.tags {
            o.insert("tags".into(), t.into());
        }
        o.insert("taken".into(), (v.taken_ms * 1000).into());
        text += &serde_json::Value::Object(o).to_string();
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The same rows as an Arrow batch: year Int32, score Float64, flag Boolean, licence a
/// dictionary of strings with nulls, tags List<Utf8> with null lists, taken Timestamp(ms).
fn batch(rows: std::ops::Range<usize>) -> RecordBatch {
    let vals: Vec<Row> = rows.map(row).collect();
    let mut tags = ListBuilder::new(StringBuilder::new());
    for v in &vals {
        match &v.tags {
            Some(t) => {
                for s in t {
                    tags.values().append_value(s);
                }
                tags.append(true);
            }
            None => tags.append(false),
        }
    }
    let licence: DictionaryArray<Int32Type> = vals.iter().map(|v| v.licence).collect();
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "year",
            Arc::new(Int32Array::from_iter_values(vals.iter().map(|v| v.year))),
        ),
        (
            "score",
            Arc::new(Float64Array::from_iter_values(vals.iter().map(|v| v.score))),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from(
                vals.iter().map(|v| v.flag).collect::<Vec<_>>(),
            )),
        ),
        ("licence", Arc::new(licence)),
        ("tags", Arc::new(tags.finish())),
        (
            "taken",
            Arc::new(TimestampMillisecondArray::from_iter_values(
                vals.iter().map(|v| v.taken_ms),
            )),
        ),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

fn write_parquet(path: &Path, batches: &[RecordBatch]) {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(25))
        .build();
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

fn write_ipc_file(path: &Path, batches: &[RecordBatch]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

fn write_ipc_stream(path: &Path, batches: &[RecordBatch]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(f, &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// A `.npy` file: `descr`, shape (n,), the raw little-endian data.
fn write_npy(path: &Path, descr: &str, n: usize, data: &[u8]) {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}");
    let pad = 64 - (10 + dict.len() + 1) % 64;
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out.extend_from_slice(data);
    std::fs::write(path, out).unwrap();
}

/// Unicode `<U{width}` data of `strings`.
fn unicode(strings: &[&str], width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for s in strings {
        let mut chars: Vec<u32> = s.chars().map(u32::from).collect();
        chars.resize(width, 0);
        for c in chars {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    out
}

/// A directory of `.npy` columns for rows `rows`: year int64, score float32, flag bool,
/// licence `<U10` (the rows JSON leaves out hold "cc0" here: .npy has no nulls).
fn write_npy_dir(dir: &Path, rows: std::ops::Range<usize>) {
    std::fs::create_dir_all(dir).unwrap();
    let vals: Vec<Row> = rows.map(row).collect();
    let n = vals.len();
    let years: Vec<u8> = vals
        .iter()
        .flat_map(|v| i64::from(v.year).to_le_bytes())
        .collect();
    write_npy(&dir.join("year.npy"), "<i8", n, &years);
    let scores: Vec<u8> = vals
        .iter()
        .flat_map(|v| (v.score as f32).to_le_bytes())
        .collect();
    write_npy(&dir.join("score.npy"), "<f4", n, &scores);
    let flags: Vec<u8> = vals.iter().map(|v| u8::from(v.flag)).collect();
    write_npy(&dir.join("flag.npy"), "|b1", n, &flags);
    let lic: Vec<&str> = vals.iter().map(|v| v.licence.unwrap_or("cc0")).collect();
    write_npy(&dir.join("licence.npy"), "<U10", n, &unicode(&lic, 10));
    std::fs::write(dir.join("README.txt"), "not a column").unwrap();
}

/// `search --with` over every query as JSON: what the index stores for its hits.
fn stored(dir: &Path, queries: &Path, with: &str) -> serde_json::Value {
    json(&ok(&[
        "search",
        s(dir),
        "--queries",
        s(queries),
        "-k",
        "8",
        "--with",
        with,
        "--format",
        "json",
    ]))
}

struct Fixture {
    tmp: tempfile::TempDir,
    model: std::path::PathBuf,
    first: std::path::PathBuf,
    rest: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let data = cli_support::digits().0;
    let x = codedb_cli::io::load_vectors(&data).unwrap();
    let first = tmp.path().join("first.npy");
    let rest = tmp.path().join("rest.npy");
    codedb_cli::io::write_npy_f32(&first, x.slice(sl![0..N, ..])).unwrap();
    codedb_cli::io::write_npy_f32(&rest, x.slice(sl![N..2 * N, ..])).unwrap();
    let model = tmp.path().join("m.model");
    train(&data, "pca-itq:32", &model);
    Fixture {
        tmp,
        model,
        first,
        rest,
    }
}

const SCHEMA: &str = "year:int,score:float,flag:bool,licence:string,tags:tags,taken:timestamp";
const ALL: &str = "year,score,flag,licence,tags,taken";

fn build(f: &Fixture, dir: &Path, attrs: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "build",
        s(dir),
        "--model",
        s(&f.model),
        "--data",
        s(&f.first),
        "--attributes",
        s(attrs),
    ];
    a.extend_from_slice(extra);
    ok(&a)
}

#[test]
fn parquet_and_arrow_store_what_json_lines_store_through_build_add_and_upsert() {
    let f = fixture();
    let p = |name: &str| f.tmp.path().join(name);
    write_jsonl(&p("a.jsonl"), 0..N);
    write_jsonl(&p("b.jsonl"), N..2 * N);
    // The upsert replaces rows 0..N (ids 0..N) with the values of rows N..2N.
    let want_dir = p("want");
    build(&f, &want_dir, &p("a.jsonl"), &["--schema", SCHEMA]);
    ok(&[
        "add",
        s(&want_dir),
        "--data",
        s(&f.rest),
        "--attributes",
        s(&p("b.jsonl")),
    ]);

    // Two batches, so reading concatenates them; Parquet in row groups of 25.
    let (b0, b1) = (batch(0..N / 2), batch(N / 2..N));
    let (c0, c1) = (batch(N..N + 7), batch(N + 7..2 * N));
    write_parquet(&p("a.parquet"), &[b0.clone(), b1.clone()]);
    write_parquet(&p("b.parquet"), &[c0.clone(), c1.clone()]);
    // An IPC file holds one dictionary per field: one batch each; the stream two.
    write_ipc_file(&p("a.arrow"), &[batch(0..N)]);
    write_ipc_stream(&p("b.ipc"), &[c0, c1]);
    write_ipc_file(&p("b.feather"), &[batch(N..2 * N)]);

    // Inference: every column typed by its Arrow type, timestamps included.
    let d = p("parquet");
    let o = build(&f, &d, &p("a.parquet"), &[]);
    for c in [
        "year:int",
        "score:float",
        "flag:bool",
        "licence:string",
        "tags:tags",
        "taken:timestamp",
    ] {
        assert!(stdout(&o).contains(c), "{c}: {}", stdout(&o));
    }
    ok(&[
        "add",
        s(&d),
        "--data",
        s(&f.rest),
        "--attributes",
        s(&p("b.parquet")),
    ]);
    let want = stored(&want_dir, &f.first, ALL);
    assert_eq!(stored(&d, &f.first, ALL), want, "Parquet");
    // A spot check of the values themselves (not only their equality across formats).
    let hit = &want[0]["results"][0];
    let r = hit["id"].as_u64().unwrap() as usize;
    let v = row(r % N + if r >= N { N } else { 0 });
    assert_eq!(hit["attributes"]["year"], serde_json::json!(v.year));
    assert_eq!(
        hit["attributes"]["taken"],
        serde_json::json!(v.taken_ms * 1000)
    );

    let d = p("arrow");
    build(&f, &d, &p("a.arrow"), &["--schema", SCHEMA]);
    ok(&[
        "add",
        s(&d),
        "--data",
        s(&f.rest),
        "--attributes",
        s(&p("b.ipc")),
    ]);
    assert_eq!(
        stored(&d, &f.first, ALL),
        want,
        "Arrow IPC file, then stream"
    );

    // Upsert: rows 0..N replaced by the values of N..2N, from Arrow and from JSON lines.
    let ids = p("ids.npy");
    codedb_cli::io::write_npy_i64(&ids, &(0..N as i64).collect::<Vec<_>>()).unwrap();
    for (dir, file) in [(&want_dir, p("b.jsonl")), (&d, p("b.feather"))] {
        ok(&[
            "add",
            s(dir),
            "--data",
            s(&f.rest),
            "--ids",
            s(&ids),
            "--upsert",
            "--attributes",
            s(&file),
        ]);
    }
    let want = stored(&want_dir, &f.first, ALL);
    assert_eq!(stored(&d, &f.first, ALL), want, "upsert from Arrow");
    let hit = &want[0]["results"][0];
    let r = hit["id"].as_u64().unwrap() as usize;
    assert_eq!(
        hit["attributes"]["year"],
        serde_json::json!(row(r % N + N).year),
        "the upserted values"
    );

    // --attributes-format: a Parquet file under another extension.
    std::fs::copy(p("a.parquet"), p("a.dat")).unwrap();
    let d = p("override");
    build(
        &f,
        &d,
        &p("a.dat"),
        &["--schema", SCHEMA, "--attributes-format", "parquet"],
    );
    let want_first = p("want-first");
    build(&f, &want_first, &p("a.jsonl"), &["--schema", SCHEMA]);
    assert_eq!(
        stored(&d, &f.first, ALL),
        stored(&want_first, &f.first, ALL)
    );
}

#[test]
fn npy_directory_stores_what_json_lines_store() {
    let f = fixture();
    let p = |name: &str| f.tmp.path().join(name);
    // .npy has no nulls: JSON lines with every licence given (absent ones as "cc0"), no tags.
    let text: String = (0..N)
        .map(|r| {
            let v = row(r);
            format!(
                "{{\"year\": {}, \"score\": {}, \"flag\": {}, \"licence\": \"{}\"}}\n",
                v.year,
                v.score,
                v.flag,
                v.licence.unwrap_or("cc0")
            )
        })
        .collect();
    std::fs::write(p("a.jsonl"), text).unwrap();
    write_npy_dir(&p("cols"), 0..N);
    let o = build(&f, &p("npy"), &p("cols"), &[]);
    // Inferred in name order: flag, licence, score, year.
    assert!(
        stdout(&o).contains("attributes flag:bool,licence:string,score:float,year:int"),
        "{}",
        stdout(&o)
    );
    build(&f, &p("want"), &p("a.jsonl"), &[]);
    let with = "year,score,flag,licence";
    assert_eq!(
        stored(&p("npy"), &f.first, with),
        stored(&p("want"), &f.first, with)
    );
    // add: the same directory layout for the next rows.
    write_npy_dir(&p("cols2"), N..2 * N);
    ok(&[
        "add",
        s(&p("npy")),
        "--data",
        s(&f.rest),
        "--attributes",
        s(&p("cols2")),
    ]);
    let o = ok(&[
        "search",
        s(&p("npy")),
        "--queries",
        s(&f.rest),
        "-k",
        "1",
        "--where",
        "id >= 60",
        "--with",
        "year,licence",
        "--format",
        "json",
    ]);
    let hit = &json(&o)[0]["results"][0];
    let r = hit["id"].as_u64().unwrap() as usize;
    assert_eq!(hit["attributes"]["year"], serde_json::json!(row(r).year));
    assert_eq!(
        hit["attributes"]["licence"],
        serde_json::json!(row(r).licence.unwrap_or("cc0"))
    );
}

#[test]
fn malformed_columns_fail_naming_file_column_and_row_with_nothing_written() {
    let f = fixture();
    let p = |name: &str| f.tmp.path().join(name);
    let dir = p("idx");
    let build_fails = |file: &Path, extra: &[&str], needles: &[&str]| {
        let mut a = vec![
            "build",
            s(&dir),
            "--model",
            s(&f.model),
            "--data",
            s(&f.first),
            "--attributes",
            s(file),
        ];
        a.extend_from_slice(extra);
        let o = fails(&a, 1, s(file));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        for n in needles {
            assert!(err.contains(n), "{file:?}: {err:?} lacks {n:?}");
        }
        assert!(!dir.exists(), "nothing written for {file:?}");
    };
    let one = |name: &str, a: ArrayRef| RecordBatch::try_from_iter([(name, a)]).unwrap();

    // UInt64 beyond i64: the row named.
    let mut big: Vec<u64> = (0..N as u64).collect();
    big[17] = u64::MAX;
    write_parquet(
        &p("u64.parquet"),
        &[one("n", Arc::new(UInt64Array::from(big)))],
    );
    build_fails(
        &p("u64.parquet"),
        &[],
        &["column \"n\", row 17", "18446744073709551615 is beyond"],
    );
    // A nested type other than a list of strings.
    let inner: ArrayRef = Arc::new(Int32Array::from_iter_values(0..N as i32));
    let st = StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int32, false)),
        inner,
    )]);
    write_ipc_file(&p("struct.arrow"), &[one("s", Arc::new(st))]);
    build_fails(
        &p("struct.arrow"),
        &[],
        &["column \"s\"", "Struct", "no attribute type"],
    );
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(
        (0..N).map(|i| Some(vec![Some(i as i32)])),
    );
    write_parquet(&p("ilist.parquet"), &[one("l", Arc::new(lists))]);
    build_fails(
        &p("ilist.parquet"),
        &[],
        &["column \"l\"", "List", "no attribute type"],
    );
    // A row count other than the data's.
    write_parquet(
        &p("short.parquet"),
        &[one(
            "y",
            Arc::new(Int64Array::from_iter_values(0..N as i64 - 1)),
        )],
    );
    build_fails(&p("short.parquet"), &[], &["59 rows, the data has 60 rows"]);
    write_ipc_stream(
        &p("long.ipc"),
        &[one(
            "y",
            Arc::new(Int64Array::from_iter_values(0..N as i64 + 3)),
        )],
    );
    build_fails(&p("long.ipc"), &[], &["the data has 60 rows"]);
    // A null tag inside a row's list.
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in 0..N {
        tags.values().append_value("a");
        if i == 33 {
            tags.values().append_null();
        }
        tags.append(true);
    }
    write_parquet(
        &p("nulltag.parquet"),
        &[one("tags", Arc::new(tags.finish()))],
    );
    build_fails(
        &p("nulltag.parquet"),
        &[],
        &["column \"tags\", row 33", "null tag"],
    );
    // A column the schema lacks, a column of another type.
    write_parquet(
        &p("f.parquet"),
        &[one(
            "year",
            Arc::new(Float32Array::from_iter_values(
                (0..N).map(|i| i as f32 + 0.5),
            )),
        )],
    );
    build_fails(
        &p("f.parquet"),
        &["--schema", "year:int"],
        &["column \"year\"", "floats", "int"],
    );
    build_fails(
        &p("f.parquet"),
        &["--schema", "yr:int"],
        &["column \"year\"", "no such column"],
    );
    // A string that is not a date, in a timestamp column: the row named.
    let mut days: Vec<String> = (0..N)
        .map(|i| format!("2010-01-{:02}", i % 28 + 1))
        .collect();
    days[41] = "2010-13-01".into();
    write_parquet(
        &p("days.parquet"),
        &[one("t", Arc::new(LargeStringArray::from(days)))],
    );
    build_fails(
        &p("days.parquet"),
        &["--schema", "t:timestamp"],
        &["column \"t\", row 41", "2010-13-01"],
    );
    // Not a Parquet file at all.
    std::fs::write(p("junk.parquet"), b"PAR1 not really").unwrap();
    build_fails(&p("junk.parquet"), &[], &["not a readable Parquet file"]);
    // .npy: a matrix, a row count, a byte that is not a boolean, an object array.
    let cols = p("npy-bad");
    std::fs::create_dir_all(&cols).unwrap();
    let m = p("npy-bad/m.npy");
    let x = codedb_cli::io::load_vectors(&f.first).unwrap();
    codedb_cli::io::write_npy_f32(&m, x.view()).unwrap();
    build_fails(&cols, &[], &["m.npy", "column \"m\"", "one-dimensional"]);
    std::fs::remove_file(&m).unwrap();
    write_npy(&p("npy-bad/b.npy"), "|b1", 3, &[0, 1, 0]);
    build_fails(&cols, &[], &["b.npy", "3 rows, the data has 60 rows"]);
    let mut bytes = vec![0u8; N];
    bytes[9] = 7;
    write_npy(&p("npy-bad/b.npy"), "|b1", N, &bytes);
    build_fails(&cols, &[], &["column \"b\", row 9", "byte 7"]);
    // add: a file that does not fit the index stages nothing.
    write_jsonl(&p("a.jsonl"), 0..N);
    ok(&[
        "build",
        s(&dir),
        "--model",
        s(&f.model),
        "--data",
        s(&f.first),
        "--attributes",
        s(&p("a.jsonl")),
        "--schema",
        SCHEMA,
    ]);
    let ns: Vec<i64> = (0..N as i64).map(|i| i * 1000).collect();
    write_parquet(
        &p("ns.parquet"),
        &[RecordBatch::try_from_iter([
            (
                "taken",
                Arc::new(TimestampNanosecondArray::from(ns)) as ArrayRef,
            ),
            (
                "flag",
                Arc::new(StringArray::from_iter_values((0..N).map(|_| "yes"))),
            ),
        ])
        .unwrap()],
    );
    fails(
        &[
            "add",
            s(&dir),
            "--data",
            s(&f.rest),
            "--attributes",
            s(&p("ns.parquet")),
        ],
        1,
        "column \"flag\": the file holds strings, the index's column is bool",
    );
    assert_eq!(Snapshot::open(&dir).unwrap().live_rows(), N as u64);
    // An unknown --attributes-format is a usage error.
    fails(
        &[
            "add",
            s(&dir),
            "--data",
            s(&f.rest),
            "--attributes",
            s(&p("ns.parquet")),
            "--attributes-format",
            "csv",
        ],
        2,
        "csv",
    );
}
