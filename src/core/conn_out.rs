//! A connection's output end as the engine holds it: what it writes (`Out`), the byte budgets
//! it shares with the connection's tasks, the writer task's end (`ConnWriter`, `OutTx`) and the
//! direct writer the runtime writes a turn's output through (`DirectWriter`, `Direct`; the
//! staging itself is outbox.rs's). net/ implements the writers.

use crate::core::conn_id::ConnId;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the core writes to a connection.
#[derive(Debug)]
pub enum Out {
    /// Bytes to write as they are (handshake, 4lw text).
    Bytes(Bytes),
    /// A watch notification: counted against the connection's notification budget too.
    Event(Bytes),
    /// The reply to one request: frees one slot of the connection's outstanding budget.
    Reply(Bytes),
    /// What the core staged in a turn and could not write itself (`outbox.rs`): already
    /// charged to the budget with `weight`; holds `replies` replies.
    Batch {
        bytes: Bytes,
        replies: usize,
        weight: (usize, usize),
    },
    /// Flush what came before, then close.
    Close,
}

impl Out {
    /// (bytes it holds, of which notification bytes).
    pub fn weight(&self) -> (usize, usize) {
        match self {
            Out::Bytes(b) | Out::Reply(b) => (b.len(), 0),
            Out::Event(b) => (b.len(), b.len()),
            Out::Batch { weight, .. } => *weight,
            Out::Close => (0, 0),
        }
    }
}

/// The server-wide budget of output queued to connections and not yet written.
#[derive(Debug)]
pub struct GlobalBudget {
    queued: AtomicUsize,
    limit: usize,
    /// The core held back a read because this budget was spent: a writer that brings it back
    /// under the limit tells the core (`CoreMsg::Drained(None)`).
    held: AtomicBool,
}

impl GlobalBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(GlobalBudget {
            queued: AtomicUsize::new(0),
            limit,
            held: AtomicBool::new(false),
        })
    }
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
    pub fn over(&self) -> bool {
        self.queued() >= self.limit
    }
}

/// One connection's budget of unsent output (replies and notifications together), counted
/// when the core queues a frame and released when the writer has written it. Over it, the
/// reader stops reading requests and the core holds back the reads it has; the writer, once
/// it brings the connection back under, tells the core (`CoreMsg::Drained`).
#[derive(Debug)]
pub struct OutBudget {
    pub global: Arc<GlobalBudget>,
    limit: usize,
    queued: AtomicUsize,
    /// Of `queued`, the notification bytes.
    events: AtomicUsize,
    /// Bytes written to the socket so far (the core's measure of a held client's progress).
    written: AtomicU64,
    /// The core holds back reads of this connection until it is under its budget again.
    held: AtomicBool,
    /// Requests read and not answered yet (the reader stops at `max_outstanding`).
    outstanding: AtomicUsize,
    /// Items in the writer task's hands (queued to it or being written): the core writes to
    /// the socket itself only when there are none (`outbox.rs`, net/direct.rs).
    handed: AtomicUsize,
}

impl OutBudget {
    pub fn new(limit: usize, global: Arc<GlobalBudget>) -> Arc<Self> {
        Arc::new(OutBudget {
            global,
            limit,
            queued: AtomicUsize::new(0),
            events: AtomicUsize::new(0),
            written: AtomicU64::new(0),
            held: AtomicBool::new(false),
            outstanding: AtomicUsize::new(0),
            handed: AtomicUsize::new(0),
        })
    }

    /// A budget that never fills (tests that drive the core directly).
    pub fn unlimited() -> Arc<Self> {
        OutBudget::new(usize::MAX, GlobalBudget::new(usize::MAX))
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
    pub fn queued_events(&self) -> usize {
        self.events.load(Ordering::SeqCst)
    }
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
    pub fn own_over(&self) -> bool {
        self.queued() >= self.limit
    }
    /// Over its own budget or the server's.
    pub fn over(&self) -> bool {
        self.own_over() || self.global.over()
    }

    pub(crate) fn charge(&self, (bytes, events): (usize, usize)) {
        self.queued.fetch_add(bytes, Ordering::SeqCst);
        self.events.fetch_add(events, Ordering::SeqCst);
        self.global.queued.fetch_add(bytes, Ordering::SeqCst);
    }

    /// Output that left the queue (written, or dropped with the connection).
    pub fn release(&self, (bytes, events): (usize, usize)) {
        let sub = |a: &AtomicUsize, n: usize| {
            let _ = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                Some(v.saturating_sub(n))
            });
        };
        sub(&self.queued, bytes);
        sub(&self.events, events);
        sub(&self.global.queued, bytes);
    }

    /// Some bytes reached the socket (a part of a batch, possibly).
    pub fn progress(&self, bytes: usize) {
        self.written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A batch of output is written to the socket: released (the writer then wakes the
    /// connection's reader: `ConnWriter::freed`).
    pub fn wrote(&self, weight: (usize, usize)) {
        self.release(weight);
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Acquire)
    }

    /// The reader passed a request to the core.
    pub fn read_one(&self) {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// `n` replies reached the socket: their slots are free for the reader.
    pub fn answered(&self, n: usize) {
        if n > 0 {
            let _ = self
                .outstanding
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                    Some(v.saturating_sub(n))
                });
        }
    }

    /// Items in the writer task's hands.
    pub fn handed(&self) -> usize {
        self.handed.load(Ordering::Acquire)
    }

    /// The writer task wrote (or dropped) `n` items.
    pub fn done_with(&self, n: usize) {
        let _ = self
            .handed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_sub(n))
            });
    }

    /// The core holds back this connection's reads (and, when the server's budget is the
    /// cause, says so there). Returns false when the budget freed up meanwhile: the core runs
    /// them now instead.
    pub fn hold(&self) -> bool {
        self.held.store(true, Ordering::SeqCst);
        if self.global.over() {
            self.global.held.store(true, Ordering::SeqCst);
        }
        if self.over() {
            return true;
        }
        self.held.store(false, Ordering::SeqCst);
        false
    }

    /// How far the server's budget may be filled by queueing a reply of `len` bytes: all of
    /// it for a reply within a connection's budget; three quarters for a larger one, so that
    /// clients reading large replies (one connection can ask for hundreds of MB with one
    /// request) leave a quarter to everyone else's replies.
    fn global_room(&self, len: usize) -> usize {
        let g = self.global.limit;
        if len > self.limit {
            g - g / 4
        } else {
            g
        }
    }

    /// The largest reply that could ever have room (`has_room`); a larger one never will.
    pub fn largest_reply(&self) -> usize {
        let g = self.global.limit;
        self.limit.min(g).max(g - g / 4)
    }

    /// Whether a reply of `len` bytes has room now: in this connection's budget (or the
    /// connection has nothing queued: one reply may be larger than a connection's budget,
    /// alone) and in the server's (`global_room`).
    pub fn has_room(&self, len: usize) -> bool {
        let queued = self.queued();
        let own = queued == 0 || queued.saturating_add(len) <= self.limit;
        own && self.global.queued().saturating_add(len) <= self.global_room(len)
    }

    /// Holds this connection's reads until a reply of `len` bytes has room: its own writer's
    /// next write or any writer's (the server's budget) wakes the core to look again. False
    /// when it has room already: the core builds it now.
    pub fn hold_for(&self, len: usize) -> bool {
        self.held.store(true, Ordering::SeqCst);
        if self.global.queued().saturating_add(len) > self.global_room(len) {
            self.global.held.store(true, Ordering::SeqCst);
        }
        if !self.has_room(len) {
            return true;
        }
        self.held.store(false, Ordering::SeqCst);
        false
    }

    /// After a write: which of the core's holds this connection's writer must lift
    /// (its own, the server's).
    pub fn lifted(&self) -> (bool, bool) {
        let own = !self.own_over()
            && !self.global.over()
            && self.held.load(Ordering::SeqCst)
            && self.held.swap(false, Ordering::SeqCst);
        let global = !self.global.over()
            && self.global.held.load(Ordering::SeqCst)
            && self.global.held.swap(false, Ordering::SeqCst);
        (own, global)
    }
}

/// A connection's tasks, as the engine reaches them (net/connection.rs implements it with
/// the writer task's channel and the tasks' wake-up and cancellation).
pub trait ConnWriter: std::fmt::Debug + Send + Sync {
    /// Queues `o` for the writer task; gives it back when the task is gone.
    fn hand(&self, o: Out) -> Result<(), Out>;
    /// Ends the connection's tasks at once, whatever they wait on (a write to a client that
    /// does not read included).
    fn cancel(&self);
    /// Output was written: wakes the connection's reader if it waits for room.
    fn freed(&self);
}

/// The core's end of a connection's writer: every frame is charged to the budget. The
/// engine sends through its outbox (`outbox.rs`), which stages a plaintext connection's frames
/// for the core thread to write itself (`direct`) when the writer task has nothing in hand.
#[derive(Debug, Clone)]
pub struct OutTx {
    writer: Arc<dyn ConnWriter>,
    pub budget: Arc<OutBudget>,
    direct: Option<Arc<Direct>>,
}

impl OutTx {
    pub fn new(writer: Arc<dyn ConnWriter>, budget: Arc<OutBudget>) -> Self {
        OutTx {
            writer,
            budget,
            direct: None,
        }
    }

    /// Lets the core write to the connection's socket itself, through `writer` (net/direct.rs:
    /// a plaintext socket of its own, a dup of the connection's).
    pub fn with_direct(mut self, conn: ConnId, writer: Box<dyn DirectWriter>) -> Self {
        self.direct = Some(Arc::new(Direct::new(conn, writer)));
        self
    }

    /// To the writer task at once, charged to the budget (output from outside the engine's
    /// turn: the `dirs` word's thread; the engine sends through its `Outbox`).
    pub fn send(&self, o: Out) -> Result<(), Out> {
        let w = o.weight();
        self.budget.charge(w);
        self.hand(o).inspect_err(|_| self.budget.release(w))
    }

    /// To the writer task (already charged).
    pub(crate) fn hand(&self, o: Out) -> Result<(), Out> {
        self.budget.handed.fetch_add(1, Ordering::AcqRel);
        self.writer
            .hand(o)
            .inspect_err(|_| self.budget.done_with(1))
    }

    /// Ends the connection's tasks at once.
    pub fn cancel(&self) {
        self.writer.cancel();
    }

    /// Output was written: wakes the connection's reader.
    pub fn freed(&self) {
        self.writer.freed();
    }

    pub(crate) fn direct(&self) -> Option<&Direct> {
        self.direct.as_deref()
    }
}

/// Writes a connection's staged output to its socket: net's direct writer (net/direct.rs).
/// The engine only holds it; the runtime calls it at the turn's end.
pub trait DirectWriter: std::fmt::Debug + Send + Sync {
    /// Writes `staged`, what the engine staged for `tx` this turn, noting in `lifted` a hold
    /// the write lifts.
    fn write_staged(&self, tx: &OutTx, staged: Staged, lifted: &mut Lifted);
}

/// A plaintext connection's writer for the core and what the engine staged for it this turn.
#[derive(Debug)]
pub struct Direct {
    pub conn: ConnId,
    pub(super) writer: Box<dyn DirectWriter>,
    pub(super) staged: parking_lot::Mutex<Staged>,
}

/// What is staged for one connection in a turn.
#[derive(Debug, Default)]
pub struct Staged {
    pub buf: Vec<u8>,
    /// Charged to the budget: (bytes, of which notification bytes).
    pub weight: (usize, usize),
    pub replies: usize,
    pub close: bool,
    /// In this turn's list.
    pub(super) listed: bool,
}

impl Direct {
    pub fn new(conn: ConnId, writer: Box<dyn DirectWriter>) -> Direct {
        Direct {
            conn,
            writer,
            staged: parking_lot::Mutex::new(Staged::default()),
        }
    }

    /// The staging buffer goes back for the next turn, unless a big reply made it big.
    pub fn keep(&self, mut buf: Vec<u8>) {
        if buf.capacity() <= crate::limits::STAGED_KEEP_BYTES {
            buf.clear();
            let mut s = self.staged.lock();
            if s.buf.capacity() == 0 {
                s.buf = buf;
            }
        }
    }
}

/// Connections whose holds a direct write lifted (as a writer's `CoreMsg::Drained` would say).
#[derive(Debug, Default)]
pub struct Lifted {
    pub conns: Vec<ConnId>,
    pub global: bool,
}

impl Lifted {
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty() && !self.global
    }
}
