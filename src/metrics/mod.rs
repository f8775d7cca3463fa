//! Metrics: one sample of the server's numbers, taken by the core when asked (so the admin
//! `monitor` command, the Prometheus endpoint and `mntr` read the same values), named and
//! typed as ZooKeeper 3.8's ServerMetrics names them, plus Palisade's own (`palisade_*`).
//!
//! The log and snapshot threads count into [`shared()`] (atomics and small locked
//! summaries); the core's own numbers (latencies, packets) stay in the core's `Stats`.
//! `prometheus.rs` turns a sample into the Prometheus text format with the `prometheus`
//! crate's encoder; `zk.rs` lists ZooKeeper's names and where each value comes from.
//!
//! Owns: the log and snapshot threads' counters, ZooKeeper's metric names, the two output
//! formats. May not touch: anything of the crate but its bounds (`limits`): the core fills a
//! sample, the admin listener serves it.

pub mod monitor;
pub mod namespace;
pub mod progress;
pub mod prometheus;
pub mod sample;
pub mod summary;
pub mod zk;

pub use monitor::{java_double, monitor_fields, monitor_json, round4, Field};
pub use namespace::NamespaceSet;
pub use sample::{Entry, Sample, Value};
pub use summary::Summary;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

/// Counters written by threads other than the core. One per process: a process runs one
/// server (tests that start several in one process read their sum).
#[derive(Default)]
pub struct Shared {
    /// Group-commit syncs of the log, and their durations.
    pub fsyncs: AtomicU64,
    pub fsync_micros: Mutex<Summary>,
    pub fsync_ms: Mutex<Summary>,
    /// Records (txns and digest records) appended to the log, and records per sync.
    pub log_records: AtomicU64,
    pub batch_records: Mutex<Summary>,
    /// Snapshots written (begin to fsynced file), and how long each took in ms.
    pub snapshots: AtomicU64,
    pub snapshot_ms: Mutex<Summary>,
    /// Core time spent capturing each snapshot, ms.
    pub capture_ms: Mutex<Summary>,
    /// Connections refused at accept (maxClientCnxns).
    pub connections_rejected: AtomicU64,
    /// Connections closed because their unsent output passed its budget.
    pub output_budget_closed: AtomicU64,
    /// Start-up: database load time (ms) and txns replayed.
    pub db_init_ms: Mutex<Summary>,
    pub startup_txns: Mutex<Summary>,
}

static SHARED: LazyLock<Shared> = LazyLock::new(Shared::default);

pub fn shared() -> &'static Shared {
    &SHARED
}

impl Shared {
    /// One group-commit sync of `records` records that took `took`.
    pub fn log_synced(&self, records: u64, took: Duration) {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.log_records.fetch_add(records, Ordering::Relaxed);
        self.batch_records.lock().observe(records);
        self.fsync_micros
            .lock()
            .observe(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        self.fsync_ms
            .lock()
            .observe(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
    }

    pub fn snapshot_written(&self, ms: u64) {
        self.snapshots.fetch_add(1, Ordering::Relaxed);
        self.snapshot_ms.lock().observe(ms);
    }

    pub fn snapshot_captured(&self, ms: u64) {
        self.capture_ms.lock().observe(ms);
    }

    pub fn connection_rejected(&self) {
        self.connections_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// For the connection writer: one connection closed for exceeding its output budget.
    pub fn output_budget_exceeded(&self) {
        self.output_budget_closed.fetch_add(1, Ordering::Relaxed);
    }

    pub fn recovered(&self, ms: u64, txns: u64) {
        self.db_init_ms.lock().observe(ms);
        self.startup_txns.lock().observe(txns);
    }
}
