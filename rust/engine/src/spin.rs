//! Waiting by spinning, for hand-offs between threads that usually take microseconds: on this
//! project's VMs waking a sleeping thread costs about as much as an fsync (~0.2 ms), so a
//! thread that expects the other soon watches a flag for a bounded time before it sleeps.

use std::time::{Duration, Instant};

/// Spins while `waiting()` holds, for at most `limit` (callers check their condition again
/// under their lock before they sleep).
#[inline]
pub fn spin_while(limit: Duration, waiting: impl Fn() -> bool) {
    let until = Instant::now() + limit;
    while waiting() && Instant::now() < until {
        std::hint::spin_loop();
    }
}
