//! The snapshot writer thread: receives the chunks the core captures and writes them as a
//! snapshot file; when one is complete it keeps the newest `retain` snapshots and, once that
//! many valid ones exist, tells the log thread (the durability layer's owner of the WAL) from
//! which zxid on the log is still needed; the log thread deletes the segments before it. A
//! failed snapshot is logged, not fatal: the log still holds everything. It sends nothing
//! back to the core, and the core never blocks on it: when this thread's queue is full the
//! capture waits a turn (requests go on), and a new capture starts only once `writing` says
//! the previous file is finished (ZooKeeper likewise skips a snapshot while one is written).
//! The log thread's channel is unbounded.

use crate::durability::log::LogMsg;
use palisade_snapshot::{SnapshotWriter, Trailer};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

pub enum SnapMsg {
    Begin { start_zxid: i64 },
    Block(Vec<u8>),
    Finish(Trailer),
}

pub struct SnapDirs {
    pub snap_dir: PathBuf,
    pub retain: usize,
    /// The data dir's identity, carried in every snapshot header.
    pub identity: u64,
    /// The log thread, which purges the segments no retained snapshot needs.
    pub log: mpsc::Sender<LogMsg>,
}

/// Chunks queued to the writer at most (src/limits.rs).
use crate::limits::SNAPSHOT_QUEUE as QUEUE;

/// The core's end of the writer thread.
pub struct SnapLink {
    pub tx: mpsc::SyncSender<SnapMsg>,
    /// Set by the core when it begins a snapshot, cleared here once that snapshot's file is
    /// finished (written or failed).
    pub writing: Arc<AtomicBool>,
    /// The start zxid of the last snapshot whose file was written whole, stored before
    /// `writing` is cleared (a restore waits for its own: core/restore.rs).
    pub written: Arc<AtomicI64>,
}

/// Starts the thread. Written chunks go back through `recycle`, so the capture reuses warm
/// buffers instead of faulting in fresh memory for every block.
pub fn spawn(dirs: SnapDirs, recycle: mpsc::Sender<Vec<u8>>) -> std::io::Result<SnapLink> {
    let (tx, rx) = mpsc::sync_channel::<SnapMsg>(QUEUE);
    let writing = Arc::new(AtomicBool::new(false));
    let done = writing.clone();
    let written = Arc::new(AtomicI64::new(-1));
    let written_here = written.clone();
    std::thread::Builder::new()
        .name("palisade-snap".into())
        .spawn(move || {
            let mut current: Option<(i64, Instant, Result<SnapshotWriter, String>)> = None;
            // Snapshots this thread wrote (validated block by block as written) or found
            // valid: retention does not read them again.
            let mut valid = HashSet::new();
            // A closed channel drops `current`: an unfinished writer leaves only its .tmp
            // file, which the next start removes.
            while let Ok(msg) = rx.recv() {
                match msg {
                    SnapMsg::Begin { start_zxid } => {
                        if let Some((_, _, Ok(w))) = current.take() {
                            w.abort();
                        }
                        let w = SnapshotWriter::create(&dirs.snap_dir, start_zxid, dirs.identity)
                            .map_err(|e| e.to_string());
                        current = Some((start_zxid, Instant::now(), w));
                    }
                    SnapMsg::Block(mut b) => {
                        if let Some((_, _, w)) = current.as_mut() {
                            if let Ok(writer) = w {
                                if let Err(e) = writer.write_block(&b) {
                                    *w = Err(e.to_string());
                                }
                                crate::durability::crashpoint::hit("snapshot.mid");
                            }
                        }
                        b.clear();
                        let _ = recycle.send(b);
                    }
                    SnapMsg::Finish(trailer) => {
                        let Some((start_zxid, t0, w)) = current.take() else {
                            done.store(false, Ordering::Release);
                            continue;
                        };
                        match w.and_then(|w| w.finish(trailer).map_err(|e| e.to_string())) {
                            Ok(path) => {
                                // Begin to durable file: what a snapshot costs.
                                let ms = t0.elapsed().as_millis() as u64;
                                crate::metrics::shared().snapshot_written(ms);
                                crate::durability::crashpoint::hit("snapshot.before_purge");
                                valid.insert(start_zxid);
                                written_here.store(start_zxid, Ordering::Release);
                                let keep_from = retain(&dirs, &mut valid);
                                tracing::info!(
                                    path = %path.display(),
                                    ms,
                                    log_needed_from = ?keep_from,
                                    "snapshot written"
                                );
                            }
                            Err(e) => tracing::warn!(
                                zxid = format_args!("{start_zxid:#x}"),
                                error = %e,
                                "snapshot failed (the log still holds every txn)"
                            ),
                        }
                        done.store(false, Ordering::Release);
                    }
                }
            }
            if let Some((_, _, Ok(w))) = current.take() {
                w.abort();
            }
        })?;
    Ok(SnapLink {
        tx,
        writing,
        written,
    })
}

/// Keeps the newest `retain` snapshots; once that many valid ones exist, asks the log thread
/// to purge the segments before the oldest one's start. Returns that purge point.
fn retain(dirs: &SnapDirs, valid: &mut HashSet<i64>) -> Option<i64> {
    let oldest = match palisade_snapshot::retain_known(&dirs.snap_dir, dirs.retain, valid) {
        Ok(Some(z)) => z,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!(error = %e, "could not purge old snapshots");
            return None;
        }
    };
    let keep_from = oldest.saturating_add(1);
    if dirs.log.send(LogMsg::Purge { keep_from }).is_err() {
        tracing::warn!("log thread is gone; no log purge");
    }
    Some(keep_from)
}

#[cfg(test)]
#[path = "snapshotter_test.rs"]
mod tests;
