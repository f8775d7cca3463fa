//! The core as an ensemble member. The same pipeline as standalone, with the order of writes
//! decided by the quorum instead of the local log:
//!
//! - the leader, once it has applied every entry before its term's first, preps writes (its
//!   own clients' and the ones its followers forward) and proposes them (`Proposer`, the
//!   `Durability` of a member); zxids are term << 32 | counter;
//! - a follower forwards its clients' writes, with the connection's auth ids, and waits for
//!   the committed txn, matched by (session, cxid) as `pending.rs` matches;
//! - every member applies what the quorum committed (`CoreMsg::Committed`) through the same
//!   `commit` as standalone: watches, the session table, replies.
//!
//! When the leader changes, every member drops its clients, as ZooKeeper's members do when
//! they lose their leader: a pending write then fails with CONNECTIONLOSS (it may still
//! commit, as in ZooKeeper), and the client resumes its session on any member, with its
//! ephemerals and, through setWatches, its watches. Sessions are replicated txns; only the
//! leader expires them, from its followers' touches, and only while a quorum acknowledges it;
//! a new leader, or one a quorum acknowledges again after an outage, re-arms every session.

use super::conns::Slot;
use super::leader::Leader;
use super::pending::{Awaiting, PendingWrites, Waiter};
use super::Core;
use crate::acl::AuthId;
use crate::core::watch::ConnId;
use crate::core::CoreMsg;
use crate::durability::Durability;
use crate::faults::{self, Fault};
use crate::prep::{Caller, Prepper};
use crate::seam::{CommittedBatch, CoreGone, CoreInbox, Image, Notice};
use bytes::Bytes;
use palisade_proto::{ErrorCode, Request, Txn};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::sync::oneshot;

// What the core and the consensus glue exchange lives in the seam (src/seam.rs).
pub use crate::seam::{
    Committed, Forward, Forwarded, LeadershipAsk, LogPos, Proposed, RaftInfo, RoleView, SyncPoint,
    ToLeader,
};

/// Own digests kept for the leader's to compare with (one every DIGEST_EVERY txns).
const DIGESTS_KEPT: usize = 64;

/// The channels to consensus.
pub struct MemberLinks {
    pub myid: u64,
    /// What `conf` adds for a member (serverId, limits, membership), from members.rs.
    pub conf: String,
    pub info: std::sync::Arc<parking_lot::Mutex<RaftInfo>>,
    pub propose: UnboundedSender<Vec<Proposed>>,
    /// Bounded (limits.rs `FORWARD_QUEUE`): sent with `try_send`, never waited on.
    pub to_leader: mpsc::Sender<ToLeader>,
    /// Asks Raft for a snapshot: every snapCount/2..snapCount applied txns (randomised, as
    /// ZooKeeper does, so that members do not snapshot together) and on `csnp`. Raft's own
    /// policy counts entries, and an entry holds a whole batch. Bounded
    /// (`RAFT_SNAPSHOT_ASKS`): full means an ask is on its way.
    pub snapshot: mpsc::Sender<()>,
    pub snap_count: u64,
    /// readonlymode.enabled: how long this member must be without a quorum before it serves
    /// read-only clients (ZooKeeper's max(2 s, tickTime)); None: never.
    pub read_only: Option<std::time::Duration>,
    /// zoo.cfg's server.N lines: the configuration until one is committed (reconfig.rs).
    pub members: Vec<crate::membership::members::Member>,
    /// This member's configuration, for Raft's side to bring the membership to (its leader).
    pub desired: tokio::sync::watch::Sender<std::sync::Arc<crate::membership::dynamic::DynConfig>>,
    /// `ydld` and `rqld`, to the Raft side.
    pub leadership: UnboundedSender<LeadershipAsk>,
    /// `--force-new-ensemble`: the first ready leadership commits a configuration of this
    /// member alone (core/reconfig.rs `commit_alone_config`).
    pub alone: bool,
}

pub(super) struct Member {
    pub(super) links: MemberLinks,
    pub(super) view: RoleView,
    /// Forwards queued this turn, sent with the turn's batch.
    queued: Vec<Forward>,
    pub(super) key: Option<[u8; 16]>,
    /// Syncs whose point is known, by the zxid to apply first.
    syncs: BTreeMap<i64, Vec<(i64, i32)>>,
    /// This member's digests after the txns the digest rule picks, oldest first.
    digests: std::collections::VecDeque<(i64, u64)>,
    /// Where in the Raft log the applied state stands.
    pub(super) applied_at: Option<LogPos>,
    /// The Raft snapshot being captured, if one is.
    pub(super) capture: Option<super::raft_snapshot::RaftCapture>,
    /// The size of the last Raft snapshot's image: the next capture reserves as much.
    pub(super) image_bytes: usize,
    /// Txns applied since the last snapshot was asked for, and how many make the next due.
    since_snapshot: u64,
    snapshot_due: u64,
    /// Log bytes committed since the last snapshot was asked for: the next also waits until
    /// they are as many as the last image's (`snapshot_wanted`).
    log_bytes: u64,
    /// Read-only mode (read_only.rs).
    pub(super) ro: super::read_only::ReadOnly,
    /// The configuration (reconfig.rs): committed, or zoo.cfg's (version 0).
    pub(super) config: std::sync::Arc<crate::membership::dynamic::DynConfig>,
    /// On the leader: the zxid of a configuration txn prepped and not applied yet.
    pub(super) config_pending: Option<i64>,
    /// Reconfigs committed here, answered once their configuration is in force.
    pub(super) parked: Vec<super::reconfig::Parked>,
    /// Online restores through the Raft log (ensemble_restore.rs).
    pub(super) restore: super::ensemble_restore::EnsembleRestore,
}

/// Whether a member's next Raft snapshot is due: snapCount/2 .. snapCount txns after the last
/// (ZooKeeper's rule), and no sooner than the log since the last holds as many bytes as its
/// image. The floor is the Raft dissertation's (Ongaro, §5.1.1: snapshot when the log is
/// larger than a snapshot, and the disk bandwidth spent on snapshots stays small): with
/// ZooKeeper's rule alone a member holding a 900,000-znode tree wrote a 175 MB image every
/// 50,000–100,000 txns of ~100 bytes, 17–35 times the log's own bytes (5–10 MB), and under create-seq
/// 14 of them per member in 8 s. A member's restart is not an outage (the quorum serves), so
/// the longer replay it may face is the better trade; a standalone server keeps ZooKeeper's
/// rule, its restart time being its downtime.
fn snapshot_wanted(since: u64, due: u64, log_bytes: u64, image_bytes: usize) -> bool {
    since >= due && log_bytes >= image_bytes as u64
}

/// When the next snapshot is due: snapCount/2 .. snapCount txns.
fn next_due(snap_count: u64, rng: &mut fastrand::Rng) -> u64 {
    let half = (snap_count / 2).max(1);
    half + rng.u64(0..half)
}

/// The Durability of a member: prepped txns are proposed, one batch per core turn. Digest
/// records are not logged: every member applies the same entries (the digests in Raft
/// snapshots are checked at install).
pub struct Proposer {
    tx: UnboundedSender<Vec<Proposed>>,
    queued: Vec<Proposed>,
}

impl Proposer {
    pub fn new(tx: UnboundedSender<Vec<Proposed>>) -> Self {
        Proposer {
            tx,
            queued: Vec::new(),
        }
    }
}

impl Durability for Proposer {
    fn append(&mut self, txn: &Txn) {
        self.queued.push(Proposed::Txn(txn.encode()));
    }
    fn digest(&mut self, _zxid: i64, _digest: u64) {}
    fn flush(&mut self) {
        if !self.queued.is_empty() && self.tx.send(std::mem::take(&mut self.queued)).is_err() {
            tracing::error!("consensus is gone; writes cannot be committed");
        }
    }
}

impl Core {
    /// Makes this core an ensemble member: it preps only as a ready leader.
    pub fn join(&mut self, links: MemberLinks) {
        self.liveness.set_server_id(links.myid);
        self.leader = None;
        let snapshot_due = next_due(links.snap_count, &mut self.rng);
        let config = std::sync::Arc::new(crate::membership::dynamic::DynConfig::from_static(
            &links.members,
        ));
        self.member = Some(Member {
            links,
            view: RoleView::default(),
            queued: Vec::new(),
            key: None,
            syncs: BTreeMap::new(),
            digests: Default::default(),
            applied_at: None,
            capture: None,
            image_bytes: 0,
            since_snapshot: 0,
            snapshot_due,
            log_bytes: 0,
            ro: Default::default(),
            config,
            config_pending: None,
            parked: Vec::new(),
            restore: Default::default(),
        });
        self.reload_config();
    }

    /// Whether writes go to a leader instead of being prepped here.
    pub(super) fn forwards_writes(&self) -> bool {
        self.member.as_ref().is_some_and(|m| !m.view.ready)
    }

    /// Whether this member takes clients: it knows a leader (a leader itself once ready) and
    /// the ensemble's key.
    pub(crate) fn serving(&self) -> bool {
        self.member.as_ref().is_none_or(|m| {
            m.key.is_some()
                && match m.view.leader {
                    Some(l) if l == m.links.myid => m.view.ready && m.view.quorum,
                    Some(_) => true,
                    None => false,
                }
        })
    }

    /// mntr's zk_quorum_size: ZooKeeper's getQuorumSize, the number of voting members (not
    /// a majority of them). None: standalone.
    pub(crate) fn quorum_size(&self) -> Option<usize> {
        self.member.as_ref().map(|m| m.config.voters().len())
    }

    /// `conf`'s lines for a member (None: standalone).
    pub(crate) fn member_conf(&self) -> Option<&str> {
        self.member.as_ref().map(|m| m.links.conf.as_str())
    }

    /// `lgif`: Raft's state (None: standalone).
    pub(crate) fn raft_info(&self) -> Option<String> {
        self.member.as_ref().map(|m| m.links.info.lock().text())
    }

    /// On the leader, ZooKeeper's leader-only `mntr` keys.
    pub(crate) fn leader_metrics(&self) -> Option<RoleView> {
        self.member
            .as_ref()
            .filter(|m| m.view.leader == Some(m.links.myid))
            .map(|m| m.view)
    }

    /// ZooKeeper's name for this server's role (srvr's Mode, zk_server_state).
    pub(crate) fn mode(&self) -> &'static str {
        match &self.member {
            None => "standalone",
            Some(m) if m.ro.active => "read-only",
            Some(m) if m.config.observers().contains(&m.links.myid) => "observer",
            // A learner outside the configuration is ZooKeeper's non-voting follower.
            Some(m) if m.view.learner && m.config.get(m.links.myid).is_some() => "observer",
            Some(m) if m.view.leader == Some(m.links.myid) => "leader",
            Some(_) => "follower",
        }
    }

    /// Hands a write of `conn` to the leader; its reply waits for the committed txn.
    pub(super) fn forward(
        &mut self,
        conn: ConnId,
        session: i64,
        cxid: i32,
        what: Forwarded,
        awaiting: Awaiting,
    ) {
        let auth = self.conns.get(&conn).map_or_else(Vec::new, |c| {
            c.auth
                .iter()
                .map(|a| (a.scheme.to_string(), a.id.to_string()))
                .collect()
        });
        let waiter = Waiter {
            conn,
            zxid: None,
            awaiting,
            at: self.now.mono,
        };
        self.pending.add(session, cxid, waiter);
        if let Some(m) = self.member.as_mut() {
            m.queued.push(Forward {
                session,
                cxid,
                what,
                auth,
            });
        }
    }

    /// Sends the turn's forwards (with the turn's log batch).
    pub(super) fn flush_forwards(&mut self) {
        if let Some(m) = self.member.as_mut() {
            if !m.queued.is_empty() {
                let ops = std::mem::take(&mut m.queued);
                // Full: the forwarder is calls behind (a leader that does not answer). The
                // forwards stay, ahead of the next turn's, and go with them.
                if let Err(TrySendError::Full(ToLeader::Forward(ops))) =
                    m.links.to_leader.try_send(ToLeader::Forward(ops))
                {
                    m.queued = ops;
                }
            }
        }
    }

    /// On the leader: its followers' writes, prepped as its own clients' are. Returns the
    /// points of the syncs among them: every txn prepped so far, the session's earlier writes
    /// included (None: not a leader; the follower drops those clients).
    pub(super) fn forwarded(&mut self, ops: Vec<Forward>) -> Option<Vec<SyncPoint>> {
        if !self.member.as_ref()?.view.ready {
            // Not leading, or elected and still applying its predecessors' entries: the
            // follower fails these clients (CONNECTIONLOSS) and they retry.
            return None;
        }
        let now = self.now_ms();
        let mut points = Vec::new();
        for op in ops {
            let op = match op.what {
                Forwarded::Restore(part) => {
                    self.lead_restore_part(part);
                    continue;
                }
                // A txn prepped now would be logged after the restore's commit, behind its
                // zxid (ensemble_restore.rs): dropped. Its client's connection is closed on
                // its member when the restore's first chunk is applied there, before the
                // commit, and its wait ends with it.
                _ if self.restore_committing() => continue,
                what => Forward { what, ..op },
            };
            self.liveness.touch(op.session, now);
            if let Forwarded::Sync = op.what {
                points.push((op.session, op.cxid, self.sync_point()));
                continue;
            }
            self.prep_forwarded(op);
        }
        Some(points)
    }

    /// On the leader, a sync's point: its last txn prepped and not applied here yet, else what
    /// it has applied. Not the prepper's counter: a new leader's starts at its term's base
    /// (term << 32), which no txn holds until the term's first write, so a sync right after an
    /// election waited for a write that might never come, and its client's pings queued
    /// behind it until the client gave up (CONNECTIONLOSS: seen on every session after a
    /// quorum outage that ended in an election, tests/ensemble test_quorum_outage.py).
    fn sync_point(&self) -> i64 {
        self.inflight
            .back()
            .map_or(self.state.zxid(), |t| t.header.zxid)
    }

    /// On the leader, a client's sync: its point is every txn prepped so far, as a
    /// follower's is. A follower may apply a commit and answer its client before the leader
    /// applies it, so a read behind a sync answered at once could miss a write acknowledged
    /// elsewhere. True when the sync waits (in its connection's order, answered by
    /// `answer_syncs`); false when nothing is outstanding and it is answered as a read.
    pub(super) fn leader_sync_waits(
        &mut self,
        conn: ConnId,
        session: i64,
        xid: i32,
        r: &palisade_proto::SyncRequest,
    ) -> bool {
        let point = self.sync_point();
        if point <= self.state.zxid() {
            return false;
        }
        let (Some(m), Some(c)) = (self.member.as_mut(), self.conns.get_mut(&conn)) else {
            return false;
        };
        c.queue.push_back(Slot::Write(xid));
        m.syncs.entry(point).or_default().push((session, xid));
        let waiter = Waiter {
            conn,
            zxid: None,
            awaiting: Awaiting::Sync(r.clone()),
            at: self.now.mono,
        };
        self.pending.add(session, xid, waiter);
        true
    }

    /// On a follower: the leader's points for its syncs.
    pub(super) fn sync_points(&mut self, points: Vec<SyncPoint>) {
        if let Some(m) = self.member.as_mut() {
            for (session, cxid, zxid) in points {
                m.syncs.entry(zxid).or_default().push((session, cxid));
            }
        }
        self.answer_syncs();
    }

    /// Answers the syncs whose point is applied.
    pub(super) fn answer_syncs(&mut self) {
        let applied = self.state.zxid();
        loop {
            let Some(m) = self.member.as_mut() else {
                return;
            };
            let Some(e) = m.syncs.first_entry() else {
                return;
            };
            if *e.key() > applied {
                return;
            }
            for (session, cxid) in e.remove() {
                let Some(w) = self.pending.take_unordered(session, cxid) else {
                    continue;
                };
                match w.awaiting {
                    Awaiting::Sync(r) => {
                        let frame = super::read::sync_reply(cxid, applied, r);
                        self.write_answered(w.conn, cxid, frame, applied);
                    }
                    Awaiting::Revalidate(h) => {
                        let h = *h;
                        self.connect_as(h.conn, h.req, h.out, h.peer, h.ready, h.x509, true);
                    }
                    _ => {}
                }
            }
        }
    }

    fn prep_forwarded(&mut self, f: Forward) {
        let time = self.now.wall_ms;
        let (session, cxid) = (f.session, f.cxid);
        let txn = match f.what {
            Forwarded::CreateSession { timeout } => {
                // Known to the leader from its prep, as ZooKeeper's leader tracks a session
                // from its PrepRequestProcessor: the follower may apply the createSession and
                // answer its client before this leader's core does, and the client's next
                // request must not find the session missing here.
                if self.liveness.get(session).is_none() {
                    let now = self.now_ms();
                    self.liveness.add(session, timeout, now);
                }
                self.prep.create_session(session, timeout, time)
            }
            // Taken by `forwarded` before this.
            Forwarded::Sync | Forwarded::Restore(_) => return,
            Forwarded::Error(code) => {
                let err = ErrorCode::from_i32(code).unwrap_or(ErrorCode::MarshallingError);
                self.prep.error(session, cxid, err, time)
            }
            Forwarded::Request(bytes) => {
                let req = decode_request(bytes, self.cfg.max_buffer);
                let closing = self.liveness.get(session).is_none_or(|s| s.closing);
                match req {
                    _ if closing => self
                        .prep
                        .error(session, cxid, ErrorCode::SessionExpired, time),
                    Some(Request::CloseSession) => {
                        self.close_session(session, cxid, None);
                        return;
                    }
                    Some(req) if req.is_write() => {
                        let auth: Vec<AuthId> = f
                            .auth
                            .into_iter()
                            .map(|(scheme, id)| AuthId {
                                scheme: scheme.into(),
                                id: id.into(),
                            })
                            .collect();
                        if let Request::Reconfig(r) = &req {
                            let txn = self.prep_reconfig(session, cxid, r, &auth);
                            self.submit(txn, None);
                            return;
                        }
                        let caller = Caller {
                            session,
                            auth: &auth,
                        };
                        self.prep.write(&self.state.tree, caller, cxid, &req, time)
                    }
                    _ => self
                        .prep
                        .error(session, cxid, ErrorCode::MarshallingError, time),
                }
            }
        };
        self.submit(txn, None);
    }

    /// On the leader: sessions its followers' clients keep alive.
    pub(super) fn touched(&mut self, ids: Vec<(i64, u64)>) {
        let now = self.now_ms();
        for (id, left) in ids {
            self.liveness.extend(id, now, left);
        }
    }

    /// On a follower, each tick: the sessions attached here and alive, to the leader.
    pub(super) fn report_sessions(&mut self) {
        let now = self.now_ms();
        let Some(m) = self.member.as_ref() else {
            return;
        };
        if m.view.ready || m.view.leader.is_none() {
            return;
        }
        let ids: Vec<(i64, u64)> = self
            .liveness
            .iter()
            .filter(|(_, s)| s.conn.is_some() && s.deadline_ms > now)
            .map(|(&id, s)| (id, s.deadline_ms - now))
            .collect();
        if !ids.is_empty() {
            // Full: skipped, the next tick's touch says the same, newer (FORWARD_QUEUE).
            let _ = m.links.to_leader.try_send(ToLeader::Touch(ids));
        }
    }

    /// Forwards of these sessions did not reach the leader: their clients are dropped
    /// (CONNECTIONLOSS) rather than left waiting for a reply that cannot come.
    pub(super) fn forward_failed(&mut self, failed: Vec<(i64, i32)>) {
        for (session, cxid) in failed {
            if session == 0 {
                // A part of a restore (ensemble_restore.rs); no session is 0.
                self.restore_forward_failed();
                continue;
            }
            // The request's connection: a handshake's (a new session's, a revalidation's) is
            // not the session's yet, and its client would wait for an answer that never comes
            // (seen: a member back as a follower forwarded a new session on a link to the
            // leader's previous process, and the client waited out its whole timeout).
            let waiter = self.pending.take_unordered(session, cxid);
            let conn = match waiter {
                Some(w) => Some(w.conn),
                None => self.liveness.get(session).and_then(|l| l.conn),
            };
            // A revalidation's handshake is dropped with its waiter: its connection closes.
            if let Some(c) = conn {
                self.drop_conn(c, true);
            }
        }
    }

    /// Committed entries, in log order. Returns false when this member's state diverged
    /// from the log (a txn at or below the applied zxid): it stops rather than serve.
    /// `log_bytes`: the size of the txns' entries in the log.
    pub(super) fn committed(
        &mut self,
        items: Vec<Committed>,
        at: Option<LogPos>,
        log_bytes: u64,
    ) -> bool {
        if let Some(m) = self.member.as_mut() {
            m.log_bytes = m.log_bytes.saturating_add(log_bytes);
        }
        for item in items {
            let txn = match item {
                Committed::Key(k) => {
                    if let Some(m) = self.member.as_mut() {
                        if m.key.is_none() {
                            m.key = Some(k);
                            self.liveness.set_secret(k);
                        }
                    }
                    continue;
                }
                Committed::Digest { zxid, digest } => {
                    if !self.digest_agrees(zxid, digest) {
                        return false;
                    }
                    continue;
                }
                Committed::Restore { part, term } => {
                    self.restore_committed(part, term);
                    continue;
                }
                Committed::Txn(t) => t,
            };
            let zxid = txn.header.zxid;
            if zxid <= self.state.zxid() && crate::faults::on(crate::faults::Fault::EarlyAck) {
                self.inflight.retain(|t| t.header.zxid != zxid); // applied at its prep
                continue;
            }
            if zxid <= self.state.zxid() {
                tracing::error!(
                    zxid = format_args!("{zxid:#x}"),
                    applied = format_args!("{:#x}", self.state.zxid()),
                    "a committed txn does not follow the applied state: stopping"
                );
                return false;
            }
            match self.inflight.front() {
                Some(t) if t.header.zxid == zxid => {
                    self.inflight.pop_front();
                }
                // Another leader's txn: what this one proposed will not commit.
                Some(_) => self.abandon_proposals(),
                None => {}
            }
            self.raft_snapshot_txn(&txn);
            self.commit(txn);
            if let Some(m) = self.member.as_mut() {
                m.since_snapshot += 1;
            }
        }
        if let Some(m) = self.member.as_mut() {
            if at.is_some() {
                m.applied_at = at;
            }
            if snapshot_wanted(m.since_snapshot, m.snapshot_due, m.log_bytes, m.image_bytes) {
                m.since_snapshot = 0;
                m.log_bytes = 0;
                m.snapshot_due = next_due(m.links.snap_count, &mut self.rng);
                // Full: an ask is on its way already.
                let _ = m.links.snapshot.try_send(());
            }
        }
        self.answer_syncs();
        self.leave_read_only();
        true
    }

    /// After txn `zxid` (one the digest rule picks): kept to compare with the leader's, and
    /// proposed by the leader. Returns false for a standalone server (it logs its own).
    pub(super) fn member_digest(&mut self, zxid: i64, digest: u64) -> bool {
        let Some(m) = self.member.as_mut() else {
            return false;
        };
        if m.digests.len() == DIGESTS_KEPT {
            m.digests.pop_front();
        }
        m.digests.push_back((zxid, digest));
        if m.view.ready {
            let _ = m
                .links
                .propose
                .send(vec![Proposed::Digest { zxid, digest }]);
        }
        true
    }

    /// The leader's digest after `zxid` against this member's: a member whose tree differs
    /// stops rather than serve it.
    fn digest_agrees(&self, zxid: i64, digest: u64) -> bool {
        let own = self
            .member
            .as_ref()
            .and_then(|m| m.digests.iter().find(|(z, _)| *z == zxid))
            .map(|(_, d)| *d);
        match own {
            Some(d) if d != digest => {
                tracing::error!(
                    zxid = format_args!("{zxid:#x}"),
                    leader = format_args!("{digest:#x}"),
                    own = format_args!("{d:#x}"),
                    "this member's tree differs from the leader's: stopping"
                );
                false
            }
            _ => true,
        }
    }

    fn abandon_proposals(&mut self) {
        tracing::warn!(
            proposals = self.inflight.len(),
            "proposals superseded by another leader's entries"
        );
        self.inflight.clear();
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        self.leader = None;
        if let Some(m) = self.member.as_mut() {
            m.view.ready = false;
            m.config_pending = None;
        }
    }

    /// Raft's view changed.
    pub(super) fn set_role(&mut self, v: RoleView) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        let old = m.view;
        if old == v {
            return;
        }
        let was_serving = self.serving();
        let Some(m) = self.member.as_mut() else {
            return;
        };
        m.view = v;
        let changed = old.leader != v.leader || old.term != v.term;
        // A candidate alone raises its term at every try: its read-only clients stay.
        let keep_read_only = m.ro.active && v.leader.is_none();
        if changed && !keep_read_only {
            tracing::info!(
                leader = ?v.leader,
                term = v.term,
                clients = self.conns.len(),
                "leader changed; dropping clients, which resume their sessions"
            );
            m.queued.clear();
            m.syncs.clear();
            let conns: Vec<ConnId> = self.conns.keys().copied().collect();
            for c in conns {
                self.drop_conn(c, true);
            }
            self.pending = PendingWrites::default();
            self.inflight.clear();
            self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
            self.leader = None;
            if let Some(m) = self.member.as_mut() {
                m.config_pending = None;
                m.parked.clear();
            }
            self.restore_leader_changed(false);
        }
        if v.config_version != old.config_version {
            // Before any drop below: a reconfig that removed this leader is answered first.
            self.release_parked();
        }
        if !changed && ((old.quorum && !v.quorum) || (was_serving && !self.serving())) {
            tracing::warn!(
                clients = self.conns.len(),
                "no quorum acknowledges this leader, or it steps down; dropping clients"
            );
            let conns: Vec<ConnId> = self.conns.keys().copied().collect();
            for c in conns {
                self.drop_conn(c, true);
            }
            self.pending = PendingWrites::default();
        }
        if v.ready && (changed || !old.ready) {
            self.lead(v.term);
        } else if v.ready && !old.quorum && v.quorum && !faults::on(Fault::ExpireWithoutQuorum) {
            // The same leader, acknowledged again after an outage it kept its term through
            // (no election, so nothing else re-arms them): its sessions' clients could not be
            // heard meanwhile, so each gets a full timeout from now, as from a new leader.
            let sessions = self.rearm_sessions();
            tracing::info!(
                sessions,
                "a quorum acknowledges this leader again: sessions re-armed"
            );
        }
        self.leave_read_only();
    }

    /// Whether this server's session clocks run: always standalone; on a member, only while
    /// it leads with a quorum. A session expires only once its client was silent for its whole
    /// timeout while a quorum served: a leader left alone refuses every handshake, so no
    /// client can be heard, and an expiry it prepped then would commit once a follower came
    /// back (a 4 s session lost to a 10 s outage, issue 34). ZooKeeper's leader steps down
    /// instead, and the next one re-arms every session.
    pub(super) fn session_clocks_run(&self) -> bool {
        let quorum = self
            .member
            .as_ref()
            .is_none_or(|m| m.view.ready && m.view.quorum);
        quorum || faults::on(Fault::ExpireWithoutQuorum)
    }

    /// Every session gets a full timeout from now (a leader starting to serve); returns how
    /// many there are.
    fn rearm_sessions(&mut self) -> usize {
        let now = self.now_ms();
        let ids: Vec<i64> = self.state.sessions().keys().copied().collect();
        for &id in &ids {
            self.liveness.touch(id, now);
        }
        ids.len()
    }

    /// Becomes the ready leader of `term`.
    fn lead(&mut self, term: u64) {
        let base = ((term.min(i32::MAX as u64) as i64) << 32).max(self.state.zxid());
        self.prep = Prepper::new(base, self.cfg.ttl_enabled);
        self.leader = Some(Leader::new(self.cfg.container_check_ms));
        self.rearm_sessions();
        tracing::info!(
            term,
            sessions = self.liveness.len(),
            zxid = format_args!("{:#x}", self.state.zxid()),
            "leading"
        );
        let Some(m) = self.member.as_mut() else {
            return;
        };
        if m.key.is_none() {
            // The first leader makes the ensemble's key; it commits before any session.
            let mut k = [0u8; 16];
            if getrandom::fill(&mut k).is_ok() {
                let _ = m.links.propose.send(vec![Proposed::Key(k)]);
            }
        }
        self.commit_first_config(term);
        self.restore_leader_changed(true);
    }

    /// `csnp` on a member: asks Raft for a snapshot now. None for a standalone server.
    /// `ydld`/`rqld`: hands the ask to the Raft side (false: standalone, or it is gone).
    pub(super) fn ask_leadership(&mut self, ask: LeadershipAsk) -> bool {
        self.member
            .as_ref()
            .is_some_and(|m| m.links.leadership.send(ask).is_ok())
    }

    pub(super) fn ask_raft_snapshot(&mut self) -> Option<i64> {
        let m = self.member.as_mut()?;
        m.since_snapshot = 0;
        // Full: an ask is on its way, which this one joins.
        let asked = !matches!(m.links.snapshot.try_send(()), Err(TrySendError::Closed(_)));
        asked.then(|| self.state.zxid())
    }

    /// Replaces the state with a Raft snapshot's image (`raft_snapshot.rs`), which stands at
    /// `at` in the Raft log.
    pub(super) fn install(&mut self, bytes: &[u8], at: Option<LogPos>) -> Result<(), String> {
        let (key, state) = super::raft_snapshot::decode(bytes)?;
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.drop_conn(c, true);
        }
        self.pending = PendingWrites::default();
        self.inflight.clear();
        self.state = state;
        let now = self.now_ms();
        let myid = self.member.as_ref().map_or(0, |m| m.links.myid);
        let secret = key.unwrap_or(self.cfg.secret);
        self.liveness = super::liveness::Liveness::new(secret, self.cfg.tick_ms, self.now.wall_ms);
        self.liveness.set_server_id(myid);
        for (&id, &timeout) in self.state.sessions() {
            self.liveness.add(id, timeout, now);
        }
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        if let Some(m) = self.member.as_mut() {
            if key.is_some() {
                m.key = key;
            }
            m.applied_at = at;
            // The next snapshot's floor: this image's size.
            m.image_bytes = bytes.len();
            // A capture of the state just replaced is worth nothing: its builder fails and
            // openraft builds again later.
            m.capture = None;
            m.config_pending = None;
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
}

/// The core's inbox as the consensus glue sends to it (seam.rs): each call becomes its
/// `CoreMsg`, a request paired here with the one-shot channel its answer comes back on.
impl CoreInbox for mpsc::Sender<CoreMsg> {
    type Answer<T: Send + 'static> = Answer<T>;

    async fn tell(&self, n: Notice) -> Result<(), CoreGone> {
        self.send(notice(n)).await.map_err(|_| CoreGone)
    }

    fn try_tell(&self, n: Notice) -> bool {
        self.try_send(notice(n)).is_ok()
    }

    async fn committed(&self, batch: CommittedBatch) -> Result<Answer<()>, CoreGone> {
        let (ack, done) = oneshot::channel();
        let CommittedBatch {
            items,
            at,
            log_bytes,
        } = batch;
        let m = CoreMsg::Committed {
            items,
            at,
            log_bytes,
            ack,
        };
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(done))
    }

    async fn image(&self) -> Result<Answer<Image>, CoreGone> {
        let (tx, rx) = oneshot::channel();
        self.send(CoreMsg::Image(tx)).await.map_err(|_| CoreGone)?;
        Ok(Answer(rx))
    }

    async fn install(
        &self,
        image: Vec<u8>,
        at: Option<LogPos>,
    ) -> Result<Answer<Result<(), String>>, CoreGone> {
        let (ack, done) = oneshot::channel();
        let m = CoreMsg::Install { image, at, ack };
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(done))
    }

    async fn forwarded(
        &self,
        ops: Vec<Forward>,
    ) -> Result<Answer<Option<Vec<SyncPoint>>>, CoreGone> {
        let (tx, rx) = oneshot::channel();
        let m = CoreMsg::Forwarded(ops, Some(tx));
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(rx))
    }
}

fn notice(n: Notice) -> CoreMsg {
    match n {
        Notice::Role(v) => CoreMsg::Role(v),
        Notice::SyncPoints(p) => CoreMsg::SyncPoints(p),
        Notice::Touched(ids) => CoreMsg::Touched(ids),
        Notice::ForwardFailed(f) => CoreMsg::ForwardFailed(f),
        Notice::Shutdown => CoreMsg::Shutdown,
    }
}

/// The core's answer to a request of the glue: `CoreGone` if it dropped the request.
pub struct Answer<T>(oneshot::Receiver<T>);

impl<T> Future for Answer<T> {
    type Output = Result<T, CoreGone>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map_err(|_| CoreGone)
    }
}

/// A forwarded request: header and body as the client sent them.
fn decode_request(bytes: Bytes, max: usize) -> Option<Request> {
    // RequestHeader: xid, then the opcode, i32 big-endian each.
    let op = i32::from_be_bytes(*bytes.get(4..8)?.first_chunk::<4>()?);
    Request::decode(op, bytes.slice(8..), max).ok()
}

#[cfg(test)]
#[path = "member_test.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "session_clocks_test.rs"]
mod session_clocks_tests;
