//! The checks that need the whole file, item by item in file order: node numbering, parent
//! and ACL references, and the counts the trailer must repeat. The writer runs the same
//! checks on every block it is handed, so a capture that `open` would reject fails when it
//! is written, not at the next restart.

use crate::cursor::Cursor;
use crate::format::{Trailer, TrailerBlock};
use crate::item::{decode, Item, NO_PARENT};
use std::collections::HashSet;

#[derive(Default)]
pub(crate) struct Validator {
    nodes: u64,
    sessions: u64,
    acls: u64,
    blocks: u64,
    defined: AclSet,
}

impl Validator {
    /// Checks one items block's payload. On error: the offset within the payload and why.
    pub fn block(&mut self, payload: &[u8]) -> Result<(), (usize, String)> {
        let mut c = Cursor::new(payload);
        while !c.is_empty() {
            let at = c.pos();
            let item = decode(&mut c).map_err(|r| (at, r))?;
            self.item(&item).map_err(|r| (at, r))?;
        }
        self.blocks = self.blocks.saturating_add(1);
        Ok(())
    }

    fn item(&mut self, item: &Item<'_>) -> Result<(), String> {
        match item {
            Item::Node(n) => {
                let number = self.nodes;
                // NO_PARENT is not a node number, so the last usable number is one below it.
                if number >= u64::from(NO_PARENT) {
                    return Err("too many nodes".into());
                }
                match (number, n.parent) {
                    (0, NO_PARENT) => {}
                    (0, p) => return Err(format!("node 0 (the root) has parent {p}")),
                    (_, NO_PARENT) => return Err(format!("node {number} has no parent")),
                    (_, p) if u64::from(p) >= number => {
                        return Err(format!("node {number} has parent {p}, not an earlier node"))
                    }
                    _ => {}
                }
                if !self.defined.contains(n.acl) {
                    return Err(format!("node {number} uses undefined ACL index {}", n.acl));
                }
                self.nodes = number.saturating_add(1);
            }
            Item::Session { .. } => self.sessions = self.sessions.saturating_add(1),
            Item::Acl { index, .. } => {
                self.defined.insert(*index);
                self.acls = self.acls.saturating_add(1);
            }
        }
        Ok(())
    }

    /// Items blocks checked so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Compares a trailer with what the blocks held. `start_zxid` is the header's.
    pub fn trailer(&self, t: &TrailerBlock, chain: u32, start_zxid: i64) -> Result<(), String> {
        if t.block_count != self.blocks {
            return Err(format!(
                "trailer block count {}, file has {} items blocks",
                t.block_count, self.blocks
            ));
        }
        if t.chain != chain {
            return Err(format!(
                "trailer chain {:#010x}, blocks chain to {chain:#010x} (a block was dropped, \
                 duplicated or moved)",
                t.chain
            ));
        }
        self.counts(&t.trailer)?;
        if t.trailer.end_zxid < start_zxid {
            return Err(format!(
                "end zxid {:#x} is before start zxid {start_zxid:#x}",
                t.trailer.end_zxid
            ));
        }
        Ok(())
    }

    pub fn counts(&self, t: &Trailer) -> Result<(), String> {
        let pairs = [
            ("node", t.node_count, self.nodes),
            ("session", t.session_count, self.sessions),
            ("ACL", t.acl_count, self.acls),
        ];
        for (what, claimed, found) in pairs {
            if claimed != found {
                return Err(format!("trailer {what} count {claimed}, file has {found}"));
            }
        }
        Ok(())
    }
}

/// The defined ACL indexes. Captures number them densely from 0, so a bitmap answers the
/// per-node lookup in a few instructions; sparse large indexes (legal, unusual) go to a set
/// so a damaged index cannot make us allocate gigabytes.
#[derive(Default)]
struct AclSet {
    dense: Vec<u64>,
    sparse: HashSet<u32>,
}

/// Indexes below this live in the bitmap (at most 128 KiB).
const DENSE_LIMIT: u32 = 1 << 20;

impl AclSet {
    fn insert(&mut self, index: u32) {
        if index >= DENSE_LIMIT {
            self.sparse.insert(index);
            return;
        }
        let word = (index / 64) as usize;
        if self.dense.len() <= word {
            self.dense.resize(word.saturating_add(1), 0);
        }
        if let Some(w) = self.dense.get_mut(word) {
            *w |= 1 << (index % 64);
        }
    }

    fn contains(&self, index: u32) -> bool {
        if index >= DENSE_LIMIT {
            return self.sparse.contains(&index);
        }
        self.dense
            .get((index / 64) as usize)
            .is_some_and(|w| w & (1 << (index % 64)) != 0)
    }
}
