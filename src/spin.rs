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
//! thread keeps a moving average of how long its recent waits lasted ([`Arrivals`]) and polls
//! only while that says the next message is likely to come within the polling window; else it
//! parks at once. `spinWaitMicros` caps the window; 0 parks at once, always.

use std::time::{Duration, Instant};

/// Default polling budget: longer than one fdatasync on common disks (~90 µs here) plus the
/// hops around it, so a write's durable notice usually finds the core still polling (150 µs
/// and 300 µs were measured; 300 gave the lock recipe 10% more handoffs, the rest the same).
pub const DEFAULT_SPIN_MICROS: u64 = 300;

/// A wait longer than this many windows counts as this many: one idle minute must not make
/// the average deaf to a burst that follows (with 4 windows it is back under the window after
/// about a dozen quick messages).
const GAP_CLAMP_WINDOWS: u64 = 4;

/// Weight of the newest wait in the average, as a shift: 1/8, so a change of pace shows within
/// a few messages while one odd gap moves the average by an eighth of itself.
const EWMA_SHIFT: u32 = 3;

/// What a thread's recent waits predict about its next one: a moving average of how long each
/// wait lasted (0 when a message was already queued). Pure arithmetic, so the decisions are
/// tested by feeding it gaps.
#[derive(Debug, Clone)]
pub struct Arrivals {
    window_us: u64,
    /// The average, in µs scaled by 2^EWMA_SHIFT (integer arithmetic keeps it exact).
    avg_scaled: u64,
}

impl Arrivals {
    /// Starts as if idle: the first messages after a start are parked for, until they show
    /// the thread is busy.
    pub fn new(window: Duration) -> Arrivals {
        let window_us = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
        Arrivals {
            window_us,
            avg_scaled: window_us
                .saturating_mul(GAP_CLAMP_WINDOWS)
                .saturating_mul(1 << EWMA_SHIFT),
        }
    }

    /// The expected wait, µs.
    pub fn expected_gap_us(&self) -> u64 {
        self.avg_scaled >> EWMA_SHIFT
    }

    /// How long to poll before parking: the whole window while the expected wait is shorter
    /// than it, else nothing.
    pub fn spin_budget(&self) -> Duration {
        if self.window_us > 0 && self.expected_gap_us() < self.window_us {
            Duration::from_micros(self.window_us)
        } else {
            Duration::ZERO
        }
    }

    /// Counts one wait that ended after `gap` (however it ended: polling or parked).
    pub fn observe(&mut self, gap: Duration) {
        let clamp = self.window_us.saturating_mul(GAP_CLAMP_WINDOWS);
        let gap_us = u64::try_from(gap.as_micros())
            .unwrap_or(u64::MAX)
            .min(clamp);
        // avg += (gap - avg) / 8, on the scaled value: avg_scaled = avg_scaled - avg + gap.
        self.avg_scaled = self
            .avg_scaled
            .saturating_sub(self.avg_scaled >> EWMA_SHIFT)
            .saturating_add(gap_us);
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
