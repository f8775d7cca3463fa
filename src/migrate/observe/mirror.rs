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
//!
//! With a [`Store`] (the command always has one) every applied txn is logged, so a restarted
//! observer recovers the tree and syncs by DIFF from its last zxid.

use super::store::Store;
use crate::migrate::{applied, rules, zktree};
use crate::state::State;
use palisade_zab::{SnapItem, TxnEntry};
use palisade_zkdisk::snap::DIGEST_VERSION;
use std::collections::BTreeMap;

use crate::limits::{OBSERVER_DIGEST_ALL_UP_TO_NODES, OBSERVER_DIGEST_EVERY_LARGE};

/// Why the mirror refused what the leader sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The leader's txns do not make a tree the mirror can hold: start over from nothing.
    #[error("{0}")]
    Diverged(String),
    /// The data dir failed: the observer cannot go on.
    #[error("the data dir: {0}")]
    Disk(String),
}

type Res = Result<(), Failure>;

fn disk(e: String) -> Failure {
    Failure::Disk(e)
}

#[derive(Default)]
pub struct Mirror {
    state: Option<State>,
    store: Option<Store>,
    /// A snapshot from the leader being loaded (SNAP until its end): the tree so far and the
    /// sessions.
    loading: Option<(zktree::ZkLoader, BTreeMap<i64, i32>)>,
    /// A digest has matched since the last snapshot: from here on every checked one must.
    matched: bool,
    pub applied: u64,
    pub digests_checked: u64,
    pub snapshots_loaded: u64,
}

impl Mirror {
    /// A mirror that logs what it applies to `store`, starting from what it recovered.
    pub fn durable(store: Store, state: Option<State>) -> Mirror {
        Mirror {
            state,
            store: Some(store),
            ..Mirror::default()
        }
    }

    /// (acceptedEpoch, currentEpoch) as stored (0, 0 without a store).
    pub fn epochs(&self) -> (i64, i64) {
        self.store.as_ref().map_or((0, 0), Store::epochs)
    }

    /// Stores the epochs and makes the txns logged so far durable (after each batch).
    pub fn sync(&mut self, epochs: (i64, i64)) -> Res {
        let Some(store) = self.store.as_mut() else {
            return Ok(());
        };
        store.set_epochs(epochs).map_err(disk)?;
        store.sync().map_err(disk)
    }

    /// At the end of a run: everything durable, a last snapshot, the sessions file.
    pub fn finish(&mut self) -> Res {
        match self.store.as_mut() {
            Some(store) => store.finish(self.state.as_ref()).map_err(disk),
            None => Ok(()),
        }
    }

    pub fn snapshots_written(&self) -> u64 {
        self.store.as_ref().map_or(0, |s| s.snapshots_written)
    }

    /// The zxid of the last txn applied (0 with nothing yet).
    pub fn last_zxid(&self) -> i64 {
        self.state.as_ref().map_or(0, State::zxid)
    }

    pub fn state(&self) -> Option<&State> {
        self.state.as_ref()
    }

    /// Forgets everything, on disk too: the next sync is a SNAP.
    pub fn reset(&mut self) -> Res {
        self.state = None;
        self.matched = false;
        match self.store.as_mut() {
            Some(store) => store.wipe().map_err(disk),
            None => Ok(()),
        }
    }

    /// SNAP: a new tree starts, built from the items that follow. The old one is dropped
    /// now (as ZooKeeper's learner clears its database), so memory holds one tree; the data
    /// dir keeps it until the new one is whole.
    pub fn begin_snapshot(&mut self) {
        self.state = None;
        self.matched = false;
        self.loading = Some((zktree::ZkLoader::new(), BTreeMap::new()));
    }

    /// The next items of the leader's snapshot.
    pub fn snapshot_items(&mut self, items: Vec<SnapItem>) -> Res {
        let Some((loader, sessions)) = self.loading.as_mut() else {
            return Err(Failure::Diverged("snapshot items without a SNAP".into()));
        };
        let bad = |e: String| Failure::Diverged(format!("the leader's snapshot: {e}"));
        for item in items {
            match item {
                SnapItem::Session(s) => {
                    sessions.insert(s.id, s.timeout);
                }
                SnapItem::Acl(a) => loader.acl(&a).map_err(bad)?,
                SnapItem::Node(n) => loader.node(&n).map_err(bad)?,
                SnapItem::SessionCount(_) | SnapItem::AclCount(_) => {}
            }
        }
        Ok(())
    }

    /// The snapshot is whole: its tree, at `zxid`, becomes the state (and the data dir's).
    pub fn end_snapshot(&mut self, zxid: i64) -> Res {
        let Some((loader, sessions)) = self.loading.take() else {
            return Err(Failure::Diverged("a snapshot end without a SNAP".into()));
        };
        let tree = loader
            .finish()
            .map_err(|e| Failure::Diverged(format!("the leader's snapshot: {e}")))?;
        let state = State::from_parts(tree, sessions, zxid);
        self.snapshots_loaded += 1;
        if let Some(store) = self.store.as_mut() {
            store.replace(&state).map_err(disk)?;
        }
        self.state = Some(state);
        Ok(())
    }

    /// The connection ended: a snapshot not yet whole is dropped.
    pub fn abort_snapshot(&mut self) {
        self.loading = None;
    }

    /// TRUNC: drops every txn after `zxid`. With a store the state is rebuilt there from
    /// disk; a tree in memory alone cannot be cut back, so it is dropped and the link must
    /// sync again from nothing (Diverged).
    pub fn truncate(&mut self, zxid: i64) -> Res {
        if self.last_zxid() <= zxid {
            return Ok(());
        }
        self.matched = false;
        let cut = match self.store.as_mut() {
            Some(store) => store.truncate(zxid).map_err(disk)?,
            None => None,
        };
        match cut {
            Some(state) => {
                self.state = Some(state);
                Ok(())
            }
            None => {
                self.reset()?;
                Err(Failure::Diverged(format!(
                    "cannot truncate the tree to {zxid:#x}"
                )))
            }
        }
    }

    /// Applies one committed txn. An error leaves the mirror as it was before the txn only
    /// where the rules refused it; the caller resets on any error.
    pub fn apply(&mut self, entry: TxnEntry) -> Res {
        let z = entry.zxid();
        let digest = entry.digest.clone().filter(|d| d.version == DIGEST_VERSION);
        self.apply_txn(entry)?;
        let (Some(d), Some(state)) = (digest, self.state.as_ref()) else {
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
            return Err(Failure::Diverged(format!(
                "ZooKeeper's digest after txn {z:#x} is {:#x}, the mirror's {ours:#x}: diverged",
                d.tree_digest
            )));
        }
        Ok(())
    }

    fn apply_txn(&mut self, entry: TxnEntry) -> Res {
        let z = entry.zxid();
        let Some(state) = self.state.as_mut() else {
            // A DIFF to an empty learner (the leader had nothing before it): an empty tree.
            let fresh = State::from_parts(crate::state::tree::DataTree::new(), BTreeMap::new(), 0);
            self.state = Some(fresh);
            return self.apply_txn(entry);
        };
        if z <= state.zxid() {
            return Err(Failure::Diverged(format!(
                "txn {z:#x} after {:#x}: the leader's txns go back",
                state.zxid()
            )));
        }
        rules::txn(&entry.txn.body)
            .map_err(|why| Failure::Diverged(format!("txn {z:#x}: {why}")))?;
        let mut txn = entry.txn;
        applied::as_applied(state, &mut txn, entry.quirk);
        state.apply(&txn);
        self.applied += 1;
        if let Some(store) = self.store.as_mut() {
            // A jump (a new epoch, or the first txn held) cannot continue a standalone log.
            if store.continues(z) {
                store.append(&txn, state).map_err(disk)?;
            } else {
                store.replace(state).map_err(disk)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "mirror_test.rs"]
mod tests;
