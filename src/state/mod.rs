//! The replicated state machine: the data tree, the replicated part of the sessions (id and
//! negotiated timeout; their ephemerals are in the tree) and the last applied zxid.
//!
//! [`State::apply`] is the only way a committed txn changes this state — live, in recovery,
//! in the inspectors and in the tests (and, in an ensemble, on every member). It is a pure
//! function of the state and the txn: it reads no clock (times come from the txn header), no
//! random number and no setting, so every replica applying the same log ends with the same
//! state and digest. The tree's mutations are private to this module: the rest of the crate
//! sees `State::tree` as a [`ReadOnly`] tree, and the two changes that are not txns have their
//! own names here ([`State::set_ensemble_config`], [`State::recount_quotas`]).
//!
//! Its invariants are asserted, crashing rather than diverging: zxids only rise at apply,
//! past a loaded image no apply meets a zxid above its own (tree/mod.rs), and a digest is
//! recorded only against the zxid the state stands at ([`State::digest_after`]).
//!
//! Owns: `tree/` (nodes, ACL table, quota stats, the digest), the session table, the zxid.
//! May not touch: connections, watches, the log, clocks, configuration. What the outside
//! world needs from an apply comes back as [`Effects`]: the outcome of each op (for the
//! reply), the changes watchers may be told of, and the session opened or closed.

mod apply;
mod ensemble_config;
mod restore;
pub mod tree;

pub use apply::{Change, Effects, Outcome, SessionEffect};
pub use ensemble_config::CONFIG_NODE;

use palisade_proto::Txn;
use std::collections::BTreeMap;
use tree::DataTree;

/// A value the rest of the crate may read but not change: it derefs to `&T`, never to
/// `&mut T`, and only `state` reaches inside. (`State::tree` reads as a plain field; the
/// tree's mutating methods are private to `state` besides.)
pub struct ReadOnly<T>(T);

impl<T> std::ops::Deref for ReadOnly<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> ReadOnly<T> {
    /// The value itself, owned (what the inspectors keep of a replayed state).
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// What every replica holds after applying the same prefix of the log.
pub struct State {
    /// The data tree, to read; changed only through this module.
    pub tree: ReadOnly<DataTree>,
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
            tree: ReadOnly(tree),
            sessions,
            zxid,
        }
    }

    /// The zxid of the last txn applied.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The tree digest right after txn `zxid`, for whoever records it (a digest record in
    /// the log, a member's digest the leader's is checked against). The state must stand at
    /// `zxid`: a digest recorded against another zxid would make every replay report a
    /// divergence that did not happen, or miss one that did.
    pub fn digest_after(&self, zxid: i64) -> u64 {
        assert_eq!(
            zxid, self.zxid,
            "digest recorded for zxid {zxid:#x}, the state stands at {:#x}",
            self.zxid
        );
        self.tree.0.digest()
    }

    /// After a replay over a fuzzy capture (recovery, an import): recomputes every quota's
    /// stats node from its subtree, as ZooKeeper does on load (tree/quota.rs).
    pub fn recount_quotas(&mut self) {
        self.tree.0.rebuild_quotas();
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
        let effects = apply::apply(&mut self.tree.0, txn);
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
        (self.tree.0, self.sessions, self.zxid)
    }
}

#[cfg(test)]
#[path = "state_test.rs"]
mod tests;
