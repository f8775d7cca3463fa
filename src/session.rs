//! Sessions: ids as ZooKeeper builds them, passwords derived from the id and a server secret
//! (so they survive restart), and expiry in tickTime buckets.

use hashbrown::HashMap;

pub struct Session {
    pub timeout_ms: i32,
    /// Expiry time, ms on the server's monotonic clock, rounded up to a tick boundary.
    pub deadline_ms: u64,
    pub conn: Option<u64>,
    /// A closeSession txn for it is prepped: its requests now fail with SESSIONEXPIRED.
    pub closing: bool,
}

pub struct Sessions {
    map: HashMap<i64, Session>,
    next_id: i64,
    secret: [u8; 16],
    tick_ms: u64,
}

impl Sessions {
    /// `now_wall_ms` seeds ids like ZooKeeper: `(now << 24) >>> 8`, server id 0 in the top byte.
    pub fn new(secret: [u8; 16], tick_ms: u64, now_wall_ms: i64) -> Self {
        let next_id = (((now_wall_ms as u64) << 24) >> 8) as i64;
        Sessions {
            map: HashMap::new(),
            next_id,
            secret,
            tick_ms: tick_ms.max(1),
        }
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
        let t = now_ms + timeout_ms.max(0) as u64;
        (t / self.tick_ms + 1) * self.tick_ms
    }

    pub fn add(&mut self, id: i64, timeout_ms: i32, now_ms: u64) {
        let deadline_ms = self.deadline(now_ms, timeout_ms);
        self.map.insert(
            id,
            Session {
                timeout_ms,
                deadline_ms,
                conn: None,
                closing: false,
            },
        );
        // Never hand out an id a restored session already has.
        if id >= self.next_id && (id >> 56) == (self.next_id >> 56) {
            self.next_id = id.wrapping_add(1);
        }
    }

    pub fn remove(&mut self, id: i64) -> Option<Session> {
        self.map.remove(&id)
    }

    pub fn get(&self, id: i64) -> Option<&Session> {
        self.map.get(&id)
    }

    pub fn get_mut(&mut self, id: i64) -> Option<&mut Session> {
        self.map.get_mut(&id)
    }

    pub fn touch(&mut self, id: i64, now_ms: u64) {
        let tick = self.tick_ms;
        if let Some(s) = self.map.get_mut(&id) {
            let t = now_ms + s.timeout_ms.max(0) as u64;
            s.deadline_ms = (t / tick + 1) * tick;
        }
    }

    /// Sessions past their deadline that are not already closing.
    pub fn expired(&self, now_ms: u64) -> Vec<i64> {
        let mut v: Vec<i64> = self
            .map
            .iter()
            .filter(|(_, s)| !s.closing && s.deadline_ms <= now_ms)
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&i64, &Session)> {
        self.map.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_passwords_and_buckets() {
        let mut s = Sessions::new([7; 16], 2000, 1_700_000_000_000);
        let a = s.allocate_id();
        let b = s.allocate_id();
        assert_eq!(b, a + 1);
        assert_eq!(a >> 56, 0, "standalone server id 0");
        assert_eq!(s.password(a), s.password(a));
        assert_ne!(s.password(a), s.password(b));
        assert_ne!(s.password(a), Sessions::new([8; 16], 2000, 0).password(a));
        s.add(a, 4000, 1000);
        assert_eq!(s.get(a).map(|x| x.deadline_ms), Some(6000));
        assert!(s.expired(5999).is_empty());
        assert_eq!(s.expired(6000), vec![a]);
    }
}
