//! When a fuzzy snapshot is taken, and the capture in progress: it starts every snapCount/2
//! to snapCount applied txns (or on `csnp`) and advances a bounded step per turn of the core
//! loop, handing finished blocks to the snapshot thread. The core never blocks on that
//! thread: a block its queue cannot take is held, and the capture waits until it can.

use super::Core;
use crate::durability::capture::Capture;
use crate::durability::snapshotter::{SnapLink, SnapMsg};
use crate::limits::{SNAPSHOT_BLOCK, SNAPSHOT_STEP};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Snapper {
    tx: std_mpsc::SyncSender<SnapMsg>,
    /// Whether the writer is still on the previous snapshot's file (see snapshotter.rs).
    pub(super) writing: Arc<AtomicBool>,
    /// The start zxid of the last snapshot written whole (snapshotter.rs).
    pub(super) written: Arc<std::sync::atomic::AtomicI64>,
    /// Messages the writer's full queue did not take yet, in order (at most two: the capture
    /// takes no step while any is held).
    held: VecDeque<SnapMsg>,
    /// `csnp` asked for a snapshot while one was being captured or written: it starts as
    /// soon as the writer is free.
    requested: bool,
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

    /// Whether a snapshot is being captured, queued or written.
    pub(super) fn busy(&self) -> bool {
        self.capture.is_some()
            || self.requested
            || !self.held.is_empty()
            || self.writing.load(Ordering::Acquire)
    }

    /// Queues `msg` to the writer behind anything held, without blocking.
    pub(super) fn offer(&mut self, msg: SnapMsg) {
        self.held.push_back(msg);
        self.flush_held();
    }

    /// Hands held messages to the writer while its queue takes them. Returns whether none is
    /// left held.
    pub(super) fn flush_held(&mut self) -> bool {
        while let Some(msg) = self.held.pop_front() {
            match self.tx.try_send(msg) {
                Ok(()) => {}
                Err(std_mpsc::TrySendError::Full(msg)) => {
                    self.held.push_front(msg);
                    return false;
                }
                Err(std_mpsc::TrySendError::Disconnected(_)) => {
                    tracing::error!("snapshot writer is gone; snapshot abandoned");
                    self.held.clear();
                    self.capture = None;
                }
            }
        }
        true
    }
}

impl Core {
    /// Turns on fuzzy snapshots, written by the thread behind `link`, which hands written
    /// chunk buffers back through `spare`.
    pub fn enable_snapshots(
        &mut self,
        link: SnapLink,
        spare: std_mpsc::Receiver<Vec<u8>>,
        snap_count: u64,
    ) {
        let mut s = Snapper {
            tx: link.tx,
            writing: link.writing,
            written: link.written,
            held: VecDeque::new(),
            requested: false,
            spare,
            count: snap_count.max(2),
            due: 0,
            since: 0,
            rng: fastrand::Rng::with_seed(self.rng.u64(..)),
            capture: None,
            started: self.now.mono,
        };
        s.due = s.next_due();
        self.snap = Some(s);
    }

    /// Whether a capture (a snapshot file's, an ensemble member's Raft snapshot, a backup) is in
    /// progress: the core loop then polls rather than waits, so the capture advances.
    pub(super) fn capturing(&self) -> bool {
        self.snap
            .as_ref()
            .is_some_and(|s| s.capture.is_some() || s.requested)
            || self.role.capturing()
            || self.backup.is_some()
            || self.restoring.is_some()
    }

    /// Whether the capture (or a requested snapshot) is waiting for the snapshot writer: the
    /// core loop then yields its CPU between polls (the writer needs it).
    pub(super) fn snapshot_waiting(&self) -> bool {
        self.snap
            .as_ref()
            .is_some_and(|s| !s.held.is_empty() || (s.requested && s.capture.is_none()))
    }

    /// `csnp`: a snapshot now, or as soon as the one being captured or written is finished.
    /// Returns the zxid the snapshot starts at, or at least; `None` without snapshots.
    pub(crate) fn request_snapshot(&mut self) -> Option<i64> {
        let s = self.snap.as_mut()?;
        if s.capture.is_some() || s.writing.load(Ordering::Acquire) {
            s.requested = true;
            return Some(self.state.zxid());
        }
        self.start_snapshot()
    }

    /// Counts an applied txn; starts a snapshot when one is due (once the previous one's
    /// file is finished: until then it stays due).
    pub(super) fn snapshot_due(&mut self) {
        if let Some(s) = self.snap.as_mut() {
            s.since += 1;
            if s.since >= s.due && s.capture.is_none() {
                self.start_snapshot();
            }
        }
    }

    /// Starts a snapshot unless one is being captured or its file is still being written.
    /// Returns the zxid it starts at.
    pub(crate) fn start_snapshot(&mut self) -> Option<i64> {
        let s = self.snap.as_mut()?;
        if s.capture.is_some() || s.writing.load(Ordering::Acquire) {
            return None;
        }
        let start = self.state.zxid();
        let mut buf = chunk_buffer(&s.spare);
        let sessions = self.state.sessions().iter().map(|(&id, &t)| (id, t));
        let capture = Capture::begin(&self.state.tree, sessions, start, &mut buf);
        s.writing.store(true, Ordering::Release);
        s.capture = Some((capture, buf));
        s.offer(SnapMsg::Begin { start_zxid: start });
        // A writer found gone has abandoned the capture.
        s.capture.as_ref()?;
        s.since = 0;
        s.due = s.next_due();
        s.started = self.now.mono;
        tracing::info!(zxid = format_args!("{start:#x}"), "snapshot started");
        Some(start)
    }

    /// One turn of the capture in progress, if any; starts a requested one once it can.
    pub(super) fn snapshot_step(&mut self) {
        let Some(s) = self.snap.as_mut() else { return };
        if s.requested && s.capture.is_none() && !s.writing.load(Ordering::Acquire) {
            s.requested = false;
            self.start_snapshot();
            return;
        }
        if !s.flush_held() {
            return;
        }
        let Some((capture, buf)) = s.capture.as_mut() else {
            return;
        };
        let tree = &self.state.tree;
        let done = capture.step(tree, SNAPSHOT_STEP, buf);
        let block = (buf.len() >= SNAPSHOT_BLOCK || (done && !buf.is_empty()))
            .then(|| std::mem::replace(buf, chunk_buffer(&s.spare)));
        if done {
            let end = self.state.zxid();
            let trailer = capture.trailer(end, tree.digest());
            let nodes = trailer.node_count;
            let capture_ms = self.now.since(s.started).as_millis() as u64;
            crate::metrics::shared().snapshot_captured(capture_ms);
            tracing::info!(
                end = format_args!("{end:#x}"),
                nodes,
                capture_ms,
                "snapshot captured"
            );
            s.capture = None;
            if let Some(block) = block {
                s.offer(SnapMsg::Block(block));
            }
            s.offer(SnapMsg::Finish(trailer));
        } else if let Some(block) = block {
            s.offer(SnapMsg::Block(block));
        }
    }
}
