//! An in-memory Raft log (openraft storage-v2) whose durability is modelled, for the
//! deterministic-time schedules: no thread and no file, so tokio's paused clock never runs
//! ahead of an fsync it cannot see.
//!
//! A member's [`Disk`] is what survives its crashes. Writes reach it in order, as the WAL
//! log thread writes them (`log_store.rs`): `append` is readable at once and durable at the
//! next flush, which a task does after a short random delay (group commit), calling the
//! appends' callbacks then; `save_committed` rides along with the next flush; `truncate` and
//! `purge` flush everything queued before them and return once durable; `save_vote` is
//! durable before it returns, on its own (the real store's vote file). [`Disk::crash`] ends
//! the store that has the disk now: what it had not flushed is lost, and nothing it does
//! afterwards reaches the disk.

use super::ledger::Ledger;
use crate::ensemble::raft::types::{Node, NodeId, TypeConfig};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, SnapshotMeta, StorageError, Vote};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Duration;

/// What a member keeps across crashes.
#[derive(Default)]
pub struct Disk {
    pub vote: Option<Vote<NodeId>>,
    pub committed: Option<LogId<NodeId>>,
    pub purged: Option<LogId<NodeId>>,
    pub entries: BTreeMap<u64, Entry<TypeConfig>>,
    /// The state machine's snapshot (`mem_sm.rs` saves it).
    pub snapshot: Option<(SnapshotMeta<NodeId, Node>, Vec<u8>)>,
    /// Bumped by each crash: a store or state machine of an earlier life writes nothing.
    pub life: u64,
    /// Entries that were appended but not flushed when a crash came (for the figures).
    pub lost_unflushed: u64,
}

pub type SharedDisk = Arc<Mutex<Disk>>;

impl Disk {
    /// The process dies: what is not flushed yet never will be.
    pub fn crash(disk: &SharedDisk) {
        disk.lock().life += 1;
    }
}

/// A write not yet on the disk.
enum Op {
    Append(Vec<Entry<TypeConfig>>, LogFlushed<TypeConfig>),
    Committed(LogId<NodeId>),
}

/// What the store shows (every write, flushed or not) and what it has still to flush.
struct View {
    purged: Option<LogId<NodeId>>,
    committed: Option<LogId<NodeId>>,
    entries: BTreeMap<u64, Entry<TypeConfig>>,
    queued: Vec<Op>,
    flush_due: bool,
}

struct Inner {
    view: Mutex<View>,
    disk: SharedDisk,
    life: u64,
    /// The longest a flush waits, in ms (0: appends are durable at once).
    max_delay_ms: u64,
    ledger: Option<Arc<Ledger>>,
    me: NodeId,
}

/// The store; clones share it (the log reader is a clone).
#[derive(Clone)]
pub struct MemLog {
    inner: Arc<Inner>,
}

impl MemLog {
    /// The log on `disk` as a restart finds it.
    pub fn open(
        me: NodeId,
        disk: SharedDisk,
        max_delay_ms: u64,
        ledger: Option<Arc<Ledger>>,
    ) -> MemLog {
        let (view, life) = {
            let d = disk.lock();
            let view = View {
                purged: d.purged,
                committed: d.committed,
                entries: d.entries.clone(),
                queued: Vec::new(),
                flush_due: false,
            };
            (view, d.life)
        };
        MemLog {
            inner: Arc::new(Inner {
                view: Mutex::new(view),
                disk,
                life,
                max_delay_ms,
                ledger,
                me,
            }),
        }
    }

    /// Writes everything queued to the disk, in order, then calls the appends' callbacks. A
    /// store whose process crashed writes nothing and calls nothing (its Raft is going away).
    fn flush(&self) {
        let queued = {
            let mut v = self.inner.view.lock();
            v.flush_due = false;
            std::mem::take(&mut v.queued)
        };
        let mut done = Vec::new();
        {
            let mut d = self.inner.disk.lock();
            let alive = d.life == self.inner.life;
            for op in queued {
                match op {
                    Op::Append(entries, cb) => {
                        if alive {
                            for e in entries {
                                d.entries.insert(e.log_id.index, e);
                            }
                            done.push(cb);
                        } else {
                            d.lost_unflushed += entries.len() as u64;
                        }
                    }
                    Op::Committed(id) if alive => d.committed = Some(id),
                    Op::Committed(_) => {}
                }
            }
        }
        for cb in done {
            cb.log_io_completed(Ok(()));
        }
    }

    /// Runs `f` on the disk if this store's process is still alive.
    fn on_disk(&self, f: impl FnOnce(&mut Disk)) {
        let mut d = self.inner.disk.lock();
        if d.life == self.inner.life {
            f(&mut d);
        }
    }
}

impl RaftLogReader<TypeConfig> for MemLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let v = self.inner.view.lock();
        Ok(v.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for MemLog {
    type LogReader = MemLog;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let v = self.inner.view.lock();
        let last = v.entries.last_key_value().map(|(_, e)| e.log_id);
        Ok(LogState {
            last_purged_log_id: v.purged,
            last_log_id: last.or(v.purged),
        })
    }

    async fn get_log_reader(&mut self) -> MemLog {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        if let Some(l) = &self.inner.ledger {
            l.vote(self.inner.me, vote);
        }
        self.on_disk(|d| d.vote = Some(*vote));
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.inner.disk.lock().vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let Some(id) = committed else { return Ok(()) };
        let mut v = self.inner.view.lock();
        v.committed = Some(id);
        v.queued.push(Op::Committed(id));
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.inner.view.lock().committed)
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
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        if let Some(l) = &self.inner.ledger {
            l.appended(self.inner.me, &entries);
        }
        let start_flush = {
            let mut v = self.inner.view.lock();
            for e in &entries {
                v.entries.insert(e.log_id.index, e.clone());
            }
            v.queued.push(Op::Append(entries, callback));
            !std::mem::replace(&mut v.flush_due, true)
        };
        if start_flush {
            let delay = match self.inner.max_delay_ms {
                0 => 0,
                max => fastrand::u64(1..=max),
            };
            if delay == 0 {
                self.flush();
            } else {
                let me = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    me.flush();
                });
            }
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.view.lock().entries.split_off(&log_id.index);
        self.flush();
        self.on_disk(|d| {
            d.entries.split_off(&log_id.index);
        });
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        {
            let mut v = self.inner.view.lock();
            if v.purged.is_some_and(|p| p.index >= log_id.index) {
                return Ok(());
            }
            v.purged = Some(log_id);
            v.entries = v.entries.split_off(&(log_id.index + 1));
        }
        self.flush();
        self.on_disk(|d| {
            d.purged = Some(log_id);
            d.entries = d.entries.split_off(&(log_id.index + 1));
        });
        Ok(())
    }
}
