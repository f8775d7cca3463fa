//! Raft's membership brought to the ensemble's configuration (a new server's join is
//! join.rs).
//!
//! `reconcile` runs on every member and acts on the leader: each server of the configuration
//! (`/zookeeper/config`, core/role/member/reconfig.rs) that Raft does not know is added as a learner;
//! then, with reconfigEnabled, the voters are made the configuration's participants through
//! openraft's joint consensus (`change_membership`, `retain`: a voter left out stays a
//! learner — ZooKeeper's removed server that keeps running is a non-voting follower), and a
//! server whose address changed gets its new one. Without reconfigEnabled only observers are
//! added (the voters are zoo.cfg's, fixed at formation). A leader a change leaves out steps
//! down once it is committed (openraft), and the voters elect another. `listen_as_configured`
//! moves this member's own peer port where the configuration says; `drop_stale_learners`
//! removes joined servers that never catch up.

use super::network::{serve, Network, PeerHandler};
use super::types::{NodeId, TypeConfig};
use crate::ensemble::dynamic::DynConfig;
use crate::ensemble::members::{Member, Role};
use openraft::{BasicNode, ChangeMembers, Raft, ServerState};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Where the other members reach `m` (its first peer address).
pub fn peer_addr(m: &Member) -> Option<String> {
    m.addrs.first().map(|a| {
        if a.host.contains(':') {
            format!("[{}]:{}", a.host, a.peer_port)
        } else {
            format!("{}:{}", a.host, a.peer_port)
        }
    })
}

/// The next change that brings `have` (Raft's membership: voters, nodes) to `want`, if any.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    AddLearner(NodeId, String),
    SetAddress(NodeId, String),
    Voters(BTreeSet<NodeId>),
}

pub fn next_step(
    want: &DynConfig,
    voters: &BTreeSet<NodeId>,
    nodes: &BTreeMap<NodeId, String>,
    reconfig: bool,
) -> Option<Step> {
    for m in &want.members {
        if !reconfig && m.role != Role::Observer {
            continue;
        }
        let Some(addr) = peer_addr(m) else { continue };
        match nodes.get(&m.id) {
            None => return Some(Step::AddLearner(m.id, addr)),
            Some(a) if reconfig && *a != addr => return Some(Step::SetAddress(m.id, addr)),
            Some(_) => {}
        }
    }
    let target = want.voters();
    (reconfig && !target.is_empty() && target != *voters).then_some(Step::Voters(target))
}

/// Whether Raft's membership is `want`'s: its participants the voters, its observers
/// learners, their addresses its.
pub fn matches(
    want: &DynConfig,
    voters: &BTreeSet<NodeId>,
    nodes: &BTreeMap<NodeId, String>,
) -> bool {
    want.voters() == *voters
        && want.members.iter().all(|m| {
            nodes
                .get(&m.id)
                .is_some_and(|a| Some(a) == peer_addr(m).as_ref())
                && (m.role == Role::Participant) == voters.contains(&m.id)
        })
}

/// Raft's current membership as (voters, node addresses).
pub fn membership(raft: &Raft<TypeConfig>) -> (BTreeSet<NodeId>, BTreeMap<NodeId, String>) {
    let m = raft.metrics();
    let m = m.borrow();
    let mem = m.membership_config.membership();
    let voters = mem.voter_ids().collect();
    let nodes = mem.nodes().map(|(id, n)| (*id, n.addr.clone())).collect();
    (voters, nodes)
}

/// On the leader, one change at a time until the membership is the configuration's. On
/// every member (reconfigEnabled), links follow the committed configuration's addresses.
///
/// `floor`: a configuration of a version below it is not brought in (after
/// `--force-new-ensemble`, the configurations of before, whose quorum is lost: recovery.rs).
pub async fn reconcile(
    raft: Raft<TypeConfig>,
    network: Network,
    mut desired: watch::Receiver<Arc<DynConfig>>,
    me: NodeId,
    reconfig: bool,
    pause: Duration,
    floor: i64,
) {
    // Server metrics: they change with the role, the leader and the membership only, not at
    // every commit as the full metrics do.
    let mut metrics = raft.server_metrics();
    let mut followed = 0;
    loop {
        let want = desired.borrow_and_update().clone();
        if reconfig && want.version != 0 && want.version != followed {
            followed = want.version;
            network.follow(
                want.members
                    .iter()
                    .filter_map(|m| Some((m.id, peer_addr(m)?))),
            );
        }
        // A leader a reconfig left out of the voters leads on until it steps down
        // (roles.rs `roles`); one that a later reconfig puts back (removed and added again
        // at once) makes that change itself, or the configuration and Raft's voters differ
        // for good and it reports itself an observer.
        let leads = {
            let m = metrics.borrow_and_update();
            m.state == ServerState::Leader
                && m.current_leader == Some(me)
                && (m
                    .membership_config
                    .membership()
                    .voter_ids()
                    .any(|v| v == me)
                    || want.voters().contains(&me))
        };
        let step = if leads && want.version >= floor {
            let (voters, nodes) = membership(&raft);
            next_step(&want, &voters, &nodes, reconfig)
        } else {
            None
        };
        let Some(step) = step else {
            tokio::select! {
                r = desired.changed() => if r.is_err() { return },
                r = metrics.changed() => if r.is_err() { return },
            }
            continue;
        };
        tracing::info!(
            ?step,
            version = format_args!("{:#x}", want.version),
            "membership change"
        );
        let r = match &step {
            Step::AddLearner(id, addr) => raft
                .add_learner(*id, BasicNode::new(addr.clone()), false)
                .await
                .map(|_| ()),
            Step::SetAddress(id, addr) => {
                let set = BTreeMap::from([(*id, BasicNode::new(addr.clone()))]);
                raft.change_membership(ChangeMembers::SetNodes(set), true)
                    .await
                    .map(|_| ())
            }
            Step::Voters(v) => raft
                .change_membership(ChangeMembers::ReplaceAllVoters(v.clone()), true)
                .await
                .map(|_| ()),
        };
        if let Err(e) = r {
            // Not the leader any more, or a change still committing: look again shortly.
            tracing::info!(?step, error = %e, "membership change not made (yet)");
            tokio::time::sleep(pause).await;
        }
    }
}

/// With reconfigEnabled: this member listens for its peers where the committed
/// configuration says they reach it. A reconfig that moves its peer address (`reconfig -add`
/// of its id with another address) binds the new one, then closes the old listener and its
/// links (the others reconnect at the new one, `Network::follow`), as ZooKeeper's quorum
/// listener rebinds. A new address that cannot be bound is logged and the old one kept.
pub async fn listen_as_configured<H: PeerHandler>(
    mut desired: watch::Receiver<Arc<DynConfig>>,
    me: NodeId,
    mut addr: String,
    mut current: CancellationToken,
    handler: Arc<H>,
    network: Network,
    stop: CancellationToken,
) {
    let mut tried = None;
    loop {
        let want = desired.borrow_and_update().clone();
        let moved = (want.version != 0)
            .then(|| want.members.iter().find(|m| m.id == me).and_then(peer_addr))
            .flatten()
            .filter(|a| *a != addr && tried.as_ref() != Some(a));
        if let Some(new) = moved {
            match TcpListener::bind(&new).await {
                Ok(listener) => {
                    let token = stop.child_token();
                    let (h, n, t) = (handler.clone(), network.clone(), token.clone());
                    tokio::spawn(async move { serve(listener, h, &n, t).await });
                    current.cancel();
                    tracing::info!(old = %addr, new = %new, "the configuration moved this member's peer port: listening there");
                    current = token;
                    addr = new;
                }
                Err(e) => {
                    tracing::error!(%new, error = %e, "the configuration moved this member's peer port, but it cannot listen there: still on {addr}");
                    tried = Some(new);
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            r = desired.changed() => if r.is_err() { return },
        }
    }
}

/// On the leader: a learner no configuration names (a server that joined) and that stays
/// more than `LEARNER_LAG_ENTRIES` behind for `catch_up` is removed again, so that joins
/// that never catch up (or an outsider's) do not hold replication streams for good.
pub async fn drop_stale_learners(
    raft: Raft<TypeConfig>,
    desired: watch::Receiver<Arc<DynConfig>>,
    me: NodeId,
    catch_up: Duration,
) {
    let mut behind_since: BTreeMap<NodeId, tokio::time::Instant> = BTreeMap::new();
    let mut tick = tokio::time::interval(crate::limits::LEARNER_CHECK.min(catch_up));
    loop {
        tick.tick().await;
        let named: BTreeSet<NodeId> = desired.borrow().members.iter().map(|m| m.id).collect();
        let stale = {
            let m = raft.metrics();
            let m = m.borrow();
            if m.running_state.is_err() {
                return;
            }
            if m.current_leader != Some(me) {
                behind_since.clear();
                continue;
            }
            let last = m.last_log_index.unwrap_or(0);
            let now = tokio::time::Instant::now();
            let mut stale = BTreeSet::new();
            let learners: Vec<NodeId> = m
                .membership_config
                .membership()
                .learner_ids()
                .filter(|id| !named.contains(id))
                .collect();
            behind_since.retain(|id, _| learners.contains(id));
            for id in learners {
                let matched = m
                    .replication
                    .as_ref()
                    .and_then(|r| r.get(&id).copied().flatten());
                let behind = matched.is_none_or(|l| {
                    l.index.saturating_add(crate::limits::LEARNER_LAG_ENTRIES) < last
                });
                if !behind {
                    behind_since.remove(&id);
                    continue;
                }
                let since = *behind_since.entry(id).or_insert(now);
                if now.duration_since(since) >= catch_up {
                    stale.insert(id);
                }
            }
            stale
        };
        if stale.is_empty() {
            continue;
        }
        tracing::warn!(learners = ?stale, "joined servers that never caught up: removing them");
        for id in &stale {
            behind_since.remove(id);
        }
        if let Err(e) = raft
            .change_membership(ChangeMembers::RemoveNodes(stale), false)
            .await
        {
            tracing::info!(error = %e, "stale learners not removed (yet)");
        }
    }
}

#[cfg(test)]
#[path = "reconcile_test.rs"]
mod tests;
