//! Standard output and error for every command: one place that knows what a failed write
//! means.
//!
//! A reader that goes away early (`codedb inspect DIR | head`) closes the pipe; the next write
//! fails with EPIPE (Rust ignores SIGPIPE, so the process is not killed). The CLI then exits at
//! once, quietly, with 141 = 128 + SIGPIPE, the status a shell shows for a producer that SIGPIPE
//! killed (`cat big | head`): under `set -o pipefail` a cut-short codedb looks like any other,
//! and a command whose report was cut never claims success (a `verify` that found problems
//! must not exit 0 because nobody read them). Any other write error exits 1 with a message.
//! Commands print after their work is committed, so exiting here abandons only the report.
//! Standard error (`codedb … 2>&1 | head`) is treated the same way, except that a write error
//! other than a closed pipe is ignored: there is nowhere left to report it.

use std::io::Write;

/// The exit status of a command whose standard output was closed by its reader.
pub const CLOSED_PIPE_EXIT: i32 = 141;

/// `println!` that handles a closed pipe (see the module docs).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// `eprintln!` that handles a closed pipe (see the module docs).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::err_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// Writes one line to standard output, or exits (see the module docs).
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.write_all(b"\n")) {
        failed(&e);
    }
}

/// Writes one line to standard error; a closed pipe exits (see the module docs).
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    if let Err(err) = e.write_fmt(args).and_then(|()| e.write_all(b"\n"))
        && err.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(CLOSED_PIPE_EXIT);
    }
}

/// Writes `bytes` to standard output and flushes, or exits (see the module docs).
pub fn bytes(bytes: &[u8]) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(bytes).and_then(|()| o.flush()) {
        failed(&e);
    }
}

/// Ends the process after a failed write to standard output: quietly with
/// [`CLOSED_PIPE_EXIT`] for a closed pipe, else with 1 and the error.
pub fn failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(CLOSED_PIPE_EXIT);
    }
    err_line(format_args!(
        "codedb: error: writing to standard output: {e}"
    ));
    std::process::exit(1);
}
