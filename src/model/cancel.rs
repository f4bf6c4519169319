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
//! The token lives in the model room because that is the lowest room with long loops
//! (training, encoding); storage and search use it from here (ARCHITECTURE.md, "Rules between
//! rooms"). It holds no global state: each token is its own shared flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::error::ModelError;

/// A request to stop a long call, shared between the caller and the engine (clones share one
/// flag). The default token is never cancelled unless someone calls [`Cancel::cancel`].
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A fresh token, not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every call holding a clone of this token to stop at its next check. Cannot be
    /// undone: a token serves one call (or one group of calls) and is then dropped.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
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
}
