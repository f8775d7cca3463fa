//! The tree an observer of a ZooKeeper ensemble holds: the leader's snapshot (SNAP) loaded as
//! the importer loads a snapshot file, then every committed txn applied through
//! `State::apply` with ZooKeeper's zxids unchanged, each checked against the server's own rules
//! and, where ZooKeeper recorded one, against its digest.
//!
//! The snapshot a leader sends is fuzzy (it serializes its live tree while txns go on being
//! applied), so the digests of the first txns after it may describe a tree the snapshot
//! already partly holds. The raise-only replay makes those txns change nothing twice; the
//! digest check starts at the first txn whose digest matches, and from there a mismatch is a
//! divergence: the mirror is dropped and synced again from nothing.

use crate::migrate::{applied, rules, zktree};
use crate::state::State;
use palisade_zab::{TxnEntry, WireSnapshot};
use palisade_zkdisk::snap::DIGEST_VERSION;
use std::collections::BTreeMap;

use crate::limits::{OBSERVER_DIGEST_ALL_UP_TO_NODES, OBSERVER_DIGEST_EVERY_LARGE};

#[derive(Default)]
pub struct Mirror {
    state: Option<State>,
    /// A digest has matched since the last snapshot: from here on every checked one must.
    matched: bool,
    pub applied: u64,
    pub digests_checked: u64,
    pub snapshots_loaded: u64,
}

impl Mirror {
    /// The zxid of the last txn applied (0 with nothing yet).
    pub fn last_zxid(&self) -> i64 {
        self.state.as_ref().map_or(0, State::zxid)
    }

    pub fn state(&self) -> Option<&State> {
        self.state.as_ref()
    }

    /// Forgets everything: the next sync is a SNAP.
    pub fn reset(&mut self) {
        self.state = None;
        self.matched = false;
    }

    /// Replaces the tree with the leader's snapshot at `zxid`.
    pub fn load(&mut self, zxid: i64, snap: &WireSnapshot) -> Result<(), String> {
        let zs = snap
            .decode()
            .map_err(|e| format!("the leader's snapshot: {e}"))?;
        let tree = zktree::load(&zs)?;
        let sessions: BTreeMap<i64, i32> = zs.sessions.iter().map(|s| (s.id, s.timeout)).collect();
        self.state = Some(State::from_parts(tree, sessions, zxid));
        self.matched = false;
        self.snapshots_loaded += 1;
        Ok(())
    }

    /// Drops every txn after `zxid`. A tree in memory cannot be cut back: one that reaches
    /// past it is dropped whole (the next sync is a SNAP).
    pub fn truncate(&mut self, zxid: i64) {
        if self.last_zxid() > zxid {
            self.reset();
        }
    }

    /// Applies one committed txn. An error leaves the mirror as it was before the txn only
    /// where the rules refused it; the caller resets on any error.
    pub fn apply(&mut self, entry: TxnEntry) -> Result<(), String> {
        let z = entry.zxid();
        let Some(state) = self.state.as_mut() else {
            // A DIFF to an empty learner (the leader had nothing before it): an empty tree.
            let fresh = State::from_parts(crate::state::tree::DataTree::new(), BTreeMap::new(), 0);
            self.state = Some(fresh);
            return self.apply(entry);
        };
        if z <= state.zxid() {
            return Err(format!(
                "txn {z:#x} after {:#x}: the leader's txns go back",
                state.zxid()
            ));
        }
        rules::txn(&entry.txn.body).map_err(|why| format!("txn {z:#x}: {why}"))?;
        let mut txn = entry.txn;
        applied::as_applied(state, &mut txn, entry.quirk);
        state.apply(&txn);
        self.applied += 1;
        let Some(d) = entry.digest.filter(|d| d.version == DIGEST_VERSION) else {
            return Ok(());
        };
        let small = state.tree.znode_count() <= OBSERVER_DIGEST_ALL_UP_TO_NODES;
        if !small && !self.applied.is_multiple_of(OBSERVER_DIGEST_EVERY_LARGE) {
            return Ok(());
        }
        let ours = zktree::zk_digest(&state.tree);
        self.digests_checked += 1;
        if ours == d.tree_digest {
            self.matched = true;
        } else if self.matched {
            return Err(format!(
                "ZooKeeper's digest after txn {z:#x} is {:#x}, the mirror's {ours:#x}: diverged",
                d.tree_digest
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "mirror_test.rs"]
mod tests;
