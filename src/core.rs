//! The core: one thread that owns the data tree, sessions and watches, and moves every
//! request through prep → log → apply → reply in order. Connection tasks only do I/O.
//!
//! Ordering: each connection has a queue of slots. A read runs at once when its connection
//! has nothing queued, so reads never wait behind other sessions' writes; otherwise it waits
//! for the writes before it. Writes are prepped on arrival (against the tree plus the overlay
//! of pending changes), handed to the log thread in batches, and applied in zxid order when
//! the log reports them durable; each apply queues its watch events before its reply.

use crate::acl::AuthId;
use crate::apply::{Applier, Event, Outcome};
use crate::capture::Capture;
use crate::log::{Batch, LogRecord};
use crate::prep::{Overlay, Prep, Prepared, ReplyKind};
use crate::recovery::Restored;
use crate::reply;
use crate::session::Sessions;
use crate::snapshotter::SnapMsg;
use crate::spin;
use crate::tree::DataTree;
use crate::watch::{ConnId, Watches};
use bytes::Bytes;
use hashbrown::HashMap;
use palisade_proto::*;
use palisade_wal::RecordKind;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// What the core writes to a connection.
#[derive(Debug)]
pub enum Out {
    /// Bytes to write as they are (notifications, handshake, 4lw text).
    Bytes(Bytes),
    /// The reply to one request: frees one slot of the connection's outstanding budget.
    Reply(Bytes),
    /// Flush what came before, then close.
    Close,
}

pub type OutTx = mpsc::UnboundedSender<Out>;

pub enum CoreMsg {
    Connect {
        conn: ConnId,
        req: ConnectRequest,
        out: OutTx,
        peer: SocketAddr,
        ready: oneshot::Sender<bool>,
    },
    Request {
        conn: ConnId,
        xid: i32,
        req: Request,
    },
    /// A request that did not decode; the core answers it as ZooKeeper would.
    Bad {
        conn: ConnId,
        xid: i32,
        op: i32,
        error: DecodeError,
    },
    Closed {
        conn: ConnId,
    },
    FourLetter {
        word: FourLetterWord,
        out: OutTx,
        peer: SocketAddr,
    },
    Durable(i64),
    LogFailed(String),
    Tick,
    Shutdown,
}

/// A digest record goes to the log after every this many txns (see digest.rs).
pub const DIGEST_EVERY: i64 = 256;

/// Capture steps per turn of the core loop: small enough that a turn stays well under a
/// millisecond, so writes keep flowing while a snapshot is taken.
const SNAP_STEP: usize = 2048;
/// Captured bytes per snapshot block.
const SNAP_BLOCK: usize = 1 << 20;

/// Fuzzy snapshots: when the next one is due, and the one being captured.
struct Snapper {
    tx: std_mpsc::SyncSender<SnapMsg>,
    /// snapCount: a snapshot every snapCount/2 to snapCount txns (randomised, as ZooKeeper
    /// does, so that ensemble members do not snapshot together).
    count: u64,
    due: u64,
    since: u64,
    rng: u64,
    capture: Option<(Capture, Vec<u8>)>,
    started: Instant,
    /// Chunk buffers the snapshot thread has written and handed back.
    spare: std_mpsc::Receiver<Vec<u8>>,
}

/// A chunk buffer: one the snapshot thread gave back, or a new one.
fn chunk_buffer(spare: &std_mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    spare
        .try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(SNAP_BLOCK))
}

impl Snapper {
    fn next_due(&mut self) -> u64 {
        // xorshift64*: any spread will do, no need for a dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let half = (self.count / 2).max(1);
        half + r % half
    }
}

#[derive(Clone, Debug)]
pub struct CoreConfig {
    pub tick_ms: u64,
    pub min_session_timeout: i32,
    pub max_session_timeout: i32,
    pub max_buffer: usize,
    pub ttl_enabled: bool,
    pub four_letter_words: Vec<String>,
    pub super_digest: Option<String>,
    pub secret: [u8; 16],
    pub client_port: u16,
    pub data_dir: String,
    pub data_log_dir: String,
    pub max_client_cnxns: usize,
    /// How often containers and TTL nodes are checked for reaping (znode.container.checkIntervalMs).
    pub container_check_ms: u64,
    /// How long the core polls for its next message before it parks (spin.rs).
    pub spin_wait: Duration,
}

pub(crate) enum Slot {
    Write(i64),
    Read {
        xid: i32,
        req: Request,
        at: Instant,
    },
    Bad {
        xid: i32,
        err: ErrorCode,
        close: bool,
        /// multiRead's error reply carries an empty result list.
        multi_body: bool,
    },
}

pub(crate) struct Conn {
    pub out: OutTx,
    pub session: i64,
    pub auth: Vec<AuthId>,
    pub peer: SocketAddr,
    pub queue: VecDeque<Slot>,
    pub received: u64,
    pub sent: u64,
    pub last_zxid: i64,
    pub timeout: i32,
}

enum PendingKind {
    Request,
    NewSession {
        conn: ConnId,
        ready: oneshot::Sender<bool>,
        timeout: i32,
        read_only: Option<bool>,
    },
    /// A closeSession: from its own connection (answered, then closed) or from expiry.
    Close {
        conn: Option<ConnId>,
    },
}

struct Pending {
    conn: Option<ConnId>,
    header: TxnHeader,
    body: TxnBody,
    replies: Vec<ReplyKind>,
    kind: PendingKind,
    at: Instant,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub received: u64,
    pub sent: u64,
    pub latency_min: u64,
    pub latency_max: u64,
    pub latency_sum: u64,
    pub latency_count: u64,
}

impl Stats {
    pub fn record(&mut self, at: Instant) {
        let ms = at.elapsed().as_millis() as u64;
        if self.latency_count == 0 || ms < self.latency_min {
            self.latency_min = ms;
        }
        self.latency_max = self.latency_max.max(ms);
        self.latency_sum += ms;
        self.latency_count += 1;
    }
}

pub struct Core {
    pub(crate) cfg: CoreConfig,
    pub(crate) tree: DataTree,
    pub(crate) watches: Watches,
    pub(crate) sessions: Sessions,
    overlay: Overlay,
    pub(crate) conns: HashMap<ConnId, Conn>,
    pending: VecDeque<Pending>,
    unlogged: Vec<LogRecord>,
    log: std_mpsc::Sender<Batch>,
    snap: Option<Snapper>,
    last_zxid: i64,
    pub(crate) applied_zxid: i64,
    clock: Instant,
    pub(crate) started: Instant,
    pub(crate) stats: Stats,
    events: Vec<Event>,
    last_reap_ms: u64,
    /// Shutdown was asked for: stop once no txn is pending.
    stopping: bool,
    /// The identity of the server's own txns (the reaper): super, so ACLs do not stop it.
    server_auth: Vec<AuthId>,
}

/// Whose request prep validates: a connection's (with its identities) or the server's own.
#[derive(Clone, Copy)]
enum Caller {
    Conn(ConnId),
    Server,
}

pub fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Core {
    pub fn new(cfg: CoreConfig, log: std_mpsc::Sender<Batch>) -> Self {
        let sessions = Sessions::new(cfg.secret, cfg.tick_ms, wall_ms());
        Core {
            cfg,
            tree: DataTree::new(),
            watches: Watches::default(),
            sessions,
            overlay: Overlay::default(),
            conns: HashMap::new(),
            pending: VecDeque::new(),
            unlogged: Vec::new(),
            log,
            snap: None,
            last_zxid: 0,
            applied_zxid: 0,
            clock: Instant::now(),
            started: Instant::now(),
            stats: Stats::default(),
            events: Vec::new(),
            last_reap_ms: 0,
            stopping: false,
            server_auth: vec![AuthId {
                scheme: "super".into(),
                id: "".into(),
            }],
        }
    }

    /// Takes over the state recovery rebuilt. Every session gets a fresh full timeout, so
    /// clients that reconnect in time keep their ephemerals; ephemerals whose session is gone
    /// are deleted through a closeSession txn (logged like any other).
    pub fn restore(&mut self, r: Restored) {
        let now = self.now_ms();
        self.tree = r.tree;
        for (&id, &timeout) in &r.sessions {
            self.sessions.add(id, timeout, now);
        }
        self.last_zxid = r.zxid;
        self.applied_zxid = r.zxid;
        let mut orphans: Vec<i64> = self
            .tree
            .ephemeral_owners()
            .filter(|s| self.sessions.get(*s).is_none())
            .collect();
        orphans.sort_unstable();
        for id in orphans {
            tracing::warn!(
                session = format_args!("{id:#x}"),
                "ephemerals of a session that no longer exists; deleting them"
            );
            let body = self.prep(id, Caller::Server).close_session();
            self.queue_txn(
                id,
                None,
                0,
                OpCode::CloseSession,
                Prepared {
                    body,
                    replies: vec![],
                },
                PendingKind::Close { conn: None },
            );
        }
    }

    /// Turns on fuzzy snapshots, written by the thread behind `tx`, which hands written
    /// chunk buffers back through `spare`.
    pub fn enable_snapshots(
        &mut self,
        tx: std_mpsc::SyncSender<SnapMsg>,
        spare: std_mpsc::Receiver<Vec<u8>>,
        snap_count: u64,
    ) {
        let mut s = Snapper {
            tx,
            spare,
            count: snap_count.max(2),
            due: 0,
            since: 0,
            rng: (wall_ms() as u64) | 1,
            capture: None,
            started: Instant::now(),
        };
        s.due = s.next_due();
        self.snap = Some(s);
    }

    /// Starts a snapshot unless one is being captured. Returns the zxid it starts at.
    pub(crate) fn start_snapshot(&mut self) -> Option<i64> {
        let s = self.snap.as_mut()?;
        if s.capture.is_some() {
            return None;
        }
        let start = self.applied_zxid;
        let mut buf = chunk_buffer(&s.spare);
        let sessions = self.sessions.iter().map(|(id, s)| (*id, s.timeout_ms));
        let capture = Capture::begin(&self.tree, sessions, start, &mut buf);
        if s.tx.send(SnapMsg::Begin { start_zxid: start }).is_err() {
            tracing::error!("snapshot writer is gone; no snapshot taken");
            return None;
        }
        s.capture = Some((capture, buf));
        s.since = 0;
        s.due = s.next_due();
        s.started = Instant::now();
        tracing::info!(zxid = format_args!("{start:#x}"), "snapshot started");
        Some(start)
    }

    /// One turn of the capture in progress, if any.
    fn snapshot_step(&mut self) {
        let Some(s) = self.snap.as_mut() else { return };
        let Some((capture, buf)) = s.capture.as_mut() else {
            return;
        };
        let done = capture.step(&self.tree, SNAP_STEP, buf);
        if buf.len() >= SNAP_BLOCK || (done && !buf.is_empty()) {
            let fresh = chunk_buffer(&s.spare);
            let block = std::mem::replace(buf, fresh);
            let _ = s.tx.send(SnapMsg::Block(block));
        }
        if done {
            let trailer = capture.trailer(self.applied_zxid, self.tree.digest());
            let nodes = trailer.node_count;
            let _ = s.tx.send(SnapMsg::Finish(trailer));
            tracing::info!(
                end = format_args!("{:#x}", self.applied_zxid),
                nodes,
                capture_ms = s.started.elapsed().as_millis() as u64,
                "snapshot captured"
            );
            s.capture = None;
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// Runs until Shutdown (or every sender is gone): drains whatever is queued, hands the
    /// writes it prepped to the log as one batch, then takes one turn of a snapshot capture
    /// if one is in progress (so a capture advances between batches, and while idle).
    pub fn run(mut self, mut inbox: mpsc::Receiver<CoreMsg>) {
        loop {
            let capturing = self.snap.as_ref().is_some_and(|s| s.capture.is_some());
            let first = if capturing {
                match inbox.try_recv() {
                    Ok(m) => Some(m),
                    Err(mpsc::error::TryRecvError::Empty) => None,
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                }
            } else {
                let polled = spin::poll_for(self.cfg.spin_wait, || match inbox.try_recv() {
                    Ok(m) => Some(Some(m)),
                    Err(mpsc::error::TryRecvError::Empty) => None,
                    Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
                });
                match polled.unwrap_or_else(|| inbox.blocking_recv()) {
                    Some(m) => Some(m),
                    None => break,
                }
            };
            let mut stop = false;
            if let Some(first) = first {
                stop = self.handle(first);
                let mut n = 1;
                while !stop && n < 4096 {
                    match inbox.try_recv() {
                        Ok(m) => stop = self.handle(m),
                        Err(_) => break,
                    }
                    n += 1;
                }
                self.flush_log();
            }
            if stop {
                break;
            }
            self.snapshot_step();
        }
        tracing::info!(
            zxid = format_args!("{:#x}", self.applied_zxid),
            "core stopped"
        );
    }

    fn flush_log(&mut self) {
        if !self.unlogged.is_empty() {
            let records = std::mem::take(&mut self.unlogged);
            if self.log.send(Batch { records }).is_err() {
                tracing::error!("log writer is gone; writes cannot be acknowledged");
            }
        }
    }

    /// Returns true when the core must stop.
    fn handle(&mut self, msg: CoreMsg) -> bool {
        match msg {
            CoreMsg::Connect {
                conn,
                req,
                out,
                peer,
                ready,
            } => self.connect(conn, req, out, peer, ready),
            CoreMsg::Request { conn, xid, req } => self.request(conn, xid, req),
            CoreMsg::Bad {
                conn,
                xid,
                op,
                error,
            } => self.bad(conn, xid, op, error),
            CoreMsg::Closed { conn } => self.closed(conn),
            CoreMsg::FourLetter { word, out, peer } => {
                let text = self.four_letter(word, peer);
                let _ = out.send(Out::Bytes(Bytes::from(text)));
                let _ = out.send(Out::Close);
            }
            CoreMsg::Durable(upto) => {
                self.durable(upto);
                return self.stopping && self.pending.is_empty();
            }
            CoreMsg::LogFailed(e) => {
                tracing::error!(error = %e, "log write failed; stopping so no write is acknowledged without being durable");
                return true;
            }

            CoreMsg::Tick => {
                self.expire_sessions();
                self.reap();
            }
            CoreMsg::Shutdown => {
                // In-flight writes: wait for the log to report them, then stop.
                self.stopping = true;
                return self.pending.is_empty();
            }
        }
        false
    }

    fn negotiate(&self, requested: i32) -> i32 {
        requested.clamp(
            self.cfg.min_session_timeout,
            self.cfg
                .max_session_timeout
                .max(self.cfg.min_session_timeout),
        )
    }

    fn connect(
        &mut self,
        conn: ConnId,
        req: ConnectRequest,
        out: OutTx,
        peer: SocketAddr,
        ready: oneshot::Sender<bool>,
    ) {
        if req.last_zxid_seen > self.applied_zxid {
            tracing::info!(%peer, seen = format_args!("{:#x}", req.last_zxid_seen), ours = format_args!("{:#x}", self.applied_zxid), "client has seen a later zxid; closing");
            let _ = out.send(Out::Close);
            let _ = ready.send(false);
            return;
        }
        let timeout = self.negotiate(req.time_out);
        let read_only = req.read_only.map(|_| false);
        let auth = vec![AuthId {
            scheme: "ip".into(),
            id: peer.ip().to_string().into(),
        }];
        let new_conn = |session| Conn {
            out: out.clone(),
            session,
            auth,
            peer,
            queue: VecDeque::new(),
            received: 1,
            sent: 0,
            last_zxid: 0,
            timeout,
        };
        if req.session_id == 0 {
            let id = self.sessions.allocate_id();
            self.conns.insert(conn, new_conn(id));
            let body = TxnBody::CreateSession(CreateSessionTxn { time_out: timeout });
            self.queue_txn(
                id,
                Some(conn),
                0,
                OpCode::CreateSession,
                Prepared {
                    body,
                    replies: vec![],
                },
                PendingKind::NewSession {
                    conn,
                    ready,
                    timeout,
                    read_only,
                },
            );
            return;
        }
        let id = req.session_id;
        // Like ZooKeeper, the session's current connection is closed before the password
        // is even checked.
        if let Some(old) = self.sessions.get(id).and_then(|s| s.conn) {
            self.drop_conn(old, true);
        }
        let valid = self.sessions.get(id).is_some_and(|s| !s.closing)
            && req.passwd.as_deref() == Some(&self.sessions.password(id)[..]);
        if !valid {
            let _ = out.send(Out::Bytes(self.connect_reply(None, read_only)));
            let _ = out.send(Out::Close);
            let _ = ready.send(false);
            return;
        }
        self.conns.insert(conn, new_conn(id));
        let now = self.now_ms();
        if let Some(s) = self.sessions.get_mut(id) {
            s.conn = Some(conn);
            s.timeout_ms = timeout;
        }
        self.sessions.touch(id, now);
        let _ = out.send(Out::Bytes(
            self.connect_reply(Some((id, timeout)), read_only),
        ));
        let _ = ready.send(true);
    }

    /// The ConnectResponse for a session (id, negotiated timeout), or for a refused one:
    /// timeout 0, session 0 and 16 zero bytes. readOnly is sent iff the request had it.
    fn connect_reply(&self, session: Option<(i64, i32)>, read_only: Option<bool>) -> Bytes {
        let (session_id, time_out, passwd) = match session {
            Some((id, t)) => (id, t, self.sessions.password(id)),
            None => (0, 0, [0; 16]),
        };
        let passwd = Some(Bytes::copy_from_slice(&passwd));
        reply::bare(&ConnectResponse {
            protocol_version: 0,
            time_out,
            session_id,
            passwd,
            read_only,
        })
    }

    fn drop_conn(&mut self, conn: ConnId, close: bool) {
        if let Some(c) = self.conns.remove(&conn) {
            if close {
                let _ = c.out.send(Out::Close);
            }
            if let Some(s) = self.sessions.get_mut(c.session) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
        self.watches.remove_conn(conn);
    }

    fn closed(&mut self, conn: ConnId) {
        self.drop_conn(conn, false);
    }

    fn request(&mut self, conn_id: ConnId, xid: i32, req: Request) {
        let now = self.now_ms();
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.received += 1;
        self.stats.received += 1;
        let session = conn.session;
        self.sessions.touch(session, now);
        if req.is_write() {
            let op = req.op_code();
            let closing = self.sessions.get(session).is_none_or(|s| s.closing);
            let (prepared, kind) = if closing {
                (
                    Prepared {
                        body: TxnBody::Error(ErrorTxn {
                            err: ErrorCode::SessionExpired.code(),
                        }),
                        replies: vec![],
                    },
                    PendingKind::Request,
                )
            } else if let Request::CloseSession = req {
                if let Some(s) = self.sessions.get_mut(session) {
                    s.closing = true;
                }
                let body = self.prep(session, Caller::Conn(conn_id)).close_session();
                (
                    Prepared {
                        body,
                        replies: vec![],
                    },
                    PendingKind::Close {
                        conn: Some(conn_id),
                    },
                )
            } else if let Request::Reconfig(_) = req {
                (
                    Prepared {
                        body: TxnBody::Error(ErrorTxn {
                            err: ErrorCode::ReconfigDisabled.code(),
                        }),
                        replies: vec![],
                    },
                    PendingKind::Request,
                )
            } else {
                (
                    self.prep(session, Caller::Conn(conn_id)).write(&req),
                    PendingKind::Request,
                )
            };
            let zxid = self.queue_txn(session, Some(conn_id), xid, op, prepared, kind);
            if let Some(conn) = self.conns.get_mut(&conn_id) {
                conn.queue.push_back(Slot::Write(zxid));
            }
        } else if conn.queue.is_empty() {
            self.read(conn_id, xid, req, Instant::now());
        } else {
            conn.queue.push_back(Slot::Read {
                xid,
                req,
                at: Instant::now(),
            });
        }
    }

    /// Answers a request that did not decode, as ZooKeeper does: an unknown opcode gets
    /// UNIMPLEMENTED and a close; a malformed auth packet a close; any other malformed body
    /// MARSHALLINGERROR, through prep (an error txn consuming a zxid) for write opcodes.
    fn bad(&mut self, conn_id: ConnId, xid: i32, op: i32, error: DecodeError) {
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.received += 1;
        let code = OpCode::from_i32(op);
        let (err, close) = match error {
            DecodeError::UnknownOpCode(_) => (ErrorCode::Unimplemented, true),
            _ => (ErrorCode::MarshallingError, false),
        };
        if code == Some(OpCode::Auth) {
            self.drop_conn(conn_id, true);
            return;
        }
        // multiRead runs its ops one by one: ops of the wrong kind fail with the (empty)
        // result list already built; a body that does not parse gets the header only.
        let multi_body =
            code == Some(OpCode::MultiRead) && matches!(error, DecodeError::OpNotAllowed { .. });
        let write_op = code.is_some_and(is_write_op);
        if write_op && !close {
            let session = conn.session;
            let prepared = Prepared {
                body: TxnBody::Error(ErrorTxn { err: err.code() }),
                replies: vec![],
            };
            let zxid = self.queue_txn(
                session,
                Some(conn_id),
                xid,
                OpCode::Error,
                prepared,
                PendingKind::Request,
            );
            if let Some(conn) = self.conns.get_mut(&conn_id) {
                conn.queue.push_back(Slot::Write(zxid));
            }
        } else if conn.queue.is_empty() {
            self.answer_bad(conn_id, xid, err, close, multi_body);
        } else {
            conn.queue.push_back(Slot::Bad {
                xid,
                err,
                close,
                multi_body,
            });
        }
    }

    fn answer_bad(
        &mut self,
        conn_id: ConnId,
        xid: i32,
        err: ErrorCode,
        close: bool,
        multi_body: bool,
    ) {
        let zxid = if close { -1 } else { self.applied_zxid };
        let frame = reply::frame(xid, zxid, err.code(), |w| {
            if multi_body {
                MultiResponse::new(vec![]).write(w);
            }
        });
        self.send_reply(conn_id, frame);
        if close {
            self.drop_conn(conn_id, true);
        }
    }

    fn prep(&mut self, session: i64, caller: Caller) -> Prep<'_> {
        let auth = match caller {
            Caller::Conn(c) => self.conns.get(&c).map(|c| c.auth.as_slice()).unwrap_or(&[]),
            Caller::Server => self.server_auth.as_slice(),
        };
        Prep {
            tree: &self.tree,
            overlay: &mut self.overlay,
            session,
            auth,
            zxid: self.last_zxid + 1,
            ttl_enabled: self.cfg.ttl_enabled,
        }
    }

    fn queue_txn(
        &mut self,
        session: i64,
        conn: Option<ConnId>,
        xid: i32,
        op: OpCode,
        prepared: Prepared,
        kind: PendingKind,
    ) -> i64 {
        self.last_zxid += 1;
        let zxid = self.last_zxid;
        let type_ = match prepared.body {
            TxnBody::Error(_) => OpCode::Error.code(),
            _ => op.code(),
        };
        let header = TxnHeader {
            client_id: session,
            cxid: xid,
            zxid,
            time: wall_ms(),
            type_,
        };
        let txn = palisade_proto::Txn {
            header,
            body: prepared.body,
        };
        self.unlogged.push(LogRecord {
            kind: RecordKind::Txn,
            zxid,
            bytes: txn.encode(),
        });
        self.pending.push_back(Pending {
            conn,
            header: txn.header,
            body: txn.body,
            replies: prepared.replies,
            kind,
            at: Instant::now(),
        });
        zxid
    }

    fn durable(&mut self, upto: i64) {
        while self.pending.front().is_some_and(|p| p.header.zxid <= upto) {
            if let Some(p) = self.pending.pop_front() {
                self.apply(p);
            }
        }
    }

    fn apply(&mut self, p: Pending) {
        let zxid = p.header.zxid;
        let outcomes = Applier {
            tree: &mut self.tree,
            watches: &mut self.watches,
            events: &mut self.events,
        }
        .apply(&p.header, &p.body);
        self.applied_zxid = zxid;
        self.overlay.applied(zxid);
        self.after_apply(zxid);
        self.deliver_events();
        match p.kind {
            PendingKind::NewSession {
                conn,
                ready,
                timeout,
                read_only,
            } => {
                let now = self.now_ms();
                let id = p.header.client_id;
                self.sessions.add(id, timeout, now);
                if self.conns.contains_key(&conn) {
                    if let Some(s) = self.sessions.get_mut(id) {
                        s.conn = Some(conn);
                    }
                    let frame = self.connect_reply(Some((id, timeout)), read_only);
                    if let Some(c) = self.conns.get(&conn) {
                        let _ = c.out.send(Out::Bytes(frame));
                    }
                    let _ = ready.send(true);
                }
                return;
            }
            PendingKind::Close { conn } => {
                let session = p.header.client_id;
                let attached = self.sessions.remove(session).and_then(|s| s.conn);
                if let Some(c) = conn {
                    self.stats.record(p.at);
                    self.send_reply(c, reply::header(p.header.cxid, zxid, 0));
                    self.finish_slot(c, zxid);
                }
                if let Some(c) = conn.or(attached) {
                    self.drop_conn(c, true);
                }
                return;
            }
            PendingKind::Request => {}
        }
        let Some(conn) = p.conn else { return };
        self.stats.record(p.at);
        let frame = self.build_reply(&p.header, &p.body, &p.replies, &outcomes);
        self.send_reply(conn, frame);
        self.finish_slot(conn, zxid);
    }

    /// Bookkeeping of durability after each applied txn: a digest record now and then, and a
    /// snapshot when one is due.
    fn after_apply(&mut self, zxid: i64) {
        if zxid % DIGEST_EVERY == 0 {
            let rec = crate::digest::encode_record(zxid, self.tree.digest());
            self.unlogged.push(LogRecord {
                kind: RecordKind::Meta,
                zxid,
                bytes: Bytes::copy_from_slice(&rec),
            });
        }
        if let Some(s) = self.snap.as_mut() {
            s.since += 1;
            if s.since >= s.due && s.capture.is_none() {
                self.start_snapshot();
            }
        }
    }

    fn build_reply(
        &self,
        h: &TxnHeader,
        body: &TxnBody,
        kinds: &[ReplyKind],
        outcomes: &[Outcome],
    ) -> Bytes {
        let (xid, zxid) = (h.cxid, h.zxid);
        if let TxnBody::Multi(_) = body {
            let results = outcomes
                .iter()
                .enumerate()
                .map(|(i, o)| match (kinds.get(i), o.err) {
                    (Some(k), 0) => op_result(*k, o),
                    (_, err) => OpResult::Error(ErrorResponse { err }),
                })
                .collect();
            let m = MultiResponse::new(results);
            return reply::frame(xid, zxid, 0, |w| m.write(w));
        }
        let Some(o) = outcomes.first() else {
            return reply::header(xid, zxid, ErrorCode::SystemError.code());
        };
        if o.err != 0 {
            return reply::header(xid, zxid, o.err);
        }
        let stat = o.stat.clone().unwrap_or_default();
        match kinds.first() {
            Some(ReplyKind::Create) => reply::record(
                xid,
                zxid,
                &CreateResponse {
                    path: JStr::from(o.path.as_str()),
                },
            ),
            Some(ReplyKind::Create2) => reply::record(
                xid,
                zxid,
                &Create2Response {
                    path: JStr::from(o.path.as_str()),
                    stat,
                },
            ),
            Some(ReplyKind::SetData) | Some(ReplyKind::SetAcl) => reply::record(xid, zxid, &stat),
            Some(ReplyKind::Delete) | Some(ReplyKind::Check) | None => reply::header(xid, zxid, 0),
        }
    }

    fn deliver_events(&mut self) {
        for ev in self.events.drain(..) {
            let frame = reply::event(ev.kind, &ev.path);
            for c in ev.conns {
                if let Some(conn) = self.conns.get(&c) {
                    let _ = conn.out.send(Out::Bytes(frame.clone()));
                }
            }
        }
    }

    pub(crate) fn send_reply(&mut self, conn: ConnId, frame: Bytes) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.sent += 1;
            self.stats.sent += 1;
            let _ = c.out.send(Out::Reply(frame));
        }
    }

    /// The write at the head of a connection's queue is answered: run the reads behind it.
    fn finish_slot(&mut self, conn_id: ConnId, zxid: i64) {
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.last_zxid = zxid;
        if matches!(conn.queue.front(), Some(Slot::Write(z)) if *z == zxid) {
            conn.queue.pop_front();
        }
        loop {
            let Some(conn) = self.conns.get_mut(&conn_id) else {
                return;
            };
            match conn.queue.front() {
                Some(Slot::Read { .. }) | Some(Slot::Bad { .. }) => {}
                _ => return,
            }
            match conn.queue.pop_front() {
                Some(Slot::Read { xid, req, at }) => self.read(conn_id, xid, req, at),
                Some(Slot::Bad {
                    xid,
                    err,
                    close,
                    multi_body,
                }) => self.answer_bad(conn_id, xid, err, close, multi_body),
                _ => return,
            }
        }
    }

    fn expire_sessions(&mut self) {
        let now = self.now_ms();
        for id in self.sessions.expired(now) {
            tracing::info!(session = format_args!("{id:#x}"), "session expired");
            if let Some(s) = self.sessions.get_mut(id) {
                s.closing = true;
            }
            let body = self.prep(id, Caller::Server).close_session();
            self.queue_txn(
                id,
                None,
                0,
                OpCode::CloseSession,
                Prepared {
                    body,
                    replies: vec![],
                },
                PendingKind::Close { conn: None },
            );
        }
    }
}

impl Core {
    /// The container/TTL reaper: empty containers that once had a child, and childless TTL
    /// nodes not modified for their TTL, are deleted through a deleteContainer txn (their
    /// delete watches fire as for any delete).
    fn reap(&mut self) {
        let now = self.now_ms();
        if now < self.last_reap_ms + self.cfg.container_check_ms {
            return;
        }
        self.last_reap_ms = now;
        let wall = wall_ms();
        let mut doomed: Vec<String> = self
            .tree
            .reapable()
            .filter_map(|id| self.tree.node(id).map(|n| (id, n)))
            .filter(|(_, n)| {
                n.num_children() == 0
                    && match n.kind() {
                        crate::tree::Kind::Container => n.cversion > 0,
                        crate::tree::Kind::Ttl(ttl) => wall.saturating_sub(n.mtime) > ttl,
                        _ => false,
                    }
            })
            .map(|(id, _)| self.tree.path_of(id))
            .collect();
        doomed.sort();
        for path in doomed {
            let req = Request::DeleteContainer(JStr::from(path.as_str()));
            let prepared = self.prep(0, Caller::Server).write(&req);
            if matches!(prepared.body, TxnBody::Error(_)) {
                continue; // changed since the scan (e.g. a child is being created)
            }
            tracing::debug!(path, "reaping");
            self.queue_txn(
                0,
                None,
                0,
                OpCode::DeleteContainer,
                prepared,
                PendingKind::Request,
            );
        }
    }
}

fn op_result(kind: ReplyKind, o: &Outcome) -> OpResult {
    let stat = o.stat.clone().unwrap_or_default();
    match kind {
        ReplyKind::Create => OpResult::Create(CreateResponse {
            path: JStr::from(o.path.as_str()),
        }),
        ReplyKind::Create2 => OpResult::Create2(Create2Response {
            path: JStr::from(o.path.as_str()),
            stat,
        }),
        ReplyKind::Delete => OpResult::Delete,
        ReplyKind::SetData | ReplyKind::SetAcl => OpResult::SetData(stat),
        ReplyKind::Check => OpResult::Check,
    }
}

#[cfg(test)]
#[path = "core_test.rs"]
mod tests;
