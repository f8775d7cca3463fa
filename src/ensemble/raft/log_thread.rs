//! The Raft log's writer and its thread: the thread runs the log store's commands in queue
//! order, committing every append queued behind the first with one fdatasync (group commit)
//! before their callbacks run; when nothing is queued, the Raft thread may run a follower's
//! append or a committed id on the writer itself.

use super::durable::Durable;
use super::log_live::{Encoded, Live, LogCounters, Slot};
use super::types::NodeId;
use openraft::LogId;
use palisade_wal::{RecordKind, RecordPos, Wal, WalError};
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

pub(super) type Done = Box<dyn FnOnce(io::Result<()>) + Send>;

pub(super) enum Cmd {
    Append(Vec<Encoded>, Done),
    /// Entries from this index on go; the log then ends at the log id given.
    Truncate(i64, Option<LogId<NodeId>>, Done),
    /// Entries up to this index go (the log id's); all of them if the log ends there.
    Purge(i64, LogId<NodeId>, Done),
    /// A committed log id to record: buffered, made durable by the next batch's fdatasync
    /// (or at close). Losing it costs only a shorter committed prefix that a restarted member
    /// refuses to see replaced (`LogStore::truncate`).
    Committed(LogId<NodeId>),
    /// How long the thread may poll for its next command before it parks (spinWaitMicros,
    /// as the standalone log thread: a wake-up from a park costs more than a sync here).
    SpinWait(std::time::Duration),
    /// Tests: the thread waits on the receiver before taking more commands, so the test can
    /// queue several appends and see them committed together.
    #[cfg(test)]
    Hold(mpsc::Receiver<()>),
}

/// The WAL writer and what a sync updates: the durable mark, the in-memory tail, the
/// counters. The log thread runs its commands on it; so does the Raft thread itself, for an
/// append or a committed id that finds nothing queued (`LogStore::idle_writer`): a follower
/// gets its next append only after answering this one, so handing the sync to another thread
/// and back bought it nothing but two wake-ups on its commit path.
pub(super) struct Writer {
    wal: Wal,
    tail: Tail,
    counters: Arc<LogCounters>,
    live: Arc<Mutex<Live>>,
    durable: Durable,
    /// The log's directory, to notice it removed under the member.
    dir: Option<DirWatch>,
    /// A write, a sync or the directory failed: nothing written from then on counts.
    broken: bool,
}

/// Writes to files of a removed directory still succeed (the files are unlinked, not gone),
/// so a member whose data dir was removed would acknowledge appends that no restart can
/// find. The directory opened at start has no links left once it is removed: looked at
/// after a sync, at most every `RAFT_DIR_CHECK` (src/limits.rs).
pub(super) struct DirWatch {
    path: std::path::PathBuf,
    dir: std::fs::File,
    checked: std::time::Instant,
}

impl DirWatch {
    pub(super) fn open(path: &std::path::Path) -> io::Result<DirWatch> {
        Ok(DirWatch {
            path: path.to_path_buf(),
            dir: std::fs::File::open(path)?,
            checked: std::time::Instant::now(),
        })
    }

    /// An error if the directory is gone (looked at no more often than `RAFT_DIR_CHECK`).
    fn check(&mut self) -> Result<(), WalError> {
        use std::os::unix::fs::MetadataExt;
        if self.checked.elapsed() < crate::limits::RAFT_DIR_CHECK {
            return Ok(());
        }
        self.checked = std::time::Instant::now();
        let links = self.dir.metadata().map(|m| m.nlink()).unwrap_or(0);
        if links == 0 {
            return Err(WalError::Io {
                path: self.path.clone(),
                source: io::Error::new(io::ErrorKind::NotFound, "the log's directory was removed"),
            });
        }
        Ok(())
    }
}

/// The writer and the number of commands sent to the log thread and not yet finished: at
/// zero the thread is idle, and whoever takes the writer comes after all it was given.
pub(super) struct Shared {
    pub(super) writer: Mutex<Writer>,
    pub(super) queued: AtomicUsize,
}

impl Shared {
    pub(super) fn new(
        wal: Wal,
        counters: Arc<LogCounters>,
        live: Arc<Mutex<Live>>,
        durable: Durable,
        dir: Option<DirWatch>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            writer: Mutex::new(Writer {
                wal,
                tail: Tail::default(),
                counters,
                live,
                durable,
                dir,
                broken: false,
            }),
            queued: AtomicUsize::new(0),
        })
    }
}

impl Writer {
    /// Group commit: writes every batch, issues one sync for them all, then runs each
    /// batch's callback.
    pub(super) fn append(&mut self, batches: Vec<(Vec<Encoded>, Done)>) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut dones = Vec::with_capacity(batches.len());
        let mut placed: Vec<(LogId<NodeId>, RecordPos, usize)> = Vec::new();
        let mut result = Ok(());
        for (entries, done) in batches {
            if result.is_ok() {
                result = append_all(&mut self.wal, &entries, &mut placed);
            }
            dones.push(done);
        }
        let synced = std::time::Instant::now();
        let result = result.and_then(|()| self.wal.sync()).and_then(|()| {
            if self.broken {
                // Failed already (below): nothing written from now on counts.
                return Err(WalError::Io {
                    path: std::path::PathBuf::new(),
                    source: io::Error::other("the Raft log failed earlier"),
                });
            }
            self.dir.as_mut().map_or(Ok(()), DirWatch::check)
        });
        if result.is_ok() && !placed.is_empty() {
            // mntr's fsync and batch figures, as the standalone log reports them (an append
            // of no entries writes and syncs nothing, so it is not counted).
            crate::metrics::shared().log_synced(placed.len() as u64, synced.elapsed());
        }
        // Counted before the mark moves: whoever waits on the mark sees the batch counted.
        self.counters.fsyncs.store(self.wal.fsyncs(), Relaxed);
        self.counters.batches.fetch_add(1, Relaxed);
        match &result {
            Ok(()) => {
                if let Some(last) = placed.iter().map(|p| p.0).max() {
                    self.durable.advance(last);
                }
                // Durable. The newest stay in memory too: replication and the state machine
                // read them right away, and a read from a segment costs an open and a pread
                // per entry. Older ones are read from the segments from now on, unless a
                // truncation replaced them meanwhile.
                self.tail.extend(placed);
                let mut live = self.live.lock();
                for (id, pos) in self.tail.evict() {
                    if let Some(slot) = live.entries.get_mut(&id.index) {
                        if slot.log_id() == id {
                            *slot = Slot::Disk(id, pos);
                        }
                    }
                }
            }
            Err(e) => {
                // Broken from here on: every later append fails too (and the member stops:
                // fail_safe.rs `stop_on_log_failure`). Logged once.
                if !self.broken {
                    tracing::error!(error = %e, "the Raft log could not be written: this member commits nothing more");
                }
                self.durable.fail();
                self.broken = true;
            }
        }
        for done in dones {
            done(clone_result(&result));
        }
    }

    /// Entries from `from` on go; the log then ends at `last`.
    fn truncate(&mut self, from: i64, last: Option<LogId<NodeId>>) -> io::Result<()> {
        self.wal.truncate_from(from)?;
        self.durable.reset(last);
        Ok(())
    }

    /// A purge at or past the log's end (a snapshot replaced it all) empties it; otherwise
    /// whole segments below the purge point go.
    fn purge(&mut self, upto: i64, id: LogId<NodeId>) -> io::Result<()> {
        if self.wal.last_txn_zxid().is_none_or(|last| last <= upto) {
            self.wal.reset()?;
            // The log now resumes after the snapshot's last entry.
            self.durable.reset(Some(id));
            Ok(())
        } else {
            upto.checked_add(1)
                .map_or(Ok(Vec::new()), |keep| self.wal.purge_before(keep))
                .map(drop)
                .map_err(Into::into)
        }
    }

    /// Buffers a committed log id, made durable by the next sync (or at close). Losing it
    /// costs only a shorter committed prefix that a restarted member refuses to see replaced.
    pub(super) fn committed(&mut self, id: LogId<NodeId>) {
        // An empty log (all purged) has nowhere to put it, and needs none.
        if self.wal.last_txn_zxid().is_some() {
            if let Err(e) = self.wal.append(RecordKind::Meta, 0, &encode_committed(&id)) {
                tracing::warn!(error = %e, "committed log id not recorded");
            }
        }
    }

    fn close(&mut self) {
        // A committed id still buffered goes to disk.
        if let Err(e) = self.wal.sync() {
            tracing::warn!(error = %e, "the Raft log's last records were not written at close");
        }
    }
}

/// The log thread: every append queued when it wakes is written, then one sync covers them
/// all, then their callbacks run. Any other command runs alone, in queue order.
pub(super) fn log_thread(shared: Arc<Shared>, rx: mpsc::Receiver<Cmd>) {
    let mut spinner = crate::spin::Spinner::lenient(std::time::Duration::ZERO);
    let wait = |spinner: &mut crate::spin::Spinner| spinner.recv(&rx);
    let mut next = wait(&mut spinner);
    while let Some(cmd) = next.take() {
        let mut taken = 1;
        match cmd {
            Cmd::Append(entries, done) => {
                let mut batches = vec![(entries, done)];
                loop {
                    match rx.try_recv() {
                        Ok(Cmd::Append(entries, done)) => {
                            batches.push((entries, done));
                            taken += 1;
                        }
                        Ok(other) => {
                            // Counted when it runs, next turn.
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                shared.writer.lock().append(batches);
            }
            Cmd::Truncate(from, last, done) => done(shared.writer.lock().truncate(from, last)),
            Cmd::Purge(upto, id, done) => done(shared.writer.lock().purge(upto, id)),
            Cmd::Committed(id) => shared.writer.lock().committed(id),
            Cmd::SpinWait(d) => spinner = crate::spin::Spinner::lenient(d),
            #[cfg(test)]
            Cmd::Hold(release) => {
                let _ = release.recv();
            }
        }
        // After the writer is released: at zero, the Raft thread may take it.
        shared.queued.fetch_sub(taken, Ordering::SeqCst);
        if next.is_none() {
            next = wait(&mut spinner);
        }
    }
    // The store is closing.
    shared.writer.lock().close();
}

/// Raft metadata record for a committed log id: tag 1, index, term, leader node (u64 LE).
const META_COMMITTED: u8 = 1;

fn encode_committed(id: &LogId<NodeId>) -> [u8; 25] {
    let mut b = [0u8; 25];
    b[0] = META_COMMITTED;
    b[1..9].copy_from_slice(&id.index.to_le_bytes());
    b[9..17].copy_from_slice(&id.leader_id.term.to_le_bytes());
    b[17..25].copy_from_slice(&id.leader_id.node_id.to_le_bytes());
    b
}

pub(super) fn decode_committed(b: &[u8]) -> Option<LogId<NodeId>> {
    let (&[META_COMMITTED], rest) = b.split_first_chunk::<1>()? else {
        return None;
    };
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(rest.get(at..at + 8)?.try_into().ok()?))
    };
    (rest.len() == 24).then_some(())?;
    Some(LogId::new(
        openraft::CommittedLeaderId::new(word(8)?, word(16)?),
        word(0)?,
    ))
}

fn append_all(
    wal: &mut Wal,
    entries: &[Encoded],
    placed: &mut Vec<(LogId<NodeId>, RecordPos, usize)>,
) -> Result<(), WalError> {
    for (index, id, bytes) in entries {
        placed.push((
            *id,
            wal.append_at(RecordKind::Txn, *index, bytes)?,
            bytes.len(),
        ));
    }
    Ok(())
}

/// Durable entries still held in memory, oldest first.
#[derive(Default)]
struct Tail {
    entries: std::collections::VecDeque<(LogId<NodeId>, RecordPos, usize)>,
    bytes: usize,
}

impl Tail {
    fn extend(&mut self, placed: Vec<(LogId<NodeId>, RecordPos, usize)>) {
        for p in placed {
            self.bytes = self.bytes.saturating_add(p.2);
            self.entries.push_back(p);
        }
    }

    /// The entries past the bounds, to be read from the segments from now on.
    fn evict(&mut self) -> Vec<(LogId<NodeId>, RecordPos)> {
        let mut out = Vec::new();
        while self.entries.len() > crate::limits::RAFT_TAIL_ENTRIES
            || self.bytes > crate::limits::RAFT_TAIL_BYTES
        {
            let Some((id, pos, n)) = self.entries.pop_front() else {
                break;
            };
            self.bytes = self.bytes.saturating_sub(n);
            out.push((id, pos));
        }
        out
    }
}

fn clone_result(r: &Result<(), WalError>) -> io::Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}
