//! One sample of every metric (taken by the core, src/core/metrics_sample.rs, between two
//! messages, so every value in it describes the same moment).

use super::Summary;

/// How much of a summary is reported (ZooKeeper's DetailLevel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    Basic,
    Advanced,
}

#[derive(Clone, Debug)]
pub enum Value {
    /// Reported by `monitor` only (version, server_state).
    Text(String),
    Gauge(i64),
    GaugeF(f64),
    Counter(u64),
    Summary(Summary, Detail),
    /// A summary per key (ZooKeeper's SummarySet): `monitor` names each `<key>_<name>`,
    /// Prometheus labels each `key="<key>"`.
    SummarySet(Vec<(String, Summary)>, Detail),
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub value: Value,
}

#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub entries: Vec<Entry>,
}

impl Sample {
    pub fn push(&mut self, name: &str, value: Value) {
        self.entries.push(Entry {
            name: name.to_string(),
            value,
        });
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.value)
    }
}
