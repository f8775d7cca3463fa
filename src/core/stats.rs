//! Request counters and latencies, as `srvr`/`mntr` and the metrics report them.

use super::Core;
use crate::metrics::Summary;
use std::time::Instant;

/// What `srvr`/`mntr` report, and `srst` resets (ZooKeeper's ServerStats).
#[derive(Default)]
pub(crate) struct Stats {
    pub received: u64,
    pub sent: u64,
    pub latency_min: u64,
    pub latency_max: u64,
    pub latency_sum: u64,
    pub latency_count: u64,
}

/// The core's part of ZooKeeper's ServerMetrics: not reset by `srst`, as in ZooKeeper.
#[derive(Default)]
pub(crate) struct CoreMetrics {
    /// Handshakes received (connection_request_count).
    pub connection_requests: u64,
    /// Latencies in ms by kind (the readlatency and updatelatency summaries).
    pub read_latency: Summary,
    pub update_latency: Summary,
}

impl Stats {
    /// One request answered, received at `at` (ZooKeeper reports whole milliseconds).
    pub fn record(&mut self, at: Instant) -> u64 {
        let ms = at.elapsed().as_millis() as u64;
        if self.latency_count == 0 || ms < self.latency_min {
            self.latency_min = ms;
        }
        self.latency_max = self.latency_max.max(ms);
        self.latency_sum += ms;
        self.latency_count += 1;
        ms
    }
}

impl Core {
    /// A read answered.
    pub(crate) fn record_read(&mut self, at: Instant) {
        let ms = self.stats.record(at);
        self.metrics.read_latency.observe(ms);
    }

    /// A write answered after its commit.
    pub(crate) fn record_update(&mut self, at: Instant) {
        let ms = self.stats.record(at);
        self.metrics.update_latency.observe(ms);
    }
}
