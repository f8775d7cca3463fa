//! The log id up to which the Raft log was purged (openraft's `last_purged_log_id`), in a
//! small file beside the log, `raft-purged`, replaced atomically before any segment is
//! deleted: after a restart, entries at or below it are gone even if their segment is not,
//! and the log's start (and the term of the entry before it, which replication needs as its
//! `prev_log_id`) is known even when a snapshot replaced the whole log.
//!
//! Layout (little-endian, 36 bytes): magic "PLPG", format 1, index u64, term u64, leader
//! node id u64, then a crc32 of the 32 bytes before it.

use super::sealed::{u64_at, Sealed, SealedFile};
use super::types::NodeId;
use openraft::{CommittedLeaderId, LogId};
use std::io;
use std::path::Path;

pub const FILE: &str = "raft-purged";

/// The saved purge point; `read` is `None` when the log was never purged. A damaged file is
/// an error: guessing where the log starts could serve a purged entry or lose a live one.
pub type PurgedFile = SealedFile<LogId<NodeId>>;

impl Sealed for LogId<NodeId> {
    const MAGIC: &'static [u8; 4] = b"PLPG";
    const FILE: &'static str = FILE;
    const CONSEQUENCE: &'static str = "where the Raft log starts is unknown";

    fn payload(&self) -> [u8; 24] {
        let mut p = [0u8; 24];
        p[0..8].copy_from_slice(&self.index.to_le_bytes());
        p[8..16].copy_from_slice(&self.leader_id.term.to_le_bytes());
        p[16..24].copy_from_slice(&self.leader_id.node_id.to_le_bytes());
        p
    }

    fn from_payload(_: &Path, p: &[u8; 24]) -> io::Result<Self> {
        Ok(LogId::new(
            CommittedLeaderId::new(u64_at(p, 8), u64_at(p, 16)),
            u64_at(p, 0),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_points_read_back_and_damage_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = PurgedFile::new(d.path());
        assert_eq!(f.read().unwrap(), None);
        let id = LogId::new(CommittedLeaderId::new(3, 2), 41);
        f.save(&id).unwrap();
        assert_eq!(f.read().unwrap(), Some(id));
        let path = d.path().join(FILE);
        let good = std::fs::read(&path).unwrap();
        for bit in 0..good.len() * 8 {
            let mut b = good.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            std::fs::write(&path, &b).unwrap();
            assert!(f.read().is_err(), "bit {bit} flipped was accepted");
        }
        std::fs::write(&path, &good[..35]).unwrap();
        assert!(f.read().is_err());
    }
}
