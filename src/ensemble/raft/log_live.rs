//! What the log store shares with its thread (log_thread.rs), its readers (log_reader.rs)
//! and its open (log_open.rs): the live entries and the log's counters. A leaf of the log's
//! files, so none of them names another to reach these.

use super::types::{NodeId, TypeConfig};
use openraft::{AnyError, Entry, LogId};
use palisade_wal::RecordPos;
use std::collections::BTreeMap;
use std::io;

/// An entry on its way to the log thread: index, log id, postcard bytes.
pub(super) type Encoded = (i64, LogId<NodeId>, Vec<u8>);

/// A live entry: held until its batch is durable, then only its place in the log.
pub(super) enum Slot {
    Mem(Entry<TypeConfig>),
    Disk(LogId<NodeId>, RecordPos),
}

impl Slot {
    pub(super) fn log_id(&self) -> LogId<NodeId> {
        match self {
            Slot::Mem(e) => e.log_id,
            Slot::Disk(id, _) => *id,
        }
    }
}

/// The live entries, from the one after the purge point to the last appended.
#[derive(Default)]
pub(super) struct Live {
    pub(super) purged: Option<LogId<NodeId>>,
    /// The last committed log id recorded in the log (openraft's `save_committed`).
    pub(super) committed: Option<LogId<NodeId>>,
    pub(super) entries: BTreeMap<u64, Slot>,
}

impl Live {
    /// The last entry's log id, else the purge point: where the log ends.
    pub(super) fn last_log_id(&self) -> Option<LogId<NodeId>> {
        self.entries
            .last_key_value()
            .map(|(_, s)| s.log_id())
            .or(self.purged)
    }
}

/// What the log thread reports, for tests and metrics.
#[derive(Default)]
pub struct LogCounters {
    /// fdatasyncs issued on segments.
    pub fsyncs: std::sync::atomic::AtomicU64,
    /// Group commits: batches of appends written together.
    pub batches: std::sync::atomic::AtomicU64,
    /// Of those, the ones written and synced by the caller (the Raft thread), the log thread
    /// being idle.
    pub inline: std::sync::atomic::AtomicU64,
}

pub(super) fn io_err(e: impl std::error::Error + 'static) -> AnyError {
    AnyError::new(&e)
}

pub(super) fn bad_data(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}
