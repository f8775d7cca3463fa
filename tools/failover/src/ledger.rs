//! What the clients were told, across every crash: the evidence the checks hold the server to.

use std::collections::{BTreeMap, BTreeSet};

/// Parent and sequential suffix of a path whose name ends in 10 digits.
pub fn suffix(path: &str) -> Option<(&str, i64)> {
    let (dir, name) = path.rsplit_once('/')?;
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((if dir.is_empty() { "/" } else { dir }, digits.parse().ok()?))
}

#[derive(Default)]
pub struct Ledger {
    /// Acknowledged creates not acknowledged deleted.
    pub present: BTreeSet<String>,
    /// Acknowledged deletes (names are never reused: sequential or unique).
    pub deleted: BTreeSet<String>,
    /// Writes in flight at a crash (ConnectionLoss): either outcome is right for these paths.
    pub uncertain: BTreeSet<String>,
    /// The highest suffix ever acknowledged or seen, per parent.
    pub max_suffix: BTreeMap<String, i64>,
    /// The highest cversion and pzxid ever read, per parent.
    pub max_cversion: BTreeMap<String, i32>,
    pub max_pzxid: BTreeMap<String, i64>,
    /// The highest zxid any client saw.
    pub max_zxid: i64,
    /// Live sessions' acknowledged ephemerals.
    pub ephemerals: BTreeMap<i64, BTreeSet<String>>,
    /// Sessions closed with an acknowledged closeSession, and the ephemerals they had.
    pub closed: Vec<(i64, BTreeSet<String>)>,
    /// Acknowledged nodes with an ACL list of their own: read back with getData.
    pub own_acl: BTreeSet<String>,
    pub acked_writes: u64,
    pub violations: Vec<String>,
}

impl Ledger {
    /// An acknowledged create.
    pub fn created(&mut self, path: &str) {
        self.acked_writes += 1;
        self.present.insert(path.to_string());
        self.seen(path);
    }

    pub fn deleted(&mut self, path: &str) {
        self.acked_writes += 1;
        self.present.remove(path);
        self.uncertain.remove(path);
        self.deleted.insert(path.to_string());
    }

    /// A suffix seen in a children list (not acknowledged to anyone, but handed out).
    pub fn seen(&mut self, path: &str) {
        if let Some((dir, n)) = suffix(path) {
            let m = self.max_suffix.entry(dir.to_string()).or_insert(-1);
            *m = (*m).max(n);
        }
    }

    pub fn stat(&mut self, parent: &str, cversion: i32, pzxid: i64) {
        let c = self
            .max_cversion
            .entry(parent.to_string())
            .or_insert(i32::MIN);
        *c = (*c).max(cversion);
        let z = self.max_pzxid.entry(parent.to_string()).or_insert(0);
        *z = (*z).max(pzxid);
    }
}
