//! Argument checks clap cannot express on its own: number ranges with messages a user can act
//! on, usage errors found after parsing (exit 2), and `--threads`.

use std::fmt;

use crate::out::errln;

/// A usage error found after clap parsed the arguments (an argument combination or value the
/// command cannot take). `main` prints it and exits 2, like clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Returns a [`UsageError`] from the enclosing function.
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::args::UsageError(format!($($arg)*))))
    };
}
pub(crate) use usage;

/// A whole number `min ≤ v` that fits `T`. Negative values are parsed (with
/// `allow_negative_numbers` on the argument) so the error says what is allowed instead of
/// clap's "use '-- -1'" hint, which does not apply to option values.
fn whole<T: TryFrom<i128>>(s: &str, min: i128) -> Result<T, String> {
    let v: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if v < min {
        return Err(format!("must be ≥ {min}"));
    }
    T::try_from(v).map_err(|_| format!("{v} is too large"))
}

/// clap value parser: a count ≥ 1.
pub fn count(s: &str) -> Result<usize, String> {
    whole(s, 1)
}

/// clap value parser: a count ≥ 0.
pub fn count0(s: &str) -> Result<usize, String> {
    whole(s, 0)
}

/// clap value parser: a u64 ≥ 1.
pub fn count_u64(s: &str) -> Result<u64, String> {
    whole(s, 1)
}

/// clap value parser: a u64 ≥ 0 (seeds, ids, weights).
pub fn u64_0(s: &str) -> Result<u64, String> {
    whole(s, 0)
}

/// clap value parser: a u32 ≥ 0 (radii, class ids).
pub fn u32_0(s: &str) -> Result<u32, String> {
    whole(s, 0)
}

/// clap value parser: a fraction from 0 to 1.
pub fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(_) => Err("must be a fraction from 0 to 1".into()),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// clap value parser: a finite number > 0 (SVM costs).
pub fn finite_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a finite number > 0".into()),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// The number of threads `--threads n` runs on: 0 means every core
/// (`std::thread::available_parallelism`, which honours CPU affinity and cgroup quotas); more
/// than the cores is capped at the cores, with one note on stderr — more threads than cores only
/// add switching (and 100,000 OS threads bring a machine down).
pub fn threads(requested: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match requested {
        0 => cores,
        n if n > cores => {
            errln!("codedb: note: --threads {n}: capped at {cores}, the number of cores");
            cores
        }
        n => n,
    }
}

/// `--plot [PATH]`, checked before any work: PATH is the figure's file, or an existing
/// directory to hold `default_name` (a bare `--plot` is the current directory). A name not
/// ending in `.svg` or `.png` is a usage error (exit 2), a missing directory a failure (exit 1),
/// each naming the file.
pub fn plot_target(
    path: &std::path::Path,
    default_name: &str,
) -> anyhow::Result<codedb_cli::plot::PlotTarget> {
    match codedb_cli::plot::PlotTarget::resolve(path, default_name) {
        Ok(t) => Ok(t),
        Err(e) if e.is_usage() => usage!("--plot {e}"),
        Err(e) => Err(anyhow::Error::new(e).context(format!("--plot {}", path.display()))),
    }
}

/// [`threads`] for a list of counts (benchmarks): each distinct request noted once.
pub fn thread_list(requested: &[usize]) -> Vec<usize> {
    let mut seen = std::collections::HashMap::new();
    requested
        .iter()
        .map(|&r| *seen.entry(r).or_insert_with(|| threads(r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_say_what_is_allowed() {
        assert_eq!(count("3"), Ok(3));
        assert_eq!(count("-1"), Err("must be ≥ 1".into()));
        assert_eq!(count("0"), Err("must be ≥ 1".into()));
        assert_eq!(count0("0"), Ok(0));
        assert_eq!(u64_0("-7"), Err("must be ≥ 0".into()));
        assert_eq!(u32_0("4294967296"), Err("4294967296 is too large".into()));
        assert_eq!(count("x"), Err("'x' is not a whole number".into()));
    }

    #[test]
    fn threads_zero_is_every_core_and_more_is_capped() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads(0), cores);
        assert_eq!(threads(1), 1);
        assert_eq!(threads(cores + 1), cores);
        assert_eq!(thread_list(&[0, 1, 100_000]), [cores, 1, cores]);
    }
}
