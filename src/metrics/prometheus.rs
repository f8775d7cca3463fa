//! A sample in the Prometheus text format (0.0.4), through the `prometheus` crate's encoder:
//! ZooKeeper's gauges as gauges, its counters as counters named as ZooKeeper 3.8 (simpleclient
//! 0.9) names them (no `_total` added), its summaries with the quantiles its provider exports.

use super::sample::{Detail, Sample, Value};
use prometheus::proto::{
    Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType, Quantile, Summary as PSummary,
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

/// A summary with the quantiles ZooKeeper's provider exports at `detail`.
fn summary(s: &super::Summary, detail: Detail) -> PSummary {
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
    p
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
                m.set_summary(summary(s, *detail));
                family(&e.name, MetricType::SUMMARY, m)
            }
            // One labelled summary per key (ZooKeeper's PrometheusLabelledSummary, label
            // `key`). An empty set is left out: the encoder refuses a family without
            // metrics (ZooKeeper prints its HELP and TYPE lines alone).
            Value::SummarySet(set, detail) => {
                if set.is_empty() {
                    continue;
                }
                let mut f = family(&e.name, MetricType::SUMMARY, m);
                f.set_metric(
                    set.iter()
                        .map(|(key, s)| {
                            let mut m = Metric::default();
                            let mut l = LabelPair::default();
                            l.set_name("key".to_string());
                            l.set_value(key.clone());
                            m.set_label(vec![l]);
                            m.set_summary(summary(s, *detail));
                            m
                        })
                        .collect(),
                );
                f
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
    use crate::metrics::Summary;

    #[test]
    fn names_and_types_as_zookeeper_exports_them() {
        let mut lat = Summary::default();
        lat.observe(3);
        let mut sample = Sample::default();
        sample.push("version", Value::Text("x".into()));
        sample.push("znode_count", Value::Gauge(5));
        sample.push("commit_count", Value::Counter(2));
        sample.push("readlatency", Value::Summary(lat, Detail::Advanced));
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

    #[test]
    fn summary_sets_are_labelled_by_key() {
        let mut a = Summary::default();
        a.observe(72);
        a.observe(84);
        let mut q = Summary::default();
        q.observe(1);
        let sets = vec![("app".into(), a), ("q\"x".into(), q)];
        let mut sample = Sample::default();
        sample.push("read_per_namespace", Value::SummarySet(sets, Detail::Basic));
        sample.push(
            "write_per_namespace",
            Value::SummarySet(vec![], Detail::Basic),
        );
        let text = encode(&sample).unwrap_or_default();
        assert!(
            text.contains("# TYPE read_per_namespace summary\n"),
            "{text}"
        );
        assert!(
            text.contains("read_per_namespace{key=\"app\",quantile=\"0.5\"} 72\n"),
            "{text}"
        );
        assert!(
            text.contains("read_per_namespace_count{key=\"app\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("read_per_namespace_sum{key=\"app\"} 156\n"),
            "{text}"
        );
        assert!(
            text.contains("read_per_namespace_count{key=\"q\\\"x\"} 1\n"),
            "{text}"
        );
        assert!(!text.contains("write_per_namespace"), "{text}");
    }
}
