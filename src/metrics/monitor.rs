//! A sample as the AdminServer's `monitor` command reports it.

use super::sample::{Detail, Sample, Value as MValue};
use serde_json::{json, Map, Value};

/// A sample as the `monitor` command reports it: each summary as avg_/min_/max_/cnt_/sum_
/// (and p50_/p95_/p99_/p999_ for the detailed ones).
pub fn monitor_json(sample: &Sample) -> Map<String, Value> {
    let mut m = Map::new();
    for e in &sample.entries {
        let n = &e.name;
        match &e.value {
            MValue::Text(t) => {
                m.insert(n.clone(), json!(t));
            }
            MValue::Gauge(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::GaugeF(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::Counter(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::Summary(s, detail) => {
                m.insert(format!("avg_{n}"), json!(s.avg()));
                m.insert(format!("min_{n}"), json!(s.min()));
                m.insert(format!("max_{n}"), json!(s.max()));
                m.insert(format!("cnt_{n}"), json!(s.count()));
                m.insert(format!("sum_{n}"), json!(s.sum()));
                if *detail == Detail::Advanced {
                    for (p, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)] {
                        m.insert(format!("{p}_{n}"), json!(s.quantile(q)));
                    }
                }
            }
        }
    }
    m
}
