//! Output the core stages during a turn of its loop and writes at the turn's end: itself,
//! straight to the socket, when the connection's writer task has nothing in hand (the common
//! case — a client waiting for its reply), else through the writer task, behind what it holds.
//! A reply then costs no wake-up of a connection task: waking a parked thread costs 20–40 µs
//! on this kind of virtual machine, more than the request itself, and a lock handoff crosses
//! three round trips in series (docs/design/BENCHMARKS.md, "Where the time goes").
//!
//! Only plaintext connections (a TLS stream is encrypted by its writer task), only on the core
//! thread once its loop runs (`begin`): elsewhere — and in tests that drive the core by hand —
//! frames go to the writer task at once. Order holds because the core is a connection's only
//! producer of output: it writes itself only while the writer holds nothing, and once it hands
//! a batch to the writer, everything after that batch goes to the writer too until the writer
//! has written it all.

use super::msg::{Out, OutTx};
use crate::core::watch::ConnId;
use crate::limits::WRITE_BATCH;
use bytes::Bytes;
use std::cell::RefCell;
use std::io::Write;

thread_local! {
    /// This turn's connections with staged output (`Some` on the core thread).
    static TURN: RefCell<Option<Vec<OutTx>>> = const { RefCell::new(None) };
}

/// A plaintext connection's socket for the core — a dup of the connection's file descriptor,
/// so it stays valid for as long as the core holds it, whatever the connection's tasks do —
/// and what the core staged for it this turn.
#[derive(Debug)]
pub struct Direct {
    conn: ConnId,
    sock: std::net::TcpStream,
    staged: parking_lot::Mutex<Staged>,
}

#[derive(Debug, Default)]
struct Staged {
    buf: Vec<u8>,
    weight: (usize, usize),
    replies: usize,
    close: bool,
    /// In this turn's list.
    listed: bool,
}

impl Direct {
    pub fn new(conn: ConnId, sock: std::net::TcpStream) -> Direct {
        Direct {
            conn,
            sock,
            staged: parking_lot::Mutex::new(Staged::default()),
        }
    }
}

/// From now on, output sent on this thread is staged until [`flush`] (the core's loop).
pub fn begin() {
    TURN.with(|t| *t.borrow_mut() = Some(Vec::new()));
}

/// Stages `o` (already charged to the budget with weight `w`) if this thread stages output;
/// false if not, and the caller hands it to the writer.
pub(super) fn stage(tx: &OutTx, d: &Direct, o: &Out, w: (usize, usize)) -> bool {
    TURN.with(|t| {
        let mut t = t.borrow_mut();
        let Some(list) = t.as_mut() else {
            return false;
        };
        let mut s = d.staged.lock();
        if s.buf.is_empty() && !s.close && tx.budget.handed() > 0 {
            // The writer is busy (a client slow to read): it takes the frame as it is, and
            // nothing is copied or held twice.
            return false;
        }
        let len = match o {
            Out::Bytes(b) | Out::Event(b) | Out::Reply(b) => b.len(),
            Out::Batch { .. } | Out::Close => 0,
        };
        if s.buf.len().saturating_add(len) > WRITE_BATCH {
            // A large reply's parts (`Core::send_reply`) are not copied into the staging
            // buffer: what is staged goes to the writer first, and they follow it, in order.
            hand_staged(tx, &mut s);
            return false;
        }
        match o {
            Out::Bytes(b) | Out::Event(b) => s.buf.extend_from_slice(b),
            Out::Reply(b) => {
                s.replies += 1;
                s.buf.extend_from_slice(b);
            }
            Out::Batch { .. } => return false,
            Out::Close => s.close = true,
        }
        s.weight = (s.weight.0 + w.0, s.weight.1 + w.1);
        if !s.listed {
            s.listed = true;
            list.push(tx.clone());
        }
        true
    })
}

/// Hands what is staged for a connection to its writer now, as one batch.
fn hand_staged(tx: &OutTx, s: &mut Staged) {
    if s.buf.is_empty() {
        return;
    }
    let (weight, replies) = (s.weight, s.replies);
    s.weight = (0, 0);
    s.replies = 0;
    let batch = Out::Batch {
        bytes: Bytes::from(std::mem::take(&mut s.buf)),
        replies,
        weight,
    };
    if tx.hand(batch).is_err() {
        tx.budget.release(weight);
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

/// Writes what this turn staged: each connection's bytes in one write of the core's own when
/// its writer holds nothing, the rest (or all) handed to the writer.
pub fn flush() -> Lifted {
    let list = TURN.with(|t| t.borrow_mut().as_mut().map(std::mem::take));
    let mut lifted = Lifted::default();
    for tx in list.unwrap_or_default() {
        write_staged(&tx, &mut lifted);
    }
    lifted
}

fn write_staged(tx: &OutTx, lifted: &mut Lifted) {
    let Some(d) = tx.direct() else { return };
    let mut s = d.staged.lock();
    let (weight, replies, close) = (s.weight, s.replies, s.close);
    let buf = std::mem::take(&mut s.buf);
    *s = Staged::default();
    drop(s);
    if buf.is_empty() && !close {
        return;
    }
    let budget = &tx.budget;
    let mut done = 0;
    if !close && budget.handed() == 0 {
        // Non-blocking (the socket is tokio's); an error is the writer's to find.
        if let Ok(n) = (&d.sock).write(&buf) {
            budget.progress(n);
            done = n;
        }
    }
    if done == buf.len() && !close {
        budget.wrote(weight);
        budget.answered(replies);
        let (own, global) = budget.lifted();
        if own {
            lifted.conns.push(d.conn);
        }
        lifted.global |= global;
        keep(d, buf);
        return;
    }
    // A client slow to read (or a close): the rest goes to the writer, copied to its size so
    // that what is held stays what the budget counts.
    let rest = Bytes::copy_from_slice(buf.get(done..).unwrap_or_default());
    keep(d, buf);
    let batch = Out::Batch {
        bytes: rest,
        replies,
        weight,
    };
    if tx.hand(batch).is_err() {
        budget.release(weight);
    }
    if close {
        let _ = tx.hand(Out::Close);
    }
}

/// The staging buffer goes back for the next turn, unless a big reply made it big.
fn keep(d: &Direct, mut buf: Vec<u8>) {
    if buf.capacity() <= KEEP_BYTES {
        buf.clear();
        let mut s = d.staged.lock();
        if s.buf.capacity() == 0 {
            s.buf = buf;
        }
    }
}

/// The largest staging buffer a connection keeps between turns.
const KEEP_BYTES: usize = 64 << 10;

#[cfg(test)]
#[path = "staged_test.rs"]
mod tests;
