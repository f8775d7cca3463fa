//! A sample in the Prometheus text format (0.0.4), through the `prometheus` crate's encoder:
//! ZooKeeper's gauges as gauges, its counters as counters named as ZooKeeper 3.8 (simpleclient
//! 0.9) names them (no `_total` added), its summaries with the quantiles its provider exports.

use super::sample::{Detail, Sample, Value};
use prometheus::proto::{
    Counter, Gauge, Metric, MetricFamily, MetricType, Quantile, Summary as PSummary,
};
use prometheus::Encoder;

/// The Content-Type of [`encode`]'s output.
pub fn content_type() -> String {
    prometheus::TextEncoder::new().format_type().to_string()
}

fn family(name: &str, kind: MetricType, metric: Metric) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_string());
    // ZooKeeper's provider uses each metric's name as its help text.
    f.set_help(name.to_string());
    f.set_field_type(kind);
    f.set_metric(vec![metric]);
    f
}

/// The families of a sample (text entries have no Prometheus form and are skipped).
pub fn families(sample: &Sample) -> Vec<MetricFamily> {
    let mut out = Vec::with_capacity(sample.entries.len());
    for e in &sample.entries {
        let mut m = Metric::default();
        let f = match &e.value {
            Value::Text(_) => continue,
            Value::Gauge(v) => {
                let mut g = Gauge::default();
                g.set_value(*v as f64);
                m.set_gauge(g);
                family(&e.name, MetricType::GAUGE, m)
            }
            Value::GaugeF(v) => {
                let mut g = Gauge::default();
                g.set_value(*v);
                m.set_gauge(g);
                family(&e.name, MetricType::GAUGE, m)
            }
            Value::Counter(v) => {
                let mut c = Counter::default();
                c.set_value(*v as f64);
                m.set_counter(c);
                family(&e.name, MetricType::COUNTER, m)
            }
            Value::Summary(s, detail) => {
                let qs: &[f64] = match detail {
                    Detail::Basic => &[0.5],
                    Detail::Advanced => &[0.5, 0.9, 0.99],
                };
                let mut p = PSummary::default();
                p.set_sample_count(s.count());
                p.set_sample_sum(s.sum() as f64);
                p.set_quantile(
                    qs.iter()
                        .map(|&q| {
                            let mut x = Quantile::default();
                            x.set_quantile(q);
                            x.set_value(s.quantile(q) as f64);
                            x
                        })
                        .collect(),
                );
                m.set_summary(p);
                family(&e.name, MetricType::SUMMARY, m)
            }
        };
        out.push(f);
    }
    out
}

/// The sample as Prometheus text.
pub fn encode(sample: &Sample) -> Result<String, String> {
    let mut buf = Vec::new();
    prometheus::TextEncoder::new()
        .encode(&families(sample), &mut buf)
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Entry, Summary};

    #[test]
    fn names_and_types_as_zookeeper_exports_them() {
        let mut lat = Summary::default();
        lat.observe(3);
        let sample = Sample {
            entries: vec![
                Entry {
                    name: "version".into(),
                    value: Value::Text("x".into()),
                },
                Entry {
                    name: "znode_count".into(),
                    value: Value::Gauge(5),
                },
                Entry {
                    name: "commit_count".into(),
                    value: Value::Counter(2),
                },
                Entry {
                    name: "readlatency".into(),
                    value: Value::Summary(lat, Detail::Advanced),
                },
            ],
        };
        let text = encode(&sample).unwrap_or_default();
        assert!(!text.contains("version"), "{text}");
        assert!(
            text.contains("# TYPE znode_count gauge\nznode_count 5\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE commit_count counter\ncommit_count 2\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE readlatency summary\n"), "{text}");
        assert!(
            text.contains("readlatency{quantile=\"0.99\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("readlatency_count 1\n"), "{text}");
        assert!(text.contains("readlatency_sum 3\n"), "{text}");
    }
}
