//! Reading the Raft log back for replication: an index in memory maps each live entry to its
//! log id and its record's place, and a read is a pread of that record, checked whole and
//! checked to be the entry expected (a truncation may have rewritten the segment, a purge
//! removed it). An entry not yet durable is served from memory.

use super::log_live::{bad_data, io_err, Live, Slot};
use super::types::{NodeId, TypeConfig};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError};
use palisade_wal::{read_raft_record, RecordPos, DEFAULT_MAX_PAYLOAD};
use parking_lot::Mutex;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::PathBuf;
use std::sync::Arc;

/// A reader over the live segments; cheap to clone, used by replication tasks.
#[derive(Clone)]
pub struct LogReader {
    pub(super) live: Arc<Mutex<Live>>,
    pub(super) dir: PathBuf,
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        enum Want {
            Have(Entry<TypeConfig>),
            Read(LogId<NodeId>, RecordPos),
        }
        // openraft applies `since..=upto` of a commit: a leader's committed id below this
        // member's makes the range reversed, which BTreeMap::range panics on. It happens only
        // when the two histories differ (see `read_committed`): an error, not a panic.
        let Some((from, to)) = index_range(&range) else {
            return Ok(Vec::new());
        };
        if let Some(to) = to.filter(|&to| from > to) {
            let e = bad_data(format!(
                "entries {from}..{to} asked for: a reversed range (a leader's committed entry \
                 is behind this member's, so their histories differ)"
            ));
            return Err(StorageIOError::read_logs(io_err(e)).into());
        }
        let live = self.live.lock();
        let range = match to {
            Some(to) => live.entries.range(from..to),
            None => live.entries.range(from..),
        };
        let wanted: Vec<Want> = range
            .map(|(_, slot)| match slot {
                Slot::Mem(e) => Want::Have(e.clone()),
                Slot::Disk(id, pos) => Want::Read(*id, *pos),
            })
            .collect();
        drop(live);
        let mut out = Vec::with_capacity(wanted.len());
        for w in wanted {
            match w {
                Want::Have(e) => out.push(e),
                Want::Read(id, pos) => match self.read(id, pos) {
                    Ok(e) => out.push(e),
                    // Truncated or purged since the index was read: the entries from here
                    // on are not there any more, which openraft allows.
                    Err(_) if !self.still_at(id, pos) => break,
                    Err(e) => {
                        return Err(StorageIOError::read_log_at_index(id.index, io_err(e)).into())
                    }
                },
            }
        }
        Ok(out)
    }
}

/// `range` as a half-open `[from, to)` of indexes (`to` None: no end); None if it holds no
/// index at all (it starts after u64::MAX).
fn index_range(range: &impl RangeBounds<u64>) -> Option<(u64, Option<u64>)> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let from = match range.start_bound() {
        Included(&s) => s,
        Excluded(&s) => s.checked_add(1)?,
        Unbounded => 0,
    };
    let to = match range.end_bound() {
        Included(&e) => e.checked_add(1),
        Excluded(&e) => Some(e),
        Unbounded => None,
    };
    Some((from, to))
}

impl LogReader {
    pub(super) fn read(&self, id: LogId<NodeId>, pos: RecordPos) -> io::Result<Entry<TypeConfig>> {
        let (_, index, bytes) = read_raft_record(&self.dir, pos, DEFAULT_MAX_PAYLOAD)?;
        let entry: Entry<TypeConfig> = postcard::from_bytes(&bytes)
            .map_err(|e| bad_data(format!("entry {id}: undecodable: {e}")))?;
        if entry.log_id != id || i64::try_from(id.index).ok() != Some(index) {
            return Err(bad_data(format!(
                "entry {id} expected at {pos:?}, found {}",
                entry.log_id
            )));
        }
        Ok(entry)
    }

    /// Whether the index still places entry `id` at `pos`.
    pub(super) fn still_at(&self, id: LogId<NodeId>, pos: RecordPos) -> bool {
        matches!(
            self.live.lock().entries.get(&id.index),
            Some(Slot::Disk(i, p)) if *i == id && *p == pos
        )
    }
}
