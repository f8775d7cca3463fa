//! The log stage: a writer thread that group-commits prepped txns and reports when they are
//! durable. Every batch waiting when the thread wakes is appended, then one sync covers them
//! all. The sink is the WAL (palisade-wal) in the server; tests use `MemorySink`.

use crate::spin;
use bytes::Bytes;
use palisade_wal::RecordKind;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// One record for the log: a txn (zxid = its zxid) or a meta record (a tree digest).
pub struct LogRecord {
    pub kind: RecordKind,
    pub zxid: i64,
    pub bytes: Bytes,
}

pub trait LogSink: Send + 'static {
    /// Buffers one record.
    fn append(&mut self, rec: &LogRecord) -> io::Result<()>;
    /// Makes every appended record durable.
    fn sync(&mut self) -> io::Result<()>;
    /// The whole segments holding only txns before `keep_from`, oldest first, for the purge
    /// thread to delete. No default: a wrapper that forgot to pass it on would silently keep
    /// the log forever.
    fn purgeable(&mut self, keep_from: i64) -> io::Result<Vec<PathBuf>>;
}

/// Keeps nothing: every txn is "durable" at once (for tests of the core).
pub struct MemorySink;

impl LogSink for MemorySink {
    fn append(&mut self, _rec: &LogRecord) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn purgeable(&mut self, _keep_from: i64) -> io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

impl LogSink for palisade_wal::Wal {
    fn append(&mut self, rec: &LogRecord) -> io::Result<()> {
        palisade_wal::Wal::append(self, rec.kind, rec.zxid, &rec.bytes).map_err(io::Error::other)
    }
    fn sync(&mut self) -> io::Result<()> {
        palisade_wal::Wal::sync(self).map_err(io::Error::other)
    }
    fn purgeable(&mut self, keep_from: i64) -> io::Result<Vec<PathBuf>> {
        palisade_wal::Wal::purgeable(self, keep_from).map_err(io::Error::other)
    }
}

/// Records handed to the log in zxid order.
pub struct Batch {
    pub records: Vec<LogRecord>,
}

/// What the log thread is sent: batches from the core, and purge points from the snapshot
/// thread (the log's owner deletes its own segments; nobody else touches them).
pub enum LogMsg {
    Batch(Batch),
    /// Every retained snapshot starts at or after `keep_from - 1`: segments holding only
    /// txns before `keep_from` are no longer needed by any recovery point.
    Purge {
        keep_from: i64,
    },
}

/// Starts the writer: every batch waiting is appended, then one sync, then `durable(last
/// txn zxid)`. After a failed write or sync it reports the error and stops: nothing later
/// may be acknowledged, and a retried fsync could lie (the page cache may have dropped the
/// data), so the server stops and recovery decides what survived.
///
/// Between batches it polls for up to `spin_wait` before it parks, while batches come often
/// (spin.rs).
///
/// Segments a purge no longer needs are deleted by `remove`, on a thread of its own: at 10M
/// znodes a purge unlinked 22 segments (1.4 GB) in 445 ms, and no write was acknowledged
/// meanwhile while the log thread did it.
pub fn spawn_writer(
    mut sink: Box<dyn LogSink>,
    spin_wait: Duration,
    durable: impl Fn(Result<i64, io::Error>) + Send + 'static,
    remove: impl FnMut(&[PathBuf]) -> io::Result<()> + Send + 'static,
) -> io::Result<mpsc::Sender<LogMsg>> {
    let doomed = spawn_purger(remove)?;
    let (tx, rx) = mpsc::channel::<LogMsg>();
    std::thread::Builder::new()
        .name("palisade-log".into())
        .spawn(move || {
            let mut spinner = spin::Spinner::lenient(spin_wait);
            while let Some(first) = spinner.recv(&rx) {
                let turn = append_waiting(&mut *sink, first, &rx);
                if turn.appended {
                    crate::durability::crashpoint::hit("log.before_sync");
                    match turn.result.and_then(|_| sink.sync()) {
                        Ok(()) => {
                            crate::durability::crashpoint::hit("log.before_ack");
                            if let Some(z) = turn.last_txn {
                                durable(Ok(z));
                            }
                        }
                        Err(e) => {
                            durable(Err(e));
                            return;
                        }
                    }
                }
                // After the sync: a purge never races the batch it shares a wake-up with.
                if let Some(keep_from) = turn.purge {
                    purge(&mut *sink, keep_from, &doomed);
                }
            }
        })?;
    Ok(tx)
}

/// The thread that deletes the segments a purge lists, so that the log thread never waits on
/// the file system's unlinks.
fn spawn_purger(
    mut remove: impl FnMut(&[PathBuf]) -> io::Result<()> + Send + 'static,
) -> io::Result<mpsc::Sender<Vec<PathBuf>>> {
    let (doomed_tx, doomed) = mpsc::channel::<Vec<PathBuf>>();
    std::thread::Builder::new()
        .name("palisade-purge".into())
        .spawn(move || {
            // In order: each list is oldest first, and lists come in purge order.
            for paths in doomed {
                if let Err(e) = remove(&paths) {
                    tracing::warn!(error = %e, "could not delete old log segments");
                }
            }
        })?;
    Ok(doomed_tx)
}

/// What one wake-up of the log thread did: appended (the first error kept, what follows it
/// not written), the last txn among them, a purge asked for.
struct Turn {
    appended: bool,
    result: io::Result<()>,
    last_txn: Option<i64>,
    purge: Option<i64>,
}

/// Appends `first` and every batch queued behind it (group commit), unsynced.
fn append_waiting(sink: &mut dyn LogSink, first: LogMsg, rx: &mpsc::Receiver<LogMsg>) -> Turn {
    let mut turn = Turn {
        appended: false,
        result: Ok(()),
        last_txn: None,
        purge: None,
    };
    for msg in std::iter::once(first).chain(rx.try_iter()) {
        let batch = match msg {
            LogMsg::Batch(b) => b,
            LogMsg::Purge { keep_from } => {
                turn.purge = Some(keep_from);
                continue;
            }
        };
        turn.appended = true;
        for rec in &batch.records {
            if turn.result.is_ok() {
                turn.result = sink.append(rec);
            }
            if rec.kind == RecordKind::Txn {
                turn.last_txn = Some(rec.zxid);
            }
        }
    }
    turn
}

/// Lists the segments no retained snapshot needs (from `keep_from`) and hands them to the
/// purge thread.
fn purge(sink: &mut dyn LogSink, keep_from: i64, doomed: &mpsc::Sender<Vec<PathBuf>>) {
    match sink.purgeable(keep_from) {
        Ok(paths) if paths.is_empty() => {}
        Ok(paths) => {
            tracing::info!(
                segments = paths.len(),
                keep_from = format_args!("{keep_from:#x}"),
                "purging log segments no retained snapshot needs"
            );
            let _ = doomed.send(paths);
        }
        Err(e) => tracing::warn!(error = %e, "could not purge old log segments"),
    }
}

#[cfg(test)]
#[path = "log_test.rs"]
mod tests;
