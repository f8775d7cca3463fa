//! Who may hold a connection to the peer port, and how many: links still in their handshake
//! (at once, and from one source address), authenticated links (at once, and per member).
//! Past a bound a connection is closed as soon as it is accepted, so the peer port can never
//! take the descriptors the log and the client port need.
//!
//! A full handshake bound must not keep members out, though: anyone who can reach the port
//! could hold every slot with connections that never speak. A new connection therefore
//! pushes out the oldest pending one that has not yet sent its greeting (of its own source
//! if that source is at its bound, of any source if the port is). A member sends its greeting
//! (or, over TLS, its ClientHello then its greeting) as soon as it connects, so it is past
//! that point long before a flood could push it out; a connection that never speaks keeps a
//! slot only until newer ones arrive.

use crate::limits::{PEER_LINKS, PEER_LINKS_PER_MEMBER, PEER_PENDING, PEER_PENDING_PER_SOURCE};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Counts {
    pending: usize,
    pending_by_source: HashMap<IpAddr, usize>,
    links: usize,
    links_by_member: HashMap<u64, usize>,
    /// Every pending connection, by admission number: the ones still counted.
    live: HashMap<u64, IpAddr>,
    /// Those that have not sent their greeting, oldest first, with what pushes one out.
    silent: BTreeMap<u64, (IpAddr, CancellationToken)>,
    next: u64,
}

impl Counts {
    /// Removes pending connection `seq` from the counts; false if it was no longer counted.
    fn release(&mut self, seq: u64) -> bool {
        self.silent.remove(&seq);
        let Some(source) = self.live.remove(&seq) else {
            return false;
        };
        self.pending = self.pending.saturating_sub(1);
        if let Some(n) = self.pending_by_source.get_mut(&source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.pending_by_source.remove(&source);
            }
        }
        true
    }

    /// Pushes out the oldest silent connection (of `source`, if given): false if none.
    fn push_out(&mut self, source: Option<IpAddr>) -> bool {
        let oldest = self
            .silent
            .iter()
            .find(|(_, (s, _))| source.is_none_or(|want| *s == want))
            .map(|(seq, (_, token))| (*seq, token.clone()));
        let Some((seq, token)) = oldest else {
            return false;
        };
        self.release(seq);
        token.cancel();
        true
    }
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

/// A connection in its handshake; counted until it drops, is promoted, or is pushed out.
pub struct Pending {
    gate: Gate,
    seq: u64,
    pushed_out: CancellationToken,
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

    /// Admits a new connection from `source` to its handshake, if within the bounds, or if
    /// it can take the place of a silent one (see the module's notes).
    pub fn admit(&self, source: IpAddr) -> Option<Pending> {
        let mut c = self.counts.lock();
        let from_source = c.pending_by_source.get(&source).copied().unwrap_or(0);
        if from_source >= self.limits.pending_per_source && !c.push_out(Some(source)) {
            return None;
        }
        let full = c.pending >= self.limits.pending
            || c.pending.saturating_add(c.links)
                >= self.limits.links.saturating_add(self.limits.pending);
        // (One out makes room: links never exceed their own bound.)
        if full && !c.push_out(None) {
            return None;
        }
        let seq = c.next;
        c.next = c.next.wrapping_add(1);
        let pushed_out = CancellationToken::new();
        c.pending += 1;
        *c.pending_by_source.entry(source).or_default() += 1;
        c.live.insert(seq, source);
        c.silent.insert(seq, (source, pushed_out.clone()));
        Some(Pending {
            gate: self.clone(),
            seq,
            pushed_out,
        })
    }

    /// (pending, links) now, for metrics and tests.
    pub fn counts(&self) -> (usize, usize) {
        let c = self.counts.lock();
        (c.pending, c.links)
    }
}

impl Pending {
    /// Its greeting has arrived: a newer connection can no longer push it out.
    pub fn heard(&self) {
        self.gate.counts.lock().silent.remove(&self.seq);
    }

    /// Resolves when a newer connection took its place; its handshake is then abandoned.
    pub async fn pushed_out(&self) {
        self.pushed_out.cancelled().await
    }

    /// The handshake proved the link is `member`'s: it leaves the pending count and counts as
    /// one of that member's links, if within the bounds (and not pushed out meanwhile).
    pub fn promote(self, member: u64) -> Option<Admitted> {
        let gate = self.gate.clone();
        let mut c = gate.counts.lock();
        let of_member = c.links_by_member.get(&member).copied().unwrap_or(0);
        if c.links >= gate.limits.links
            || of_member >= gate.limits.links_per_member
            || !c.release(self.seq)
        {
            return None;
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
        self.gate.counts.lock().release(self.seq);
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
    use futures_util::FutureExt;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    fn gate() -> Gate {
        Gate::new(Limits {
            pending: 3,
            pending_per_source: 2,
            links: 2,
            links_per_member: 1,
        })
    }

    /// Admitted, and greeted: no newer connection can push it out.
    fn greeted(g: &Gate, source: IpAddr) -> Pending {
        let p = g.admit(source).unwrap();
        p.heard();
        p
    }

    fn pushed_out(p: &Pending) -> bool {
        p.pushed_out().now_or_never().is_some()
    }

    #[test]
    fn handshakes_are_bounded_per_source_and_in_all_and_links_per_member() {
        let g = gate();
        let a1 = greeted(&g, ip(1));
        let a2 = greeted(&g, ip(1));
        assert!(g.admit(ip(1)).is_none(), "a third from one source");
        let b1 = greeted(&g, ip(2));
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
        let c = greeted(&g, ip(4));
        assert!(c.promote(9).is_none(), "links are full");
        drop(l1);
        drop(l2);
        assert_eq!(g.counts(), (0, 0));
        assert!(g.admit(ip(1)).is_some());
    }

    /// Connections that never send their greeting cannot hold the slots: a new one takes
    /// the place of the oldest silent one, of its own source first; greeted ones stay.
    #[test]
    fn a_new_connection_pushes_out_the_oldest_silent_one() {
        let g = gate();
        let s1 = g.admit(ip(1)).unwrap();
        let s2 = g.admit(ip(1)).unwrap();
        let t1 = g.admit(ip(2)).unwrap();
        // Source 1 is at its bound: its oldest silent one goes, not source 2's (older).
        let s3 = g.admit(ip(1)).expect("room made in source 1");
        assert!(pushed_out(&s1) && !pushed_out(&s2) && !pushed_out(&t1));
        assert_eq!(g.counts(), (3, 0));
        assert!(
            s1.promote(5).is_none(),
            "a pushed-out handshake is not a link"
        );
        assert_eq!(g.counts(), (3, 0), "and its drop counts nothing twice");
        // The port is full: the oldest silent of any source goes (source 2's, now).
        s2.heard();
        let u1 = g.admit(ip(3)).expect("room made in all");
        assert!(pushed_out(&t1) && !pushed_out(&s2) && !pushed_out(&s3));
        drop(t1);
        assert_eq!(g.counts(), (3, 0));
        // With every pending connection greeted, nothing makes room.
        s3.heard();
        u1.heard();
        assert!(g.admit(ip(4)).is_none());
        assert!(g.admit(ip(1)).is_none());
        drop((s2, s3, u1));
        assert_eq!(g.counts(), (0, 0));
    }
}
