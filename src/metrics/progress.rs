//! Progress of a long recovery as log lines: txns and bytes replayed, rate, ETA. Fed by
//! `durability::recovery::recover_with_progress`, one call per log record.

use std::time::{Duration, Instant};

/// One progress line's numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub txns: u64,
    /// Txns to replay in all: the log's last txn minus where replay started.
    pub of_txns: u64,
    pub bytes: u64,
    pub txns_per_s: f64,
    pub mib_per_s: f64,
    /// Seconds left at the rate so far.
    pub eta_s: f64,
}

pub struct Progress {
    last_zxid: Option<i64>,
    started: Option<Instant>,
    last_line: Option<Instant>,
    every: Duration,
    records: u64,
    bytes: u64,
    start_zxid: i64,
    zxid: i64,
}

impl Progress {
    /// `last_zxid`: the log's last txn (from the WAL's report), None for an empty log.
    pub fn new(last_zxid: Option<i64>, every: Duration) -> Self {
        Progress {
            last_zxid,
            started: None,
            last_line: None,
            every,
            records: 0,
            bytes: 0,
            start_zxid: 0,
            zxid: 0,
        }
    }

    /// One record replayed at `now`; returns a line when one is due.
    pub fn record(
        &mut self,
        start_zxid: i64,
        zxid: i64,
        bytes: usize,
        now: Instant,
    ) -> Option<Line> {
        let started = *self.started.get_or_insert(now);
        self.start_zxid = start_zxid;
        self.zxid = zxid;
        self.records = self.records.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes as u64);
        // Looking at the clock every 1024 records keeps the cost per record negligible.
        if !self.records.is_multiple_of(1024) {
            return None;
        }
        let since = now.saturating_duration_since(self.last_line.unwrap_or(started));
        if since < self.every {
            return None;
        }
        self.last_line = Some(now);
        Some(self.line(now.saturating_duration_since(started)))
    }

    fn line(&self, elapsed: Duration) -> Line {
        let txns = u64::try_from(self.zxid.saturating_sub(self.start_zxid)).unwrap_or(0);
        let of_txns = self
            .last_zxid
            .map_or(txns, |l| {
                u64::try_from(l.saturating_sub(self.start_zxid)).unwrap_or(0)
            })
            .max(txns);
        let secs = elapsed.as_secs_f64().max(1e-6);
        let txns_per_s = txns as f64 / secs;
        let eta_s = if txns_per_s > 0.0 {
            (of_txns - txns) as f64 / txns_per_s
        } else {
            0.0
        };
        Line {
            txns,
            of_txns,
            bytes: self.bytes,
            txns_per_s,
            mib_per_s: self.bytes as f64 / secs / (1024.0 * 1024.0),
            eta_s,
        }
    }

    /// Logs a line if one is due.
    pub fn tick(&mut self, start_zxid: i64, zxid: i64, bytes: usize) {
        if let Some(l) = self.record(start_zxid, zxid, bytes, Instant::now()) {
            log(&l);
        }
    }
}

pub fn log(l: &Line) {
    let pct = if l.of_txns == 0 {
        100.0
    } else {
        l.txns as f64 * 100.0 / l.of_txns as f64
    };
    tracing::info!(
        txns = l.txns,
        of_txns = l.of_txns,
        percent = format_args!("{pct:.1}"),
        bytes = l.bytes,
        txns_per_s = l.txns_per_s as u64,
        mib_per_s = format_args!("{:.1}", l.mib_per_s),
        eta_s = format_args!("{:.1}", l.eta_s),
        "replaying the log"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_every_interval_with_rate_and_eta() {
        let mut p = Progress::new(Some(100_000), Duration::from_secs(2));
        let t0 = Instant::now();
        let mut lines = Vec::new();
        // 10,000 txns a second of synthetic time, 100 bytes each, replay from zxid 0.
        for z in 1..=100_000i64 {
            let now = t0 + Duration::from_micros(z as u64 * 100);
            if let Some(l) = p.record(0, z, 100, now) {
                lines.push(l);
            }
        }
        // 10 s of replay: a line about every 2 s.
        assert!((4..=5).contains(&lines.len()), "{lines:?}");
        let first = &lines[0];
        assert_eq!(first.of_txns, 100_000);
        assert!(first.txns > 0 && first.txns < 100_000);
        assert_eq!(first.bytes, first.txns * 100);
        assert!((first.txns_per_s - 10_000.0).abs() < 100.0, "{first:?}");
        let eta_expected = (100_000 - first.txns) as f64 / 10_000.0;
        assert!((first.eta_s - eta_expected).abs() < 0.1, "{first:?}");
    }

    #[test]
    fn quiet_for_a_short_replay() {
        let mut p = Progress::new(Some(500), Duration::from_secs(2));
        let t0 = Instant::now();
        for z in 1..=500i64 {
            assert_eq!(
                p.record(0, z, 10, t0 + Duration::from_millis(z as u64)),
                None
            );
        }
    }
}
