//! The machine's read bandwidth, measured on the same mapping a scan reads, in the same run:
//! the yardstick that turns "codes per second" into "fraction of what memory can deliver".

use std::time::Instant;

/// Sums every 64-bit word of `bytes` with `threads` threads (contiguous parts) and returns
/// bytes per second of the fastest of `passes` passes. The sum is returned too so the compiler
/// cannot drop the reads.
pub fn read_bandwidth(bytes: &[u8], threads: usize, passes: usize) -> (f64, u64) {
    let threads = threads.max(1);
    let words: &[u64] = match bytemuck::try_cast_slice(&bytes[..bytes.len() / 8 * 8]) {
        Ok(w) => w,
        Err(_) => return (0.0, 0),
    };
    let mut best = f64::INFINITY;
    let mut total = 0u64;
    for _ in 0..passes.max(1) {
        let t = Instant::now();
        let part = words.len().div_ceil(threads).max(1);
        let sum = std::thread::scope(|s| {
            let handles: Vec<_> = words
                .chunks(part)
                .map(|c| s.spawn(move || sum_words(c)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0u64, u64::wrapping_add)
        });
        best = best.min(t.elapsed().as_secs_f64());
        total = total.wrapping_add(sum);
    }
    ((words.len() * 8) as f64 / best, total)
}

/// Eight independent accumulators so the loop is bound by loads, not by the add chain.
fn sum_words(w: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    let mut chunks = w.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            acc[i] = acc[i].wrapping_add(c[i]);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0u64, |a, &b| a.wrapping_add(b));
    acc.iter().fold(tail, |a, &b| a.wrapping_add(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_word_whatever_the_thread_count() {
        let data: Vec<u64> = (0..10_001).collect();
        let bytes: &[u8] = bytemuck::cast_slice(&data);
        let want: u64 = data.iter().sum();
        for t in [1, 2, 3, 7] {
            let (bw, sum) = read_bandwidth(bytes, t, 1);
            assert_eq!(sum, want, "threads {t}");
            assert!(bw > 0.0);
        }
    }
}
