//! When an ensemble elects: zoo.cfg's timing mapped to Raft's, and the one place that decides
//! when a voter campaigns.
//!
//! openraft 0.9 has every voter refuse a candidate while the leader's lease lasts (the election
//! timeout's maximum, counted from the leader's last message), and has a follower start its own
//! election only a whole random election timeout *after* that lease. So the lease is the floor
//! of a failover, and openraft's own timer adds 0.5–1 lease on top. [`Driver`] removes the
//! second part: each follower asks for an election as soon as the lease it grants is over,
//! staggered by its rank so that two followers do not split the vote.
//!
//! openraft's own election timer is switched off (`enable_elect: false`) and [`Driver`] keeps
//! its fallback rule (a random election timeout after the vote was last touched), because
//! that timer measures silence by the wall clock: a member that was not running — SIGSTOPped,
//! or starved of CPU — wakes up with every deadline passed and campaigns before it has read the
//! heartbeats waiting in its socket. Its higher term then reaches the leader in an
//! append-entries reply, and a healthy leader steps down (seen: a follower stopped for 1.5 s
//! under load unseated the leader as it woke). The driver notices that it did not run (its
//! sleep overran by more than half a lease) and counts silence only from then on.

use super::types::{NodeId, TypeConfig};
use openraft::{Raft, ServerState, SnapshotPolicy, Vote};
use std::io;
use std::time::Duration;
use tokio::time::Instant;

/// Raft's timing from tickTime and syncLimit (docs/design/ENSEMBLE.md): election timeout max (the
/// lease) syncLimit·tickTime / 2 within 60..300 ms, min half of that; heartbeat a sixth of
/// the lease, so that a lease outlasts five lost heartbeats (openraft 0.9 also gives every
/// append-entries call one heartbeat interval to answer: the peer link keeps them small,
/// limits.rs `PEER_APPEND_BYTES`); install-snapshot timeout
/// initLimit·tickTime; snapshots when the core asks (`core::member`: every snapCount/2 ..
/// snapCount txns), and the log kept snapCount entries behind one.
pub fn raft_config(
    tick_time: u64,
    init_limit: u64,
    sync_limit: u64,
    snap_count: u64,
) -> io::Result<openraft::Config> {
    let tick = tick_time.max(2);
    let lease = (sync_limit.saturating_mul(tick) / 2).clamp(
        crate::limits::LEASE_FLOOR_MS,
        crate::limits::LEASE_CEILING_MS,
    );
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
        // `Driver` decides when to campaign (see the module's comment).
        enable_elect: false,
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

/// One look at the local Raft, as the driver needs it.
#[derive(Clone, Debug)]
pub struct Look {
    pub state: ServerState,
    pub vote: Vote<NodeId>,
    /// When the vote was last taken or refreshed (a leader's every message refreshes it).
    pub touched: Option<Instant>,
    /// The voters of the effective membership (both halves of a joint one).
    pub voters: Vec<NodeId>,
}

/// What the driver wants done next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    Elect,
    Wait(Duration),
}

/// When a voter campaigns: promptly once the lease of a leader it has heard is over, and
/// otherwise (no leader heard since this member took its vote, a candidacy that failed) after
/// a random election timeout, as openraft's own timer would — in both cases counting only
/// time during which this member ran. Pure: the caller looks at Raft and sleeps.
pub struct Driver {
    me: NodeId,
    lease: Duration,
    heartbeat: Duration,
    timeout_min: u64,
    timeout_max: u64,
    /// The fallback's random election timeout, drawn again after every candidacy.
    timeout: Duration,
    /// Silence counts from here at the earliest: the start, or the end of a stretch during
    /// which this member did not run.
    awake: Instant,
    /// When the last `next` asked to be called again.
    due: Option<Instant>,
    /// The committed vote last seen, when it was taken, and whether its leader spoke since.
    known: Option<(Vote<NodeId>, Instant, bool)>,
    /// Not yet a follower of a committed vote nor a candidate since this process started.
    starting: bool,
}

impl Driver {
    pub fn new(me: NodeId, config: &openraft::Config, now: Instant) -> Driver {
        let mut d = Driver {
            me,
            lease: Duration::from_millis(config.election_timeout_max),
            heartbeat: Duration::from_millis(config.heartbeat_interval),
            timeout_min: config.election_timeout_min,
            timeout_max: config.election_timeout_max,
            timeout: Duration::ZERO,
            awake: now,
            due: None,
            known: None,
            starting: true,
        };
        d.draw();
        d
    }

    fn draw(&mut self) {
        self.timeout = Duration::from_millis(fastrand::u64(
            self.timeout_min..=self.timeout_max.max(self.timeout_min),
        ));
    }

    /// Decides at `now`, given what Raft looks like.
    pub fn next(&mut self, look: &Look, now: Instant) -> Act {
        if self.due.is_some_and(|due| now > due + self.lease / 2) {
            tracing::info!(
                late_ms = self
                    .due
                    .map_or(0, |d| now.duration_since(d).as_millis() as u64),
                "this member did not run for a while (stopped or starved): no election before \
                 a lease has passed"
            );
            self.awake = now;
        }
        let act = self.decide(look, now);
        self.due = Some(match act {
            Act::Wait(d) => now + d,
            Act::Elect => now,
        });
        if act == Act::Elect {
            self.known = None;
            self.starting = false;
            self.draw();
        }
        act
    }

    fn decide(&mut self, look: &Look, now: Instant) -> Act {
        let voter = look.voters.contains(&self.me);
        if look.state == ServerState::Leader || !voter {
            self.known = None;
            return Act::Wait(self.heartbeat);
        }
        if look.voters.len() == 1 {
            // The only voter: nobody to wait for (a candidacy in progress finishes alone).
            return if look.state == ServerState::Candidate {
                Act::Wait(self.heartbeat)
            } else {
                Act::Elect
            };
        }
        let heard = look.touched.unwrap_or(self.awake).max(self.awake);
        let following = look.state == ServerState::Follower && look.vote.is_committed();
        if following || look.state != ServerState::Follower {
            self.starting = false;
        }
        let spoke = if following {
            let vote = look.vote;
            let spoke = match self.known {
                Some((v, taken, spoke)) if v == vote => spoke || look.touched > Some(taken),
                _ => false,
            };
            let taken = self
                .known
                .filter(|k| k.0 == vote)
                .map_or(look.touched.unwrap_or(now), |k| k.1);
            self.known = Some((vote, taken, spoke));
            spoke
        } else {
            self.known = None;
            false
        };
        let at = if spoke {
            // A leader this member has heard since it took the vote went silent.
            let leader = look.vote.leader_id().voted_for();
            heard + self.lease + stagger(self.me, leader, &look.voters, self.heartbeat_ms())
        } else {
            // openraft's rule: a committed vote waits out its lease first. So does a member
            // back from a restart with a vote from before (a restarted leader's is saved
            // uncommitted, step_down.rs): the leader elected while it was away reaches it again
            // within a lease (its link backed off while the member was down), and a candidacy
            // before that would raise the term and unseat a healthy leader.
            // And so does a candidate whose candidacy failed: most often its log is behind
            // (the others refused it), and retrying after a bare timeout it outpaced the
            // members that could win, raising the term each time; its higher vote unseated
            // every leader they elected as soon as that leader reached it (paused-clock
            // schedules, seed 543 over 3 members).
            // So does a member at its first start: the others may have formed without it,
            // and its candidacy in their leader's term with a higher id outranks that leader
            // (openraft orders votes of one term by node id): the leader stepped down when it
            // reached the newcomer (seen: 1.4 s without writes, tests/ensemble quorum TLS).
            // An ensemble forming from nothing elects a lease later for it.
            let back = self.starting;
            let failed = look.state == ServerState::Candidate;
            let lease = if look.vote.is_committed() || back || failed {
                self.lease
            } else {
                Duration::ZERO
            };
            heard + lease + self.timeout
        };
        if now >= at {
            let leader = look.vote.leader_id().voted_for();
            tracing::info!(
                leader = ?leader,
                silent_ms = now.duration_since(heard).as_millis() as u64,
                prompt = spoke,
                "asking for an election"
            );
            Act::Elect
        } else {
            Act::Wait((at - now).min(self.heartbeat))
        }
    }

    fn heartbeat_ms(&self) -> u64 {
        self.heartbeat.as_millis() as u64
    }
}

/// Runs on every member for as long as its Raft does; acts only while it is a voter.
pub async fn run(raft: Raft<TypeConfig>, me: NodeId) {
    let mut driver = Driver::new(me, raft.config(), Instant::now());
    loop {
        let look = raft
            .with_raft_state(|st| Look {
                state: st.server_state,
                vote: *st.vote_ref(),
                touched: st.vote_last_modified(),
                voters: st.membership_state.effective().voter_ids().collect(),
            })
            .await;
        let Ok(look) = look else { return };
        match driver.next(&look, Instant::now()) {
            Act::Wait(d) => tokio::time::sleep(d).await,
            Act::Elect => {
                if raft.trigger().elect().await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "election_test.rs"]
mod tests;
