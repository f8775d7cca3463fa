//! A ZooKeeper observer's side of the quorum link as a pure state machine: [`Learner::step`]
//! takes one [`Input`] (a frame from the leader, the connection opening or closing, a tick
//! with the time, a local request) and returns what to do ([`Output`]s: packets to send,
//! a snapshot to load, txns to apply, replies to release, a resync). No sockets, no clock,
//! no files: the driver owns those, and a [`crate::Decoder`] per connection.
//!
//! The phases follow Learner.registerWithLeader / syncWithLeader and Observer.processPacket
//! in ZooKeeper 3.8 (zab/README.md walks through them). Where ZooKeeper only logs a warning
//! about a txn stream it cannot trust (a zxid going backwards, a gap inside an epoch, a
//! COMMIT for a txn it does not hold), the learner resyncs instead: the leader's DIFF from the
//! last applied zxid repairs what a warning would have left diverged.

mod events;
mod steady;
mod sync;

pub use events::{Input, LearnerConfig, Output, Pending, Resync, SyncMode};

use crate::packet::{make_zxid, Body, ForwardedRequest, Packet, PROTOCOL_VERSION};
use crate::stream::Frame;
use crate::txn::TxnEntry;
use palisade_proto::{Id, LearnerInfo, OpCode, SessionTouch};
use std::collections::{HashMap, HashSet, VecDeque};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Idle,
    AwaitLeaderInfo,
    AwaitSyncMode,
    AwaitSnapshot { zxid: i64 },
    Syncing(SyncState),
    Observing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SyncState {
    /// Set after a SNAP: txns up to it are already in the snapshot.
    snap_zxid: Option<i64>,
    newleader: bool,
    /// PROPOSALs waiting for their COMMIT.
    proposals: VecDeque<TxnEntry>,
}

type Step = Result<(), String>;

#[derive(Debug)]
pub struct Learner {
    cfg: LearnerConfig,
    phase: Phase,
    accepted_epoch: i64,
    current_epoch: i64,
    last_zxid: i64,
    /// LEADERINFO's zxid: (the leader's epoch, 0).
    new_leader_zxid: i64,
    now_ms: u64,
    last_rx_ms: u64,
    writes: HashSet<(i64, i32)>,
    syncs: VecDeque<(i64, i32)>,
    revalidations: HashSet<i64>,
    /// Sessions touched since the last PING, in first-touch order.
    touches: Vec<SessionTouch>,
    touched: HashMap<i64, usize>,
    out: Vec<Output>,
}

impl Learner {
    pub fn new(cfg: LearnerConfig) -> Learner {
        Learner {
            phase: Phase::Idle,
            accepted_epoch: cfg.accepted_epoch,
            current_epoch: cfg.current_epoch,
            last_zxid: cfg.last_zxid,
            new_leader_zxid: 0,
            now_ms: 0,
            last_rx_ms: 0,
            writes: HashSet::new(),
            syncs: VecDeque::new(),
            revalidations: HashSet::new(),
            touches: Vec::new(),
            touched: HashMap::new(),
            out: Vec::new(),
            cfg,
        }
    }

    /// The zxid of the last txn output as Apply (or loaded, or truncated to).
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }
    /// To persist, as ZooKeeper's acceptedEpoch file.
    pub fn accepted_epoch(&self) -> i64 {
        self.accepted_epoch
    }
    /// To persist, as ZooKeeper's currentEpoch file.
    pub fn current_epoch(&self) -> i64 {
        self.current_epoch
    }
    /// Serving: UPTODATE received on the current connection.
    pub fn is_synced(&self) -> bool {
        self.phase == Phase::Observing
    }

    /// The observer role's calls, each the same as its [`Input`] to [`Learner::step`].
    ///
    /// A client's request for the leader (REQUEST): a write, createSession (its body the
    /// negotiated timeout), closeSession, or a sync (answered by SyncDone once every txn
    /// before the leader's SYNC was output). A write is answered by WriteDone right after the
    /// Apply of the txn with its (session, cxid), an error txn included; Dropped if the link
    /// resyncs first. Sent only when synced, Dropped at once otherwise.
    pub fn forward(&mut self, request: ForwardedRequest, authinfo: Option<Vec<Id>>) -> Vec<Output> {
        self.step(Input::Forward { request, authinfo })
    }

    /// A client reconnecting with a session this member does not own (REVALIDATE): answered
    /// by Revalidated (valid: the session is now this member's), or Dropped.
    pub fn revalidate(&mut self, session_id: i64, timeout: i32) -> Vec<Output> {
        self.step(Input::Revalidate {
            session_id,
            timeout,
        })
    }

    /// A session of this member's clients was used: reported, with its timeout, in the answer
    /// to the leader's next PING (which keeps it alive on the leader).
    pub fn touch(&mut self, session_id: i64, timeout: i32) {
        self.touch_session(session_id, timeout);
    }

    /// The sessions touched since the last PING answer, in first-touch order.
    pub fn touches(&self) -> &[SessionTouch] {
        &self.touches
    }

    /// Requests waiting for the leader: forwarded writes (by session and cxid), syncs (in
    /// order), revalidations.
    pub fn pending(&self) -> Vec<Pending> {
        let mut p: Vec<Pending> = self
            .writes
            .iter()
            .map(|&(session_id, cxid)| Pending::Write { session_id, cxid })
            .collect();
        p.sort_unstable_by_key(|w| match w {
            Pending::Write { session_id, cxid } => (*session_id, *cxid),
            _ => (0, 0),
        });
        p.extend(
            self.syncs
                .iter()
                .map(|&(session_id, cxid)| Pending::Sync { session_id, cxid }),
        );
        let mut revs: Vec<i64> = self.revalidations.iter().copied().collect();
        revs.sort_unstable();
        p.extend(
            revs.into_iter()
                .map(|session_id| Pending::Revalidate { session_id }),
        );
        p
    }

    pub fn step(&mut self, input: Input) -> Vec<Output> {
        let r = match input {
            Input::Tick { now_ms } => {
                self.now_ms = now_ms;
                self.check_deadline();
                Ok(())
            }
            Input::Connected => {
                if self.phase != Phase::Idle {
                    self.resync(Resync::Reconnected);
                }
                self.connect();
                Ok(())
            }
            Input::Closed => {
                if self.phase != Phase::Idle {
                    self.resync(Resync::Closed);
                }
                Ok(())
            }
            Input::BadStream(e) => {
                if self.phase != Phase::Idle {
                    self.resync(Resync::Stream(e));
                }
                Ok(())
            }
            Input::Frame(f) => self.frame(f),
            Input::Forward { request, authinfo } => {
                self.forward_request(request, authinfo);
                Ok(())
            }
            Input::Revalidate {
                session_id,
                timeout,
            } => {
                self.revalidate_session(session_id, timeout);
                Ok(())
            }
            Input::Touch {
                session_id,
                timeout,
            } => {
                self.touch_session(session_id, timeout);
                Ok(())
            }
        };
        if let Err(why) = r {
            self.resync(Resync::Protocol(why));
        }
        std::mem::take(&mut self.out)
    }

    fn send(&mut self, p: Packet) {
        self.out.push(Output::Send(p));
    }

    fn connect(&mut self) {
        self.phase = Phase::AwaitLeaderInfo;
        self.last_rx_ms = self.now_ms;
        let info = LearnerInfo {
            serverid: self.cfg.server_id,
            protocol_version: PROTOCOL_VERSION,
            config_version: self.cfg.config_version,
        };
        self.send(Packet::new(
            make_zxid(self.accepted_epoch, 0),
            Body::ObserverInfo(info),
        ));
    }

    /// Fails every pending request, forgets the connection's state, asks for a resync.
    fn resync(&mut self, why: Resync) {
        let mut dropped: Vec<Pending> = Vec::new();
        let mut writes: Vec<_> = self.writes.drain().collect();
        writes.sort_unstable();
        dropped.extend(
            writes
                .into_iter()
                .map(|(session_id, cxid)| Pending::Write { session_id, cxid }),
        );
        dropped.extend(
            self.syncs
                .drain(..)
                .map(|(session_id, cxid)| Pending::Sync { session_id, cxid }),
        );
        let mut revs: Vec<_> = self.revalidations.drain().collect();
        revs.sort_unstable();
        dropped.extend(
            revs.into_iter()
                .map(|session_id| Pending::Revalidate { session_id }),
        );
        self.out.extend(dropped.into_iter().map(Output::Dropped));
        self.touches.clear();
        self.touched.clear();
        self.phase = Phase::Idle;
        self.out.push(Output::Resync(why));
    }

    fn check_deadline(&mut self) {
        let ticks = match &self.phase {
            Phase::Idle => return,
            Phase::Observing => self.cfg.sync_limit,
            Phase::Syncing(s) if s.newleader => self.cfg.sync_limit,
            _ => self.cfg.init_limit,
        };
        let silent_ms = self.now_ms.saturating_sub(self.last_rx_ms);
        if silent_ms > self.cfg.tick_ms.saturating_mul(ticks) {
            self.resync(Resync::Timeout { silent_ms });
        }
    }

    fn forward_request(&mut self, request: ForwardedRequest, authinfo: Option<Vec<Id>>) {
        let key = (request.session_id, request.cxid);
        let is_sync = request.op == OpCode::Sync.code();
        if self.phase != Phase::Observing {
            let p = if is_sync {
                Pending::Sync {
                    session_id: key.0,
                    cxid: key.1,
                }
            } else {
                Pending::Write {
                    session_id: key.0,
                    cxid: key.1,
                }
            };
            self.out.push(Output::Dropped(p));
            return;
        }
        if is_sync {
            self.syncs.push_back(key);
        } else {
            self.writes.insert(key);
        }
        self.send(Packet {
            zxid: -1,
            body: Body::Request(request),
            authinfo,
        });
    }

    fn revalidate_session(&mut self, session_id: i64, timeout: i32) {
        if self.phase != Phase::Observing {
            self.out
                .push(Output::Dropped(Pending::Revalidate { session_id }));
            return;
        }
        self.revalidations.insert(session_id);
        self.send(Packet::new(
            -1,
            Body::Revalidate(SessionTouch {
                session_id,
                timeout,
            }),
        ));
    }

    fn touch_session(&mut self, session_id: i64, timeout: i32) {
        match self.touched.get(&session_id) {
            Some(&i) => {
                if let Some(t) = self.touches.get_mut(i) {
                    t.timeout = timeout;
                }
            }
            None => {
                self.touched.insert(session_id, self.touches.len());
                self.touches.push(SessionTouch {
                    session_id,
                    timeout,
                });
            }
        }
    }

    fn frame(&mut self, f: Frame) -> Step {
        if self.phase == Phase::Idle {
            // Bytes still arriving from a connection the driver was told to drop.
            return Ok(());
        }
        self.last_rx_ms = self.now_ms;
        let p = match f {
            Frame::Packet(p) => p,
            snapshot => return self.snapshot(snapshot),
        };
        if p.direction() != crate::packet::Direction::FromLeader {
            return Err(format!("{:?} is a learner's packet", p.kind()));
        }
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::AwaitLeaderInfo => self.leader_info(p),
            Phase::AwaitSyncMode => self.sync_mode(p),
            Phase::AwaitSnapshot { .. } => Err(format!(
                "{:?} where the snapshot after SNAP was expected",
                p.kind()
            )),
            Phase::Syncing(s) => self.syncing(s, p),
            Phase::Observing => {
                self.phase = Phase::Observing;
                self.observing(p)
            }
            Phase::Idle => Ok(()),
        }
    }
}
