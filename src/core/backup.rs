//! A consistent image of the live state for the AdminServer's `snapshot` (online backup,
//! issue 37), captured as an ensemble member's Raft snapshot is: fuzzily, a bounded step per
//! turn of the core loop, with the txns applied meanwhile recorded beside it
//! (`durability/image.rs`'s fuzzy layout), so a backup never stops the core for the whole
//! tree. Loading the image replays those txns over the capture and checks the digest: the
//! state is the one the core had when the capture ended, every node at one zxid.

use super::fuzzy_image::FuzzyImage;
use super::token::Token;
use super::Core;
use palisade_proto::Txn;

pub(super) struct BackupCapture {
    image: FuzzyImage,
    waiting: Vec<Token<Vec<u8>>>,
}

impl Core {
    /// Starts a capture for a backup (or joins the one in progress).
    pub(crate) fn backup(&mut self, reply: Token<Vec<u8>>) {
        if let Some(c) = self.backup.as_mut() {
            c.waiting.push(reply);
            return;
        }
        let image = FuzzyImage::begin(&self.state, Vec::new(), self.now);
        self.backup = Some(BackupCapture {
            image,
            waiting: vec![reply],
        });
    }

    /// Records a txn about to be applied while a backup is being captured.
    pub(super) fn backup_txn(&mut self, txn: &Txn) {
        if let Some(c) = self.backup.as_mut() {
            c.image.push_txn(txn);
        }
    }

    /// One bounded step of the backup capture; answers its callers when it is done.
    pub(super) fn backup_step(&mut self) {
        let Some(c) = self.backup.as_mut() else {
            return;
        };
        if !c.image.step(&self.state) {
            return;
        }
        let Some(c) = self.backup.take() else { return };
        let out = c.image.finish(&self.state, self.now, "backup");
        self.outbox.answer_all(c.waiting, out);
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
