//! A restarted member's vote: its own committed vote (it led when it stopped) is saved again
//! uncommitted before its Raft starts. The vote's file is `sealed.rs`'s `raft-vote`.

use super::types::{NodeId, TypeConfig};
use openraft::storage::RaftLogStorage;
use openraft::{StorageError, Vote};

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
