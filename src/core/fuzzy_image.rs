//! A fuzzy image of the live state built in place, a bounded step per turn: what a backup
//! (backup.rs) and a member's Raft snapshot (member/raft_snapshot.rs) capture alike. The
//! capture's items, then the txns applied meanwhile, in `durability/image.rs`'s fuzzy
//! layout; each caller keeps its own waiters and what it puts before the image.

use super::now::Now;
use crate::durability::capture::Capture;
use crate::durability::image;
use crate::limits::SNAPSHOT_STEP;
use crate::state::State;
use palisade_proto::Txn;
use std::time::Instant;

pub(super) struct FuzzyImage {
    start: i64,
    capture: Capture,
    /// The image being built in place: the caller's prefix, room for the head, the items.
    image: Vec<u8>,
    /// Where the head's room starts in `image`.
    head_at: usize,
    /// The txns applied since the capture began, as `image::push_txn` writes them.
    txns: Vec<u8>,
    started: Instant,
}

impl FuzzyImage {
    /// Begins capturing `state` after what `image` holds already (a kind byte, a key).
    pub(super) fn begin(state: &State, mut image: Vec<u8>, now: Now) -> Self {
        let start = state.zxid();
        let head_at = image.len();
        image.resize(head_at + image::FUZZY_HEAD, 0);
        let sessions = state.sessions().iter().map(|(&id, &t)| (id, t));
        let capture = Capture::begin(&state.tree, sessions, start, &mut image);
        FuzzyImage {
            start,
            capture,
            image,
            head_at,
            txns: Vec::new(),
            started: now.mono,
        }
    }

    /// The zxid the capture began at.
    pub(super) fn start(&self) -> i64 {
        self.start
    }

    /// Records a txn about to be applied while the capture is in progress.
    pub(super) fn push_txn(&mut self, txn: &Txn) {
        image::push_txn(&mut self.txns, txn);
    }

    /// One bounded step of the capture: true once every node is in.
    pub(super) fn step(&mut self, state: &State) -> bool {
        self.capture
            .step(&state.tree, SNAPSHOT_STEP, &mut self.image)
    }

    /// The finished image, ending where `state` stands; `what` names it in the log.
    pub(super) fn finish(self, state: &State, now: Now, what: &str) -> Vec<u8> {
        let end = state.zxid();
        let trailer = self.capture.trailer(end, state.tree.digest());
        let mut out = self.image;
        // Finished in place: the image can be the size of the tree.
        image::finish_fuzzy(&mut out, self.head_at, self.start, &trailer, &self.txns);
        tracing::info!(
            start = format_args!("{:#x}", self.start),
            end = format_args!("{end:#x}"),
            nodes = trailer.node_count,
            bytes = out.len(),
            ms = now.since(self.started).as_millis() as u64,
            "{what} captured"
        );
        out
    }
}
