//! Attribute columns stored with the codes (docs/filtering.md, "How attributes are stored";
//! FORMAT.md §3.7, §7.4, §10.2), one scenario per test: a round trip through add, seal,
//! compaction and reopen; upserts and deletes; a column added later; malformed input refused
//! with nothing staged; a damaged section refused naming its file; older files read as "no
//! attributes"; filters over stored columns equal to a brute force over the stored values.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod storage_support;

use std::path::Path;

use codedb::admin::inspect_dir;
use codedb::format::{Container, FileKind, LoadMode, section_kind};
use codedb::{
    Attributes, Column, ColumnType, CompactionPolicy, Config, CreateOptions, EncodedOptions, Index,
    RowBatch, RowFilter, Schema, SearchMode, SearchParams, Snapshot, StorageError, Value,
};
use storage_support::*;

fn schema() -> Schema {
    Schema::parse("year:int,score:float,taken:timestamp,public:bool,licence:string,tags:tags")
        .unwrap()
        .with_default("licence", Value::Str("unknown".into()))
        .unwrap()
}

/// The values the tests store for `id` in generation `g` (upserts change the generation).
fn row(id: u64, g: u64) -> (i64, f64, i64, bool, String, Vec<String>) {
    let k = (id + 7 * g) as i64;
    (
        1990 + k % 30,
        if k % 9 == 0 {
            f64::NAN
        } else {
            k as f64 * 0.25
        },
        k * 1_000_000,
        k % 2 == 0,
        ["cc0", "cc-by", "café", ""][(k % 4) as usize].to_owned(),
        (0..(k % 4))
            .map(|t| format!("tag{}", (k + t) % 6))
            .collect(),
    )
}

fn attrs(ids: &[u64], g: u64) -> Attributes {
    let r: Vec<_> = ids.iter().map(|&i| row(i, g)).collect();
    Attributes::new(
        ids.len(),
        vec![
            (
                "tags".into(),
                Column::tags(&r.iter().map(|x| x.5.clone()).collect::<Vec<_>>()),
            ),
            ("year".into(), Column::Int(r.iter().map(|x| x.0).collect())),
            (
                "score".into(),
                Column::Float(r.iter().map(|x| x.1).collect()),
            ),
            (
                "taken".into(),
                Column::Timestamp(r.iter().map(|x| x.2).collect()),
            ),
            (
                "public".into(),
                Column::Bool(r.iter().map(|x| x.3).collect()),
            ),
            (
                "licence".into(),
                Column::strings(&r.iter().map(|x| x.4.clone()).collect::<Vec<_>>()),
            ),
        ],
    )
    .unwrap()
}

/// A 4-D → 64-bit LSH model, so that searches can encode queries (the codes the tests add are
/// [`codes`], not encodings: a filter's result is a set, whatever the ranking).
fn lsh() -> codedb::format::ModelFile {
    use codedb::model::{PipelineSpec, TrainOptions, train};
    let x = ndarray::Array2::from_shape_fn((64, 4), |(i, j)| ((i * 7 + j * 3) % 11) as f32);
    let m = train(
        &PipelineSpec::parse("lsh:64").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap()
    .0;
    assert_eq!(m.to_model_file().code_bytes as usize, CODE_BYTES);
    m.to_model_file()
}

fn create(dir: &Path, config: Config) -> Index {
    let opts = CreateOptions {
        attributes: schema(),
        ..CreateOptions::default()
    };
    Index::create_with(dir, &lsh(), &opts, config).unwrap()
}

fn add(idx: &Index, ids: &[u64], g: u64) {
    let a = attrs(ids, g);
    let opts = EncodedOptions {
        attributes: Some(&a),
        ..EncodedOptions::default()
    };
    idx.add_encoded(&RowBatch::new(&codes(ids, g)).with_ids(ids), &opts)
        .unwrap();
}

/// Every stored value of `ids` equals `row(id, generation(id))`.
fn check_values(s: &Snapshot, ids: &[u64], generation: impl Fn(u64) -> u64) {
    let names = ["year", "score", "taken", "public", "licence", "tags"];
    let got = s.attribute_values(ids, &names).unwrap();
    for (k, &id) in ids.iter().enumerate() {
        let (y, sc, t, p, l, mut tags) = row(id, generation(id));
        let v = |c: usize| got.column(c).unwrap().value(k).unwrap();
        assert_eq!(v(0), Value::Int(y), "id {id}");
        assert_eq!(v(1), Value::Float(sc), "id {id}");
        assert_eq!(v(2), Value::Timestamp(t), "id {id}");
        assert_eq!(v(3), Value::Bool(p), "id {id}");
        assert_eq!(v(4), Value::Str(l), "id {id}");
        let Value::Tags(mut stored) = v(5) else {
            panic!("tags")
        };
        stored.sort();
        tags.sort();
        tags.dedup();
        assert_eq!(stored, tags, "id {id}");
    }
}

/// Ids a filter passes, by a full-`k` Hamming search.
fn filtered(s: &Snapshot, f: &str) -> Vec<u64> {
    let q = ndarray::Array2::<f32>::zeros((1, 4));
    let live = s.live_rows() as usize;
    let p =
        SearchParams::new(live.max(1), SearchMode::Hamming).filter(RowFilter::parse(f).unwrap());
    let mut ids: Vec<u64> = s.search(q.view(), &p).unwrap()[0]
        .iter()
        .map(|h| h.id)
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn values_survive_add_seal_compact_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let all: Vec<u64> = (0..300).collect();
    add(&idx, &all[..100], 0);
    add(&idx, &all[100..180], 0);
    idx.commit().unwrap();
    // In the active log.
    check_values(&idx.snapshot(), &all[..180], |_| 0);
    idx.commit_sealed().unwrap();
    add(&idx, &all[180..], 0);
    idx.commit_sealed().unwrap();
    // Two segments, then one.
    check_values(&idx.snapshot(), &all, |_| 0);
    let policy = CompactionPolicy {
        full: true,
        ..CompactionPolicy::default()
    };
    idx.compact(&policy).unwrap();
    assert_eq!(idx.snapshot().segment_count(), 1);
    drop(idx);
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let s = idx.snapshot();
    assert_eq!(s.attribute_schema(), &schema());
    check_values(&s, &all, |_| 0);
    assert_eq!(
        filtered(&s, "year >= 2010 AND public"),
        all.iter()
            .copied()
            .filter(|&i| row(i, 0).0 >= 2010 && row(i, 0).3)
            .collect::<Vec<_>>()
    );
    assert_verifies(dir.path());
    let report = inspect_dir(dir.path()).unwrap();
    let names: Vec<String> = report
        .attributes
        .iter()
        .map(|c| format!("{}:{}:{}", c.name, c.column_type, c.default))
        .collect();
    assert_eq!(
        names,
        [
            "year:int:0",
            "score:float:0",
            "taken:timestamp:0",
            "public:bool:false",
            "licence:string:\"unknown\"",
            "tags:tags:[]"
        ]
    );
}

#[test]
fn upsert_replaces_a_rows_values_and_delete_drops_them() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let all: Vec<u64> = (0..60).collect();
    add(&idx, &all, 0);
    idx.commit_sealed().unwrap();
    // Upsert rows of the segment (and, later, of the log) with generation 1's values.
    let up: Vec<u64> = (10..20).collect();
    let a = attrs(&up, 1);
    let opts = EncodedOptions {
        attributes: Some(&a),
        ..EncodedOptions::default()
    };
    assert_eq!(
        idx.upsert_encoded(&RowBatch::new(&codes(&up, 1)).with_ids(&up), &opts)
            .unwrap(),
        10
    );
    idx.delete(&[3, 4, 15]).unwrap();
    idx.commit().unwrap();
    let generation = |id: u64| u64::from((10..20).contains(&id));
    let live: Vec<u64> = all
        .iter()
        .copied()
        .filter(|i| ![3, 4, 15].contains(i))
        .collect();
    let s = idx.snapshot();
    check_values(&s, &live, generation);
    assert!(matches!(
        s.attribute_values(&[4], &["year"]),
        Err(StorageError::UnknownId { id: 4, .. })
    ));
    let want: Vec<u64> = live
        .iter()
        .copied()
        .filter(|&i| row(i, generation(i)).4 == "café")
        .collect();
    assert_eq!(filtered(&s, "licence = 'café'"), want);
    idx.compact(&CompactionPolicy {
        full: true,
        ..CompactionPolicy::default()
    })
    .unwrap();
    check_values(&idx.snapshot(), &live, generation);
    assert_eq!(filtered(&idx.snapshot(), "licence = 'café'"), want);
}

#[test]
fn a_column_added_later_holds_its_default_in_older_rows() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    add(&idx, &[1, 2, 3], 0);
    idx.commit_sealed().unwrap();
    add(&idx, &[4, 5], 0);
    idx.commit().unwrap();
    idx.add_column("source", ColumnType::Str, Value::Str("flickr".into()))
        .unwrap();
    // Refused: a taken name, a default of another type.
    assert!(
        idx.add_column("year", ColumnType::Int, Value::Int(0))
            .is_err()
    );
    assert!(
        idx.add_column("other", ColumnType::Int, Value::Bool(true))
            .is_err()
    );
    let a = Attributes::new(1, vec![("source".into(), Column::strings(&["wiki"]))]).unwrap();
    let opts = EncodedOptions {
        attributes: Some(&a),
        ..EncodedOptions::default()
    };
    idx.add_encoded(&RowBatch::new(&codes(&[6], 0)).with_ids(&[6]), &opts)
        .unwrap();
    idx.commit().unwrap();
    drop(idx);
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let s = idx.snapshot();
    assert_eq!(
        s.attribute_schema().find("source"),
        Some((6, ColumnType::Str))
    );
    let v = s
        .attribute_values(&[1, 4, 6], &["source", "licence"])
        .unwrap();
    let got: Vec<Value> = (0..3)
        .map(|r| v.column(0).unwrap().value(r).unwrap())
        .collect();
    assert_eq!(
        got,
        [
            Value::Str("flickr".into()),
            Value::Str("flickr".into()),
            Value::Str("wiki".into())
        ]
    );
    // Row 6 left `licence` out: its default.
    assert_eq!(
        v.column(1).unwrap().value(2),
        Some(Value::Str("unknown".into()))
    );
    assert_eq!(filtered(&s, "source = 'flickr'"), vec![1, 2, 3, 4, 5]);
    idx.compact(&CompactionPolicy {
        full: true,
        ..CompactionPolicy::default()
    })
    .unwrap();
    assert_eq!(filtered(&idx.snapshot(), "source != 'flickr'"), vec![6]);
    assert_verifies(dir.path());
}

#[test]
fn malformed_attributes_are_refused_naming_the_column_with_nothing_staged() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let try_add = |a: &Attributes| {
        let opts = EncodedOptions {
            attributes: Some(a),
            ..EncodedOptions::default()
        };
        idx.add_encoded(&RowBatch::new(&codes(&[1, 2], 0)).with_ids(&[1, 2]), &opts)
    };
    let cases = [
        (
            Attributes::new(2, vec![("yaer".into(), Column::Int(vec![1, 2]))]).unwrap(),
            "attributes column yaer",
            "no such column",
        ),
        (
            Attributes::new(2, vec![("year".into(), Column::Float(vec![1.5, 2.0]))]).unwrap(),
            "attributes column year",
            "float values for a int column",
        ),
        (
            Attributes::new(3, vec![("year".into(), Column::Int(vec![1, 2, 3]))]).unwrap(),
            "attributes column year",
            "3 rows of attributes for 2 rows",
        ),
    ];
    for (a, argument, detail) in &cases {
        match try_add(a) {
            Err(StorageError::InvalidArgument {
                argument: got,
                detail: d,
                ..
            }) => {
                assert_eq!(&got, argument);
                assert!(d.contains(detail), "{d}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(!idx.has_uncommitted(), "nothing staged");
    // Ragged columns and codes outside a dictionary never make an `Attributes`; a tag listed
    // twice names its row.
    let e = Attributes::new(2, vec![("year".into(), Column::Int(vec![1]))]).unwrap_err();
    assert_eq!(e.column, "year");
    let bad = Column::Tags {
        offsets: vec![0, 1, 3],
        values: vec![0, 1, 1],
        dict: vec!["a".into(), "b".into()],
    };
    let e = Attributes::new(2, vec![("tags".into(), bad)]).unwrap_err();
    assert_eq!((e.column.as_str(), e.row), ("tags", Some(1)));
    // An index without columns refuses any.
    let plain = tempfile::tempdir().unwrap();
    let idx = Index::create(plain.path(), &lsh(), Config::default()).unwrap();
    let a = attrs(&[1], 0);
    let opts = EncodedOptions {
        attributes: Some(&a),
        ..EncodedOptions::default()
    };
    let e = idx
        .add_encoded(&RowBatch::new(&codes(&[1], 0)).with_ids(&[1]), &opts)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the index has no such column (columns: none)"),
        "{e}"
    );
    assert!(!idx.has_uncommitted());
}

#[test]
fn a_damaged_attribute_section_is_an_error_naming_file_and_section() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let all: Vec<u64> = (0..50).collect();
    add(&idx, &all, 0);
    idx.commit_sealed().unwrap();
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    drop(idx);
    let c = Container::open(&seg, LoadMode::Read, Some(FileKind::Segment)).unwrap();
    let e = c
        .entries()
        .iter()
        .find(|e| e.kind == section_kind::SEG_ATTRIBUTES)
        .copied()
        .unwrap();
    assert!(e.required(), "the section is REQUIRED");
    drop(c);
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[(e.offset + e.stored_len / 2) as usize] ^= 0x10;
    let mut perm = std::fs::metadata(&seg).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)] // the test damages a read-only file
    perm.set_readonly(false);
    std::fs::set_permissions(&seg, perm).unwrap();
    std::fs::write(&seg, &bytes).unwrap();
    let name = seg.file_name().unwrap().to_string_lossy().to_string();
    // A small segment is checked whole on open; a large one on first touch: either way the
    // error names the file and the section.
    let err = match Snapshot::open(dir.path()) {
        Err(e) => e.to_string(),
        Ok(s) => filtered_err(&s),
    };
    assert!(err.contains(&name) && err.contains("attributes"), "{err}");
    let r = codedb::admin::verify_path(dir.path(), &mut |_| {});
    assert!(!r.ok());
    let problems = format!("{:?}", r.problems);
    assert!(problems.contains("attributes"), "{problems}");
}

fn filtered_err(s: &Snapshot) -> String {
    let q = ndarray::Array2::<f32>::zeros((1, 4));
    let p = SearchParams::new(5, SearchMode::Hamming).filter(RowFilter::parse("year > 0").unwrap());
    s.search(q.view(), &p).unwrap_err().to_string()
}

#[test]
fn a_large_segments_section_is_checked_on_first_touch() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let all: Vec<u64> = (0..50).collect();
    add(&idx, &all, 0);
    idx.commit_sealed().unwrap();
    drop(idx);
    // Opened without column checks (as segments of 16 MiB and more are): the section is read
    // on the first filter that needs it, and the values are right.
    let opts = codedb::ReadOptions {
        full_check_below: 0,
        ..codedb::ReadOptions::default()
    };
    let s = Snapshot::open_with(dir.path(), &opts).unwrap();
    check_values(&s, &all, |_| 0);
    assert_eq!(
        filtered(&s, "tags HAS 'tag3'"),
        all.iter()
            .copied()
            .filter(|&i| row(i, 0).5.contains(&"tag3".to_owned()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn older_indexes_read_as_having_no_attributes() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.1");
    for e in std::fs::read_dir(&golden).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
    }
    let s = Snapshot::open(tmp.path()).unwrap();
    assert!(s.attribute_schema().is_empty());
    assert!(s.blocks().all(|b| b.attributes().unwrap().is_none()));
    // (The golden model is a format test's: it does not encode, so the filter is checked
    // against the schema as a search does first.)
    let p = codedb::Predicate::parse("year > 0").unwrap();
    assert!(matches!(
        p.check(s.attribute_schema()),
        Err(codedb::FilterError::UnknownColumn { .. })
    ));
    // A column added to an old index: its rows hold the default.
    let idx = Index::open(tmp.path(), Config::default()).unwrap();
    idx.add_column("year", ColumnType::Int, Value::Int(1999))
        .unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    let ids: Vec<u64> = s.rows().unwrap().map(|r| r.id).collect();
    assert!(!ids.is_empty());
    let v = s.attribute_values(&ids, &["year"]).unwrap();
    assert!((0..ids.len()).all(|r| v.column(0).unwrap().value(r) == Some(Value::Int(1999))));
    assert!(p.check(s.attribute_schema()).is_ok());
}

/// The segment at `seg` rewritten with its `attributes` section replaced by `attrs` (every
/// other section byte for byte; the checksums recomputed, so only the cross-check can fail).
fn rewrite_attributes(seg: &Path, attrs: &Attributes) {
    let c = Container::open(seg, LoadMode::Read, Some(FileKind::Segment)).unwrap();
    let mut w = codedb::format::ContainerWriter::new(
        Vec::new(),
        FileKind::Segment,
        c.header().file_id,
        seg,
    )
    .unwrap();
    // The stored indexes (format 1.8) follow the columns, as a writer would write them.
    let (postings, zones) = codedb::format::attribute_index::AttributeIndex::encode(attrs);
    for (i, e) in c.entries().iter().enumerate() {
        let bytes = match e.kind {
            section_kind::SEG_ATTRIBUTES => {
                codedb::format::attribute_columns::encode(attrs).unwrap()
            }
            section_kind::SEG_ATTRIBUTE_POSTINGS => postings.clone(),
            section_kind::SEG_ATTRIBUTE_ZONES => zones.clone(),
            _ => c.stored(i).to_vec(),
        };
        w.section(e.kind, e.required(), &bytes).unwrap();
    }
    let bytes = w.finish().unwrap();
    drop(c);
    let mut perm = std::fs::metadata(seg).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)] // the test rewrites a read-only file
    perm.set_readonly(false);
    std::fs::set_permissions(seg, perm).unwrap();
    std::fs::write(seg, &bytes).unwrap();
}

#[test]
fn verify_cross_checks_every_segments_columns_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let idx = create(dir.path(), small_config(1 << 30));
    let all: Vec<u64> = (0..50).collect();
    add(&idx, &all, 0);
    idx.commit_sealed().unwrap();
    drop(idx);
    assert!(codedb::admin::verify_path(dir.path(), &mut |_| {}).ok());
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let name = seg.file_name().unwrap().to_string_lossy().to_string();
    // A column the schema lacks: not even the segment's own checks notice.
    let one = |c: &str, col: Column| Attributes::new(50, vec![(c.into(), col)]).unwrap();
    let cases = [
        (
            one("yaer", Column::Int(vec![1; 50])),
            "yaer",
            "does not have",
        ),
        (
            one("year", Column::Float(vec![1.0; 50])),
            "year",
            "as float",
        ),
        (
            one("tags", Column::strings(&["x"; 50])),
            "tags",
            "types it tags",
        ),
    ];
    for (attrs, column, says) in cases {
        rewrite_attributes(&seg, &attrs);
        let r = codedb::admin::verify_path(dir.path(), &mut |_| {});
        let p = r
            .problems
            .iter()
            .find(|p| p.section == format!("attributes column {column}"))
            .unwrap_or_else(|| panic!("{column}: {:?}", r.problems));
        assert!(
            p.path.ends_with(&name) && p.message.contains(says),
            "{column}: {p:?}"
        );
    }
    // A segment lacking a schema column (written before the column was added) is fine.
    rewrite_attributes(&seg, &one("year", Column::Int(vec![2000; 50])));
    let r = codedb::admin::verify_path(dir.path(), &mut |_| {});
    assert!(r.ok(), "{:?}", r.problems);
}
