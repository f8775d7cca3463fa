//! Session liveness, the part of sessions that is this server's own (the replicated part —
//! id, timeout, ephemerals — is in `state`): each live session's deadline, the connection
//! it is attached to, whether its closeSession is prepped; ids as ZooKeeper builds them and
//! passwords derived from the id and the server secret (so they survive restarts).
//!
//! Expiry uses tick buckets, as ZooKeeper's ExpiryQueue: deadlines are rounded up to a tick
//! boundary, and a session is listed under its deadline's tick when that deadline moves to a
//! new tick. A tick looks only at the buckets that are due, skipping entries whose session
//! was touched since (its deadline is later than the bucket's), so a tick costs the sessions
//! that expire or moved, not every session.

use hashbrown::HashMap;
use std::collections::BTreeMap;

pub struct LiveSession {
    pub timeout_ms: i32,
    /// Expiry time, ms on the server's monotonic clock, rounded up to a tick boundary.
    pub deadline_ms: u64,
    pub conn: Option<u64>,
    /// A closeSession txn for it is prepped: its requests now fail with SESSIONEXPIRED.
    pub closing: bool,
}

pub struct Liveness {
    map: HashMap<i64, LiveSession>,
    /// Deadline (a tick boundary) → sessions listed under it; entries go stale when their
    /// session's deadline moves on, and are dropped when their bucket comes due.
    buckets: BTreeMap<u64, Vec<i64>>,
    next_id: i64,
    secret: [u8; 16],
    tick_ms: u64,
}

impl Liveness {
    /// `now_wall_ms` seeds ids like ZooKeeper: `(now << 24) >>> 8`, server id 0 in the top byte.
    pub fn new(secret: [u8; 16], tick_ms: u64, now_wall_ms: i64) -> Self {
        let next_id = (((now_wall_ms as u64) << 24) >> 8) as i64;
        Liveness {
            map: HashMap::new(),
            buckets: BTreeMap::new(),
            next_id,
            secret,
            tick_ms: tick_ms.max(1),
        }
    }

    /// An ensemble member's ids carry its `myid` in the top byte, as ZooKeeper's, so members
    /// allocate without asking each other.
    pub fn set_server_id(&mut self, myid: u64) {
        self.next_id = (self.next_id & 0x00ff_ffff_ffff_ffff) | ((myid as i64) << 56);
    }

    /// The key passwords derive from (an ensemble's, shared by every member).
    pub fn set_secret(&mut self, secret: [u8; 16]) {
        self.secret = secret;
    }

    pub fn allocate_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// The 16-byte password of a session: SHA-1 of the server secret and the id, truncated.
    pub fn password(&self, id: i64) -> [u8; 16] {
        let mut h = sha1_smol::Sha1::new();
        h.update(&self.secret);
        h.update(&id.to_be_bytes());
        let d = h.digest().bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(d.get(..16).unwrap_or(&[0; 16]));
        out
    }

    fn deadline(&self, now_ms: u64, timeout_ms: i32) -> u64 {
        let t = now_ms.saturating_add(timeout_ms.max(0) as u64);
        (t / self.tick_ms + 1) * self.tick_ms
    }

    pub fn add(&mut self, id: i64, timeout_ms: i32, now_ms: u64) {
        let deadline_ms = self.deadline(now_ms, timeout_ms);
        self.map.insert(
            id,
            LiveSession {
                timeout_ms,
                deadline_ms,
                conn: None,
                closing: false,
            },
        );
        self.buckets.entry(deadline_ms).or_default().push(id);
        // Never hand out an id a restored session already has.
        if id >= self.next_id && (id >> 56) == (self.next_id >> 56) {
            self.next_id = id.wrapping_add(1);
        }
    }

    pub fn remove(&mut self, id: i64) -> Option<LiveSession> {
        self.map.remove(&id)
    }

    pub fn get(&self, id: i64) -> Option<&LiveSession> {
        self.map.get(&id)
    }

    pub fn get_mut(&mut self, id: i64) -> Option<&mut LiveSession> {
        self.map.get_mut(&id)
    }

    /// Moves the session's deadline to a full timeout from now.
    pub fn touch(&mut self, id: i64, now_ms: u64) {
        let Some(timeout) = self.map.get(&id).map(|s| s.timeout_ms) else {
            return;
        };
        let deadline = self.deadline(now_ms, timeout);
        if let Some(s) = self.map.get_mut(&id) {
            if s.deadline_ms == deadline {
                return;
            }
            s.deadline_ms = deadline;
        }
        self.buckets.entry(deadline).or_default().push(id);
    }

    /// Moves the session's deadline to `left_ms` (at most its timeout) from now, if that is
    /// later than it is: a follower's report of a session whose client it heard from, with
    /// the time its own deadline had left — so a client that falls silent expires one timeout
    /// after its last message, not after the follower's last report of it.
    pub fn extend(&mut self, id: i64, now_ms: u64, left_ms: u64) {
        let Some(s) = self.map.get_mut(&id) else {
            return;
        };
        let left = left_ms.min(s.timeout_ms.max(0) as u64);
        let t = now_ms.saturating_add(left);
        let deadline = (t / self.tick_ms + 1) * self.tick_ms;
        if deadline <= s.deadline_ms {
            return;
        }
        s.deadline_ms = deadline;
        self.buckets.entry(deadline).or_default().push(id);
    }

    /// Sessions past their deadline that are not already closing, in id order. Buckets that
    /// came due are consumed.
    pub fn expired(&mut self, now_ms: u64) -> Vec<i64> {
        let mut out = Vec::new();
        while let Some(entry) = self.buckets.first_entry() {
            let due = *entry.key();
            if due > now_ms {
                break;
            }
            for id in entry.remove() {
                match self.map.get(&id) {
                    Some(s) if s.deadline_ms == due && !s.closing => out.push(id),
                    _ => {} // touched since, closing, or gone
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&i64, &LiveSession)> {
        self.map.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_passwords_and_buckets() {
        let mut s = Liveness::new([7; 16], 2000, 1_700_000_000_000);
        let a = s.allocate_id();
        let b = s.allocate_id();
        assert_eq!(b, a + 1);
        assert_eq!(a >> 56, 0, "standalone server id 0");
        assert_eq!(s.password(a), s.password(a));
        assert_ne!(s.password(a), s.password(b));
        assert_ne!(s.password(a), Liveness::new([8; 16], 2000, 0).password(a));
        s.add(a, 4000, 1000);
        assert_eq!(s.get(a).map(|x| x.deadline_ms), Some(6000));
        assert!(s.expired(5999).is_empty());
        assert_eq!(s.expired(6000), vec![a]);
    }

    #[test]
    fn a_touched_session_leaves_its_old_bucket_and_expires_from_the_new_one() {
        let mut s = Liveness::new([7; 16], 1000, 0);
        s.add(1, 3000, 0); // deadline 4000
        s.add(2, 3000, 0);
        s.touch(1, 2500); // deadline 6000
        assert_eq!(s.expired(4000), vec![2]);
        // Reported once: the bucket is consumed (the core marks the session closing).
        assert!(s.expired(4000).is_empty());
        assert!(s.expired(5999).is_empty());
        assert_eq!(s.expired(6000), vec![1]);
        // A closing session is not reported; a removed one neither.
        s.add(3, 1000, 6000);
        s.add(4, 1000, 6000);
        if let Some(x) = s.get_mut(3) {
            x.closing = true;
        }
        s.remove(4);
        assert!(s.expired(100_000).is_empty());
    }
}
