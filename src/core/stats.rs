//! Request counters and latencies, as `srvr`/`mntr` report them.

use std::time::Instant;

#[derive(Default)]
pub(crate) struct Stats {
    pub received: u64,
    pub sent: u64,
    pub latency_min: u64,
    pub latency_max: u64,
    pub latency_sum: u64,
    pub latency_count: u64,
    /// Connections closed because their unsent notifications exceeded their output budget.
    pub closed_output_budget: u64,
}

impl Stats {
    /// One request answered, received at `at` (ZooKeeper reports whole milliseconds).
    pub fn record(&mut self, at: Instant) {
        let ms = at.elapsed().as_millis() as u64;
        if self.latency_count == 0 || ms < self.latency_min {
            self.latency_min = ms;
        }
        self.latency_max = self.latency_max.max(ms);
        self.latency_sum += ms;
        self.latency_count += 1;
    }
}
