//! The metrics sample, taken on the core thread between two messages, so every value in it
//! describes the same moment; the names are ZooKeeper 3.8's (src/metrics/zk.rs). What a
//! sample holds is src/metrics/sample.rs.

use super::fourlw::VERSION;
use super::Core;
use crate::metrics::sample::{Detail, Sample, Value};
use crate::metrics::{shared, zk, Shared, Summary};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

fn int(n: usize) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

fn int64(n: u64) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

fn count(c: &AtomicU64) -> Value {
    Value::Counter(c.load(Ordering::Relaxed))
}

fn summary(s: &Mutex<Summary>, detail: Detail) -> Value {
    Value::Summary(s.lock().clone(), detail)
}

impl Core {
    /// Every metric now, in the order ZooKeeper 3.8's `monitor` lists them, then Palisade's.
    pub(crate) fn metrics_sample(&self) -> Sample {
        let mut s = Sample::default();
        self.push_server(&mut s);
        self.push_ensemble(&mut s);
        self.push_server_metrics(&mut s, shared());
        push_palisade(&mut s, shared());
        s.push("palisade_last_zxid", Value::Gauge(self.state.zxid()));
        s
    }

    /// ZooKeeper's server gauges (its ZooKeeperServerBean and ServerStats).
    fn push_server(&self, s: &mut Sample) {
        let st = &self.stats;
        let (fd_open, fd_max) = self.probe.fds.unwrap_or((-1, -1));
        let tree = &self.state.tree;
        s.push("version", Value::Text(VERSION.into()));
        s.push("server_state", Value::Text(self.mode().into()));
        s.push("ephemerals_count", int(tree.ephemeral_count()));
        // Client connections; unlike `mntr` no four-letter-word connection is counted.
        s.push("num_alive_connections", int(self.conns.len()));
        s.push("avg_latency", Value::GaugeF(st.latency_avg()));
        s.push("outstanding_requests", int(self.outstanding()));
        s.push("znode_count", int(tree.znode_count()));
        s.push("global_sessions", int(self.liveness.len()));
        s.push("non_mtls_remote_conn_count", Value::Gauge(0));
        // Reply sizes (notifications are not counted); -1 before the first, as ZooKeeper.
        let (last, min, max) = st.response_sizes();
        s.push("last_client_response_size", Value::Gauge(last));
        s.push("packets_sent", int64(st.sent));
        s.push("packets_received", int64(st.received));
        s.push("max_client_response_size", Value::Gauge(max));
        s.push("connection_drop_probability", Value::GaugeF(0.0));
        s.push("watch_count", int(self.watches.count()));
        s.push("auth_failed_count", int64(self.metrics.auth_failed));
        s.push("min_latency", int64(st.latency_min));
        s.push("max_file_descriptor_count", Value::Gauge(fd_max));
        s.push("approximate_data_size", int64(tree.approximate_data_size()));
        s.push("open_file_descriptor_count", Value::Gauge(fd_open));
        s.push("local_sessions", Value::Gauge(0));
        s.push("uptime", int64(self.uptime_ms()));
        s.push("max_latency", int64(st.latency_max));
        s.push("outstanding_tls_handshake", Value::Gauge(0));
        s.push("min_client_response_size", Value::Gauge(min));
        s.push("non_mtls_local_conn_count", Value::Gauge(0));
    }

    /// What a ZooKeeper leader adds: its learners (followers and observers), the ones in
    /// sync, and (still parsed by tools) zk_followers; a member's quorum size.
    fn push_ensemble(&self, s: &mut Sample) {
        if let Some(v) = self.leader_metrics() {
            let n = |x: u16| Value::Gauge(i64::from(x));
            s.push("learners", n(v.followers + v.observers));
            s.push("synced_followers", n(v.synced_followers));
            s.push("synced_non_voting_followers", n(v.synced_non_voting));
            s.push("synced_observers", n(v.synced_observers));
            s.push("pending_syncs", Value::Gauge(0));
            s.push("followers", n(v.followers + v.observers));
        }
        if let Some(q) = self.quorum_size() {
            s.push("quorum_size", int(q));
        }
    }

    /// ZooKeeper's ServerMetrics: its counters and summaries, then its summary sets, last
    /// among its metrics as in its `mntr`. Those Palisade does not measure are zero.
    fn push_server_metrics(&self, s: &mut Sample, sh: &Shared) {
        let st = &self.stats;
        for &name in zk::COUNTERS {
            let v = match name {
                "connection_rejected" => sh.connections_rejected.load(Ordering::Relaxed),
                // Every request passes prep in ZooKeeper, reads included.
                "prep_processor_request_queued" => st.received,
                "connection_request_count" => self.metrics.connection_requests,
                "sync_processor_request_queued" => sh.log_records.load(Ordering::Relaxed),
                "response_bytes" => self.metrics.response_bytes,
                _ => 0,
            };
            s.push(name, Value::Counter(v));
        }
        for &name in zk::BASIC_SUMMARIES {
            let v = match name {
                "fsynctime" => summary(&sh.fsync_ms, Detail::Basic),
                "snapshottime" => summary(&sh.snapshot_ms, Detail::Basic),
                "dbinittime" => summary(&sh.db_init_ms, Detail::Basic),
                "startup_txns_loaded" => summary(&sh.startup_txns, Detail::Basic),
                "sync_processor_batch_size" => summary(&sh.batch_records, Detail::Basic),
                _ => Value::Summary(Summary::default(), Detail::Basic),
            };
            s.push(name, v);
        }
        for &name in zk::ADVANCED_SUMMARIES {
            let v = match name {
                "readlatency" => self.metrics.read_latency.clone(),
                "updatelatency" => self.metrics.update_latency.clone(),
                _ => Summary::default(),
            };
            s.push(name, Value::Summary(v, Detail::Advanced));
        }
        let set =
            |ns: &crate::metrics::NamespaceSet| Value::SummarySet(ns.entries(), Detail::Basic);
        s.push("read_per_namespace", set(&self.metrics.read_ns));
        s.push("write_per_namespace", set(&self.metrics.write_ns));
    }
}

/// Palisade's own: the log's and the snapshot writer's, and the connections the output
/// budget closed.
fn push_palisade(s: &mut Sample, sh: &Shared) {
    let rows = [
        ("palisade_wal_fsyncs_total", count(&sh.fsyncs)),
        ("palisade_wal_records_total", count(&sh.log_records)),
        (
            "palisade_wal_batch_records",
            summary(&sh.batch_records, Detail::Advanced),
        ),
        (
            "palisade_wal_fsync_micros",
            summary(&sh.fsync_micros, Detail::Advanced),
        ),
        ("palisade_snapshots_written_total", count(&sh.snapshots)),
        (
            "palisade_snapshot_write_ms",
            summary(&sh.snapshot_ms, Detail::Basic),
        ),
        (
            "palisade_snapshot_capture_ms",
            summary(&sh.capture_ms, Detail::Basic),
        ),
        (
            "palisade_connections_closed_output_budget_total",
            count(&sh.output_budget_closed),
        ),
    ];
    for (name, v) in rows {
        s.push(name, v);
    }
}
