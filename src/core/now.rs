//! The time an input is handled at. The runtime (`runtime.rs`) reads the clock once per step
//! and hands it in with the input; nothing in the engine reads a clock of its own, so a test
//! steps it at any time it chooses.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// The monotonic clock: deadlines, timeouts, latencies.
    pub mono: Instant,
    /// Milliseconds since the Unix epoch: what txns and sessions record (ZooKeeper's `time`).
    pub wall_ms: i64,
}

impl Now {
    /// How long since `then` (zero if `then` is later, as a test may choose).
    pub fn since(&self, then: Instant) -> Duration {
        self.mono.saturating_duration_since(then)
    }

    /// `since` in whole milliseconds.
    pub fn ms_since(&self, then: Instant) -> u64 {
        u64::try_from(self.since(then).as_millis()).unwrap_or(u64::MAX)
    }

    /// `ms` later (tests, and the runtime's view of a step that takes time).
    pub fn plus_ms(&self, ms: u64) -> Now {
        Now {
            mono: self.mono + Duration::from_millis(ms),
            wall_ms: self
                .wall_ms
                .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)),
        }
    }
}
