//! Taking engine locks from Python: never wait for a lock while holding the GIL. A thread that
//! holds the GIL and waits for a lock, while the lock's holder waits for the GIL, deadlocks.
//! The fast path takes a free lock directly; otherwise the GIL is released while waiting.

use parking_lot::{Mutex, RwLock};
use pyo3::Python;

/// Runs `f` under the read lock (build Python objects after, from what it returns).
pub fn read<T: Send + Sync, R: Send>(
    py: Python<'_>,
    lock: &RwLock<T>,
    f: impl FnOnce(&T) -> R + Send,
) -> R {
    if let Some(g) = lock.try_read() {
        return f(&g);
    }
    py.detach(|| f(&lock.read()))
}

/// Runs `f` under the mutex.
pub fn locked<T: Send, R: Send>(
    py: Python<'_>,
    lock: &Mutex<T>,
    f: impl FnOnce(&mut T) -> R + Send,
) -> R {
    if let Some(mut g) = lock.try_lock() {
        return f(&mut g);
    }
    py.detach(|| f(&mut lock.lock()))
}
