//! Results: every latency kept (microseconds; a run is at most a few million ops), sorted once
//! at the end for exact percentiles, and printed as one JSON line.

use std::time::Duration;

#[derive(Default)]
pub struct Latencies {
    us: Vec<u32>,
    pub errors: u64,
}

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.us.push(d.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    pub fn merge(&mut self, other: Latencies) {
        self.us.extend(other.us);
        self.errors += other.errors;
    }

    pub fn count(&self) -> u64 {
        self.us.len() as u64
    }

    /// The q-quantile in microseconds (0 when empty); call after `sort`.
    fn quantile(&self, q: f64) -> u32 {
        if self.us.is_empty() {
            return 0;
        }
        let i = ((self.us.len() as f64 - 1.0) * q).round() as usize;
        self.us.get(i).copied().unwrap_or(0)
    }

    /// The JSON line of a run: its identity, throughput and latency percentiles.
    pub fn report(
        mut self,
        workload: &str,
        sessions: u64,
        inflight: usize,
        secs: f64,
        extra: &str,
    ) -> String {
        self.us.sort_unstable();
        let ops = self.count();
        format!(
            "{{\"workload\":\"{workload}\",\"sessions\":{sessions},\"inflight\":{inflight},\"ops\":{ops},\"seconds\":{secs:.3},\"ops_per_s\":{:.1},\"p50_us\":{},\"p99_us\":{},\"p999_us\":{},\"errors\":{}{extra}}}",
            ops as f64 / secs.max(1e-9),
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(0.999),
            self.errors
        )
    }
}
