//! The role task: Raft's metrics become the core's `RoleView` (who leads, whether this
//! member may prep, whether a quorum acknowledges it, who is synced) and `lgif`'s
//! `RaftInfo`; a leader a reconfig left out of the voters stops its heartbeats here.

use super::peer_client::Contacts;
use super::types::{NodeId, TypeConfig};
use crate::ensemble::dynamic::DynConfig;
use crate::limits::ROLE_VIEW_RECHECK_MIN_MS;
use crate::seam::{CoreInbox, Notice, RaftInfo, RoleView};
use openraft::metrics::RaftServerMetrics;
use openraft::{BasicNode, LogId, Raft, RaftMetrics, ServerState};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// `caught_up`: the last log index when this member became leader (of this term): a
/// leader preps only once it has applied its log up to there and an entry of its own term —
/// every entry an earlier leader (or this one before a restart in the same term) ordered.
/// `want` is the configuration (for the learners it counts and the version in force);
/// `synced` the members that answered the leader within the lease.
fn view(
    m: &RaftMetrics<NodeId, BasicNode>,
    me: NodeId,
    caught_up: Option<u64>,
    lease_ms: u64,
    want: &DynConfig,
    synced: &BTreeSet<NodeId>,
) -> RoleView {
    let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
    let applied = m.last_applied.is_some_and(|l| {
        l.leader_id.term == m.current_term && caught_up.is_some_and(|c| l.index >= c)
    });
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let nodes: BTreeMap<NodeId, String> = membership
        .nodes()
        .map(|(id, n)| (*id, n.addr.clone()))
        .collect();
    // Applied means committed: a reconfig is answered once its membership is.
    let membership_applied = m
        .membership_config
        .log_id()
        .as_ref()
        .is_none_or(|l| m.last_applied.as_ref().is_some_and(|a| a.index >= l.index));
    let in_force = membership_applied && super::reconcile::matches(want, &voters, &nodes);
    let mut v = RoleView {
        leader: m.current_leader,
        term: m.current_term,
        // (A leader a reconfig left out of the voters steps down: `roles`.)
        ready: leads && applied,
        learner: !voters.contains(&me),
        quorum: !leads || m.millis_since_quorum_ack.is_some_and(|ms| ms <= lease_ms),
        config_version: if in_force { want.version } else { -1 },
        ..RoleView::default()
    };
    if let (true, Some(r)) = (leads, m.replication.as_ref()) {
        for (id, matched) in r.iter().filter(|(id, _)| **id != me) {
            let synced = u16::from(matched.is_some() && synced.contains(id));
            if voters.contains(id) {
                v.followers += 1;
                v.synced_followers += synced;
            } else if want.observers().contains(id) {
                v.observers += 1;
                v.synced_observers += synced;
            } else {
                // Outside the configuration: ZooKeeper's non-voting follower.
                v.followers += 1;
                v.synced_followers += synced;
                v.non_voting += 1;
                v.synced_non_voting += synced;
            }
        }
    }
    v
}

/// What the role task reads besides Raft's metrics.
pub(super) struct RoleInputs {
    pub desired: watch::Receiver<Arc<DynConfig>>,
    pub contacts: Contacts,
    pub info: Arc<parking_lot::Mutex<RaftInfo>>,
    pub lease_ms: u64,
    /// Set while this leader hands over (transfer.rs): it orders no writes.
    pub yielding: watch::Receiver<bool>,
}

/// Raft's metrics → the core's role; on the leader, who is synced (for a reconfig).
pub(super) async fn roles<C: CoreInbox>(
    raft: Raft<TypeConfig>,
    core: C,
    me: NodeId,
    inputs: RoleInputs,
) {
    let RoleInputs {
        mut desired,
        contacts,
        info,
        lease_ms,
        mut yielding,
    } = inputs;
    let mut rx = raft.metrics();
    let mut server = raft.server_metrics();
    let mut last = None;
    let mut state = RoleState {
        me,
        lease_ms,
        led: None,
        in_force: -1,
        heartbeats: true,
        left_out: None,
    };
    loop {
        let want = desired.borrow_and_update().clone();
        server.borrow_and_update();
        let v = {
            let m = rx.borrow_and_update();
            let mut synced = synced_within(&contacts, &m, lease_ms);
            let v = state.look(&raft, &m, &want, &synced, &mut yielding);
            synced.insert(me);
            *info.lock() = raft_info(&m, state.led.is_some(), synced);
            v
        };
        if last != Some(v) {
            if core.tell(Notice::Role(v)).await.is_err() {
                return;
            }
            last = Some(v);
        }
        if !changed(&mut rx, &mut server, &mut desired, &mut yielding, lease_ms).await {
            return;
        }
    }
}

/// What the role task keeps from one look at Raft's metrics to the next.
struct RoleState {
    me: NodeId,
    lease_ms: u64,
    /// (term, last log index) when this member became leader of that term.
    led: Option<(u64, u64)>,
    /// The last configuration version seen in force (kept while a later one is on its way).
    in_force: i64,
    heartbeats: bool,
    left_out: Option<std::time::Instant>,
}

impl RoleState {
    /// The core's view of Raft's metrics `m`; a leader left out of the configuration in
    /// force stops its heartbeats here.
    fn look(
        &mut self,
        raft: &Raft<TypeConfig>,
        m: &RaftMetrics<NodeId, BasicNode>,
        want: &DynConfig,
        synced: &BTreeSet<NodeId>,
        yielding: &mut watch::Receiver<bool>,
    ) -> RoleView {
        let leads = m.state == ServerState::Leader && m.current_leader == Some(self.me);
        if !leads {
            self.led = None;
        } else if self.led.is_none_or(|(t, _)| t != m.current_term) {
            self.led = Some((m.current_term, m.last_log_index.unwrap_or(0)));
        }
        let caught_up = self.led.map(|(_, i)| i);
        let mut v = view(m, self.me, caught_up, self.lease_ms, want, synced);
        // openraft's acknowledgement time restarts when the membership changes (the new
        // quorum has not acknowledged yet): members that answered within the lease count
        // too, a majority of each configuration of a joint one.
        if leads && !v.quorum {
            v.quorum = answered_by_quorum(m, self.me, synced);
        }
        if v.config_version >= 0 {
            self.in_force = v.config_version;
        }
        let step_down =
            self.step_down_if_left_out(raft, leads && v.learner && v.config_version >= 0);
        // It preps no more, and its clients go; so while it hands over (transfer.rs).
        v.ready &= !step_down && !*yielding.borrow_and_update();
        v.config_version = self.in_force;
        v
    }

    /// openraft 0.9 lets a leader that is no voter go on leading (its heartbeats keep the
    /// voters' leases): once a reconfig that leaves it out is in force, it stops sending them,
    /// so the voters elect one of theirs (election.rs) as ZooKeeper's do when their leader is
    /// removed — after two heartbeats more, which tell the followers that the change
    /// committed, so they answer their reconfig clients. Whether it steps down.
    fn step_down_if_left_out(&mut self, raft: &Raft<TypeConfig>, out: bool) -> bool {
        self.left_out = if out {
            self.left_out.or(Some(std::time::Instant::now()))
        } else {
            None
        };
        let step_down = self
            .left_out
            .is_some_and(|t| t.elapsed() >= Duration::from_millis(self.lease_ms / 3));
        if step_down == self.heartbeats {
            self.heartbeats = !step_down;
            raft.runtime_config().heartbeat(self.heartbeats);
            if step_down {
                tracing::info!(
                    "this leader is no voter of the configuration in force: stepping down"
                );
            }
        }
        step_down
    }
}

/// The members heard from within the lease that Raft replicates to (none unless leading).
fn synced_within(
    contacts: &Contacts,
    m: &RaftMetrics<NodeId, BasicNode>,
    lease_ms: u64,
) -> BTreeSet<NodeId> {
    let fresh = Duration::from_millis(lease_ms);
    let mut synced: BTreeSet<NodeId> = contacts
        .lock()
        .iter()
        .filter(|(_, t)| t.elapsed() <= fresh)
        .map(|(id, _)| *id)
        .collect();
    if let Some(r) = m.replication.as_ref() {
        synced.retain(|id| r.get(id).is_some_and(|x| x.is_some()));
    } else {
        synced.clear();
    }
    synced
}

/// Whether this leader and the members in `synced` are a majority of every configuration of
/// its (possibly joint) membership.
fn answered_by_quorum(
    m: &RaftMetrics<NodeId, BasicNode>,
    me: NodeId,
    synced: &BTreeSet<NodeId>,
) -> bool {
    let answered = |ids: &BTreeSet<NodeId>| {
        let n = ids
            .iter()
            .filter(|id| **id == me || synced.contains(id))
            .count();
        n > ids.len() / 2
    };
    m.membership_config
        .membership()
        .get_joint_config()
        .iter()
        .all(answered)
}

/// `lgif`'s numbers; `synced` (with this member) only while it leads.
fn raft_info(
    m: &RaftMetrics<NodeId, BasicNode>,
    leads: bool,
    synced: BTreeSet<NodeId>,
) -> RaftInfo {
    let log_id = |l: Option<LogId<NodeId>>| l.map(|l| (l.leader_id.term, l.index));
    RaftInfo {
        state: format!("{:?}", m.state),
        term: m.current_term,
        leader: m.current_leader,
        last_log_index: m.last_log_index,
        last_applied: log_id(m.last_applied),
        last_snapshot: log_id(m.snapshot),
        purged: log_id(m.purged),
        millis_since_quorum_ack: m.millis_since_quorum_ack,
        synced: if leads {
            synced.into_iter().collect()
        } else {
            Vec::new()
        },
    }
}

/// Waits for what can change the view; false once any of its sources is gone. Metrics change
/// when something happens; a quorum that falls silent changes nothing, so the view is also
/// looked at again every lease / 4. They change at every commit too, so after such a change
/// the view is built again at most once a millisecond (building it costs sets, maps and
/// strings: a few % of a busy ensemble's CPU).
async fn changed(
    rx: &mut watch::Receiver<RaftMetrics<NodeId, BasicNode>>,
    server: &mut watch::Receiver<RaftServerMetrics<NodeId, BasicNode>>,
    desired: &mut watch::Receiver<Arc<DynConfig>>,
    yielding: &mut watch::Receiver<bool>,
    lease_ms: u64,
) -> bool {
    tokio::select! {
        r = rx.changed() => {
            if r.is_err() {
                return false;
            }
            if !server.has_changed().unwrap_or(true) {
                tokio::time::sleep(crate::limits::ROLE_VIEW_EVERY).await;
            }
        },
        r = server.changed() => if r.is_err() {
            return false;
        },
        r = desired.changed() => if r.is_err() {
            return false;
        },
        r = yielding.changed() => if r.is_err() {
            return false;
        },
        _ = tokio::time::sleep(Duration::from_millis((lease_ms / 4).max(ROLE_VIEW_RECHECK_MIN_MS))) => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn metrics(term: u64, applied: u64) -> RaftMetrics<NodeId, BasicNode> {
        let mut m = RaftMetrics::new_initial(1);
        m.state = ServerState::Leader;
        m.current_leader = Some(1);
        m.current_term = term;
        m.last_applied = Some(LogId::new(CommittedLeaderId::new(term, 1), applied));
        m
    }

    /// Member 1's view with no configuration of its own and nobody synced, lease 1000 ms.
    fn plain(m: &RaftMetrics<NodeId, BasicNode>, caught_up: Option<u64>) -> RoleView {
        view(
            m,
            1,
            caught_up,
            1000,
            &DynConfig::default(),
            &BTreeSet::new(),
        )
    }

    /// The bug this guards: a leader restarted in the same term (its vote was committed) saw
    /// an applied entry of its term at once — the snapshot's — and prepped zxids the log
    /// after the snapshot had already used; followers then refused the txns and stopped.
    #[test]
    fn a_leader_is_ready_only_once_its_log_at_election_is_applied() {
        assert!(!plain(&metrics(3, 1399), Some(1509)).ready);
        assert!(plain(&metrics(3, 1509), Some(1509)).ready);
        assert!(!plain(&metrics(3, 1509), None).ready);
        let mut follower = metrics(3, 1509);
        follower.state = ServerState::Follower;
        follower.current_leader = Some(2);
        assert!(!plain(&follower, Some(0)).ready);
        assert!(plain(&follower, Some(0)).quorum);
    }

    #[test]
    fn a_leader_without_a_quorum_within_its_lease_says_so() {
        let mut m = metrics(3, 10);
        m.millis_since_quorum_ack = Some(900);
        assert!(plain(&m, Some(10)).quorum);
        m.millis_since_quorum_ack = Some(1001);
        assert!(!plain(&m, Some(10)).quorum);
        m.millis_since_quorum_ack = None;
        assert!(!plain(&m, Some(10)).quorum);
    }
}
