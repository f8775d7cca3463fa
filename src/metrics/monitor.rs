//! A sample as ZooKeeper's monitor reports it — the AdminServer's `monitor` command (JSON) and
//! the `mntr` four-letter word (`zk_<name>\t<value>` lines) — from one list of fields, so the
//! two carry the same keys and values: each summary as avg_/min_/max_/cnt_/sum_ (and
//! p50_/p95_/p99_/p999_ for the detailed ones), as ZooKeeper's metrics provider dumps them.

use super::sample::{Detail, Sample, Value as MValue};
use super::Summary;
use serde_json::{json, Map, Value};

/// One reported value.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Text(String),
    Int(i64),
    UInt(u64),
    Float(f64),
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Text(t) => f.write_str(t),
            Field::Int(v) => write!(f, "{v}"),
            Field::UInt(v) => write!(f, "{v}"),
            Field::Float(v) => f.write_str(&java_double(*v)),
        }
    }
}

/// `value` rounded to 4 decimals, half up (ZooKeeper's AvgMinMaxCounter.getAvg).
pub fn round4(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// A double as Java's Double.toString prints it: the shortest form that reads back the same,
/// with at least one decimal ("0.0", "12.5", "0.4754"), scientific below 10^-3 and from 10^7.
pub fn java_double(v: f64) -> String {
    if v == 0.0 {
        return "0.0".into();
    }
    let a = v.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{v}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exp}")
    }
}

/// Every field of the sample, in the sample's order.
pub fn monitor_fields(sample: &Sample) -> Vec<(String, Field)> {
    let mut out = Vec::with_capacity(sample.entries.len() * 5);
    for e in &sample.entries {
        let n = &e.name;
        match &e.value {
            MValue::Text(t) => out.push((n.clone(), Field::Text(t.clone()))),
            MValue::Gauge(v) => out.push((n.clone(), Field::Int(*v))),
            MValue::GaugeF(v) => out.push((n.clone(), Field::Float(*v))),
            MValue::Counter(v) => out.push((n.clone(), Field::UInt(*v))),
            MValue::Summary(s, detail) => summary_fields(&mut out, n, s, *detail),
            // ZooKeeper's AvgMinMaxCounterSet names each key's counter `<key>_<name>`.
            MValue::SummarySet(set, detail) => {
                for (key, s) in set {
                    summary_fields(&mut out, &format!("{key}_{n}"), s, *detail);
                }
            }
        }
    }
    out
}

fn summary_fields(out: &mut Vec<(String, Field)>, n: &str, s: &Summary, detail: Detail) {
    out.push((format!("avg_{n}"), Field::Float(s.avg())));
    out.push((format!("min_{n}"), Field::UInt(s.min())));
    out.push((format!("max_{n}"), Field::UInt(s.max())));
    out.push((format!("cnt_{n}"), Field::UInt(s.count())));
    out.push((format!("sum_{n}"), Field::UInt(s.sum())));
    if detail == Detail::Advanced {
        for (p, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)] {
            out.push((format!("{p}_{n}"), Field::UInt(s.quantile(q))));
        }
    }
}

/// The `monitor` command's JSON.
pub fn monitor_json(sample: &Sample) -> Map<String, Value> {
    monitor_fields(sample)
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Field::Text(t) => json!(t),
                Field::Int(i) => json!(i),
                Field::UInt(u) => json!(u),
                Field::Float(x) => json!(x),
            };
            (k, v)
        })
        .collect()
}
