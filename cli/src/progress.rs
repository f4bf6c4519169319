//! Progress on stderr, drawn only when stderr is a terminal (scripts and pipes see nothing):
//! bars counted in the work's own unit (rows, queries, iterations, epochs, bytes) with rate and
//! ETA, and spinners with the elapsed time for work of unknown length.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Redraws per second of a bar whose counts come slowly (so elapsed time and ETA move).
const TICK: Duration = Duration::from_millis(200);

/// Whether progress is drawn at all.
pub fn visible() -> bool {
    std::io::stderr().is_terminal()
}

/// The style of a bar counting `unit`s (`{` and `}` in the unit are shown as is).
pub fn counted(unit: &str) -> ProgressStyle {
    let unit = unit.replace('{', "{{").replace('}', "}}");
    ProgressStyle::with_template(&format!(
        "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec:1}}, eta {{eta}})"
    ))
    .map_or_else(
        |_| ProgressStyle::default_bar(),
        |s| s.progress_chars("=> "),
    )
}

/// A bar of `total` `unit`s labelled `what`.
pub fn bar(total: u64, what: &str, unit: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    b.set_style(counted(unit));
    b.set_message(what.to_string());
    b.enable_steady_tick(TICK);
    b
}

/// A bar of `total` bytes labelled `what` (for work that really is measured in bytes).
pub fn bytes(total: u64, what: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
    ) {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_message(what.to_string());
    b
}

/// A spinner labelled `what` with the elapsed time, for work of unknown length.
pub fn spinner(what: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let s = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        s.set_style(style);
    }
    s.set_message(what.to_string());
    s.enable_steady_tick(TICK);
    s
}
