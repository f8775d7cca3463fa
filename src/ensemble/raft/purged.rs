//! The log id up to which the Raft log was purged (openraft's `last_purged_log_id`), in a
//! small file beside the log, `raft-purged`, replaced atomically before any segment is
//! deleted: after a restart, entries at or below it are gone even if their segment is not,
//! and the log's start (and the term of the entry before it, which replication needs as its
//! `prev_log_id`) is known even when a snapshot replaced the whole log.
//!
//! Layout (little-endian, 36 bytes): magic "PLPG", format 1, index u64, term u64, leader
//! node id u64, then a crc32 of the 32 bytes before it.

use super::sealed::{words, words_of, Sealed, SealedFile};
use super::types::NodeId;
use openraft::{CommittedLeaderId, LogId};
use std::io;
use std::path::Path;

/// The saved purge point; `read` is `None` when the log was never purged. A damaged file is
/// an error: guessing where the log starts could serve a purged entry or lose a live one.
pub type PurgedFile = SealedFile<LogId<NodeId>>;

impl Sealed for LogId<NodeId> {
    const MAGIC: &'static [u8; 4] = b"PLPG";
    const FILE: &'static str = "raft-purged";
    const CONSEQUENCE: &'static str = "where the Raft log starts is unknown";

    fn payload(&self) -> [u8; 24] {
        let leader = self.leader_id;
        words([self.index, leader.term, leader.node_id])
    }

    fn from_payload(_: &Path, p: &[u8; 24]) -> io::Result<Self> {
        let [index, term, node] = words_of(p);
        Ok(LogId::new(CommittedLeaderId::new(term, node), index))
    }
}
