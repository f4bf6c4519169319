//! Recomputes every checksum of a (possibly mangled) codedb container in place.
//!
//! Why: every byte of a codedb file is covered by a CRC32 (header, each section, section table +
//! trailer), so almost every mutation a fuzzer makes is refused by the first checksum check and
//! the validation behind it is never reached. Each fuzz target therefore parses its input twice:
//! as is (the checksum paths) and after this fix-up (the structure, length, offset and value
//! checks that a checksum cannot replace, because a buggy or hostile writer produces files with
//! valid checksums).
//!
//! The fix-up is best effort and never panics: it only rewrites checksums whose covered bytes lie
//! inside the buffer, and leaves everything else alone. It depends on nothing but `crc32fast`
//! so that `tests/fuzz_regressions.rs` can include this very file (`#[path]`) and replay a
//! crash exactly as the fuzz target saw it.
//!
//! Layout (FORMAT.md §2): header CRC at bytes 60..64 over bytes 0..60; the 32-byte trailer holds
//! `table_offset: u64` at 0, `count: u32` at 8 and the CRC at 28..32 over the section table plus
//! trailer bytes 0..28; each 48-byte table entry holds `offset: u64` at 8, `stored_len: u64` at
//! 16 and the section CRC at 36..40 over the stored bytes.

const HEADER_LEN: usize = 64;
const TRAILER_LEN: usize = 32;
const ENTRY_LEN: usize = 48;

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = at.checked_add(4).and_then(|end| b.get_mut(at..end)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// Rewrites the header CRC, every section CRC whose bytes are in range, and the table/trailer
/// CRC, in that dependency order (section CRCs live in the table, which the trailer CRC covers).
pub fn fix_checksums(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        let crc = crc32fast::hash(&b[..60]);
        put_u32(b, 60, crc);
    }
    if b.len() < HEADER_LEN + TRAILER_LEN {
        return;
    }
    let trailer_at = b.len() - TRAILER_LEN;
    let (Some(table_offset), Some(count)) = (u64_at(b, trailer_at), u32_at(b, trailer_at + 8))
    else {
        return;
    };
    let Ok(table_at) = usize::try_from(table_offset) else {
        return;
    };
    // Only a table that ends exactly at the trailer can be checksummed the way a reader does.
    let table_len = (count as usize).checked_mul(ENTRY_LEN);
    if table_len.and_then(|l| table_at.checked_add(l)) != Some(trailer_at) {
        return;
    }
    for i in 0..count as usize {
        let e = table_at + i * ENTRY_LEN;
        let (Some(off), Some(len)) = (u64_at(b, e + 8), u64_at(b, e + 16)) else {
            continue;
        };
        let range = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| Some(o..o.checked_add(l)?));
        if let Some(r) = range
            && r.end <= b.len()
        {
            let crc = crc32fast::hash(&b[r]);
            put_u32(b, e + 36, crc);
        }
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&b[table_at..trailer_at + 28]);
    let crc = h.finalize();
    put_u32(b, trailer_at + 28, crc);
}

/// A copy of `data` with its checksums fixed (see [`fix_checksums`]).
pub fn with_fixed_checksums(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    fix_checksums(&mut v);
    v
}

/// Append logs (FORMAT.md §10) are not containers: after the 64-byte header come the 64-byte
/// log meta (CRC at 124..128 over 64..124) and records, each a 32-byte header (payload length
/// u64 at 16, payload CRC at 24, header CRC at 28 over bytes 0..28) and its payload. Rewrites
/// the header and meta CRCs, then walks the records while their declared payloads fit in the
/// buffer, rewriting both CRCs of each; stops at the first record that does not fit.
pub fn fix_log_checksums(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        let crc = crc32fast::hash(&b[..60]);
        put_u32(b, 60, crc);
    }
    if b.len() < 128 {
        return;
    }
    let crc = crc32fast::hash(&b[64..124]);
    put_u32(b, 124, crc);
    let mut pos = 128usize;
    while let Some(len) = u64_at(b, pos + 16) {
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| (pos + 32).checked_add(l))
            .filter(|&e| e <= b.len())
        else {
            return;
        };
        let crc = crc32fast::hash(&b[pos + 32..end]);
        put_u32(b, pos + 24, crc);
        let crc = crc32fast::hash(&b[pos..pos + 28]);
        put_u32(b, pos + 28, crc);
        pos = end;
    }
}

/// A copy of the log `data` with its checksums fixed (see [`fix_log_checksums`]).
pub fn with_fixed_log_checksums(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    fix_log_checksums(&mut v);
    v
}
