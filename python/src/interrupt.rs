//! Ctrl-C and `progress=` for the long calls (train, build, add, encode, search).
//!
//! Python runs signal handlers only on its main thread, and only when that thread holds the
//! GIL, so an engine call made with the GIL released would never see Ctrl-C. [`run`] therefore
//! runs the engine on a worker thread (one of a few kept from call to call) and keeps the
//! calling thread, GIL released,
//! waiting on a channel: every [`POLL`] (and at each progress event) it re-attaches, calls
//! `check_signals()` and delivers progress. A `KeyboardInterrupt` (or an exception raised by the
//! `progress` callable) is kept, the engine's [`Cancel`] token is set, and once the engine has
//! returned — `Error::Cancelled`, having changed nothing — that exception is raised.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use codedb::TrainEvent;
use codedb::model::{Cancel, ProgressFn};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

use crate::engine;
use crate::errors::IntoPy;

/// How often the waiting thread checks for Ctrl-C while the engine works (the engine checks its
/// token at least as often, so a call stops within about 0.1 + 0.1 s).
const POLL: Duration = Duration::from_millis(100);

/// One progress event: `done` of `total` `unit`s of `step`.
#[derive(Debug, Clone)]
pub struct Event {
    pub step: String,
    pub unit: &'static str,
    pub done: u64,
    pub total: u64,
}

/// What `progress=` asked for.
pub enum Progress {
    /// `None` / `False`: nothing.
    Off,
    /// `True`: a one-line bar on stderr.
    Bar,
    /// A callable, called as `progress(step, unit, done, total)`.
    Call(Py<PyAny>),
}

impl Progress {
    /// Reads the `progress=` argument: None/False, True, or a callable.
    pub fn from_arg(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Progress> {
        let Some(a) = arg else {
            return Ok(Progress::Off);
        };
        if a.is_none() {
            return Ok(Progress::Off);
        }
        if let Ok(b) = a.extract::<bool>() {
            return Ok(if b { Progress::Bar } else { Progress::Off });
        }
        if a.is_callable() {
            return Ok(Progress::Call(a.clone().unbind()));
        }
        Err(PyTypeError::new_err(
            "progress: expected None, a bool, or a callable progress(step, unit, done, total)",
        ))
    }
}

enum Msg {
    Event(Event),
    Done,
}

/// Where the engine's work reports progress (a plain Rust sender; cheap to clone).
#[derive(Clone)]
pub struct Sink {
    tx: mpsc::Sender<Msg>,
    on: bool,
}

impl Sink {
    /// Reports `done` of `total` `unit`s of `step` (nothing when `progress=` is off).
    pub fn send(&self, step: &str, unit: &'static str, done: u64, total: u64) {
        if self.on {
            let _ = self.tx.send(Msg::Event(Event {
                step: step.to_string(),
                unit,
                done,
                total,
            }));
        }
    }

    /// The training callback that forwards the engine's [`TrainEvent`]s here.
    pub fn train_fn(&self) -> Option<ProgressFn> {
        if !self.on {
            return None;
        }
        let tx = std::sync::Mutex::new(self.tx.clone());
        Some(Arc::new(move |e: &TrainEvent| {
            if let TrainEvent::Progress {
                step,
                unit,
                done,
                total,
            } = e
                && let Ok(tx) = tx.lock()
            {
                let _ = tx.send(Msg::Event(Event {
                    step: step.clone(),
                    unit,
                    done: *done,
                    total: *total,
                }));
            }
        }))
    }
}

/// Reports a stop that came too late to stop the call: a `KeyboardInterrupt` is raised again
/// as Python raises a signal, at the next bytecode after the call returns (the main thread's
/// interrupt flag, `_thread.interrupt_main`); an exception of the `progress` callable becomes
/// a `RuntimeWarning` naming it, since the call it wanted to stop has completed.
fn after_the_call(py: Python<'_>, e: PyErr) -> PyResult<()> {
    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        py.import("_thread")?.call_method0("interrupt_main")?;
        return Ok(());
    }
    let text = format!(
        "the progress callable raised {} after the call had passed its point of no return; \
         the call completed",
        e.value(py)
            .repr()
            .map_or_else(|_| "an exception".into(), |r| r.to_string())
    );
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    let text = std::ffi::CString::new(text).unwrap_or_default();
    PyErr::warn(py, &category, &text, 1)
}

/// The stderr bar of `progress=True`: one line per step, an ETA only once a unit is done.
#[derive(Default)]
struct TextBar {
    step: Option<(String, Instant)>,
}

impl TextBar {
    fn draw(&mut self, e: &Event) {
        let now = Instant::now();
        let fresh = self.step.as_ref().is_none_or(|(s, _)| *s != e.step);
        if fresh {
            if self.step.is_some() {
                eprintln!();
            }
            self.step = Some((e.step.clone(), now));
        }
        let start = self.step.as_ref().map_or(now, |(_, t)| *t);
        let elapsed = now.duration_since(start).as_secs_f64();
        let eta = if e.done > 0 && e.total >= e.done {
            format!(
                ", eta {:.0} s",
                elapsed * (e.total - e.done) as f64 / e.done as f64
            )
        } else {
            String::new()
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{}: {}/{} {} ({elapsed:.0} s{eta})   ",
            e.step, e.done, e.total, e.unit
        );
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.step.is_some() {
            eprintln!();
        }
    }
}

fn deliver(py: Python<'_>, p: &Progress, bar: &mut TextBar, e: &Event) -> PyResult<()> {
    match p {
        Progress::Off => Ok(()),
        Progress::Bar => {
            bar.draw(e);
            Ok(())
        }
        Progress::Call(f) => f
            .call1(py, (e.step.clone(), e.unit, e.done, e.total))
            .map(|_| ()),
    }
}

/// Threads kept for engine calls, so a call does not pay for a thread's creation (about
/// 30 µs of CPU, as much as a filtered IVF query's own work). A call finding them all busy
/// gets a thread of its own, as many concurrent calls as Python makes.
static CALL_POOL: OnceLock<Option<(rayon::ThreadPool, usize)>> = OnceLock::new();
/// Calls running on [`CALL_POOL`] now.
static CALLS_ON_POOL: AtomicUsize = AtomicUsize::new(0);

/// A place on [`CALL_POOL`], given back when dropped.
struct Worker {
    pool: &'static rayon::ThreadPool,
}

impl Worker {
    fn take() -> Option<Worker> {
        let (pool, size) = CALL_POOL
            .get_or_init(|| {
                let size = std::thread::available_parallelism().map_or(4, |n| n.get()) * 2;
                rayon::ThreadPoolBuilder::new()
                    .num_threads(size)
                    .thread_name(|i| format!("codedb-call-{i}"))
                    .build()
                    .ok()
                    .map(|p| (p, size))
            })
            .as_ref()?;
        CALLS_ON_POOL
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < *size).then_some(n + 1)
            })
            .ok()?;
        Some(Worker { pool })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        CALLS_ON_POOL.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `work(cancel, sink)` (an engine call) with the GIL released, obeying Ctrl-C and
/// delivering progress on the calling thread (see the module documentation).
pub fn run<T: Send>(
    py: Python<'_>,
    progress: &Progress,
    work: impl FnOnce(&Cancel, &Sink) -> Result<T, engine::Error> + Send,
) -> PyResult<T> {
    let cancel = Cancel::new();
    let (tx, rx) = mpsc::channel::<Msg>();
    let sink = Sink {
        tx: tx.clone(),
        on: !matches!(progress, Progress::Off),
    };
    let mut failure: Option<PyErr> = None;
    // Whether the cancel took (`false`: the call had passed its point of no return).
    let mut took = true;
    let mut bar = TextBar::default();
    let (failure_ref, took_ref, bar_ref, cancel_ref) = (&mut failure, &mut took, &mut bar, &cancel);
    // `move`: the receiver (not `Sync`) goes into the waiting closure whole.
    let joined = py.detach(move || {
        let (failure, took, bar, cancel) = (failure_ref, took_ref, bar_ref, cancel_ref);
        let mut result: Option<std::thread::Result<Result<T, engine::Error>>> = None;
        let slot = &mut result;
        let done = tx.clone();
        let job = move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(cancel, &sink)));
            *slot = Some(r);
            let _ = done.send(Msg::Done);
        };
        let mut wait = || {
            loop {
                let mut finished = false;
                let mut events = Vec::new();
                let first = rx.recv_timeout(POLL).ok();
                for m in first.into_iter().chain(rx.try_iter()) {
                    match m {
                        Msg::Event(e) => events.push(e),
                        Msg::Done => finished = true,
                    }
                }
                if failure.is_none() {
                    let checked = Python::attach(|py| -> PyResult<()> {
                        py.check_signals()?;
                        for e in &events {
                            deliver(py, progress, bar, e)?;
                        }
                        Ok(())
                    });
                    if let Err(e) = checked {
                        *failure = Some(e);
                        *took = cancel.cancel();
                    }
                }
                if finished {
                    break;
                }
            }
        };
        match Worker::take() {
            Some(w) => w.pool.in_place_scope(|s| {
                s.spawn(move |_| {
                    job();
                    drop(w);
                });
                wait();
            }),
            None => std::thread::scope(|s| {
                s.spawn(job);
                wait();
            }),
        }
        result.unwrap_or_else(|| Err(Box::new("the engine call returned nothing")))
    });
    if matches!(progress, Progress::Bar) {
        bar.finish();
    }
    if let Some(e) = failure {
        if took {
            return Err(e);
        }
        // The call was past its point of no return (rows staged, a merge or an index being
        // written) and finished: its result stands, and the stop is reported after it.
        after_the_call(py, e)?;
    }
    match joined {
        Ok(r) => r.py_err(),
        Err(_) => Err(PyRuntimeError::new_err(
            "internal error: the engine call panicked (please report it)",
        )),
    }
}
