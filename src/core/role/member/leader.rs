//! The Raft leader's seat: once it has applied every entry before its term's first, it preps
//! writes, its own clients' (intake.rs, handshake.rs) and the ones its followers forward
//! (here), and proposes them through its `Proposer`; zxids are term << 32 | counter. It also
//! holds the duties of the server that orders writes (role/duties.rs) and the configuration
//! it prepped and has not applied yet (reconfig.rs).

use super::{Forward, Forwarded, Proposed, SyncPoint};
use crate::acl::AuthId;
use crate::core::conn_id::ConnId;
use crate::core::conns::Slot;
use crate::core::pending::{Awaiting, Waiter};
use crate::core::role::Duties;
use crate::core::work::Work;
use crate::core::Core;
use crate::prep::Caller;
use palisade_proto::{ErrorCode, Request};

/// What only the member holding the lead has.
pub(in crate::core) struct Leading {
    pub(in crate::core) duties: Duties,
    /// The zxid of a configuration txn prepped and not applied yet.
    pub(in crate::core) config_pending: Option<i64>,
}

impl Leading {
    pub(super) fn new(reap_every_ms: u64) -> Self {
        Leading {
            duties: Duties::new(reap_every_ms),
            config_pending: None,
        }
    }
}

impl Core {
    /// On the leader: its followers' writes, prepped as its own clients' are. Returns the
    /// points of the syncs among them: every txn prepped so far, the session's earlier writes
    /// included (None: not a leader; the follower drops those clients).
    pub(in crate::core) fn forwarded(&mut self, ops: Vec<Forward>) -> Option<Vec<SyncPoint>> {
        // Not leading, or elected and still applying its predecessors' entries: None, and
        // the follower fails these clients (CONNECTIONLOSS); they retry.
        self.role.member().seat.leading()?;
        let now = self.now_ms();
        let mut points = Vec::new();
        for op in ops {
            let op = match op.what {
                Forwarded::Restore(part) => {
                    self.lead_restore_part(part);
                    continue;
                }
                // A txn prepped now would be logged after the restore's commit, behind its
                // zxid (ensemble_restore/): dropped. Its client's connection is closed on
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
    pub(in crate::core) fn leader_sync_waits(
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
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        c.queue.push_back(Slot::Write(xid));
        self.role.member_mut().syncs.add(point, session, xid);
        let waiter = Waiter {
            conn,
            zxid: None,
            awaiting: Awaiting::Sync(r.clone()),
            at: self.now.mono,
        };
        self.pending.add(session, xid, waiter);
        true
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
                let req = Request::decode_message(bytes, self.cfg.max_buffer)
                    .ok()
                    .map(|(_, req)| req);
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
    pub(in crate::core) fn touched(&mut self, ids: Vec<(i64, u64)>) {
        let now = self.now_ms();
        for (id, left) in ids {
            self.liveness.extend(id, now, left);
        }
    }

    /// The first leader makes the ensemble's key; it commits before any session.
    pub(super) fn propose_key(&mut self) {
        if self.role.member().key.is_some() {
            return;
        }
        let mut k = [0u8; 16];
        if getrandom::fill(&mut k).is_ok() {
            self.outbox.push(Work::Propose(vec![Proposed::Key(k)]));
        }
    }
}
