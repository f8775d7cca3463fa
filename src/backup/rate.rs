//! ZooKeeper's RateLimiter (server/util/RateLimiter.java) as its `snapshot` and `restore`
//! commands use it: `rate` calls per interval, the count refilled when more than the interval
//! has passed since the last refill (the first call is always allowed).

use parking_lot::Mutex;
use std::time::{Duration, Instant};

pub struct RateLimiter {
    rate: u32,
    interval: Duration,
    state: Mutex<(Instant, u32)>,
}

impl RateLimiter {
    pub fn new(rate: u32, interval: Duration) -> Self {
        RateLimiter {
            rate,
            interval,
            state: Mutex::new((Instant::now(), rate)),
        }
    }

    pub fn allow(&self) -> bool {
        let now = Instant::now();
        let mut s = self.state.lock();
        if now.saturating_duration_since(s.0) > self.interval {
            *s = (now, self.rate);
        }
        if s.1 > 0 {
            s.1 -= 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_interval() {
        let r = RateLimiter::new(1, Duration::from_millis(200));
        assert!(r.allow());
        assert!(!r.allow());
        std::thread::sleep(Duration::from_millis(250));
        assert!(r.allow());
        assert!(!r.allow());
        // An interval of 0 (ZooKeeper's tests use it): every call once a millisecond has passed.
        let r = RateLimiter::new(1, Duration::ZERO);
        assert!(r.allow());
        std::thread::sleep(Duration::from_millis(2));
        assert!(r.allow());
    }
}
