//! The cancellation word of every long engine call: a [`Cancel`] token the caller keeps and
//! the engine polls.
//!
//! Why a polled flag and not a callback: the work runs on rayon's threads as well as the
//! caller's, so the check must be cheap (one relaxed atomic load) and callable from any thread;
//! whoever wants to stop the work — a signal handler, a Python binding that sees Ctrl-C, a
//! timeout, another thread — sets the flag from wherever it is. The engine checks it between
//! units of work small enough to keep a stop within about 100 ms on one core (a k-means
//! iteration, an OPQ / ITQ step, a streamed chunk, a tile of encoded rows, a merged block), and
//! returns [`ModelError::Cancelled`] having changed nothing the caller can see: a cancelled
//! training returns no model, a cancelled `add` stages nothing, a cancelled compaction
//! publishes nothing and removes the segment it was writing.
//!
//! A call that changes state has a **point of no return** ([`Cancel::commit`]): the last check,
//! made atomically with the promise to finish. A cancel that comes later does not take
//! ([`Cancel::cancel`] returns `false`), so the caller knows the call will complete and can
//! report the stop after it, rather than report a stop that did not happen.
//!
//! The token lives in the model room because that is the lowest room with long loops
//! (training, encoding); storage and search use it from here (ARCHITECTURE.md, "Rules between
//! rooms"). It holds no global state: each token is its own shared flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use super::error::ModelError;

/// The token's states.
const RUNNING: u8 = 0;
const CANCELLED: u8 = 1;
/// Past the call's point of no return ([`Cancel::commit`]).
const COMMITTED: u8 = 2;

/// A request to stop a long call, shared between the caller and the engine (clones share one
/// state). The default token is never cancelled unless someone calls [`Cancel::cancel`].
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicU8>);

impl Cancel {
    /// A fresh token, not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every call holding a clone of this token to stop at its next check. Cannot be
    /// undone: a token serves one call (or one group of calls) and is then dropped. Returns
    /// whether the request took: `false` when the call had already passed its point of no
    /// return ([`Cancel::commit`]) and will finish.
    pub fn cancel(&self) -> bool {
        match self
            .0
            .compare_exchange(RUNNING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state == CANCELLED,
        }
    }

    /// Whether [`Cancel::cancel`] was called (and took).
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed) == CANCELLED
    }

    /// The point of no return of a call that changes state: `Err(ModelError::Cancelled)` if the
    /// token is cancelled, else the token is marked so that a later [`Cancel::cancel`] does not
    /// take (and says so) — the call will finish. Later [`Cancel::check`]s pass.
    pub fn commit(&self) -> Result<(), ModelError> {
        match self
            .0
            .compare_exchange(RUNNING, COMMITTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(CANCELLED) => Err(ModelError::Cancelled),
            Err(_) => Ok(()),
        }
    }

    /// `Err(ModelError::Cancelled)` once the token is cancelled: the engine's check between
    /// units of work.
    pub fn check(&self) -> Result<(), ModelError> {
        if self.is_cancelled() {
            Err(ModelError::Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_sees_the_cancel_and_the_check_turns_into_the_error() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(b.check().is_ok());
        a.cancel();
        assert!(b.is_cancelled());
        assert!(matches!(b.check(), Err(ModelError::Cancelled)));
        assert!(!Cancel::default().is_cancelled());
    }

    #[test]
    fn a_cancel_after_the_point_of_no_return_does_not_take_and_says_so() {
        let a = Cancel::new();
        assert!(a.commit().is_ok());
        assert!(!a.cancel(), "the call is past its point of no return");
        assert!(!a.is_cancelled());
        assert!(a.check().is_ok());
        assert!(a.commit().is_ok());
        let b = Cancel::new();
        assert!(b.cancel());
        assert!(b.cancel(), "cancelling twice still took");
        assert!(matches!(b.commit(), Err(ModelError::Cancelled)));
    }
}
