//! A server joining an ensemble (the configuration it joins is brought to Raft by
//! reconcile.rs).
//!
//! `join` runs on a server started with reconfigEnabled and an empty log: it asks the servers
//! of its zoo.cfg whether an ensemble exists. If one does, the leader makes it a learner
//! (ZooKeeper's non-voting follower, synced before `reconfig -add` makes it a voter); it never
//! forms its own. Only when a majority of zoo.cfg's voters (itself included) answer that none
//! is formed does it form one with them, as at first start. `answer_join` is the other side,
//! on every member's peer port.

use super::network::{Network, PeerClient};
use super::reconcile::peer_addr;
use super::rpc::JoinReply;
use super::types::{NodeId, TypeConfig};
use crate::ensemble::members::{Member, Role};
use openraft::{BasicNode, Raft};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The peer side of a join: `id` at `addr` asks this member (raft/peer.rs `Peer`).
pub async fn answer_join(
    raft: &Raft<TypeConfig>,
    me: NodeId,
    reconfig: bool,
    id: NodeId,
    addr: String,
) -> JoinReply {
    if !raft.is_initialized().await.unwrap_or(false) {
        return JoinReply::NotFormed;
    }
    let (leader, leader_addr, known) = {
        let m = raft.metrics();
        let m = m.borrow();
        let mem = m.membership_config.membership();
        let known = mem.nodes().any(|(n, _)| *n == id);
        let leader = m.current_leader;
        let leader_addr = leader.and_then(|l| {
            mem.nodes()
                .find(|(n, _)| **n == l)
                .map(|(_, n)| n.addr.clone())
        });
        (leader, leader_addr, known)
    };
    if known {
        return JoinReply::Member;
    }
    if !reconfig {
        tracing::warn!(
            server = id,
            %addr,
            "a server asks to join, but reconfigEnabled is off: the membership is zoo.cfg's"
        );
        return JoinReply::Later;
    }
    match (leader, leader_addr) {
        (Some(l), _) if l == me => {
            let joined = {
                let m = raft.metrics();
                let m = m.borrow();
                let mem = m.membership_config.membership();
                mem.learner_ids().count()
            };
            if joined >= crate::limits::PEER_LEARNERS {
                tracing::warn!(
                    server = id,
                    learners = joined,
                    "a server asks to join, but the ensemble has as many learners as it takes"
                );
                return JoinReply::Later;
            }
            match raft
                .add_learner(id, BasicNode::new(addr.clone()), false)
                .await
            {
                Ok(_) => {
                    tracing::info!(server = id, %addr, "a server joined as a learner (non-voting)");
                    JoinReply::Added
                }
                Err(e) => {
                    tracing::info!(server = id, error = %e, "cannot add a joining server yet");
                    JoinReply::Later
                }
            }
        }
        (Some(l), Some(a)) => JoinReply::Leader { id: l, addr: a },
        _ => JoinReply::Later,
    }
}

/// On a server with reconfigEnabled and an empty log: find the ensemble, or form it with a
/// majority of zoo.cfg's voters that have none (see the module's notes).
pub async fn join(raft: Raft<TypeConfig>, network: Network, members: Vec<Member>, pause: Duration) {
    let me = network.me;
    let Some(my_addr) = members.iter().find(|m| m.id == me).and_then(peer_addr) else {
        return;
    };
    let voters: BTreeMap<NodeId, BasicNode> = members
        .iter()
        .filter(|m| m.role == Role::Participant)
        .filter_map(|m| peer_addr(m).map(|a| (m.id, BasicNode::new(a))))
        .collect();
    let mut peers: Vec<(NodeId, PeerClient)> = members
        .iter()
        .filter(|m| m.id != me)
        .filter_map(|m| peer_addr(m).map(|a| (m.id, network.client(m.id, a))))
        .collect();
    let ttl = pause.max(crate::limits::JOIN_CALL_MIN);
    let mut logged = false;
    let mut warned: Option<tokio::time::Instant> = None;
    loop {
        if raft.is_initialized().await.unwrap_or(true) {
            return;
        }
        let mut refusal = None;
        let mut not_formed = BTreeSet::new();
        let mut leader = None;
        let mut in_ensemble = false;
        for (id, c) in peers.iter_mut() {
            match c.join(me, my_addr.clone(), ttl).await {
                Ok(JoinReply::NotFormed) => {
                    not_formed.insert(*id);
                }
                Ok(JoinReply::Member) | Ok(JoinReply::Added) => in_ensemble = true,
                Ok(JoinReply::Leader { id, addr }) => leader = Some((id, addr)),
                Ok(JoinReply::Later) => {}
                Err(e) => refusal = Some(e),
            }
        }
        if let (false, Some((id, addr))) = (in_ensemble, leader) {
            let mut c = network.client(id, addr);
            in_ensemble = matches!(
                c.join(me, my_addr.clone(), ttl).await,
                Ok(JoinReply::Added) | Ok(JoinReply::Member)
            );
        }
        // Said now and then: a server no configuration names is refused without a credential
        // (link/mod.rs), and the operator must learn why it never joins.
        if let (false, Some(e)) = (in_ensemble, refusal) {
            if warned.is_none_or(|t| t.elapsed() >= crate::limits::JOIN_WARN_EVERY) {
                tracing::warn!(error = %e, "cannot join the ensemble yet");
                warned = Some(tokio::time::Instant::now());
            }
        }
        if in_ensemble {
            if !logged {
                tracing::info!("joined an ensemble: waiting for its leader's log");
                logged = true;
            }
        } else if voters.contains_key(&me) {
            let agree = voters
                .keys()
                .filter(|v| **v == me || not_formed.contains(v))
                .count();
            if agree > voters.len() / 2 {
                tracing::info!(
                    voters = voters.len(),
                    "a majority of zoo.cfg's voters has no ensemble: forming one"
                );
                if let Err(e) = raft.initialize(voters.clone()).await {
                    tracing::info!(error = %e, "ensemble already formed");
                }
                return;
            }
        }
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
#[path = "join_test.rs"]
mod tests;
