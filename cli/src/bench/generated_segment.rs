//! Generated segments for scan benchmarks: random codes written once as a real segment file and
//! reused by later runs (a billion 64-bit codes is 8 GB of codes plus 8 GB of ids).
//!
//! Scan speed does not depend on code values, so uniform random bytes from a seeded generator
//! stand in for real codes (`shared/DATASETS.md`: quality claims use real data, throughput uses
//! generated codes).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use codedb::format::{
    ChecksumPolicy, CodeKind, FileId, FormatError, LoadMode, OpenOptions, SegmentLayout,
    SegmentReader, SegmentWriter,
};

/// Rows generated per chunk (bounded memory whatever the segment size).
const CHUNK_ROWS: u64 = 1 << 20;

/// SplitMix64: a tiny, fast, seeded generator; output is fixed forever for a given seed, so a
/// reused file and a regenerated one hold the same codes.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn fill(&mut self, out: &mut [u8]) {
        let mut chunks = out.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// The model id recorded in generated segments: says "generated, not encoded by a model".
pub const GENERATED_MODEL_ID: FileId = FileId([0xbe; 16]);

/// File name of a generated segment: every parameter that affects its bytes is in it.
pub fn generated_segment_name(layout: &SegmentLayout, rows: u64, seed: u64) -> String {
    format!(
        "bench-{}-{}x{}B-{}rows-seed{}.seg",
        layout.code_kind.name(),
        layout.code_bits,
        layout.code_bytes,
        rows,
        seed
    )
}

/// Returns the path of a generated segment in `dir`, writing it first unless a valid one is
/// already there. `progress(rows_written)` is called per chunk while generating.
pub fn ensure_generated_segment(
    dir: &Path,
    layout: SegmentLayout,
    rows: u64,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<(PathBuf, bool), FormatError> {
    let path = dir.join(generated_segment_name(&layout, rows, seed));
    if path.exists() {
        let opts = OpenOptions {
            load: LoadMode::Mmap,
            checksums: ChecksumPolicy::SkipColumns,
        };
        if let Ok(r) = SegmentReader::open(&path, opts) {
            let m = r.meta();
            if m.rows == rows
                && m.code_kind == layout.code_kind
                && m.code_bytes == layout.code_bytes
                && m.code_bits == layout.code_bits
            {
                return Ok((path, true));
            }
        }
    }
    let io = |source| FormatError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = path.with_extension("seg.tmp");
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = SegmentWriter::new(
        BufWriter::with_capacity(8 << 20, file),
        FileId::generate(),
        layout,
        &tmp,
    )?;
    let mut ids = Vec::with_capacity(CHUNK_ROWS as usize);
    let mut start = 0u64;
    while start < rows {
        let n = CHUNK_ROWS.min(rows - start);
        ids.clear();
        ids.extend(start..start + n);
        w.ids(&ids)?;
        start += n;
    }
    let mut rng = SplitMix(seed);
    let mut buf = vec![0u8; (CHUNK_ROWS * layout.code_bytes as u64) as usize];
    let mut done = 0u64;
    while done < rows {
        let n = CHUNK_ROWS.min(rows - done);
        let chunk = &mut buf[..(n * layout.code_bytes as u64) as usize];
        rng.fill(chunk);
        if layout.code_kind == CodeKind::Pq4 && !layout.code_bits.is_multiple_of(8) {
            // An odd number of 4-bit sub-quantisers leaves the last high nibble zero.
            for code in chunk.chunks_exact_mut(layout.code_bytes as usize) {
                if let Some(last) = code.last_mut() {
                    *last &= 0x0f;
                }
            }
        }
        w.codes(chunk)?;
        done += n;
        progress(done);
    }
    let (mut out, _) = w.finish()?;
    out.flush().map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok((path, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_segment_is_reused_and_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let layout = SegmentLayout {
            code_kind: CodeKind::Binary,
            code_bytes: 8,
            code_bits: 64,
            model_id: GENERATED_MODEL_ID,
        };
        let (p, reused) =
            ensure_generated_segment(dir.path(), layout, 3000, 7, &mut |_| {}).unwrap();
        assert!(!reused);
        let first = std::fs::read(&p).unwrap();
        let (p2, reused) =
            ensure_generated_segment(dir.path(), layout, 3000, 7, &mut |_| {}).unwrap();
        assert!(reused && p2 == p);
        let r = SegmentReader::open(&p, OpenOptions::default()).unwrap();
        assert_eq!(r.rows(), 3000);
        assert_eq!(r.ids()[2999], 2999);
        // Same seed, same codes.
        std::fs::remove_file(&p).unwrap();
        ensure_generated_segment(dir.path(), layout, 3000, 7, &mut |_| {}).unwrap();
        let again = SegmentReader::open(&p, OpenOptions::default()).unwrap();
        assert_eq!(
            again.codes(),
            SegmentReader::from_bytes(&first, &p).unwrap().codes()
        );
    }
}
