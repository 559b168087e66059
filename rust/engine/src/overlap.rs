//! Two pieces of work that may overlap: the caller runs the first while a helper thread runs the
//! second if it is free, and the caller never waits for the helper to *wake up*.
//!
//! Why not `rayon::join`: called from a thread outside its pool (a Python thread), rayon hands
//! the whole join to the pool and blocks the caller until a worker wakes, runs it and wakes the
//! caller again. On this project's 2-core VMs each wake-up cost ~60 µs, more than a typical
//! BM25 leg, so overlapping the legs that way made hybrid searches slower. Here the caller posts
//! the second closure, runs the first, and then takes the second back and runs it itself if the
//! helper has not started it: the worst case is the two run one after the other, plus a
//! mutex and (when the helper sleeps) one futex wake. The helper spins for a short while after
//! each job, so back-to-back searches find it awake.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Release},
};
use std::sync::OnceLock;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::spin::spin_while;

/// How long the helper watches for the next job before it sleeps, and a poster for the
/// helper to finish before it sleeps: searches in a loop keep the helper awake, a lone search
/// costs at most this much of the other core.
const SPIN_FOR: Duration = Duration::from_micros(200);

/// A posted job, type-erased. It lives on the poster's stack; see [`join`] for why the helper
/// never touches it after the poster returns.
trait Job {
    /// Runs the work and stores its outcome (once; later calls do nothing).
    fn run(&self);
}

struct Cell<B, RB> {
    work: Mutex<Option<B>>,
    out: Mutex<Option<std::thread::Result<RB>>>,
}

impl<B: FnOnce() -> RB, RB> Job for Cell<B, RB> {
    fn run(&self) {
        let Some(work) = self.work.lock().take() else {
            return;
        };
        let result = catch_unwind(AssertUnwindSafe(work));
        *self.out.lock() = Some(result);
    }
}

/// A job pointer the helper may hold, with its sequence number. Only [`join`] creates one, for
/// a job it outlives.
#[derive(Clone, Copy)]
struct Posted(*const (dyn Job + 'static), u64);
// SAFETY: a posted job is only run while its poster waits for it (see `join`), and `Cell` is
// only built for `B: Send, RB: Send`.
unsafe impl Send for Posted {}

struct Helper {
    slot: Mutex<Option<Posted>>,
    wake: Condvar,
    /// Set while a job waits in `slot`, readable without the lock (the helper spins on it).
    pending: AtomicBool,
    sleeping: AtomicBool,
    /// Numbers posted jobs; the helper runs them one at a time in that order.
    posted: AtomicU64,
    /// The number of the last job the helper finished: after that store it never touches the
    /// job again, so its poster may return.
    finished: AtomicU64,
    finished_cv: Condvar,
    finished_lock: Mutex<()>,
}

fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
    *HELPER.get_or_init(|| {
        let h: &'static Helper = Box::leak(Box::new(Helper {
            slot: Mutex::new(None),
            wake: Condvar::new(),
            pending: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            posted: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            finished_cv: Condvar::new(),
            finished_lock: Mutex::new(()),
        }));
        std::thread::Builder::new()
            .name("trimem-overlap".into())
            .spawn(move || h.serve())
            .ok()
            .map(|_| h)
    })
}

impl Helper {
    fn serve(&self) {
        loop {
            spin_while(SPIN_FOR, || !self.pending.load(Acquire));
            let job = {
                let mut slot = self.slot.lock();
                while slot.is_none() {
                    self.sleeping.store(true, Release);
                    self.wake.wait(&mut slot);
                }
                self.sleeping.store(false, Release);
                self.pending.store(false, Release);
                slot.take().expect("a job")
            };
            // SAFETY: once a job has left the slot its poster waits until `finished` reaches
            // its number, so the job is alive for this whole call.
            unsafe { (*job.0).run() };
            self.finished.store(job.1, Release);
            let _g = self.finished_lock.lock();
            self.finished_cv.notify_all();
        }
    }

    fn wait_finished(&self, seq: u64) {
        spin_while(SPIN_FOR, || self.finished.load(Acquire) < seq);
        let mut g = self.finished_lock.lock();
        while self.finished.load(Acquire) < seq {
            self.finished_cv.wait(&mut g);
        }
    }
}

/// Runs `a` on this thread and `b` on the helper if it is free (else here, after `a`); returns
/// both results. A panic in either is resumed here, after both have finished.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let Some(h) = helper() else { return (a(), b()) };
    let cell = Cell {
        work: Mutex::new(Some(b)),
        out: Mutex::new(None),
    };
    let local: &dyn Job = &cell;
    // SAFETY: erasing the lifetime is sound because this function does not return (nor unwind)
    // while the helper can reach the job: it either takes the job back out of the slot, or
    // waits until the helper has finished with it.
    let erased: *const (dyn Job + 'static) =
        unsafe { std::mem::transmute(local as *const dyn Job) };
    let seq = {
        let mut slot = h.slot.lock();
        if slot.is_some() {
            None // busy with another search's job: do both here
        } else {
            let seq = h.posted.fetch_add(1, Release) + 1;
            *slot = Some(Posted(erased, seq));
            h.pending.store(true, Release);
            if h.sleeping.load(Acquire) {
                h.wake.notify_one();
            }
            Some(seq)
        }
    };
    // `a` must not unwind past the posted job: catch, settle the job, then resume.
    let ra = catch_unwind(AssertUnwindSafe(a));
    if let Some(seq) = seq {
        let taken_back = {
            let mut slot = h.slot.lock();
            let ours = slot.is_some_and(|p| p.1 == seq);
            if ours {
                *slot = None;
                h.pending.store(false, Release);
            }
            ours
        };
        if !taken_back {
            h.wait_finished(seq);
        }
    }
    cell.run(); // `b` here, unless the helper ran it
    let rb = cell.out.lock().take().expect("the job ran");
    match (ra, rb) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => resume_unwind(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_results_come_back_from_many_threads() {
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for i in 0..2000u64 {
                        let data = vec![i; 64];
                        let (a, b) = join(
                            || data.iter().sum::<u64>(),
                            || data.iter().map(|x| x * t).sum::<u64>(),
                        );
                        assert_eq!((a, b), (64 * i, 64 * i * t));
                    }
                });
            }
        });
    }

    #[test]
    fn a_panic_in_either_is_resumed_and_leaves_the_helper_working() {
        let r = catch_unwind(|| join(|| 1, || -> u32 { panic!("b failed") }));
        assert!(r.is_err());
        let r = catch_unwind(|| join(|| -> u32 { panic!("a failed") }, || 2));
        assert!(r.is_err());
        assert_eq!(join(|| 3, || 4), (3, 4));
    }
}
