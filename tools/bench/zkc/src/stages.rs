//! The lock handoff, stage by stage (issue 39): where the time between one holder's release and
//! the next holder's acquisition goes, seen from the clients, for any server.
//!
//! Every contender is a session of this one process, so one clock times both ends of a
//! handoff: the holder stamps its delete's send and reply, the waiter the watch event on that
//! node, the listing after it, and its acquisition. Per handoff:
//!
//! - `release_to_event`: delete sent → the waiter's event (the delete made durable — in an
//!   ensemble forwarded, replicated and committed — then applied on the waiter's member and its
//!   watch fired there);
//! - `delete_rtt`: delete sent → its reply at the holder (the same commit, seen by the holder);
//! - `reply_to_event`: the holder's reply → the waiter's event (negative: the event came first);
//! - `event_to_listed`: the event → the reply to the getChildren after it;
//! - `listed_to_held`: that reply → the recipe holds (client work; zero unless it must wait again);
//! - `handoff`: delete sent → a waiter it blocked holds (the sum, along one chain).
//!
//! Also each request's round trip (`create_rtt`, `list_rtt`, `exists_rtt`), the floor's parts.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The stages, in the order they are printed.
pub const NAMES: [&str; 9] = [
    "handoff",
    "release_to_event",
    "delete_rtt",
    "reply_to_event",
    "event_to_listed",
    "listed_to_held",
    "create_rtt",
    "list_rtt",
    "exists_rtt",
];

/// A released node's delete: when it was sent, and when its reply came (once it has).
#[derive(Clone, Copy)]
struct Release {
    sent: Instant,
    replied: Option<Instant>,
}

#[derive(Default)]
pub struct Stages {
    releases: Mutex<HashMap<String, Release>>,
    samples: Mutex<[Vec<i64>; NAMES.len()]>,
}

/// One wait for a blocker, from its event to our next step.
pub struct Woken {
    blocker: String,
    event: Instant,
}

fn us(later: Instant, earlier: Instant) -> i64 {
    match later.checked_duration_since(earlier) {
        Some(d) => d.as_micros() as i64,
        None => -(earlier.duration_since(later).as_micros() as i64),
    }
}

/// A poisoned lock (a panicking contender) still holds usable samples.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Stages {
    fn add(&self, stage: &str, v: i64) {
        if let Some(i) = NAMES.iter().position(|n| *n == stage) {
            lock(&self.samples)[i].push(v);
        }
    }

    /// A request's round trip.
    pub fn rtt(&self, stage: &str, sent: Instant) {
        self.add(stage, us(Instant::now(), sent));
    }

    pub fn delete_sent(&self, path: &str) -> Instant {
        let now = Instant::now();
        let r = Release {
            sent: now,
            replied: None,
        };
        lock(&self.releases).insert(path.to_string(), r);
        now
    }

    pub fn delete_replied(&self, path: &str, sent: Instant) {
        let now = Instant::now();
        if let Some(r) = lock(&self.releases).get_mut(path) {
            r.replied = Some(now);
        }
        self.add("delete_rtt", us(now, sent));
    }

    /// The watch on `blocker` fired now.
    pub fn woken(&self, blocker: &str) -> Woken {
        let event = Instant::now();
        if let Some(r) = lock(&self.releases).get(blocker).copied() {
            self.add("release_to_event", us(event, r.sent));
            if let Some(replied) = r.replied {
                self.add("reply_to_event", us(event, replied));
            }
        }
        Woken {
            blocker: blocker.to_string(),
            event,
        }
    }

    /// The listing after an event came back.
    pub fn listed(&self, w: &Woken) -> Instant {
        let now = Instant::now();
        self.add("event_to_listed", us(now, w.event));
        now
    }

    /// The waiter holds, `listed` after the listing that let it.
    pub fn held(&self, w: &Woken, listed: Instant) {
        let now = Instant::now();
        self.add("listed_to_held", us(now, listed));
        // Kept, not removed: the readers a writer blocked all hold after its one release (a
        // run's releases are a few tens of thousands of entries at most).
        let released = lock(&self.releases).get(&w.blocker).copied();
        if let Some(r) = released {
            self.add("handoff", us(now, r.sent));
        }
    }

    /// `"stages":{"handoff":[p50,p99,count],...}` (microseconds), for the run's JSON line.
    pub fn json(&self) -> String {
        let mut samples = lock(&self.samples);
        let cells: Vec<String> = NAMES
            .iter()
            .zip(samples.iter_mut())
            .filter(|(_, v)| !v.is_empty())
            .map(|(n, v)| {
                v.sort_unstable();
                let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
                format!("\"{n}\":[{},{},{}]", at(0.5), at(0.99), v.len())
            })
            .collect();
        format!(",\"stages\":{{{}}}", cells.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handoff_is_timed_from_the_release_to_the_next_hold() {
        let s = Stages::default();
        let sent = s.delete_sent("/l/a");
        let w = s.woken("/l/a");
        s.delete_replied("/l/a", sent);
        let listed = s.listed(&w);
        s.held(&w, listed);
        let j = s.json();
        for stage in [
            "handoff",
            "release_to_event",
            "delete_rtt",
            "event_to_listed",
            "listed_to_held",
        ] {
            assert!(j.contains(&format!("\"{stage}\":[")), "{stage} in {j}");
        }
        // The event came before the reply here: no reply to time it from then.
        assert!(!j.contains("reply_to_event"), "{j}");
        // Two readers a writer blocked: each one's handoff is timed from the same release.
        s.held(&w, listed);
        assert_eq!(lock(&s.samples)[0].len(), 2);
    }

    #[test]
    fn signed_differences() {
        let a = Instant::now();
        let b = a + std::time::Duration::from_micros(250);
        assert_eq!(us(b, a), 250);
        assert_eq!(us(a, b), -250);
    }
}
