//! When an ensemble elects: zoo.cfg's timing mapped to Raft's, and the prompt election once a
//! silent leader's lease is over.
//!
//! openraft 0.9 has every voter refuse a candidate while the leader's lease lasts (the election
//! timeout's maximum, counted from the leader's last message), and has a follower start its own
//! election only a whole random election timeout *after* that lease. So the lease is the floor
//! of a failover, and openraft's own timer adds 0.5–1 lease on top. `prompt` removes the
//! second part: each follower looks at its own Raft state and asks for an election as soon as
//! the lease it grants is over, staggered by its rank so that two followers do not split the
//! vote. openraft's timer stays as the fallback (a rejected or split candidacy retries on it).

use super::types::{NodeId, TypeConfig};
use openraft::{Raft, ServerState, SnapshotPolicy, Vote};
use std::io;
use std::time::Duration;
use tokio::time::Instant;

/// The lease's ceiling in ms. A ZooKeeper follower notices a *killed* leader at once (its
/// connection closes) and elects in a few hundred ms whatever tickTime says; Raft notices
/// only by silence, so the silence it waits for is kept as short: a Palisade leader has no
/// garbage-collection pauses to ride out, and its heartbeats are sent by tasks that the core's
/// work does not hold up.
const LEASE_CEILING_MS: u64 = 300;

/// The shortest lease: six heartbeats of 10 ms or more.
const LEASE_FLOOR_MS: u64 = 60;

/// Raft's timing from tickTime and syncLimit (docs/ENSEMBLE.md): election timeout max (the
/// lease) syncLimit·tickTime / 2 within 60..300 ms, min half of that; heartbeat a sixth of
/// the lease, so that a lease outlasts five lost heartbeats (openraft 0.9 also gives every
/// append-entries call one heartbeat interval to answer: the peer link keeps them small,
/// network.rs `APPEND_BYTES`); install-snapshot timeout
/// initLimit·tickTime; snapshots when the core asks (`core::member`: every snapCount/2 ..
/// snapCount txns), and the log kept snapCount entries behind one.
pub fn raft_config(
    tick_time: u64,
    init_limit: u64,
    sync_limit: u64,
    snap_count: u64,
) -> io::Result<openraft::Config> {
    let tick = tick_time.max(2);
    let lease = (sync_limit.saturating_mul(tick) / 2).clamp(LEASE_FLOOR_MS, LEASE_CEILING_MS);
    openraft::Config {
        cluster_name: "palisade".into(),
        heartbeat_interval: lease / 6,
        election_timeout_min: lease / 2,
        election_timeout_max: lease,
        install_snapshot_timeout: init_limit.saturating_mul(tick).max(200),
        // The core asks for snapshots by txns applied (an entry holds a batch of them).
        snapshot_policy: SnapshotPolicy::Never,
        // A member further behind than snapCount entries (at least as many txns) is sent a
        // snapshot, as a ZooKeeper follower beyond the leader's committed-log window is
        // synced by SNAP. Not fewer: under a heavy load 1,000 batch entries are about a
        // second of writes, and a follower that fell that far behind was sent snapshot after
        // snapshot and once stopped receiving (left open in the stop-26 note).
        max_in_snapshot_log_to_keep: snap_count.max(1),
        ..Default::default()
    }
    .validate()
    .map_err(|e| io::Error::other(format!("Raft timing from tickTime/syncLimit: {e}")))
}

/// How long after the lease a voter asks for an election: the voters other than the silent
/// leader take turns one heartbeat apart in id order (the first a little after the lease, so
/// that the others' leases, which began with the same heartbeat, are over too).
pub fn stagger(me: NodeId, leader: Option<NodeId>, voters: &[NodeId], heartbeat: u64) -> Duration {
    let rank = voters
        .iter()
        .filter(|v| Some(**v) != leader && **v < me)
        .count() as u64;
    Duration::from_millis(heartbeat / 2 + rank.saturating_mul(heartbeat))
}

/// Runs on every member for as long as its Raft does, acting only while it follows as a
/// voter. It acts only for a leader that has been
/// heard since this member took its vote: a member back from a restart (or told of a newer
/// term by a reply) waits for the leader's first message, and if none comes, openraft's own
/// timer decides — a prompt candidacy there would unseat a healthy leader still reconnecting.
pub async fn prompt(raft: Raft<TypeConfig>, me: NodeId) {
    let config = raft.config().clone();
    let lease = Duration::from_millis(config.election_timeout_max);
    let heartbeat = Duration::from_millis(config.heartbeat_interval);
    // The committed vote last seen, when it was taken, and whether its leader spoke since.
    let mut known: Option<(Vote<NodeId>, Instant, bool)> = None;
    loop {
        let seen = raft
            .with_raft_state(|st| {
                let vote = st.vote_ref();
                let following = st.server_state == ServerState::Follower && vote.is_committed();
                following.then(|| (*vote, st.vote_last_modified()))
            })
            .await;
        let wait = match seen {
            Err(_) => return,
            // A leader, a candidate (openraft retries on its own timer), a learner.
            Ok(None) | Ok(Some((_, None))) => {
                known = None;
                heartbeat
            }
            Ok(Some((vote, Some(heard)))) => {
                let spoke = match known {
                    Some((v, taken, spoke)) if v == vote => spoke || heard > taken,
                    _ => false,
                };
                known = Some((
                    vote,
                    known.filter(|k| k.0 == vote).map_or(heard, |k| k.1),
                    spoke,
                ));
                let leader = vote.leader_id().voted_for();
                // The voters as they are now (a reconfig changes them).
                let voters: Vec<NodeId> = raft
                    .metrics()
                    .borrow()
                    .membership_config
                    .membership()
                    .voter_ids()
                    .collect();
                let at = heard + lease + stagger(me, leader, &voters, config.heartbeat_interval);
                let now = Instant::now();
                if !spoke {
                    heartbeat
                } else if now >= at {
                    tracing::info!(
                        leader = ?leader,
                        silent_ms = now.duration_since(heard).as_millis() as u64,
                        "the leader's lease is over: asking for an election"
                    );
                    if raft.trigger().elect().await.is_err() {
                        return;
                    }
                    known = None;
                    heartbeat
                } else {
                    (at - now).min(heartbeat)
                }
            }
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
#[path = "election_test.rs"]
mod tests;
