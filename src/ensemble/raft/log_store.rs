//! openraft's log storage (storage-v2) on the WAL: the Raft log *is* the member's `wal/` log,
//! in its Raft flavour (segment format 3), one record per entry, the record's zxid field the
//! entry's index and its payload the entry (log id and payload) in postcard.
//!
//! One log thread (`log_thread.rs`) runs the writer, as in standalone. `append` hands it
//! the encoded entries and returns; the thread takes every append queued behind it, writes
//! them all and issues one fdatasync, then calls each append's callback: group commit.
//! Truncation and purge go through the same queue, so they are ordered with the appends
//! before them, and they return once durable. The leader's own entries are reported flushed
//! when queued, so that openraft replicates them while the sync runs; the durable mark
//! (`durable.rs`) then holds back their commit and their apply until the sync is done. Any
//! other append (a follower's), and a committed id, that finds the thread idle is written by
//! the caller itself (`idle_writer`): a follower's next append comes only once this one is
//! answered, so the thread would add two wake-ups and no overlap.
//!
//! Readers (replication, `log_reader.rs`) read the live segments: an index in memory maps each live entry to
//! its log id and where its record is (segment, offset), and a read is a pread of that record,
//! checked whole and checked to be the entry expected (a truncation may have rewritten the
//! segment, a purge removed it). An entry appended but not yet written is held in memory until
//! its batch is durable (openraft may replicate an entry its leader has not flushed yet).
//!
//! The open checks every entry it reads back (`log_open.rs`). Beside the log: the vote and
//! the purge point (`sealed.rs`).

pub use super::log_reader::LogReader;

use super::durable::Durable;
use super::log_live::{bad_data, io_err, Live, LogCounters, Slot};
use super::log_thread::{log_thread, Cmd, Done, Shared, Writer};
use super::sealed::{PurgedFile, VoteFile};
use super::snapshot_floor::SnapshotFloor;
use super::types::{NodeId, TypeConfig};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError, Vote};
use palisade_wal::{Corruption, Options, Wal};
use parking_lot::Mutex;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

/// The log's committed part, as the peer handler compares an append with it.
#[derive(Clone)]
pub struct LogView(Arc<Mutex<Live>>);

impl LogView {
    /// An error naming both log ids if the leader's `prev` or `entries` differ from this log
    /// at an index it holds as committed: Raft never replaces a committed entry, so the leader
    /// and this member do not share a history (this member's data dir came from elsewhere, or
    /// a quorum forgot what it had committed).
    ///
    /// `term` is the sender's: a leader of an earlier term than the committed entry's cannot
    /// hold it (it is a stale leader, refused on its vote), and is not evidence of anything.
    pub fn check_history(
        &self,
        term: u64,
        prev: Option<LogId<NodeId>>,
        entries: impl Iterator<Item = LogId<NodeId>>,
    ) -> Result<(), String> {
        let live = self.0.lock();
        let Some(committed) = live.committed else {
            return Ok(());
        };
        if term < committed.leader_id.term {
            return Ok(());
        }
        for theirs in prev.into_iter().chain(entries) {
            if theirs.index > committed.index {
                break;
            }
            if let Some(ours) = live.entries.get(&theirs.index).map(Slot::log_id) {
                if ours != theirs {
                    return Err(format!(
                        "the leader's log conflicts with this member's committed entries (it \
                         would replace {ours} and after, and {committed} is committed here): \
                         this member's data dir does not belong to this ensemble's history; \
                         move it aside and start the member empty to join again"
                    ));
                }
            }
        }
        Ok(())
    }
}

pub struct LogStore {
    dir: PathBuf,
    live: Arc<Mutex<Live>>,
    tx: mpsc::Sender<Cmd>,
    vote: VoteFile,
    purged_file: PurgedFile,
    counters: Arc<LogCounters>,
    /// The writer, and how many commands the log thread has yet to finish.
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// How far the log is on disk (`durable.rs`).
    durable: Durable,
    /// This member's id, once it runs as one: the entries it appends as the leader of its
    /// saved vote's term are reported flushed when queued (`append`). None: never.
    me: Option<NodeId>,
    /// The vote last saved or read.
    vote_now: Option<Vote<NodeId>>,
    /// How far the saved snapshot reaches (`storage.rs`): a purge past it waits. None: a log
    /// opened alone (tests).
    floor: Option<SnapshotFloor>,
    /// A purge asked for past the floor, done once a saved snapshot reaches it.
    deferred: Option<LogId<NodeId>>,
}

/// Closing the queue ends the log thread once it has finished what was queued; waiting for
/// it releases the log directory's lock before the store is gone.
impl Drop for LogStore {
    fn drop(&mut self) {
        drop(std::mem::replace(&mut self.tx, mpsc::channel().0));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl LogStore {
    /// Opens (or creates) the Raft log in `dir`: the WAL's recovery cuts a torn tail and
    /// refuses any other damage; then every entry must decode, carry the index its record
    /// says, and follow its predecessor in term order, or the open fails.
    pub fn open(dir: &Path, segment_bytes: u64) -> io::Result<LogStore> {
        Self::open_as(dir, segment_bytes, None, None)
    }

    /// Opens the log of the data dir `identity` names (its segments carry it, so a log from
    /// another data dir is refused; None: tests, a fresh random one). `snapshot`: where the
    /// saved snapshot reaches; the log counts as purged up to there (a purge waiting for the
    /// floor when the member stopped: the entries behind it may have a gap where an installed
    /// snapshot stood in for them).
    pub fn open_as(
        dir: &Path,
        segment_bytes: u64,
        identity: Option<u64>,
        snapshot: Option<LogId<NodeId>>,
    ) -> io::Result<LogStore> {
        let opts = Options {
            segment_bytes,
            identity,
            ..Options::new(dir)
        };
        let (wal, recovered) = Wal::open_raft(opts, Corruption::Refuse)?;
        let purged_file = PurgedFile::new(dir);
        let purged = purged_file.read()?.max(snapshot);
        let live = super::log_open::live_entries(dir, &recovered, purged)?;
        drop(recovered);
        let counters = Arc::new(LogCounters::default());
        let (tx, rx) = mpsc::channel();
        // What the open found is on disk: what a sync left, or what the open synced (a kill -9
        // between the log thread's write and its sync left it in the page cache).
        let durable = Durable::new(live.last_log_id());
        let live = Arc::new(Mutex::new(live));
        let watch = super::log_thread::DirWatch::open(dir).ok();
        let shared = Shared::new(wal, counters.clone(), live.clone(), durable.clone(), watch);
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("raft-log".into())
            .spawn(move || log_thread(s, rx))?;
        Ok(LogStore {
            dir: dir.to_path_buf(),
            live,
            tx,
            vote: VoteFile::new(dir),
            purged_file,
            counters,
            shared,
            thread: Some(thread),
            durable,
            me: None,
            vote_now: None,
            floor: None,
            deferred: None,
        })
    }

    /// Purges only as far as the saved snapshot reaches.
    pub fn with_floor(mut self, floor: SnapshotFloor) -> Self {
        self.floor = Some(floor);
        self
    }

    /// The purge openraft asked for, cut to the saved snapshot; the rest waits for one.
    fn purge_point(&mut self, asked: LogId<NodeId>) -> Option<LogId<NodeId>> {
        let want = self
            .deferred
            .filter(|d| d.index > asked.index)
            .unwrap_or(asked);
        let Some(floor) = self.floor.as_ref().map(SnapshotFloor::get) else {
            return Some(want);
        };
        if floor.is_some_and(|f| f.index >= want.index) {
            self.deferred = None;
            return Some(want);
        }
        self.deferred = Some(want);
        floor
    }

    /// How far the log is on disk.
    pub fn durable(&self) -> Durable {
        self.durable.clone()
    }

    /// Runs as member `me`: as the leader, its own entries go to the followers while its
    /// sync runs (`durable.rs` says why that keeps commit on disk on a quorum).
    pub fn lead_as(&mut self, me: NodeId) {
        self.me = Some(me);
    }

    /// Whether entries of `term` are this member's own as the leader of its saved vote.
    fn leads(&self, term: u64) -> bool {
        self.vote_now.is_some_and(|v| {
            v.is_committed() && Some(v.leader_id().node_id) == self.me && v.leader_id().term == term
        })
    }

    /// The purge point: entries at or below it are gone.
    pub fn purged(&self) -> Option<LogId<NodeId>> {
        self.live.lock().purged
    }

    pub fn counters(&self) -> Arc<LogCounters> {
        self.counters.clone()
    }

    /// What the peer handler looks at before an append reaches openraft.
    pub fn view(&self) -> LogView {
        LogView(self.live.clone())
    }

    /// How long the log thread may poll for its next command before it parks
    /// (spinWaitMicros; 0, the default here, parks at once).
    pub fn set_spin_wait(&self, d: std::time::Duration) -> io::Result<()> {
        self.send(Cmd::SpinWait(d))
    }

    fn send(&self, cmd: Cmd) -> io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.shared.queued.fetch_add(1, SeqCst);
        self.tx.send(cmd).map_err(|_| {
            self.shared.queued.fetch_sub(1, SeqCst);
            io::Error::other("the Raft log thread is gone")
        })
    }

    /// The writer, if the log thread has nothing left to do: what this store sent it is all
    /// done, and as only this store sends it anything, it stays idle while the writer is held.
    fn idle_writer(&self) -> Option<parking_lot::MutexGuard<'_, Writer>> {
        (self.shared.queued.load(std::sync::atomic::Ordering::SeqCst) == 0)
            .then(|| self.shared.writer.lock())
    }

    /// Queues `cmd` and waits for the log thread to finish it.
    async fn run(&self, cmd: impl FnOnce(Done) -> Cmd) -> io::Result<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(cmd(Box::new(move |r| {
            let _ = tx.send(r);
        })))?;
        rx.await
            .map_err(|_| io::Error::other("the Raft log thread is gone"))?
    }

    #[cfg(test)]
    fn hold(&self) -> io::Result<mpsc::Sender<()>> {
        let (tx, rx) = mpsc::channel();
        self.send(Cmd::Hold(rx))?;
        Ok(tx)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        LogReader {
            live: self.live.clone(),
            dir: self.dir.clone(),
        }
        .try_get_log_entries(range)
        .await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let live = self.live.lock();
        Ok(LogState {
            last_purged_log_id: live.purged,
            last_log_id: live.last_log_id(),
        })
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let Some(id) = committed else { return Ok(()) };
        {
            let mut live = self.live.lock();
            // A committed id is one of this log's entries. One that is not (another entry at
            // its index) is a leader's whose history differs from this member's: recording
            // it would make this log claim a commit it does not hold.
            if let Some(here) = live.entries.get(&id.index).map(Slot::log_id) {
                if here != id {
                    let e = bad_data(format!(
                        "the leader's committed entry {id} is {here} in this member's log: this \
                         member's data dir does not belong to this ensemble's history; move it \
                         aside and start the member empty to join again"
                    ));
                    tracing::error!(error = %e, "refusing a committed id this log does not hold");
                    return Err(StorageIOError::write_logs(io_err(e)).into());
                }
            }
            live.committed = Some(id);
        }
        if let Some(mut writer) = self.idle_writer() {
            // Buffered only: no wake-up of the log thread for it.
            writer.committed(id);
            return Ok(());
        }
        self.send(Cmd::Committed(id))
            .map_err(|e| StorageIOError::write_logs(io_err(e)).into())
    }

    /// The committed id recorded in the log. openraft 0.9 starts from it (so a restarted
    /// member applies its log at once, before it hears a leader: read-only mode serves it),
    /// and takes every entry at or below it as the leader's without looking
    /// (`LogStateReader::has_log_id`): a member whose committed entries differ from the
    /// ensemble's (a restored copy of a data dir, or a quorum that forgot them) would keep
    /// them and append the leader's later entries on top. So the peer handler compares an
    /// append's entries and previous log id at or below this one with the log before openraft
    /// sees them, and a difference stops the member by name (`LogView::check_history`,
    /// raft/peer.rs; tests/ensemble/test_conflicting_history.py).
    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.live.lock().committed)
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader {
            live: self.live.clone(),
            dir: self.dir.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        // Three fsyncs: off the runtime's worker threads.
        let (file, vote) = (self.vote.clone(), *vote);
        tokio::task::spawn_blocking(move || file.save(&vote))
            .await
            .map_err(io::Error::other)
            .and_then(|r| r)
            .map_err(|e| StorageIOError::write_vote(io_err(e)))?;
        self.vote_now = Some(vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        let vote = self
            .vote
            .read()
            .map_err(|e| StorageIOError::read_vote(io_err(e)))?;
        self.vote_now = vote;
        Ok(vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        // After an installed snapshot is saved: its purge, before entries follow it.
        let reached = self.floor.as_ref().and_then(SnapshotFloor::get);
        if let Some(d) = self
            .deferred
            .filter(|d| reached.is_some_and(|f| f.index >= d.index))
        {
            self.purge(d).await?;
        }
        let mut encoded = Vec::new();
        let mut own = true;
        let mut live = self.live.lock();
        for entry in entries {
            own &= self.leads(entry.log_id.leader_id.term);
            let bytes = postcard::to_allocvec(&entry)
                .map_err(|e| StorageIOError::write_log_entry(entry.log_id, io_err(e)))?;
            let index = i64::try_from(entry.log_id.index)
                .map_err(|e| StorageIOError::write_log_entry(entry.log_id, io_err(e)))?;
            encoded.push((index, entry.log_id, bytes));
            live.entries.insert(entry.log_id.index, Slot::Mem(entry));
        }
        drop(live);
        if own && !encoded.is_empty() {
            // The leader's own entries: reported flushed now, so openraft replicates them
            // while the sync runs; the durable mark holds back their commit (`durable.rs`).
            // A failed sync is logged and fails the mark there.
            self.send(Cmd::Append(encoded, Box::new(|_| {})))
                .map_err(|e| StorageIOError::write_logs(io_err(e)))?;
            callback.log_io_completed(Ok(()));
            return Ok(());
        }
        let done: Done = Box::new(move |r| callback.log_io_completed(r));
        if let Some(mut writer) = self.idle_writer() {
            // A follower's append (openraft sends it the next only once this one is answered):
            // written and synced here, which spares the hand-off to the log thread and back.
            writer.append(vec![(encoded, done)]);
            self.counters
                .inline
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        self.send(Cmd::Append(encoded, done))
            .map_err(|e| StorageIOError::write_logs(io_err(e)).into())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let last = {
            let mut live = self.live.lock();
            // Raft never replaces a committed entry. A leader asking to is one whose log
            // differs from this member's committed past (this member lost its data dir, or
            // was given another's): stop, named, rather than replace what clients were told
            // was done (openraft would panic further on, again at every start).
            if let Some(c) = live.committed.filter(|c| c.index >= log_id.index) {
                let e = io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the leader's log conflicts with this member's committed entries (it \
                         would replace {log_id} and after, and {c} is committed here): this \
                         member's data dir does not belong to this ensemble's history; move \
                         it aside and start the member empty to join again"
                    ),
                );
                tracing::error!(error = %e, "refusing to replace committed entries");
                return Err(StorageIOError::write_logs(io_err(e)).into());
            }
            live.entries.split_off(&log_id.index);
            live.last_log_id()
        };
        let from = i64::try_from(log_id.index).unwrap_or(i64::MAX);
        self.run(|done| Cmd::Truncate(from, last, done))
            .await
            .map_err(|e| StorageIOError::write_logs(io_err(e)).into())
    }

    async fn purge(&mut self, asked: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let Some(log_id) = self.purge_point(asked) else {
            return Ok(());
        };
        if self
            .live
            .lock()
            .purged
            .is_some_and(|p| p.index >= log_id.index)
        {
            return Ok(());
        }
        // The purge point is durable before any segment goes (see `open`).
        self.purged_file
            .save(&log_id)
            .map_err(|e| StorageIOError::write_logs(io_err(e)))?;
        {
            let mut live = self.live.lock();
            live.purged = Some(log_id);
            let keep = live.entries.split_off(&log_id.index.saturating_add(1));
            live.entries = keep;
        }
        let upto = i64::try_from(log_id.index).unwrap_or(i64::MAX);
        self.run(|done| Cmd::Purge(upto, log_id, done))
            .await
            .map_err(|e| StorageIOError::write_logs(io_err(e)).into())
    }
}

#[cfg(test)]
#[path = "log_store_test.rs"]
mod tests;
