//! The metrics sample, taken on the core thread between two messages, so every value in it
//! describes the same moment; the names are ZooKeeper 3.8's (src/metrics/zk.rs).

use super::fourlw::VERSION;
use super::Core;
use crate::metrics::sample::{Detail, Sample, Value};
use crate::metrics::{shared, zk, Summary};
use std::sync::atomic::Ordering;

fn int(n: usize) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

fn int64(n: u64) -> Value {
    Value::Gauge(i64::try_from(n).unwrap_or(i64::MAX))
}

impl Core {
    /// Every metric now, in the order ZooKeeper 3.8's `monitor` lists them, then Palisade's.
    pub(crate) fn metrics_sample(&self) -> Sample {
        let mut s = Sample::default();
        let st = &self.stats;
        let avg = if st.latency_count == 0 {
            0.0
        } else {
            ((st.latency_sum as f64 / st.latency_count as f64) * 10_000.0).round() / 10_000.0
        };
        let outstanding: usize = self.conns.values().map(|c| c.queue.len()).sum();
        let (fd_open, fd_max) = self.probe.fds.unwrap_or((-1, -1));
        let tree = &self.state.tree;
        s.push("version", Value::Text(VERSION.into()));
        s.push("server_state", Value::Text(self.mode().into()));
        s.push("ephemerals_count", int(tree.ephemeral_count()));
        // Client connections; unlike `mntr` no four-letter-word connection is counted.
        s.push("num_alive_connections", int(self.conns.len()));
        s.push("avg_latency", Value::GaugeF(avg));
        s.push("outstanding_requests", int(outstanding));
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
        s.push(
            "uptime",
            int64(self.now.since(self.started).as_millis() as u64),
        );
        s.push("max_latency", int64(st.latency_max));
        s.push("outstanding_tls_handshake", Value::Gauge(0));
        s.push("min_client_response_size", Value::Gauge(min));
        s.push("non_mtls_local_conn_count", Value::Gauge(0));
        if let Some(v) = self.leader_metrics() {
            // What a ZooKeeper leader adds: its learners (followers and observers), the ones
            // in sync, and (still parsed by tools) zk_followers.
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

        let sh = shared();
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
                "fsynctime" => sh.fsync_ms.lock().clone(),
                "snapshottime" => sh.snapshot_ms.lock().clone(),
                "dbinittime" => sh.db_init_ms.lock().clone(),
                "startup_txns_loaded" => sh.startup_txns.lock().clone(),
                "sync_processor_batch_size" => sh.batch_records.lock().clone(),
                _ => Summary::default(),
            };
            s.push(name, Value::Summary(v, Detail::Basic));
        }
        for &name in zk::ADVANCED_SUMMARIES {
            let v = match name {
                "readlatency" => self.metrics.read_latency.clone(),
                "updatelatency" => self.metrics.update_latency.clone(),
                _ => Summary::default(),
            };
            s.push(name, Value::Summary(v, Detail::Advanced));
        }
        // ZooKeeper's summary sets, last among its metrics as in its `mntr`.
        s.push(
            "read_per_namespace",
            Value::SummarySet(self.metrics.read_ns.entries(), Detail::Basic),
        );
        s.push(
            "write_per_namespace",
            Value::SummarySet(self.metrics.write_ns.entries(), Detail::Basic),
        );

        s.push(
            "palisade_wal_fsyncs_total",
            Value::Counter(sh.fsyncs.load(Ordering::Relaxed)),
        );
        s.push(
            "palisade_wal_records_total",
            Value::Counter(sh.log_records.load(Ordering::Relaxed)),
        );
        s.push(
            "palisade_wal_batch_records",
            Value::Summary(sh.batch_records.lock().clone(), Detail::Advanced),
        );
        s.push(
            "palisade_wal_fsync_micros",
            Value::Summary(sh.fsync_micros.lock().clone(), Detail::Advanced),
        );
        s.push(
            "palisade_snapshots_written_total",
            Value::Counter(sh.snapshots.load(Ordering::Relaxed)),
        );
        s.push(
            "palisade_snapshot_write_ms",
            Value::Summary(sh.snapshot_ms.lock().clone(), Detail::Basic),
        );
        s.push(
            "palisade_snapshot_capture_ms",
            Value::Summary(sh.capture_ms.lock().clone(), Detail::Basic),
        );
        s.push(
            "palisade_connections_closed_output_budget_total",
            Value::Counter(sh.output_budget_closed.load(Ordering::Relaxed)),
        );
        s.push("palisade_last_zxid", Value::Gauge(self.state.zxid()));
        s
    }
}
