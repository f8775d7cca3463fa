//! A consistent image of the live state for the AdminServer's `snapshot` (online backup,
//! issue 37), captured as an ensemble member's Raft snapshot is: fuzzily, a bounded step per
//! turn of the core loop, with the txns applied meanwhile recorded beside it
//! (`durability/image.rs`'s fuzzy layout), so a backup never stops the core for the whole
//! tree. Loading the image replays those txns over the capture and checks the digest: the
//! state is the one the core had when the capture ended, every node at one zxid.

use super::token::Token;
use super::Core;
use crate::durability::capture::Capture;
use crate::durability::image;
use crate::limits::SNAPSHOT_STEP;
use palisade_proto::Txn;
use std::time::Instant;

pub(super) struct BackupCapture {
    start: i64,
    capture: Capture,
    /// The image being built in place: room for the head, then the items.
    image: Vec<u8>,
    /// The txns applied since the capture began, as `image::push_txn` writes them.
    txns: Vec<u8>,
    waiting: Vec<Token<Vec<u8>>>,
    started: Instant,
}

impl Core {
    /// Starts a capture for a backup (or joins the one in progress).
    pub(crate) fn backup(&mut self, reply: Token<Vec<u8>>) {
        if let Some(c) = self.backup.as_mut() {
            c.waiting.push(reply);
            return;
        }
        let start = self.state.zxid();
        let mut image = vec![0; image::FUZZY_HEAD];
        let sessions = self.state.sessions().iter().map(|(&id, &t)| (id, t));
        let capture = Capture::begin(&self.state.tree, sessions, start, &mut image);
        self.backup = Some(BackupCapture {
            start,
            capture,
            image,
            txns: Vec::new(),
            waiting: vec![reply],
            started: self.now.mono,
        });
    }

    /// Records a txn about to be applied while a backup is being captured.
    pub(super) fn backup_txn(&mut self, txn: &Txn) {
        if let Some(c) = self.backup.as_mut() {
            image::push_txn(&mut c.txns, txn);
        }
    }

    /// One bounded step of the backup capture; answers its callers when it is done.
    pub(super) fn backup_step(&mut self) {
        let Some(c) = self.backup.as_mut() else {
            return;
        };
        if !c
            .capture
            .step(&self.state.tree, SNAPSHOT_STEP, &mut c.image)
        {
            return;
        }
        let Some(c) = self.backup.take() else { return };
        let end = self.state.zxid();
        let trailer = c.capture.trailer(end, self.state.tree.digest());
        let mut out = c.image;
        image::finish_fuzzy(&mut out, 0, c.start, &trailer, &c.txns);
        tracing::info!(
            start = format_args!("{:#x}", c.start),
            end = format_args!("{end:#x}"),
            nodes = trailer.node_count,
            bytes = out.len(),
            ms = self.now.since(c.started).as_millis() as u64,
            "backup captured"
        );
        let mut waiting = c.waiting;
        let last = waiting.pop();
        for w in waiting {
            self.outbox.answer(w, out.clone());
        }
        if let Some(w) = last {
            self.outbox.answer(w, out);
        }
    }

    /// The asker of token `id` went away (the runtime saw its reply end closed: an HTTP
    /// request gone). A backup nobody waits for any more is dropped.
    pub(crate) fn asker_gone(&mut self, id: u64) {
        if let Some(c) = self.backup.as_mut() {
            c.waiting.retain(|w| w.id() != id);
            if c.waiting.is_empty() {
                self.backup = None;
            }
        }
    }
}
