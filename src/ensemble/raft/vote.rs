//! The member's Raft vote, which must be durable before the vote is answered (openraft's
//! `save_vote`): one small file beside the log, `raft-vote`, replaced atomically (write a
//! temporary file, fsync it, rename it over the old one, fsync the directory), so a crash
//! leaves either the old vote or the new one — never a vote that went backwards or half of one.
//!
//! Layout (little-endian, 36 bytes): magic "PLVT", format 1, term u64, node id u64, committed
//! u8 (0/1), 7 reserved zero bytes, then a crc32 of the 32 bytes before it.

use super::sealed::{words, words_of, Sealed, SealedFile};
use super::types::{NodeId, TypeConfig};
use openraft::storage::RaftLogStorage;
use openraft::{StorageError, Vote};
use std::io;
use std::path::Path;

/// The saved vote; `read` is `None` when none was ever saved. A damaged file is an error:
/// answering votes without knowing our own could elect two leaders in one term.
pub type VoteFile = SealedFile<Vote<NodeId>>;

impl Sealed for Vote<NodeId> {
    const MAGIC: &'static [u8; 4] = b"PLVT";
    const FILE: &'static str = "raft-vote";
    const CONSEQUENCE: &'static str = "the vote cannot be trusted";

    /// The committed flag is the third word, 0 or 1: one byte and seven reserved zero bytes.
    fn payload(&self) -> [u8; 24] {
        let leader = self.leader_id();
        words([leader.term, leader.node_id, u64::from(self.is_committed())])
    }

    fn from_payload(path: &Path, p: &[u8; 24]) -> io::Result<Self> {
        let [term, node, committed] = words_of(p);
        // A vote no member can hold: saved from a forged vote request by a build that took any
        // term (openraft then panicked at every start adding one to it).
        if term > crate::limits::PEER_MAX_TERM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: holds a vote of term {term}, past the largest a member takes ({}); it \
                     cannot have come from a member of this ensemble. This member's log and \
                     snapshots are intact: move the file aside and start it again while the \
                     other members run (docs/design/ENSEMBLE.md, \"A vote file that cannot be used\")",
                    path.display(),
                    crate::limits::PEER_MAX_TERM
                ),
            ));
        }
        match committed {
            0 => Ok(Vote::new(term, node)),
            1 => Ok(Vote::new_committed(term, node)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: reserved bytes set; the vote cannot be trusted, refusing to start",
                    path.display()
                ),
            )),
        }
    }
}

/// Before a member's Raft starts: a saved vote that is this member's own committed one (it was
/// the leader when it stopped) is saved again uncommitted. openraft 0.9 would otherwise restore
/// it as the leader of that term at once (`Engine::startup`), with the log it finds; a crash
/// that lost entries it had appended, and already sent to followers, then has it append other
/// entries under the same log ids, and a follower holding an old one takes the new ones after
/// it: log matching broken (found by the paused-clock schedules, `sim/`, seed 613566210794 over
/// 3 members). Uncommitted, it must win an election (a new term) to lead again. The term stays:
/// a candidacy for the next one would outrank a leader the others elected in that term with a
/// lower node id (openraft orders leaders of one term by node id), and the member coming back
/// would unseat it (tests/ensemble test_failover: "the leader changed when the old one came
/// back").
pub async fn step_down_on_restart<S: RaftLogStorage<TypeConfig>>(
    log: &mut S,
    me: NodeId,
) -> Result<(), StorageError<NodeId>> {
    if let Some(v) = log.read_vote().await? {
        if v.is_committed() && v.leader_id().node_id == me {
            log.save_vote(&Vote::new(v.leader_id().term, me)).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term-overflow attack saved a vote of term 2^64-1; every start then panicked.
    #[test]
    fn a_vote_of_a_term_no_member_can_hold_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let f = VoteFile::new(d.path());
        f.save(&Vote::new(u64::MAX, 1)).unwrap();
        let e = f.read().unwrap_err().to_string();
        assert!(
            e.contains("raft-vote") && e.contains("past the largest"),
            "{e}"
        );
        f.save(&Vote::new(crate::limits::PEER_MAX_TERM, 1)).unwrap();
        assert!(f.read().is_ok());
    }
}
