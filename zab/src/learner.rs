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

use crate::error::CodecError;
use crate::packet::{
    epoch_of, make_zxid, Body, ForwardedRequest, Packet, PacketType, PROTOCOL_VERSION,
};
use crate::snapshot::WireSnapshot;
use crate::stream::Frame;
use crate::txn::TxnEntry;
use palisade_proto::{Id, LearnerInfo, OpCode, SessionTouch};
use std::collections::{HashMap, HashSet, VecDeque};

/// What the learner starts from (its durable state) and ZooKeeper's timing settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnerConfig {
    /// This member's server.N id (myid).
    pub server_id: i64,
    /// The version of the ensemble config the member holds (0 for a static config).
    pub config_version: i64,
    /// The highest epoch the member has accepted from a leader.
    pub accepted_epoch: i64,
    /// The epoch of the leader the member last synced with.
    pub current_epoch: i64,
    /// The zxid of the last txn applied (0 for an empty member).
    pub last_zxid: i64,
    pub tick_ms: u64,
    /// Ticks a handshake and sync may go without a packet from the leader.
    pub init_limit: u64,
    /// Ticks the link may be silent after NEWLEADER.
    pub sync_limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A connection to the leader's quorum port is open (after TLS / quorum SASL, if any).
    Connected,
    /// The connection closed or failed.
    Closed,
    /// The connection's decoder failed: the stream cannot be framed any more.
    BadStream(CodecError),
    /// A frame decoded from the leader's bytes.
    Frame(Frame),
    Tick {
        now_ms: u64,
    },
    /// A client request to send to the leader: a write, createSession, closeSession, or a sync
    /// (op 9, answered by the leader's SYNC). `authinfo` is the client connection's ids.
    Forward {
        request: ForwardedRequest,
        authinfo: Option<Vec<Id>>,
    },
    /// A client reconnecting with a session this member does not own: ask the leader.
    Revalidate {
        session_id: i64,
        timeout: i32,
    },
    /// A client of this member used its session: reported at the next PING.
    Touch {
        session_id: i64,
        timeout: i32,
    },
}

/// A request waiting for the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pending {
    Write { session_id: i64, cxid: i32 },
    Sync { session_id: i64, cxid: i32 },
    Revalidate { session_id: i64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Send(Packet),
    /// Replace the whole state with this snapshot, taken at `zxid`. It is fuzzy (as a
    /// snapshot file is): txns after `zxid` may be partly in it, and the Apply outputs that
    /// follow must be applied as ZooKeeper replays a log over a snapshot.
    LoadSnapshot {
        zxid: i64,
        snapshot: WireSnapshot,
    },
    /// Drop every txn after `zxid`.
    Truncate {
        zxid: i64,
    },
    /// Apply this committed txn (its zxid is `entry.zxid()`; check its digest if present).
    Apply {
        entry: TxnEntry,
    },
    /// The txn of a forwarded request has just been output as Apply: answer the client.
    WriteDone {
        session_id: i64,
        cxid: i32,
        zxid: i64,
    },
    /// The leader answered a forwarded sync: every txn before it has been output.
    SyncDone {
        session_id: i64,
        cxid: i32,
    },
    Revalidated {
        session_id: i64,
        valid: bool,
    },
    /// In sync with the leader (UPTODATE): serve clients.
    Synced {
        zxid: i64,
    },
    /// A reconfig txn was activated (COMMITANDACTIVATE / INFORMANDACTIVATE).
    Reconfigured {
        leader_id: i64,
        zxid: i64,
    },
    /// A packet ZooKeeper's observer also ignores (with a log line).
    Ignored {
        kind: PacketType,
        zxid: i64,
        why: &'static str,
    },
    /// A request that will get no answer from the leader (fail it to the client).
    Dropped(Pending),
    /// Close the connection (if still open), find the leader, connect again.
    Resync(Resync),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resync {
    Closed,
    /// Nothing from the leader for `silent_ms`.
    Timeout {
        silent_ms: u64,
    },
    Stream(CodecError),
    /// A packet that has no place at this point of the protocol, or a txn stream that does
    /// not add up.
    Protocol(String),
    /// A new connection replaced the current one.
    Reconnected,
}

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
                self.forward(request, authinfo);
                Ok(())
            }
            Input::Revalidate {
                session_id,
                timeout,
            } => {
                self.revalidate(session_id, timeout);
                Ok(())
            }
            Input::Touch {
                session_id,
                timeout,
            } => {
                self.touch(session_id, timeout);
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

    fn forward(&mut self, request: ForwardedRequest, authinfo: Option<Vec<Id>>) {
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

    fn revalidate(&mut self, session_id: i64, timeout: i32) {
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

    fn touch(&mut self, session_id: i64, timeout: i32) {
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
            Frame::Snapshot(s) => return self.snapshot(s),
            Frame::Packet(p) => p,
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

    fn leader_info(&mut self, p: Packet) -> Step {
        let Body::LeaderInfo { protocol_version } = p.body else {
            return Err(format!("{:?} where LEADERINFO was expected", p.kind()));
        };
        if protocol_version < PROTOCOL_VERSION {
            return Err(format!(
                "leader speaks protocol {protocol_version:#x}, before Zab 1.0 (0x10000)"
            ));
        }
        let epoch = epoch_of(p.zxid);
        // Learner.registerWithLeader: ack a newer epoch with our current one; an equal one
        // was acked before, so -1 ("not an ack", ZooKeeper's marker); an older one is refused.
        let current_epoch = if epoch > self.accepted_epoch {
            self.accepted_epoch = epoch;
            // ZooKeeper writes (int) currentEpoch.
            self.current_epoch as i32
        } else if epoch == self.accepted_epoch {
            -1
        } else {
            return Err(format!(
                "leader's epoch {epoch} is less than the accepted epoch {}",
                self.accepted_epoch
            ));
        };
        self.new_leader_zxid = p.zxid;
        self.send(Packet::new(
            self.last_zxid,
            Body::AckEpoch { current_epoch },
        ));
        self.phase = Phase::AwaitSyncMode;
        Ok(())
    }

    fn sync_mode(&mut self, p: Packet) -> Step {
        let syncing = |snap_zxid| {
            Phase::Syncing(SyncState {
                snap_zxid,
                newleader: false,
                proposals: VecDeque::new(),
            })
        };
        match p.body {
            Body::Diff => self.phase = syncing(None),
            Body::Snap => self.phase = Phase::AwaitSnapshot { zxid: p.zxid },
            Body::Trunc => {
                if p.zxid > self.last_zxid {
                    return Err(format!(
                        "TRUNC to {:#x}, after the last zxid {:#x}",
                        p.zxid, self.last_zxid
                    ));
                }
                self.last_zxid = p.zxid;
                self.out.push(Output::Truncate { zxid: p.zxid });
                self.phase = syncing(None);
            }
            _ => {
                return Err(format!(
                    "{:?} where DIFF, SNAP or TRUNC was expected",
                    p.kind()
                ))
            }
        }
        Ok(())
    }

    fn snapshot(&mut self, s: WireSnapshot) -> Step {
        let Phase::AwaitSnapshot { zxid } = self.phase else {
            return Err("a snapshot without a SNAP before it".into());
        };
        self.last_zxid = zxid;
        self.out.push(Output::LoadSnapshot { zxid, snapshot: s });
        self.phase = Phase::Syncing(SyncState {
            snap_zxid: Some(zxid),
            newleader: false,
            proposals: VecDeque::new(),
        });
        Ok(())
    }

    fn syncing(&mut self, mut s: SyncState, p: Packet) -> Step {
        let zxid = p.zxid;
        match p.body {
            Body::Proposal(e) => {
                check_header(&e, zxid)?;
                // After a SNAP, the first may be one the snapshot holds (skipped at COMMIT).
                let floor = match (s.proposals.back(), s.snap_zxid) {
                    (Some(b), _) => b.zxid(),
                    (None, Some(_)) => i64::MIN,
                    (None, None) => self.last_zxid,
                };
                if zxid <= floor {
                    return Err(format!("PROPOSAL {zxid:#x} after {floor:#x}"));
                }
                s.proposals.push_back(e);
            }
            Body::Commit | Body::CommitAndActivate { .. } => {
                let Some(head) = s.proposals.pop_front() else {
                    return Err(format!("COMMIT {zxid:#x} with no PROPOSAL waiting"));
                };
                if head.zxid() != zxid {
                    return Err(format!(
                        "COMMIT {zxid:#x}, but the next PROPOSAL is {:#x}",
                        head.zxid()
                    ));
                }
                self.accept(PacketType::Proposal, head, s.snap_zxid)?;
                if let Body::CommitAndActivate { leader_id } = p.body {
                    self.out.push(Output::Reconfigured { leader_id, zxid });
                }
            }
            Body::Inform(e) => {
                check_header(&e, zxid)?;
                self.accept(PacketType::Inform, e, s.snap_zxid)?;
            }
            Body::InformAndActivate { leader_id, entry } => {
                check_header(&entry, zxid)?;
                self.accept(PacketType::InformAndActivate, entry, s.snap_zxid)?;
                self.out.push(Output::Reconfigured { leader_id, zxid });
            }
            Body::NewLeader { .. } => {
                if s.newleader {
                    return Err("a second NEWLEADER".into());
                }
                if zxid != self.new_leader_zxid {
                    return Err(format!(
                        "NEWLEADER {zxid:#x}, LEADERINFO announced {:#x}",
                        self.new_leader_zxid
                    ));
                }
                s.newleader = true;
                self.current_epoch = epoch_of(zxid);
                self.send(Packet::new(zxid, Body::Ack));
            }
            Body::UpToDate => {
                if !s.newleader {
                    return Err("UPTODATE before NEWLEADER".into());
                }
                // Proposals never committed: ZooKeeper's observer drops them too.
                for e in &s.proposals {
                    self.out.push(Output::Ignored {
                        kind: PacketType::Proposal,
                        zxid: e.zxid(),
                        why: "never committed before UPTODATE",
                    });
                }
                let epoch = epoch_of(self.new_leader_zxid);
                self.send(Packet::new(make_zxid(epoch, 0), Body::Ack));
                self.out.push(Output::Synced {
                    zxid: self.last_zxid,
                });
                self.phase = Phase::Observing;
                return Ok(());
            }
            // syncWithLeader reads and drops it; the leader pings once it has queued NEWLEADER.
            Body::Ping => self.out.push(Output::Ignored {
                kind: PacketType::Ping,
                zxid,
                why: "PING during the sync",
            }),
            _ => return Err(format!("{:?} during the sync", p.kind())),
        }
        self.phase = Phase::Syncing(s);
        Ok(())
    }

    fn observing(&mut self, p: Packet) -> Step {
        let zxid = p.zxid;
        let kind = p.kind();
        let ignore = |why| Output::Ignored { kind, zxid, why };
        match p.body {
            Body::Ping => {
                self.touched.clear();
                let touches = std::mem::take(&mut self.touches);
                self.send(Packet {
                    zxid,
                    body: Body::PingReply(touches),
                    authinfo: p.authinfo,
                });
            }
            Body::Inform(e) => {
                check_header(&e, zxid)?;
                self.accept(PacketType::Inform, e, None)?;
            }
            Body::InformAndActivate { leader_id, entry } => {
                check_header(&entry, zxid)?;
                self.accept(PacketType::InformAndActivate, entry, None)?;
                self.out.push(Output::Reconfigured { leader_id, zxid });
            }
            Body::RevalidateReply(r) => {
                if self.revalidations.remove(&r.session_id) {
                    self.out.push(Output::Revalidated {
                        session_id: r.session_id,
                        valid: r.valid,
                    });
                } else {
                    self.out
                        .push(ignore("no revalidation pending for the session"));
                }
            }
            Body::Sync => match self.syncs.pop_front() {
                Some((session_id, cxid)) => self.out.push(Output::SyncDone { session_id, cxid }),
                None => self.out.push(ignore("no sync pending")),
            },
            // Observer.processPacket logs these and carries on.
            Body::Proposal(_) | Body::Commit | Body::UpToDate | Body::CommitAndActivate { .. } => {
                self.out.push(ignore("not for an observer after UPTODATE"))
            }
            _ => return Err(format!("{kind:?} after UPTODATE")),
        }
        Ok(())
    }

    /// Checks a committed txn against the last one and outputs it. `snap_zxid`: during a
    /// sync after SNAP, txns up to it are already in the snapshot (the leader started
    /// forwarding before it read the snapshot's zxid) and are skipped.
    fn accept(&mut self, kind: PacketType, e: TxnEntry, snap_zxid: Option<i64>) -> Step {
        let zxid = e.zxid();
        if snap_zxid.is_some_and(|s| zxid <= s) {
            self.out.push(Output::Ignored {
                kind,
                zxid,
                why: "already in the snapshot",
            });
            return Ok(());
        }
        let last = self.last_zxid;
        if zxid <= last {
            return Err(format!("txn {zxid:#x} after {last:#x}: zxids go backwards"));
        }
        // Within an epoch every committed txn takes the next zxid: a gap is a lost txn.
        if epoch_of(zxid) == epoch_of(last) && zxid != last.wrapping_add(1) {
            return Err(format!("txn {zxid:#x} after {last:#x}: a txn is missing"));
        }
        self.last_zxid = zxid;
        let key = (e.txn.header.client_id, e.txn.header.cxid);
        self.out.push(Output::Apply { entry: e });
        if self.writes.remove(&key) {
            self.out.push(Output::WriteDone {
                session_id: key.0,
                cxid: key.1,
                zxid,
            });
        }
        Ok(())
    }
}

/// The txn's own zxid must be the packet's.
fn check_header(e: &TxnEntry, zxid: i64) -> Step {
    if e.zxid() != zxid {
        return Err(format!(
            "packet zxid {zxid:#x} carries a txn of zxid {:#x}",
            e.zxid()
        ));
    }
    Ok(())
}
