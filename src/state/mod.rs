//! The replicated state machine: the data tree, the replicated part of the sessions (id and
//! negotiated timeout; their ephemerals are in the tree) and the last applied zxid.
//!
//! [`State::apply`] is the only way a committed txn changes this state — live, in recovery,
//! in the inspectors and in the tests (and, in an ensemble, on every member). It is a pure
//! function of the state and the txn: it reads no clock (times come from the txn header), no
//! random number and no setting, so every replica applying the same log ends with the same
//! state and digest.
//!
//! Owns: `tree/` (nodes, ACL table, quota stats, the digest), the session table, the zxid.
//! May not touch: connections, watches, the log, clocks, configuration. What the outside
//! world needs from an apply comes back as [`Effects`]: the outcome of each op (for the
//! reply), the changes watchers may be told of, and the session opened or closed.

mod apply;
mod restore;
pub mod tree;

pub use apply::{Change, Effects, Outcome, SessionEffect};

use palisade_proto::Txn;
use std::collections::BTreeMap;
use tree::DataTree;

/// What every replica holds after applying the same prefix of the log.
pub struct State {
    pub tree: DataTree,
    /// Session id → negotiated timeout (ms), for every session created and not closed. An
    /// ordered map, so that a capture lists sessions in the same order in every process.
    sessions: BTreeMap<i64, i32>,
    /// The zxid of the last txn applied (0 for a fresh state).
    zxid: i64,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    /// ZooKeeper's fresh state: its initial tree, no sessions, zxid 0.
    pub fn new() -> Self {
        Self::from_parts(DataTree::new(), BTreeMap::new(), 0)
    }

    /// A state rebuilt from a snapshot (its tree and sessions, at the zxid the log is to be
    /// replayed from).
    pub fn from_parts(tree: DataTree, sessions: BTreeMap<i64, i32>, zxid: i64) -> Self {
        State {
            tree,
            sessions,
            zxid,
        }
    }

    /// The zxid of the last txn applied.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// Session id → negotiated timeout, in id order.
    pub fn sessions(&self) -> &BTreeMap<i64, i32> {
        &self.sessions
    }

    /// Applies one committed txn. Zxids only rise: applying a txn at or below the current
    /// zxid is a bug of the caller (recovery checks the log's order before it gets here).
    pub fn apply<'t>(&mut self, txn: &'t Txn) -> Effects<'t> {
        let zxid = txn.header.zxid;
        assert!(
            zxid > self.zxid,
            "txn {zxid:#x} applied after {:#x}",
            self.zxid
        );
        let effects = apply::apply(&mut self.tree, txn);
        match effects.session {
            SessionEffect::Created { timeout } => {
                self.sessions.insert(txn.header.client_id, timeout);
            }
            SessionEffect::Closed => {
                self.sessions.remove(&txn.header.client_id);
            }
            SessionEffect::None => {}
        }
        self.zxid = zxid;
        effects
    }

    /// Takes the parts back out (the inspectors walk the tree and sessions).
    pub fn into_parts(self) -> (DataTree, BTreeMap<i64, i32>, i64) {
        (self.tree, self.sessions, self.zxid)
    }
}

#[cfg(test)]
#[path = "state_test.rs"]
mod tests;
