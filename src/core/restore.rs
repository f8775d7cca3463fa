//! A backup restored into the running standalone server (the AdminServer's `restore`, ZooKeeper
//! 3.9's RestoreCommand), durably, in three steps the core takes a turn at a time:
//!
//! 1. **Draining.** Every client connection is closed and none is accepted (ZooKeeper blocks
//!    request submission for the restore), the reaper and session expiry pause; once no txn is
//!    in flight and no snapshot file is being written, the restore's zxid is chosen: one past
//!    both the live state's and the backup's (state/restore.rs says why zxids go on rising).
//! 2. **Logging.** A no-op txn (an error txn, as a refused write leaves) takes that zxid in the
//!    log. Until the next step is durable, a restart recovers the live state at that zxid: the
//!    restore has not happened, and nobody was told it had.
//! 3. **Writing.** The restored state goes to the snapshot thread as a whole (not fuzzy)
//!    snapshot starting at that zxid, which recovery takes as the newest, with the log after
//!    it. Once its file is written, the core swaps the state, sessions and the prep; then
//!    clients connect again (sessions the backup holds resume; the others have expired).
//!
//! An ensemble member restores through the Raft log instead, every member alike
//! (role/member/ensemble_restore/), with the same rules for the state (state/restore.rs).

use super::token::Token;
use super::Core;
use crate::durability::capture::Capture;
use crate::durability::snapshotter::SnapMsg;
use crate::limits::SNAPSHOT_BLOCK;
use crate::state::State;
use palisade_proto::{ErrorTxn, OpCode, Txn, TxnBody, TxnHeader};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What the AdminServer is told: the zxid the restored state stands at, or why not.
pub type RestoreReply = Token<Result<i64, String>>;

pub(super) struct Restoring {
    backup: Option<State>,
    stage: Stage,
    reply: Option<RestoreReply>,
    started: Instant,
}

enum Stage {
    Draining,
    /// The no-op at this zxid is in the log; the restored state waits for it to be durable.
    Logging(i64, Box<State>),
    /// The restored state's snapshot file at this zxid is being written.
    Writing(i64, Box<State>),
}

impl Core {
    /// Starts restoring `backup` (decoded off the core thread); `reply` is answered when it
    /// is done or refused.
    /// On an ensemble member the backup goes through the Raft log instead, as `stream`
    /// (the snapshot stream it was decoded from, whose last processed zxid is `zxid`):
    /// role/member/ensemble_restore/.
    pub(crate) fn begin_restore(
        &mut self,
        backup: State,
        stream: (bytes::Bytes, i64),
        reply: RestoreReply,
    ) {
        if self.role.is_member() {
            drop(backup);
            self.begin_ensemble_restore(stream.0, stream.1, reply);
            return;
        }
        let refused = if self.snap.is_none() {
            Some("this server writes no snapshots, which a restore needs")
        } else if self.restoring.is_some() {
            Some("a restore is in progress")
        } else {
            None
        };
        if let Some(why) = refused {
            self.outbox.answer(reply, Err(why.into()));
            return;
        }
        tracing::warn!(
            live = format_args!("{:#x}", self.state.zxid()),
            backup = format_args!("{:#x}", backup.zxid()),
            nodes = backup.tree.znode_count(),
            "restore: closing every client connection; the backup replaces the live state"
        );
        let conns: Vec<_> = self.conns.keys().copied().collect();
        for c in conns {
            self.drop_conn(c, true);
        }
        self.restoring = Some(Restoring {
            backup: Some(backup),
            stage: Stage::Draining,
            reply: Some(reply),
            started: self.now.mono,
        });
    }

    /// Whether a restore is in progress: no client is served meanwhile.
    pub(crate) fn restoring(&self) -> bool {
        self.restoring.is_some() || self.role.restoring()
    }

    /// One turn of the restore in progress, if any.
    pub(super) fn restore_step(&mut self) {
        let Some(mut r) = self.restoring.take() else {
            return;
        };
        r.stage = match std::mem::replace(&mut r.stage, Stage::Draining) {
            Stage::Draining => self.restore_drained(&mut r),
            Stage::Logging(zxid, state) if self.state.zxid() >= zxid => {
                self.restore_write(zxid, state)
            }
            Stage::Writing(zxid, state) => match self.restore_written(zxid) {
                None => Stage::Writing(zxid, state),
                Some(true) => {
                    self.restore_swap(*state);
                    tracing::warn!(
                        zxid = format_args!("{zxid:#x}"),
                        ms = self.now.since(r.started).as_millis() as u64,
                        "restore: done; serving the backup's state"
                    );
                    if let Some(reply) = r.reply.take() {
                        self.outbox.answer(reply, Ok(zxid));
                    }
                    return;
                }
                Some(false) => {
                    tracing::error!(
                        zxid = format_args!("{zxid:#x}"),
                        "restore: the snapshot file could not be written; the live state stays"
                    );
                    if let Some(reply) = r.reply.take() {
                        let why = "the restored snapshot could not be written (the server's \
                                   log says why); the live state stays";
                        self.outbox.answer(reply, Err(why.into()));
                    }
                    return;
                }
            },
            other => other,
        };
        self.restoring = Some(r);
    }

    /// Draining: once nothing is in flight or being written, the no-op takes the restore's
    /// zxid in the log.
    fn restore_drained(&mut self, r: &mut Restoring) -> Stage {
        let writer_busy = self.snap.as_ref().is_some_and(|s| s.busy());
        if !self.inflight.is_empty() || writer_busy {
            return Stage::Draining;
        }
        let Some(backup) = r.backup.take() else {
            unreachable!("the backup is taken once, when draining ends")
        };
        let zxid = self.state.zxid().max(backup.zxid()).saturating_add(1);
        let restored = backup.restored_over(&self.state, zxid);
        let noop = Txn {
            header: TxnHeader {
                client_id: 0,
                cxid: 0,
                zxid,
                time: self.now.wall_ms,
                type_: OpCode::Error as i32,
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        };
        self.prep = crate::prep::Prepper::new(zxid, self.cfg.ttl_enabled);
        self.submit(noop, None);
        Stage::Logging(zxid, Box::new(restored))
    }

    /// The no-op is durable and applied: the restored state goes to the snapshot thread
    /// whole, as a snapshot starting (and ending) at `zxid`.
    fn restore_write(&mut self, zxid: i64, state: Box<State>) -> Stage {
        crate::durability::crashpoint::hit("restore.logged");
        let Some(s) = self.snap.as_mut() else {
            unreachable!("begin_restore refused a server without snapshots")
        };
        s.writing.store(true, Ordering::Release);
        s.offer(SnapMsg::Begin { start_zxid: zxid });
        let sessions = state.sessions().iter().map(|(&id, &t)| (id, t));
        let mut buf = Vec::with_capacity(SNAPSHOT_BLOCK);
        let mut capture = Capture::begin(&state.tree, sessions, zxid, &mut buf);
        while !capture.step(&state.tree, usize::MAX, &mut buf) {}
        for block in buf.chunks(SNAPSHOT_BLOCK) {
            s.offer(SnapMsg::Block(block.to_vec()));
        }
        s.offer(SnapMsg::Finish(capture.trailer(zxid, state.tree.digest())));
        Stage::Writing(zxid, state)
    }

    /// Whether the restore's snapshot file is written (Some(true)), failed (Some(false)),
    /// or still being written (None).
    fn restore_written(&mut self, zxid: i64) -> Option<bool> {
        let s = self.snap.as_mut()?;
        if !s.flush_held() || s.writing.load(Ordering::Acquire) {
            return None;
        }
        Some(s.written.load(Ordering::Acquire) == zxid)
    }

    /// The restored state in place of the live one: sessions, the prep, the session clocks.
    pub(super) fn restore_swap(&mut self, state: State) {
        assert!(
            self.inflight.is_empty() && self.conns.is_empty(),
            "a restore swaps the state only with no txn in flight and no client connected"
        );
        let now = self.now_ms();
        let gone: Vec<i64> = self.liveness.iter().map(|(&id, _)| id).collect();
        for id in gone {
            self.liveness.remove(id);
        }
        self.state = state;
        let sessions: Vec<(i64, i32)> = self
            .state
            .sessions()
            .iter()
            .map(|(&i, &t)| (i, t))
            .collect();
        for (id, timeout) in sessions {
            self.liveness.add(id, timeout, now);
        }
        self.prep = crate::prep::Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        self.close_orphans();
    }
}
