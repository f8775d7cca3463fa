//! A summary as ZooKeeper keeps one (AvgMinMaxPercentileCounter): count, sum, min, max, and
//! percentiles over a bounded window of the most recent observations.

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct Summary {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
    recent: VecDeque<u64>,
    /// Observations kept for the percentiles; 0 is `SUMMARY_WINDOW`.
    window: usize,
}

impl Summary {
    /// A summary whose percentiles are taken over its last `window` observations (a smaller
    /// window for summaries kept by the thousand, such as the per-namespace sets).
    pub fn with_window(window: usize) -> Self {
        Summary {
            window: window.max(1),
            ..Summary::default()
        }
    }

    /// Back to empty, keeping the window size (ZooKeeper's reset).
    pub fn reset(&mut self) {
        *self = Summary {
            window: self.window,
            ..Summary::default()
        };
    }

    pub fn observe(&mut self, v: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count = self.count.saturating_add(1);
        self.sum = self.sum.saturating_add(v);
        let window = if self.window == 0 {
            crate::limits::SUMMARY_WINDOW
        } else {
            self.window
        };
        if self.recent.len() >= window {
            self.recent.pop_front();
        }
        self.recent.push_back(v);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// 0 before the first observation, as ZooKeeper reports an empty counter.
    pub fn min(&self) -> u64 {
        self.min
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The mean rounded to 4 decimals (ZooKeeper's AvgMinMaxCounter.getAvg); 0.0 when empty.
    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        ((self.sum as f64 / self.count as f64) * 10_000.0).round() / 10_000.0
    }

    /// The `q` quantile (0..=1) of the recent window, nearest rank; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let mut v: Vec<u64> = self.recent.iter().copied().collect();
        if v.is_empty() {
            return 0;
        }
        v.sort_unstable();
        let rank = (q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize;
        v.get(rank.saturating_sub(1).min(v.len() - 1))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_reports_zeroes() {
        let s = Summary::default();
        assert_eq!((s.count(), s.sum(), s.min(), s.max()), (0, 0, 0, 0));
        assert_eq!(s.avg(), 0.0);
        assert_eq!(s.quantile(0.5), 0);
    }

    #[test]
    fn counts_and_quantiles() {
        let mut s = Summary::default();
        for v in 1..=100 {
            s.observe(v);
        }
        assert_eq!((s.count(), s.sum(), s.min(), s.max()), (100, 5050, 1, 100));
        assert_eq!(s.avg(), 50.5);
        assert_eq!(s.quantile(0.5), 50);
        assert_eq!(s.quantile(0.99), 99);
        assert_eq!(s.quantile(1.0), 100);
    }

    #[test]
    fn a_smaller_window_and_reset() {
        let mut s = Summary::with_window(4);
        for v in 1..=10 {
            s.observe(v);
        }
        assert_eq!(s.recent.len(), 4);
        assert_eq!(s.quantile(0.0), 7);
        s.reset();
        assert_eq!((s.count(), s.sum(), s.min(), s.max()), (0, 0, 0, 0));
        for v in 1..=10 {
            s.observe(v);
        }
        assert_eq!(s.recent.len(), 4);
    }

    #[test]
    fn window_is_bounded() {
        let mut s = Summary::default();
        for v in 0..(crate::limits::SUMMARY_WINDOW as u64 * 3) {
            s.observe(v);
        }
        assert_eq!(s.recent.len(), crate::limits::SUMMARY_WINDOW);
        assert_eq!(s.count(), crate::limits::SUMMARY_WINDOW as u64 * 3);
        assert!(s.quantile(0.0) >= crate::limits::SUMMARY_WINDOW as u64 * 2);
    }
}
