//! When a fuzzy snapshot is taken, and the capture in progress: it starts every snapCount/2
//! to snapCount applied txns (or on `csnp`) and advances a bounded step per turn of the core
//! loop, handing finished blocks to the snapshot thread.

use super::Core;
use crate::durability::capture::Capture;
use crate::durability::snapshotter::SnapMsg;
use crate::limits::{SNAPSHOT_BLOCK, SNAPSHOT_STEP};
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

pub(super) struct Snapper {
    tx: std_mpsc::SyncSender<SnapMsg>,
    /// snapCount: a snapshot every snapCount/2 to snapCount txns (randomised, as ZooKeeper
    /// does, so that ensemble members do not snapshot together).
    count: u64,
    due: u64,
    since: u64,
    rng: fastrand::Rng,
    capture: Option<(Capture, Vec<u8>)>,
    started: Instant,
    /// Chunk buffers the snapshot thread has written and handed back.
    spare: std_mpsc::Receiver<Vec<u8>>,
}

/// A chunk buffer: one the snapshot thread gave back, or a new one.
fn chunk_buffer(spare: &std_mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    spare
        .try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(SNAPSHOT_BLOCK))
}

impl Snapper {
    fn next_due(&mut self) -> u64 {
        let half = (self.count / 2).max(1);
        half + self.rng.u64(0..half)
    }
}

impl Core {
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
            rng: fastrand::Rng::new(),
            capture: None,
            started: Instant::now(),
        };
        s.due = s.next_due();
        self.snap = Some(s);
    }

    /// Whether a capture (a snapshot file's, or an ensemble member's Raft snapshot) is in
    /// progress: the core loop then polls rather than waits, so the capture advances.
    pub(super) fn capturing(&self) -> bool {
        self.snap.as_ref().is_some_and(|s| s.capture.is_some())
            || self.member.as_ref().is_some_and(|m| m.capture.is_some())
    }

    /// Counts an applied txn; starts a snapshot when one is due.
    pub(super) fn snapshot_due(&mut self) {
        if let Some(s) = self.snap.as_mut() {
            s.since += 1;
            if s.since >= s.due && s.capture.is_none() {
                self.start_snapshot();
            }
        }
    }

    /// Starts a snapshot unless one is being captured. Returns the zxid it starts at.
    pub(crate) fn start_snapshot(&mut self) -> Option<i64> {
        let s = self.snap.as_mut()?;
        if s.capture.is_some() {
            return None;
        }
        let start = self.state.zxid();
        let mut buf = chunk_buffer(&s.spare);
        let sessions = self.state.sessions().iter().map(|(&id, &t)| (id, t));
        let capture = Capture::begin(&self.state.tree, sessions, start, &mut buf);
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
    pub(super) fn snapshot_step(&mut self) {
        let Some(s) = self.snap.as_mut() else { return };
        let Some((capture, buf)) = s.capture.as_mut() else {
            return;
        };
        let tree = &self.state.tree;
        let done = capture.step(tree, SNAPSHOT_STEP, buf);
        if buf.len() >= SNAPSHOT_BLOCK || (done && !buf.is_empty()) {
            let fresh = chunk_buffer(&s.spare);
            let block = std::mem::replace(buf, fresh);
            let _ = s.tx.send(SnapMsg::Block(block));
        }
        if done {
            let end = self.state.zxid();
            let trailer = capture.trailer(end, tree.digest());
            let nodes = trailer.node_count;
            let capture_ms = s.started.elapsed().as_millis() as u64;
            crate::metrics::shared().snapshot_captured(capture_ms);
            let _ = s.tx.send(SnapMsg::Finish(trailer));
            tracing::info!(
                end = format_args!("{end:#x}"),
                nodes,
                capture_ms,
                "snapshot captured"
            );
            s.capture = None;
        }
    }
}
