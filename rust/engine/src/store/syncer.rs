//! The store's long-lived fsync thread for the current log: with fsync durability a writer
//! indexes its operation while the disk syncs it (`Store::append_deferred`, then
//! `Store::settle_deferred`); with buffered durability it syncs within a short delay of any
//! write, so a power cut loses at most that much. Stopping it syncs what is still pending.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::fs::DataFile;
use crate::error::{EngineError, Result};

struct State {
    file: Arc<DataFile>,
    requested: u64,
    done: u64,
    /// Outcome of the fsync that brought `done` to its value.
    outcome: Result<()>,
    stop: bool,
}

pub struct Syncer {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    /// `delay`: how long to gather further writes before each fsync (`None`: sync at once).
    pub fn start(file: DataFile, delay: Option<Duration>) -> Result<Syncer> {
        let state = State { file: Arc::new(file), requested: 0, done: 0, outcome: Ok(()), stop: false };
        let shared = Arc::new((Mutex::new(state), Condvar::new()));
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("trimem-fsync".into())
            .spawn(move || {
                let (lock, cv) = &*s;
                let mut st = lock.lock();
                loop {
                    while !st.stop && st.requested == st.done {
                        cv.wait(&mut st);
                    }
                    if let Some(d) = delay {
                        // Gather writes for the whole delay (new requests do not cut it short).
                        let until = Instant::now() + d;
                        while !st.stop && !cv.wait_until(&mut st, until).timed_out() {}
                    }
                    if st.requested == st.done {
                        return; // stopped with nothing pending
                    }
                    let (target, file) = (st.requested, st.file.clone());
                    drop(st);
                    let outcome = file.sync();
                    st = lock.lock();
                    st.done = target;
                    st.outcome = outcome;
                    cv.notify_all();
                }
            })
            .map_err(|e| EngineError::Io(format!("cannot start the fsync thread: {e}")))?;
        Ok(Syncer { shared, thread: Some(thread) })
    }

    /// Asks for an fsync of everything written so far; returns the ticket to wait on.
    pub fn request(&self) -> u64 {
        let mut st = self.shared.0.lock();
        st.requested += 1;
        self.shared.1.notify_all();
        st.requested
    }

    /// Waits until an fsync started after `ticket` was requested has finished; its outcome.
    pub fn wait(&self, ticket: u64) -> Result<()> {
        let mut st = self.shared.0.lock();
        while st.done < ticket {
            self.shared.1.wait(&mut st);
        }
        st.outcome.clone()
    }

    /// Points the thread at a new log (after a checkpoint).
    pub fn replace(&self, file: DataFile) {
        self.shared.0.lock().file = Arc::new(file);
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.shared.0.lock().stop = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
