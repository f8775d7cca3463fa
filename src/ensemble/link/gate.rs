//! Who may hold a connection to the peer port, and how many: links still in their handshake
//! (at once, and from one source address), authenticated links (at once, and per member).
//! Past a bound a connection is closed as soon as it is accepted, so the peer port can never
//! take the descriptors the log and the client port need.

use crate::limits::{PEER_LINKS, PEER_LINKS_PER_MEMBER, PEER_PENDING, PEER_PENDING_PER_SOURCE};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

#[derive(Default)]
struct Counts {
    pending: usize,
    pending_by_source: HashMap<IpAddr, usize>,
    links: usize,
    links_by_member: HashMap<u64, usize>,
}

#[derive(Clone)]
pub struct Gate {
    counts: Arc<Mutex<Counts>>,
    limits: Limits,
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub pending: usize,
    pub pending_per_source: usize,
    pub links: usize,
    pub links_per_member: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pending: PEER_PENDING,
            pending_per_source: PEER_PENDING_PER_SOURCE,
            links: PEER_LINKS,
            links_per_member: PEER_LINKS_PER_MEMBER,
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new(Limits::default())
    }
}

/// A connection in its handshake; counted until it drops or is promoted.
pub struct Pending {
    gate: Gate,
    source: IpAddr,
}

/// An authenticated link; counted until it drops.
pub struct Admitted {
    gate: Gate,
    member: u64,
}

impl Gate {
    pub fn new(limits: Limits) -> Self {
        Gate {
            counts: Arc::default(),
            limits,
        }
    }

    /// Admits a new connection from `source` to its handshake, if within the bounds.
    pub fn admit(&self, source: IpAddr) -> Option<Pending> {
        let mut c = self.counts.lock();
        let from_source = c.pending_by_source.get(&source).copied().unwrap_or(0);
        if c.pending >= self.limits.pending
            || from_source >= self.limits.pending_per_source
            || c.pending.saturating_add(c.links)
                >= self.limits.links.saturating_add(self.limits.pending)
        {
            return None;
        }
        c.pending += 1;
        *c.pending_by_source.entry(source).or_default() += 1;
        Some(Pending {
            gate: self.clone(),
            source,
        })
    }

    /// (pending, links) now, for metrics and tests.
    pub fn counts(&self) -> (usize, usize) {
        let c = self.counts.lock();
        (c.pending, c.links)
    }
}

impl Pending {
    /// The handshake proved the link is `member`'s: it leaves the pending count and counts as
    /// one of that member's links, if within the bounds.
    pub fn promote(self, member: u64) -> Option<Admitted> {
        let gate = self.gate.clone();
        let mut c = gate.counts.lock();
        let of_member = c.links_by_member.get(&member).copied().unwrap_or(0);
        if c.links >= gate.limits.links || of_member >= gate.limits.links_per_member {
            return None; // `self` drops after the lock: its pending count goes then
        }
        c.links += 1;
        *c.links_by_member.entry(member).or_default() += 1;
        drop(c);
        drop(self);
        Some(Admitted { gate, member })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut c = self.gate.counts.lock();
        c.pending = c.pending.saturating_sub(1);
        if let Some(n) = c.pending_by_source.get_mut(&self.source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.pending_by_source.remove(&self.source);
            }
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut c = self.gate.counts.lock();
        c.links = c.links.saturating_sub(1);
        if let Some(n) = c.links_by_member.get_mut(&self.member) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.links_by_member.remove(&self.member);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn handshakes_are_bounded_per_source_and_in_all_and_links_per_member() {
        let g = Gate::new(Limits {
            pending: 3,
            pending_per_source: 2,
            links: 2,
            links_per_member: 1,
        });
        let a1 = g.admit(ip(1)).unwrap();
        let a2 = g.admit(ip(1)).unwrap();
        assert!(g.admit(ip(1)).is_none(), "a third from one source");
        let b1 = g.admit(ip(2)).unwrap();
        assert!(g.admit(ip(3)).is_none(), "a fourth in all");
        assert_eq!(g.counts(), (3, 0));

        let l1 = a1.promote(7).unwrap();
        assert!(a2.promote(7).is_none(), "a second link of member 7");
        assert_eq!(
            g.counts(),
            (1, 1),
            "the refused promotion left the pending count"
        );
        let l2 = b1.promote(8).unwrap();
        assert_eq!(g.counts(), (0, 2));
        let c = g.admit(ip(4)).unwrap();
        assert!(c.promote(9).is_none(), "links are full");
        drop(l1);
        drop(l2);
        assert_eq!(g.counts(), (0, 0));
        assert!(g.admit(ip(1)).is_some());
    }
}
