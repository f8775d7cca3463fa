//! Request counters and latencies, as `srvr`/`mntr` and the metrics report them.

use super::Core;
use crate::metrics::{NamespaceSet, Summary};
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
    /// Connections closed because their unsent notifications exceeded their output budget.
    pub closed_output_budget: u64,
    /// Sizes of the replies sent without their length prefix, as ZooKeeper's
    /// client_response_stats (last, min, max); None before the first.
    pub response_size: Option<(u64, u64, u64)>,
}

/// The core's part of ZooKeeper's ServerMetrics. `srst` resets only the per-namespace sets'
/// values here; ZooKeeper 3.8.0's resets every ServerMetrics value (docs/ADMIN.md).
#[derive(Default)]
pub(crate) struct CoreMetrics {
    /// Handshakes received (connection_request_count).
    pub connection_requests: u64,
    /// Bytes of the replies sent, length prefix included (response_bytes).
    pub response_bytes: u64,
    /// Latencies in ms by kind (the readlatency and updatelatency summaries).
    pub read_latency: Summary,
    pub update_latency: Summary,
    /// Failed SASL exchanges (auth_failed_count; ZooKeeper 3.8 counts only TLS client
    /// certificate failures there, and Palisade's TLS handshakes fail before the core).
    pub auth_failed: u64,
    /// Bytes read and written per top-level node (read_per_namespace, write_per_namespace:
    /// core/namespaces.rs). Reset by `srst` as ZooKeeper resets them (keys kept).
    pub read_ns: NamespaceSet,
    pub write_ns: NamespaceSet,
}

impl Stats {
    /// A reply frame of `len` bytes (length prefix included) was sent.
    pub fn response_sent(&mut self, len: usize) {
        let n = len.saturating_sub(4) as u64;
        self.response_size = Some(match self.response_size {
            None => (n, n, n),
            Some((_, min, max)) => (n, min.min(n), max.max(n)),
        });
    }

    /// (last, min, max) reply size, -1 each before the first (ZooKeeper's BufferStats).
    pub fn response_sizes(&self) -> (i64, i64, i64) {
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.response_size
            .map_or((-1, -1, -1), |(l, mn, mx)| (i(l), i(mn), i(mx)))
    }

    /// The mean latency in ms, to four decimals as ZooKeeper reports it (0 before the first).
    pub fn latency_avg(&self) -> f64 {
        if self.latency_count == 0 {
            0.0
        } else {
            crate::metrics::round4(self.latency_sum as f64 / self.latency_count as f64)
        }
    }

    /// One request answered at `now`, received at `at` (ZooKeeper reports whole milliseconds).
    pub fn record(&mut self, at: Instant, now: Instant) -> u64 {
        let ms = u64::try_from(now.saturating_duration_since(at).as_millis()).unwrap_or(u64::MAX);
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
    /// How long this server has run, as `monitor` and `server_stats` report it.
    pub(crate) fn uptime_ms(&self) -> u64 {
        self.now.since(self.started).as_millis() as u64
    }

    /// A read answered.
    pub(crate) fn record_read(&mut self, at: Instant) {
        let ms = self.stats.record(at, self.now.mono);
        self.metrics.read_latency.observe(ms);
    }

    /// A write answered after its commit.
    pub(crate) fn record_update(&mut self, at: Instant) {
        let ms = self.stats.record(at, self.now.mono);
        self.metrics.update_latency.observe(ms);
    }
}
