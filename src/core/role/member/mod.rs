//! The core as an ensemble member. The same pipeline as standalone, with the order of writes
//! decided by the quorum instead of the local log:
//!
//! - the leader, once it has applied every entry before its term's first, preps writes (its
//!   own clients' and the ones its followers forward) and proposes them (`Proposer`: one
//!   `Work::Propose` batch a turn, core/work.rs); zxids are term << 32 | counter (leader.rs);
//! - a follower forwards its clients' writes, with the connection's auth ids, and waits for
//!   the committed txn, matched by (session, cxid) as `pending.rs` matches (follower.rs);
//! - a member without a quorum for the grace period serves read-only clients (read_only.rs);
//! - every member applies what the quorum committed (`CoreMsg::Committed`, committed.rs)
//!   through the same `commit` as standalone: watches, the session table, replies.
//!
//! Which of these a member is, is its `Seat` (seat.rs), moved by Raft's view (`set_role`);
//! what every seat shares is `Member` below: the links to consensus (links.rs), the view,
//! the ensemble's key, the syncs (syncs.rs), the digests (digests.rs), the Raft snapshots
//! (raft_snapshot.rs), the configuration (reconfig.rs) and online restores
//! (ensemble_restore/).
//!
//! When the leader changes, every member drops its clients, as ZooKeeper's members do when
//! they lose their leader: a pending write then fails with CONNECTIONLOSS (it may still
//! commit, as in ZooKeeper), and the client resumes its session on any member, with its
//! ephemerals and, through setWatches, its watches. Sessions are replicated txns; only the
//! leader expires them, from its followers' touches, and only while a quorum acknowledges it;
//! a new leader, or one a quorum acknowledges again after an outage, re-arms every session.
//!
//! Owns: the member's seat and view, its links to consensus (as outbox work), the
//! configuration it has applied, digests, Raft snapshot captures, online restores and
//! syncs. May not touch: openraft, peers or files (ensemble/raft's, through the seam's
//! messages), the tree other than through `commit` and the configuration node's API.

mod committed;
mod digests;
mod ensemble_restore;
mod follower;
mod leader;
mod links;
mod raft_snapshot;
mod read_only;
mod reconfig;
mod seat;
mod syncs;

use super::Role;
use crate::core::conn_id::ConnId;
use crate::core::Core;
use crate::membership::dynamic::DynConfig;
use crate::prep::Prepper;
use std::sync::Arc;

pub use crate::core::runtime::Answer;
pub use links::{MemberLinks, Proposer};
pub(in crate::core) use seat::Seat;

// What the core and the consensus glue exchange lives in the seam (src/seam.rs).
pub use crate::seam::{
    Committed, Forward, Forwarded, LeadershipAsk, LogPos, Proposed, RaftInfo, RoleView, SyncPoint,
    ToLeader,
};

/// What every seat of an ensemble member shares.
pub(in crate::core) struct Member {
    links: MemberLinks,
    /// What its leader proposes this turn.
    pub(super) proposer: Proposer,
    /// Raft's view, as the role task last reported it.
    view: RoleView,
    /// What this member does with a write now (seat.rs).
    pub(super) seat: Seat,
    /// The ensemble's key (session passwords), once its first leader's commit is applied.
    key: Option<[u8; 16]>,
    syncs: syncs::Syncs,
    digests: digests::Digests,
    /// Where in the Raft log the applied state stands.
    applied_at: Option<LogPos>,
    pub(super) snapshots: raft_snapshot::RaftSnapshots,
    /// Since when (core ms) the member has not been serving: read-only mode's grace clock.
    unserved_since: Option<u64>,
    /// The configuration (reconfig.rs): committed, or zoo.cfg's (version 0).
    config: Arc<DynConfig>,
    /// Reconfigs committed here, answered once their configuration is in force.
    parked: Vec<reconfig::Parked>,
    /// Online restores through the Raft log (ensemble_restore/).
    pub(super) restore: ensemble_restore::EnsembleRestore,
}

impl Member {
    fn me(&self) -> u64 {
        self.links.myid
    }

    /// Whether this member takes clients: it knows a leader (a leader itself once ready) and
    /// the ensemble's key.
    pub(super) fn serving(&self) -> bool {
        self.key.is_some()
            && match self.view.leader {
                Some(l) if l == self.me() => self.view.ready && self.view.quorum,
                Some(_) => true,
                None => false,
            }
    }

    /// A session expires only once its client was silent for its whole timeout while a
    /// quorum served: a leader left alone refuses every handshake, so no client can be
    /// heard, and an expiry it prepped then would commit once a follower came back (a 4 s
    /// session lost to a 10 s outage, issue 34). ZooKeeper's leader steps down instead, and
    /// the next one re-arms every session.
    pub(super) fn session_clocks_run(&self) -> bool {
        let quorum = self.seat.leading().is_some() && self.view.quorum;
        quorum || crate::faults::on(crate::faults::Fault::ExpireWithoutQuorum)
    }

    /// ZooKeeper's name for this member's role (srvr's Mode, zk_server_state).
    pub(super) fn mode(&self) -> &'static str {
        let me = self.me();
        match &self.seat {
            Seat::ReadOnly(_) => "read-only",
            _ if self.config.observers().contains(&me) => "observer",
            // A learner outside the configuration is ZooKeeper's non-voting follower.
            _ if self.view.learner && self.config.get(me).is_some() => "observer",
            _ if self.view.leader == Some(me) => "leader",
            _ => "follower",
        }
    }
}

impl Core {
    /// Makes this core an ensemble member: it preps only as a ready leader, and proposes
    /// what it preps instead of logging it.
    pub fn join(&mut self, links: MemberLinks) {
        assert!(
            !self.role.is_member(),
            "Core::join on a core that is a member already"
        );
        self.liveness.set_server_id(links.myid);
        let snapshots = raft_snapshot::RaftSnapshots::new(links.snap_count, &mut self.rng);
        let config = Arc::new(DynConfig::from_static(&links.members));
        self.role = Role::Member(Box::new(Member {
            links,
            proposer: Proposer::default(),
            view: RoleView::default(),
            seat: Seat::Follower(Default::default()),
            key: None,
            syncs: Default::default(),
            digests: Default::default(),
            applied_at: None,
            snapshots,
            unserved_since: None,
            config,
            parked: Vec::new(),
            restore: Default::default(),
        }));
        self.reload_config();
    }

    /// mntr's zk_quorum_size: ZooKeeper's getQuorumSize, the number of voting members (not
    /// a majority of them). None: standalone.
    pub(crate) fn quorum_size(&self) -> Option<usize> {
        self.role.as_member().map(|m| m.config.voters().len())
    }

    /// `conf`'s lines for a member (None: standalone).
    pub(crate) fn member_conf(&self) -> Option<&str> {
        self.role.as_member().map(|m| m.links.conf.as_str())
    }

    /// `lgif`: Raft's state (None: standalone).
    pub(crate) fn raft_info(&self) -> Option<String> {
        self.role.as_member().map(|m| m.links.info.lock().text())
    }

    /// On the leader, ZooKeeper's leader-only `mntr` keys.
    pub(crate) fn leader_metrics(&self) -> Option<RoleView> {
        self.role
            .as_member()
            .filter(|m| m.view.leader == Some(m.me()))
            .map(|m| m.view)
    }

    /// Whether this server takes clients (standalone: always).
    pub(crate) fn serving(&self) -> bool {
        self.role.serving()
    }

    /// ZooKeeper's name for this server's role (srvr's Mode, zk_server_state).
    pub(crate) fn mode(&self) -> &'static str {
        self.role.mode()
    }

    /// Whether this member leads (its seat holds the lead): None for a standalone server.
    pub(crate) fn member_leads(&self) -> Option<bool> {
        self.role.as_member().map(|m| m.seat.leading().is_some())
    }

    /// Whether this member knows a leader: None for a standalone server.
    pub(crate) fn member_knows_leader(&self) -> Option<bool> {
        self.role.as_member().map(|m| m.view.leader.is_some())
    }

    /// `ydld`/`rqld`: hands the ask to the Raft side (false: standalone, or it is gone).
    pub(in crate::core) fn ask_leadership(&mut self, ask: LeadershipAsk) -> bool {
        let outbox = &mut self.outbox;
        self.role
            .as_member()
            .is_some_and(|m| m.links.ask_leadership(outbox, ask))
    }

    /// `csnp` on a member: asks Raft for a snapshot now. None for a standalone server.
    pub(in crate::core) fn ask_raft_snapshot(&mut self) -> Option<i64> {
        let Role::Member(m) = &mut self.role else {
            return None;
        };
        m.snapshots.since = 0;
        m.links
            .ask_snapshot(&mut self.outbox)
            .then(|| self.state.zxid())
    }

    /// Replaces the state with a Raft snapshot's image (`raft_snapshot.rs`), which stands at
    /// `at` in the Raft log.
    pub(in crate::core) fn install(
        &mut self,
        bytes: &[u8],
        at: Option<LogPos>,
    ) -> Result<(), String> {
        let (key, state) = raft_snapshot::decode(bytes)?;
        self.drop_all_conns();
        self.pending = Default::default();
        self.inflight.clear();
        self.state = state;
        let now = self.now_ms();
        let myid = self.role.member().me();
        let secret = key.unwrap_or(self.cfg.secret);
        self.liveness =
            crate::core::liveness::Liveness::new(secret, self.cfg.tick_ms, self.now.wall_ms);
        self.liveness.set_server_id(myid);
        for (&id, &timeout) in self.state.sessions() {
            self.liveness.add(id, timeout, now);
        }
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        let m = self.role.member_mut();
        if key.is_some() {
            m.key = key;
        }
        m.applied_at = at;
        // The next snapshot's floor: this image's size.
        m.snapshots.image_bytes = bytes.len();
        // A capture of the state just replaced is worth nothing: its builder fails and
        // openraft builds again later.
        m.snapshots.capture = None;
        // A configuration prepped before the image is in it or lost with the log it replaced.
        if let Some(l) = m.seat.leading_mut() {
            l.config_pending = None;
        }
        self.reload_config();
        self.restore_installed();
        tracing::info!(
            zxid = format_args!("{:#x}", self.state.zxid()),
            znodes = self.state.tree.znode_count(),
            "installed a snapshot"
        );
        Ok(())
    }

    /// Closes every client connection (a leader change, a lost quorum, a restore, an
    /// installed snapshot, the end of read-only mode).
    fn drop_all_conns(&mut self) {
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.drop_conn(c, true);
        }
    }
}

#[cfg(test)]
#[path = "member_test.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "session_clocks_test.rs"]
mod session_clocks_tests;
