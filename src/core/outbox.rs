//! The engine's output to connections during a turn. Every frame is charged to the
//! connection's budget at once (the engine reads the budgets as it goes); a plaintext
//! connection's frames are staged here and, at the turn's end, the runtime has net write
//! them (net/direct.rs): on the core thread, straight to the socket when the connection's
//! writer task has nothing in hand (the common case — a client waiting for its reply), else
//! through the writer task, behind what it holds. A reply then costs no wake-up of a
//! connection task: waking a parked thread costs 20–40 µs on this kind of virtual machine,
//! more than the request itself, and a lock handoff crosses three round trips in series
//! (docs/design/BENCHMARKS.md, "Where the time goes").
//!
//! Only plaintext connections (a TLS stream is encrypted by its writer task), and only once
//! the runtime turns staging on (`stage_turns`): until then — and in tests that step the
//! engine by hand — frames go to the writer task at once. Order holds because the engine is
//! a connection's only producer of output: it is written directly only while the writer
//! holds nothing, and once a batch is handed to the writer, everything after that batch goes
//! to the writer too until the writer has written it all.

use super::conn_out::{Direct, Lifted, Out, OutTx, Staged};
use super::host::HostTask;
use super::token::{Answered, Token};
use super::work::Work;
use crate::limits::WRITE_BATCH;
use bytes::Bytes;

/// The engine's outbox: this turn's connections with staged output, the work for the log and
/// consensus (work.rs) and the work it asks of the runtime off the core thread.
#[derive(Default)]
pub struct Outbox {
    staging: bool,
    turn: Vec<OutTx>,
    tasks: Vec<HostTask>,
    /// For the log and consensus, in the order it was pushed (the order it is routed in).
    work: Vec<Work>,
    /// Of `work`, the items for the forwarder and the snapshot asks: counted against their
    /// queues' room (work.rs).
    to_leader: usize,
    snapshot_asks: usize,
    /// Answers to reply tokens (token.rs), sent by the runtime at the turn's end.
    pub(super) answers: Vec<Answered>,
}

impl Outbox {
    /// From now on, output to a connection with a direct writer is staged until `write`.
    pub fn stage_turns(&mut self) {
        self.staging = true;
    }

    /// Sends `o` to a connection: charged to its budget now; staged for the turn's end, or
    /// handed to its writer task.
    pub fn send(&mut self, tx: &OutTx, o: Out) {
        let w = o.weight();
        tx.budget.charge(w);
        if self.staging {
            if let Some(d) = tx.direct() {
                if stage(tx, d, &o, w, &mut self.turn) {
                    return;
                }
            }
        }
        if tx.hand(o).is_err() {
            tx.budget.release(w);
        }
    }

    /// Asks the runtime for work off the core thread (at the turn's end).
    pub fn task(&mut self, t: HostTask) {
        self.tasks.push(t);
    }

    /// The work asked for this turn.
    pub fn take_tasks(&mut self) -> Vec<HostTask> {
        std::mem::take(&mut self.tasks)
    }

    /// Work for the log or consensus, routed at the turn's end in the order pushed.
    pub fn push(&mut self, w: Work) {
        match w {
            Work::ToLeader(_) => self.to_leader += 1,
            Work::AskSnapshot => self.snapshot_asks += 1,
            _ => {}
        }
        self.work.push(w);
    }

    /// Items pushed for the forwarder and not routed yet.
    pub fn queued_to_leader(&self) -> usize {
        self.to_leader
    }

    /// Snapshot asks pushed and not routed yet.
    pub fn queued_snapshot_asks(&self) -> usize {
        self.snapshot_asks
    }

    /// Answers `token` with `value`: the runtime sends it to the asker at the turn's end.
    pub fn answer<T: Send + 'static>(&mut self, token: Token<T>, value: T) {
        self.answers.push(Answered {
            id: token.spend(),
            value: Box::new(value),
        });
    }

    /// Answers every token in `tokens` with `value` (a clone each but the last: an image can
    /// be the size of the tree).
    pub fn answer_all<T: Clone + Send + 'static>(&mut self, mut tokens: Vec<Token<T>>, value: T) {
        let last = tokens.pop();
        for t in tokens {
            self.answer(t, value.clone());
        }
        if let Some(t) = last {
            self.answer(t, value);
        }
    }

    /// The answers pushed since the last take, in order.
    pub fn take_answers(&mut self) -> Vec<Answered> {
        std::mem::take(&mut self.answers)
    }

    /// The work pushed since the last take, in order.
    pub fn take_work(&mut self) -> Vec<Work> {
        self.to_leader = 0;
        self.snapshot_asks = 0;
        std::mem::take(&mut self.work)
    }

    /// Has each connection's writer write what this turn staged for it.
    pub fn write(&mut self) -> Lifted {
        let mut lifted = Lifted::default();
        for tx in std::mem::take(&mut self.turn) {
            let Some(d) = tx.direct() else { continue };
            let staged = std::mem::take(&mut *d.staged.lock());
            if staged.buf.is_empty() && !staged.close {
                continue;
            }
            d.writer.write_staged(&tx, staged, &mut lifted);
        }
        lifted
    }
}

/// Stages `o` (already charged to the budget with weight `w`); false if it goes to the
/// writer instead.
fn stage(tx: &OutTx, d: &Direct, o: &Out, w: (usize, usize), turn: &mut Vec<OutTx>) -> bool {
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
        turn.push(tx.clone());
    }
    true
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
