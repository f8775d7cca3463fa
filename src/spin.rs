//! Spin, then park — but only while messages come often: how the core and log threads wait for
//! their next message.
//!
//! Parking a thread and waking it costs 20–40 µs on the virtual machines this runs on (the
//! idle vCPU halts, and the wake-up goes through the hypervisor) — more than the core spends
//! on a request. A write crosses four such hand-offs (connection → core → log → core →
//! connection) and a lock handoff a dozen, so on a latency-bound load the wake-ups, not the
//! work, set the pace. Polling for a short while first catches the next message without
//! sleeping: the core polls through the fdatasync of the batch it just handed to the log.
//! Between polls the thread yields its CPU, so on a machine with few cores the threads that
//! do have work (connection tasks, clients) still run.
//!
//! Polling costs a core while it lasts, though, and under a light load (requests trickling in
//! every millisecond or more) nearly every poll runs to its end for nothing. So each waiting
//! thread keeps a moving average of how many of its recent waits ended within the polling
//! window ([`Arrivals`]) and polls only while that says the next message is likely to come
//! within it; else it parks at once. `spinWaitMicros` is the window; 0 parks at once, always.

use std::time::{Duration, Instant};

/// Default polling budget: longer than one fdatasync on common disks (~90 µs here) plus the
/// hops around it, so a write's durable notice usually finds the core still polling (150 µs
/// and 300 µs were measured; 300 gave the lock recipe 10% more handoffs, the rest the same).
pub const DEFAULT_SPIN_MICROS: u64 = 300;

/// Weight of the newest wait in the average, as a shift: 1/8, so a change of pace shows within
/// a few messages while one odd wait moves the average by an eighth.
const EWMA_SHIFT: u32 = 3;

/// Fixed-point 1.0 of the hit rate.
const ONE: u32 = 1 << 16;

/// What a thread's recent waits predict about its next one: a moving average of how many of
/// them ended within the polling window (a hit: polling would have caught the message, or
/// did). The thread polls while at least two thirds did (the log thread: half, see
/// [`Arrivals::lenient`]).
///
/// A rate of hits rather than a mean of the waits' lengths: on a shared machine a loop of
/// quick round trips still sees, now and then, a wait of milliseconds (a client or connection
/// task preempted), and a mean would let a few of those stop the polling that serves every
/// other message; a share of hits moves by an eighth per odd wait. Two thirds, not a half: a
/// light write load alternates a short wait (the fsync) with a long one (the next request),
/// and polling there would spend a window on every other wait for nothing.
///
/// Pure arithmetic, so the decisions are tested by feeding it waits.
#[derive(Debug, Clone)]
pub struct Arrivals {
    window: Duration,
    /// Share of recent waits that were hits, scaled by ONE.
    hits: u32,
    /// Polls while `hits` is at least this (scaled by ONE).
    min_hits: u32,
}

impl Arrivals {
    /// Starts as if idle (no hits): the first messages after a start are parked for, until
    /// about nine quick ones in a row show the thread is busy. Polls while ⅔ of waits hit.
    pub fn new(window: Duration) -> Arrivals {
        Arrivals {
            window,
            hits: 0,
            min_hits: ONE / 3 * 2 + 1,
        }
    }

    /// Polls while half of the waits hit: for the log thread, whose waits under a light write
    /// load are all long (one per request), so the alternation that ⅔ guards against does not
    /// occur there, while under a lock recipe its waits between batches straddle the window.
    pub fn lenient(window: Duration) -> Arrivals {
        Arrivals {
            min_hits: ONE / 2,
            ..Arrivals::new(window)
        }
    }

    /// The share of recent waits that ended within the window, 0 to 1.
    pub fn hit_rate(&self) -> f64 {
        f64::from(self.hits) / f64::from(ONE)
    }

    /// How long to poll before parking: the whole window while recent waits say the next
    /// message is likely within it, else nothing.
    pub fn spin_budget(&self) -> Duration {
        if !self.window.is_zero() && self.hits >= self.min_hits {
            self.window
        } else {
            Duration::ZERO
        }
    }

    /// Counts one wait that ended after `gap` (however it ended: polling or parked).
    pub fn observe(&mut self, gap: Duration) {
        // hits += (hit - hits) / 8; stays within 0..=ONE.
        let hit = if gap < self.window {
            ONE >> EWMA_SHIFT
        } else {
            0
        };
        self.hits = self.hits - (self.hits >> EWMA_SHIFT) + hit;
    }
}

/// One thread's waiting: [`Arrivals`] deciding between polling and parking, fed with the
/// length of every wait.
pub struct Spinner {
    arrivals: Arrivals,
}

impl Spinner {
    pub fn new(window: Duration) -> Spinner {
        Spinner {
            arrivals: Arrivals::new(window),
        }
    }

    /// With [`Arrivals::lenient`]: the log thread's.
    pub fn lenient(window: Duration) -> Spinner {
        Spinner {
            arrivals: Arrivals::lenient(window),
        }
    }

    /// The next message from `src`: `try_once` (which must not block) if it has one, else
    /// polled for while the recent waits say it is coming soon, else `park` (which blocks
    /// until one comes).
    pub fn wait<S, T>(
        &mut self,
        src: &mut S,
        mut try_once: impl FnMut(&mut S) -> Option<T>,
        park: impl FnOnce(&mut S) -> T,
    ) -> T {
        let start = Instant::now();
        let got = match try_once(src) {
            Some(v) => Some(v),
            None => poll_for(self.arrivals.spin_budget(), || try_once(src)),
        };
        let v = match got {
            Some(v) => v,
            None => park(src),
        };
        self.arrivals.observe(start.elapsed());
        v
    }

    /// [`Spinner::wait`] on a std channel: its next message, or `None` once every sender is
    /// gone.
    pub fn recv<T>(&mut self, rx: &std::sync::mpsc::Receiver<T>) -> Option<T> {
        use std::sync::mpsc::TryRecvError;
        self.wait(
            &mut &*rx,
            |rx| match rx.try_recv() {
                Ok(m) => Some(Some(m)),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(None),
            },
            |rx| rx.recv().ok(),
        )
    }
}

/// Polls `try_once` until it returns `Some` or `budget` has passed (then `None`: the caller
/// parks). `try_once` must not block.
pub fn poll_for<T>(budget: Duration, mut try_once: impl FnMut() -> Option<T>) -> Option<T> {
    if budget.is_zero() {
        return None;
    }
    let start = Instant::now();
    loop {
        if let Some(v) = try_once() {
            return Some(v);
        }
        if start.elapsed() >= budget {
            return None;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
#[path = "spin_test.rs"]
mod tests;
