//! Progress on stderr, drawn only when stderr is a terminal (scripts and pipes see nothing).
//!
//! A bar counts units of similar cost (rows, queries, iterations, bytes) and shows a rate and
//! an ETA from those units only, and no ETA before its first unit is done (a rate of nothing
//! extrapolates to "eta 0s"). Work that has no such units — a phase of training, a flush, a
//! sequence of evaluation steps of very different sizes — is a spinner with the elapsed time
//! (and, for steps, "step i of n" without an ETA). A bar that moves to another phase resets
//! its clock, so the ETA of one phase never carries the rate of another.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// Redraws per second of a bar whose counts come slowly (so elapsed time and ETA move).
const TICK: Duration = Duration::from_millis(200);

/// Whether progress is drawn at all.
pub fn visible() -> bool {
    std::io::stderr().is_terminal()
}

/// The ETA text of a bar at `done` units whose estimator says `eta`: nothing is known before
/// the first unit is done.
pub fn eta_text(done: u64, eta: Duration) -> String {
    if done == 0 {
        "eta after the first unit".to_string()
    } else {
        format!("eta {}", indicatif::HumanDuration(eta))
    }
}

/// The template of a bar counting `unit`s (`{` and `}` in the unit are shown as is); its
/// `{eta_known}` key is [`eta_text`].
pub fn counted_template(unit: &str) -> String {
    let unit = unit.replace('{', "{{").replace('}', "}}");
    format!(
        "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec:1}}, {{eta_known}})"
    )
}

/// The template of a phase without units: a spinner with the elapsed time.
pub const PHASE_TEMPLATE: &str = "{spinner} {msg} ({elapsed})";

/// The template of a sequence of steps of unequal cost: which step, no ETA.
pub const STEPS_TEMPLATE: &str = "{spinner} {msg} [step {pos} of {len}] ({elapsed})";

/// The style of a bar counting `unit`s.
pub fn counted(unit: &str) -> ProgressStyle {
    ProgressStyle::with_template(&counted_template(unit)).map_or_else(
        |_| ProgressStyle::default_bar(),
        |s| {
            s.progress_chars("=> ").with_key(
                "eta_known",
                |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&eta_text(st.pos(), st.eta()));
                },
            )
        },
    )
}

fn spinner_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
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

/// Turns `bar` into a spinner for a phase without units (its label `what`), clock reset.
pub fn phase(bar: &ProgressBar, what: &str) {
    bar.set_style(spinner_style(PHASE_TEMPLATE));
    bar.set_message(what.to_string());
    bar.reset_elapsed();
}

/// Turns `bar` into a bar of `total` `unit`s labelled `what`, counting from `done`, with its
/// clock and rate estimator reset (the ETA comes from this phase's units only).
pub fn count(bar: &ProgressBar, what: &str, unit: &str, done: u64, total: u64) {
    bar.set_style(counted(unit));
    bar.set_message(what.to_string());
    bar.set_length(total);
    bar.set_position(done);
    bar.reset_eta();
    bar.reset_elapsed();
}

/// A spinner for `total` steps of unequal cost ("step i of n", elapsed time, no ETA).
pub fn steps(total: u64, what: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    b.set_style(spinner_style(STEPS_TEMPLATE));
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
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta_known})",
    ) {
        b.set_style(style.progress_chars("=> ").with_key(
            "eta_known",
            |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&eta_text(st.pos(), st.eta()));
            },
        ));
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
    s.set_style(spinner_style(PHASE_TEMPLATE));
    s.set_message(what.to_string());
    s.enable_steady_tick(TICK);
    s
}

/// What a training bar shows for one progress event: a new step (or a new unit) starts a new
/// phase with its own clock; a step still at 0 units is a spinner; otherwise a counted bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrainView {
    /// Spinner: the step has not finished a unit yet (or has none).
    Phase(String),
    /// Bar of units, `restart`: its clock and estimator start over.
    Count {
        /// The step's label.
        what: String,
        /// Units finished.
        done: u64,
        /// Units in the step.
        total: u64,
        /// Whether this event starts a new phase.
        restart: bool,
    },
}

/// Follows the training events' steps so each gets its own phase ([`TrainView`]).
#[derive(Debug, Default)]
pub struct TrainPhases {
    current: Option<(String, &'static str)>,
    counting: bool,
}

impl TrainPhases {
    /// The view of the event "`done` of `total` `unit`s of `step`".
    pub fn view(&mut self, step: &str, unit: &'static str, done: u64, total: u64) -> TrainView {
        let same = self
            .current
            .as_ref()
            .is_some_and(|(s, u)| s == step && *u == unit);
        if !same {
            self.current = Some((step.to_string(), unit));
            self.counting = false;
        }
        let mut label = String::new();
        let _ = write!(label, "{step}");
        if done == 0 || total == 0 {
            if total > 1 {
                let _ = write!(label, ": first of {total} {unit}");
            }
            return TrainView::Phase(label);
        }
        let restart = !self.counting;
        self.counting = true;
        TrainView::Count {
            what: label,
            done,
            total,
            restart,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_shows_no_eta_before_its_first_unit() {
        assert_eq!(
            eta_text(0, Duration::from_secs(0)),
            "eta after the first unit"
        );
        assert!(eta_text(3, Duration::from_secs(90)).contains("minute"));
        assert!(counted_template("rows").contains("{eta_known}"));
        assert!(!counted_template("rows").contains("{eta}"));
    }

    #[test]
    fn steps_of_unequal_cost_and_phases_without_units_have_no_eta() {
        assert!(!STEPS_TEMPLATE.contains("eta"));
        assert!(!PHASE_TEMPLATE.contains("eta"));
        assert!(PHASE_TEMPLATE.contains("{elapsed}"));
    }

    #[test]
    fn a_training_step_is_a_spinner_until_its_first_unit_then_a_bar_with_a_fresh_clock() {
        let mut p = TrainPhases::default();
        assert_eq!(
            p.view("opq:16x8", "iterations", 0, 50),
            TrainView::Phase("opq:16x8: first of 50 iterations".into())
        );
        assert_eq!(
            p.view("opq:16x8", "iterations", 1, 50),
            TrainView::Count {
                what: "opq:16x8".into(),
                done: 1,
                total: 50,
                restart: true
            }
        );
        assert!(matches!(
            p.view("opq:16x8", "iterations", 2, 50),
            TrainView::Count { restart: false, .. }
        ));
        // The next step starts over: a spinner, then a bar whose clock restarts.
        assert!(matches!(
            p.view("pca:64", "rows", 0, 1000),
            TrainView::Phase(_)
        ));
        assert!(matches!(
            p.view("pca:64", "rows", 4096, 10000),
            TrainView::Count { restart: true, .. }
        ));
        // A one-unit step ("steps", 0 of 1) is a spinner without a count.
        assert_eq!(
            p.view("ivf:256", "steps", 0, 1),
            TrainView::Phase("ivf:256".into())
        );
    }
}
