//! An ensemble member's Raft snapshot, captured the way a snapshot file is: fuzzily, a bounded
//! step per turn of the core loop, with the txns applied meanwhile recorded beside it, so
//! building one never stops the core for the whole tree (`durability/image.rs` has the
//! format). The image stands where the core's applied state stands when the capture ends,
//! and says so (`LogPos`), for openraft's snapshot meta.
//!
//! Layout: a kind byte — 2 fuzzy, 3 fuzzy with the ensemble's key (16 bytes) after it; 0 and
//! 1 are the whole-state images of earlier builds, still read — then the image.

use super::{LogPos, Member};
use crate::core::fuzzy_image::FuzzyImage;
use crate::core::outbox::Outbox;
use crate::core::token::Token;
use crate::core::Core;
use crate::durability::image;
use crate::state::State;
use palisade_proto::Txn;

type Reply = Token<(Vec<u8>, Option<LogPos>)>;

/// A member's Raft snapshots: the capture in progress, and when the next is asked for.
pub(in crate::core) struct RaftSnapshots {
    /// The Raft snapshot being captured, if one is.
    pub(super) capture: Option<RaftCapture>,
    /// The size of the last Raft snapshot's image: the next capture reserves as much.
    pub(super) image_bytes: usize,
    /// Txns applied since the last snapshot was asked for, and how many make the next due.
    pub(super) since: u64,
    due: u64,
    /// Log bytes committed since the last snapshot was asked for: the next also waits until
    /// they are as many as the last image's (`snapshot_wanted`).
    pub(super) log_bytes: u64,
}

impl RaftSnapshots {
    pub(super) fn new(snap_count: u64, rng: &mut fastrand::Rng) -> Self {
        RaftSnapshots {
            capture: None,
            image_bytes: 0,
            since: 0,
            due: next_due(snap_count, rng),
            log_bytes: 0,
        }
    }

    pub(in crate::core) fn capturing(&self) -> bool {
        self.capture.is_some()
    }
}

impl Member {
    /// After a committed batch: asks Raft for a snapshot when one is due.
    pub(super) fn ask_snapshot_if_due(&mut self, outbox: &mut Outbox, rng: &mut fastrand::Rng) {
        let s = &mut self.snapshots;
        if snapshot_wanted(s.since, s.due, s.log_bytes, s.image_bytes) {
            s.since = 0;
            s.log_bytes = 0;
            s.due = next_due(self.links.snap_count, rng);
            // Full: an ask is on its way already.
            self.links.ask_snapshot(outbox);
        }
    }
}

/// Whether a member's next Raft snapshot is due: snapCount/2 .. snapCount txns after the last
/// (ZooKeeper's rule), and no sooner than the log since the last holds as many bytes as its
/// image. The floor is the Raft dissertation's (Ongaro, §5.1.1: snapshot when the log is
/// larger than a snapshot, and the disk bandwidth spent on snapshots stays small): with
/// ZooKeeper's rule alone a member holding a 900,000-znode tree wrote a 175 MB image every
/// 50,000–100,000 txns of ~100 bytes, 17–35 times the log's own bytes (5–10 MB), and under create-seq
/// 14 of them per member in 8 s. A member's restart is not an outage (the quorum serves), so
/// the longer replay it may face is the better trade; a standalone server keeps ZooKeeper's
/// rule, its restart time being its downtime.
fn snapshot_wanted(since: u64, due: u64, log_bytes: u64, image_bytes: usize) -> bool {
    since >= due && log_bytes >= image_bytes as u64
}

/// When the next snapshot is due: snapCount/2 .. snapCount txns.
fn next_due(snap_count: u64, rng: &mut fastrand::Rng) -> u64 {
    let half = (snap_count / 2).max(1);
    half + rng.u64(0..half)
}

pub(in crate::core) struct RaftCapture {
    /// After its kind byte (and key).
    image: FuzzyImage,
    waiting: Vec<Reply>,
}

impl RaftCapture {
    /// The builders waiting for this capture (it is dropped).
    pub(in crate::core) fn take_waiting(self) -> Vec<Reply> {
        self.waiting
    }
}

impl Core {
    /// Starts a capture for openraft's snapshot builder (or joins the one in progress).
    pub(in crate::core) fn raft_snapshot(&mut self, reply: Reply) {
        // Not while a restore is half-spooled (ensemble_restore/ says why).
        let Some(reply) = self.defer_raft_snapshot(reply) else {
            return;
        };
        let m = self.role.member_mut();
        if let Some(c) = m.snapshots.capture.as_mut() {
            c.waiting.push(reply);
            return;
        }
        // Room for an image the size of the last one and an eighth more: growing a Vec of
        // 100+ MB by doubling copies it again and again on the core thread.
        let hint = m
            .snapshots
            .image_bytes
            .saturating_add(m.snapshots.image_bytes / 8);
        let mut image = Vec::with_capacity(hint.min(crate::limits::SNAPSHOT_RESERVE_MAX));
        match m.key {
            Some(k) => {
                image.push(3);
                image.extend_from_slice(&k);
            }
            None => image.push(2),
        }
        let image = FuzzyImage::begin(&self.state, image, self.now);
        let start = image.start();
        m.snapshots.capture = Some(RaftCapture {
            image,
            waiting: vec![reply],
        });
        tracing::info!(
            zxid = format_args!("{start:#x}"),
            "Raft snapshot capture started"
        );
    }

    /// Records a txn about to be applied while a capture is in progress.
    pub(in crate::core) fn raft_snapshot_txn(&mut self, txn: &Txn) {
        if let Some(c) = self.role.member_mut().snapshots.capture.as_mut() {
            c.image.push_txn(txn);
        }
    }

    /// One bounded step of the capture in progress; answers its builders when it is done.
    pub(in crate::core) fn raft_snapshot_step(&mut self) {
        let m = self.role.member_mut();
        let Some(c) = m.snapshots.capture.as_mut() else {
            return;
        };
        if !c.image.step(&self.state) {
            return;
        }
        // With the early-ack fault the state runs ahead of the log by the txns in flight; an
        // image ending there would claim txns its log position does not hold (a follower
        // installing it stopped): it ends only where the two meet (a finished step is a no-op).
        if crate::faults::on(crate::faults::Fault::EarlyAck) && !self.inflight.is_empty() {
            return;
        }
        let Some(c) = m.snapshots.capture.take() else {
            return;
        };
        let out = c.image.finish(&self.state, self.now, "Raft snapshot");
        m.snapshots.image_bytes = out.len();
        let at = m.applied_at;
        self.outbox.answer_all(c.waiting, (out, at));
    }
}

/// The ensemble key and the state a Raft snapshot's image holds.
pub(super) fn decode(bytes: &[u8]) -> Result<(Option<[u8; 16]>, State), String> {
    let key = |rest: &[u8]| -> Result<([u8; 16], usize), String> {
        let k = rest
            .first_chunk::<16>()
            .ok_or("image shorter than its key")?;
        Ok((*k, 16))
    };
    let (kind, rest) = bytes.split_first().ok_or("empty image")?;
    let (k, skip) = match kind {
        1 | 3 => key(rest).map(|(k, n)| (Some(k), n))?,
        0 | 2 => (None, 0),
        _ => return Err("image of unknown kind".into()),
    };
    let body = rest.get(skip..).ok_or("image shorter than its key")?;
    let state = if *kind >= 2 {
        image::decode_fuzzy(body)
    } else {
        image::decode(body)
    };
    state.map(|s| (k, s)).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "raft_snapshot_test.rs"]
mod tests;
