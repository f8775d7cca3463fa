//! Results: every latency kept (microseconds; a run is at most a few million ops), sorted once
//! at the end for exact percentiles, and printed as one JSON line.

use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Latencies {
    us: Vec<u32>,
    pub errors: u64,
    /// With a timeline (`--timeline`): every request's [completion ms since the run's start,
    /// latency µs], so latencies can be split by what the server was doing at the time.
    timeline: Option<Vec<[u32; 2]>>,
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u128::from(u32::MAX)) as u32
}

impl Latencies {
    pub fn with_timeline(on: bool) -> Latencies {
        Latencies {
            timeline: on.then(Vec::new),
            ..Latencies::default()
        }
    }

    pub fn record(&mut self, d: Duration) {
        self.us.push(micros(d));
    }

    /// `record`, plus the timeline entry if there is one (the clock is read only then).
    pub fn record_at(&mut self, d: Duration, run_start: Instant) {
        self.record(d);
        if let Some(t) = self.timeline.as_mut() {
            let ms = run_start.elapsed().as_millis().min(u128::from(u32::MAX)) as u32;
            t.push([ms, micros(d)]);
        }
    }

    pub fn merge(&mut self, other: Latencies) {
        self.us.extend(other.us);
        self.errors += other.errors;
        if let Some(o) = other.timeline {
            self.timeline.get_or_insert_with(Vec::new).extend(o);
        }
    }

    /// Writes the timeline as little-endian u32 pairs (ms, µs); returns how many.
    pub fn write_timeline(&self, path: &std::path::Path) -> std::io::Result<usize> {
        let t = self.timeline.as_deref().unwrap_or_default();
        let mut buf = Vec::with_capacity(t.len() * 8);
        for [ms, us] in t {
            buf.extend_from_slice(&ms.to_le_bytes());
            buf.extend_from_slice(&us.to_le_bytes());
        }
        std::fs::write(path, buf)?;
        Ok(t.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_kept_merged_and_written() {
        let start = Instant::now();
        let mut a = Latencies::with_timeline(true);
        a.record_at(Duration::from_micros(250), start);
        let mut b = Latencies::with_timeline(true);
        b.record_at(Duration::from_micros(7), start);
        a.merge(b);
        // Without a timeline, nothing is kept (and nothing is merged in from one).
        let mut off = Latencies::default();
        off.record_at(Duration::from_micros(1), start);
        assert!(off.timeline.is_none());
        a.merge(off);
        assert_eq!(a.count(), 3);
        let dir = std::env::temp_dir().join(format!("bench-timeline-{}", std::process::id()));
        assert_eq!(a.write_timeline(&dir).unwrap(), 2);
        let raw = std::fs::read(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        let words: Vec<u32> = raw
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words.len(), 4);
        assert_eq!((words[1], words[3]), (250, 7));
        assert!(words[0] < 1000 && words[2] < 1000);
    }
}
