//! Cooperative interruption: a caller that wants every running computation to stop (Python's Ctrl-C, which
//! the extension notices while a layer computes) calls [`request`]; the long loops — each head of a layer,
//! each query tile of the fused forward, each block of a layer held on demand — call [`check`] between steps
//! and return [`Error::Interrupted`], so a computation of minutes stops within one step. The request is
//! process-wide (every computation running then stops) until [`clear`].

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks every running computation to stop at its next step.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Withdraws the request, once the interrupted computation has returned.
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// [`Error::Interrupted`] when a stop was requested.
#[inline]
pub fn check() -> Result<()> {
    if REQUESTED.load(Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}
