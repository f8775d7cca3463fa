//! The forwarder task: a follower core's writes and session touches, to the leader over the
//! peer link, one call at a time; the forwards queued while a call was out go together.

use super::network::{Network, PeerClient};
use super::types::{NodeId, TypeConfig};
use crate::seam::{CoreInbox, Forward, Forwarded, Notice, ToLeader};
use openraft::Raft;
use std::time::Duration;
use tokio::sync::mpsc;

/// Resolves once Raft names another leader than `leader` (or stops).
async fn leader_changes(raft: &Raft<TypeConfig>, leader: NodeId) {
    let mut m = raft.server_metrics();
    while m.borrow_and_update().current_leader == Some(leader) {
        if m.changed().await.is_err() {
            return;
        }
    }
}

/// Sends a follower core's writes and touches to the leader, one call at a time. A call to a
/// leader that has gone silent (paused, partitioned) is given up as soon as another leader is
/// known, not after the call's whole ttl: the writes behind it go to the new one, and the
/// given-up writes fail with CONNECTIONLOSS (they may or may not commit, as ZooKeeper's).
pub(super) async fn forwarder<C: CoreInbox>(
    raft: Raft<TypeConfig>,
    network: Network,
    core: C,
    me: NodeId,
    mut rx: mpsc::Receiver<ToLeader>,
    ttl: Duration,
) {
    // The link and the term of the leader it was made for: a leader of a later term is
    // another process, even with the same id (a member restarted and elected again), and a
    // link to the one before would fail the first call after a quiet spell.
    let mut link: Option<(PeerClient, u64)> = None;
    let mut held: Option<ToLeader> = None;
    loop {
        let msg = match held.take() {
            Some(m) => m,
            None => match rx.recv().await {
                Some(m) => m,
                None => return,
            },
        };
        let (leader, addr, term) = leader_of(&raft, &network, me);
        match (leader, &addr) {
            (Some(l), Some(a)) => {
                if link
                    .as_ref()
                    .is_none_or(|(c, t)| c.target() != l || c.addr() != a || *t != term)
                {
                    link = Some((network.client(l, a.clone()), term));
                }
            }
            _ => link = None,
        }
        match msg {
            ToLeader::Forward(ops) => {
                let ops = gather(ops, &mut rx, &mut held);
                let sent: Vec<(i64, i32)> = ops.iter().map(|f| (f.session, f.cxid)).collect();
                let points = match (&mut link, leader) {
                    (Some((c, _)), Some(l)) => tokio::select! {
                        r = c.forward(ops, ttl) => r.ok().flatten(),
                        _ = leader_changes(&raft, l) => None,
                    },
                    _ => None,
                };
                if points.is_none() {
                    // The link may be mid-call: the next call opens a fresh one.
                    link = None;
                }
                let msg = match points {
                    Some(p) if p.is_empty() => continue,
                    Some(p) => Notice::SyncPoints(p),
                    None => Notice::ForwardFailed(sent),
                };
                if core.tell(msg).await.is_err() {
                    return;
                }
            }
            ToLeader::Touch(ids) => {
                if let (Some((c, _)), Some(l)) = (&mut link, leader) {
                    let given_up = tokio::select! {
                        r = c.touch(ids, ttl) => r.is_err(),
                        _ = leader_changes(&raft, l) => true,
                    };
                    if given_up {
                        link = None;
                    }
                }
            }
        }
    }
}

/// The leader as Raft knows it now (None if it is this member), where it is reached, and the
/// term.
fn leader_of(
    raft: &Raft<TypeConfig>,
    network: &Network,
    me: NodeId,
) -> (Option<NodeId>, Option<String>, u64) {
    let m = raft.metrics();
    let m = m.borrow();
    let leader = m.current_leader.filter(|l| *l != me);
    let addr = leader.and_then(|l| {
        m.membership_config
            .nodes()
            .find(|(id, _)| **id == l)
            .map(|(id, n)| network.addr_of(*id, n))
    });
    (leader, addr, m.current_term)
}

/// `ops` and the forwards queued behind them, up to `PEER_BATCH_BYTES`, as one call: they queued
/// while the last call was out, and one round trip to the leader each would pace a follower's
/// writes by that round trip. A touch stops the gathering (held, to go next in its order).
fn gather(
    mut ops: Vec<Forward>,
    rx: &mut mpsc::Receiver<ToLeader>,
    held: &mut Option<ToLeader>,
) -> Vec<Forward> {
    let size = |ops: &[Forward]| -> usize {
        ops.iter()
            .map(|f| match &f.what {
                Forwarded::Request(b) => b.len(),
                Forwarded::Restore(r) => r.payload_len(),
                _ => 16,
            })
            .sum()
    };
    let mut bytes = size(&ops);
    while bytes < crate::limits::PEER_BATCH_BYTES {
        match rx.try_recv() {
            Ok(ToLeader::Forward(more)) => {
                bytes = bytes.saturating_add(size(&more));
                ops.extend(more);
            }
            Ok(other) => {
                *held = Some(other);
                break;
            }
            Err(_) => break,
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn fwd(cxid: i32, bytes: usize) -> Forward {
        Forward {
            session: 7,
            cxid,
            what: Forwarded::Request(Bytes::from(vec![0u8; bytes])),
            auth: Vec::new(),
        }
    }

    fn cxids(ops: &[Forward]) -> Vec<i32> {
        ops.iter().map(|f| f.cxid).collect()
    }

    /// How: forwards queued behind the first go with it, in order, until a touch (held for
    /// next) or `PEER_BATCH_BYTES`; what is left stays queued, in order.
    #[test]
    fn queued_forwards_go_in_one_call_up_to_a_touch_or_the_byte_bound() {
        let (tx, mut rx) = mpsc::channel(crate::limits::FORWARD_QUEUE);
        let mut held = None;
        tx.try_send(ToLeader::Forward(vec![fwd(2, 10), fwd(3, 10)]))
            .unwrap();
        tx.try_send(ToLeader::Forward(vec![fwd(4, 10)])).unwrap();
        tx.try_send(ToLeader::Touch(vec![(7, 1)])).unwrap();
        tx.try_send(ToLeader::Forward(vec![fwd(5, 10)])).unwrap();
        let ops = gather(vec![fwd(1, 10)], &mut rx, &mut held);
        assert_eq!(cxids(&ops), [1, 2, 3, 4]);
        assert!(matches!(held.take(), Some(ToLeader::Touch(_))));
        let Ok(ToLeader::Forward(next)) = rx.try_recv() else {
            panic!("the forward after the touch was taken")
        };
        let ops = gather(next, &mut rx, &mut held);
        assert_eq!(cxids(&ops), [5]);
        assert!(held.is_none());

        for cxid in 11..15 {
            tx.try_send(ToLeader::Forward(vec![fwd(
                cxid,
                crate::limits::PEER_BATCH_BYTES / 3,
            )]))
            .unwrap();
        }
        let ops = gather(vec![fwd(10, 10)], &mut rx, &mut held);
        assert_eq!(cxids(&ops), [10, 11, 12, 13]);
        let Ok(ToLeader::Forward(rest)) = rx.try_recv() else {
            panic!("the forward past the bound was taken")
        };
        assert_eq!(cxids(&rest), [14]);
    }
}
