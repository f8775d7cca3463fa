use super::*;
use crate::testkit::{assert_same_tree, Workload};
use openraft::{CommittedLeaderId, Membership};
use std::collections::BTreeSet;

fn id(term: u64, index: u64) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

/// The workload's txns as Raft entries from index 2 on, after a membership entry at 1.
fn log_of(w: &Workload) -> Vec<Entry<TypeConfig>> {
    let members: BTreeSet<NodeId> = [1, 2, 3].into();
    let mut v = vec![Entry {
        log_id: id(1, 1),
        payload: EntryPayload::Membership(Membership::new(vec![members], None)),
    }];
    for (i, t) in w.log.iter().enumerate() {
        v.push(Entry {
            log_id: id(1, i as u64 + 2),
            payload: EntryPayload::Normal(proposal(t)),
        });
    }
    v
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn assert_same_state(what: &str, got: &State, want: &State) {
    assert_eq!(got.zxid(), want.zxid(), "{what}: zxid");
    assert_eq!(got.tree.digest(), want.tree.digest(), "{what}: digest");
    assert_eq!(got.sessions(), want.sessions(), "{what}: sessions");
    assert_eq!(got.tree.znode_count(), want.tree.znode_count(), "{what}");
    assert_eq!(
        got.tree.approximate_data_size(),
        want.tree.approximate_data_size(),
        "{what}: data size"
    );
    assert_same_tree(what, &got.tree, &want.tree);
}

/// How: a random workload's log applied through the adapter (with a blank entry in the
/// middle) against the same txns applied to a State directly; a snapshot of the result
/// installed on a fresh adapter; then the rest of the log applied to both.
#[test]
fn applies_in_order_and_a_snapshot_restores_an_equal_state() {
    for seed in 0..5 {
        let mut w = Workload::new(seed);
        for _ in 0..400 {
            w.step();
        }
        let entries = log_of(&w);
        let (head, tail) = entries.split_at(250);
        let mut direct = State::new();
        rt().block_on(async {
            let mut sm = StateMachine::new(StateApplier::default());
            assert_eq!(sm.apply(head.to_vec()).await.unwrap().len(), head.len());
            for t in &w.log[..249] {
                direct.apply(t);
            }
            sm.with_applier(|a| assert_same_state("applied", &a.state, &direct))
                .await;
            let (applied, membership) = sm.applied_state().await.unwrap();
            assert_eq!(applied, Some(id(1, 250)));
            assert_eq!(membership.log_id(), &Some(id(1, 1)));

            let snap = sm
                .get_snapshot_builder()
                .await
                .build_snapshot()
                .await
                .unwrap();
            assert_eq!(snap.meta.last_log_id, Some(id(1, 250)));
            let mut other = StateMachine::new(StateApplier::default());
            let mut data = other.begin_receiving_snapshot().await.unwrap();
            *data = *snap.snapshot;
            other.install_snapshot(&snap.meta, data).await.unwrap();
            other
                .with_applier(|a| assert_same_state("installed", &a.state, &direct))
                .await;
            assert_eq!(
                other.applied_state().await.unwrap(),
                sm.applied_state().await.unwrap()
            );
            let current = other.get_current_snapshot().await.unwrap().unwrap();
            assert_eq!(current.meta, snap.meta);

            let blank = Entry {
                log_id: id(2, tail[0].log_id.index),
                payload: EntryPayload::Blank,
            };
            let rest: Vec<_> = std::iter::once(blank)
                .chain(tail.iter().map(|e| Entry {
                    log_id: id(2, e.log_id.index + 1),
                    payload: e.payload.clone(),
                }))
                .collect();
            sm.apply(rest.clone()).await.unwrap();
            other.apply(rest).await.unwrap();
            for t in &w.log[249..] {
                direct.apply(t);
            }
            sm.with_applier(|a| assert_same_state("leader", &a.state, &direct))
                .await;
            other
                .with_applier(|a| assert_same_state("follower", &a.state, &direct))
                .await;
        });
    }
}

/// How: a snapshot whose digest word is flipped, and one cut short, are refused and leave
/// the state machine as it was.
#[test]
fn a_damaged_snapshot_is_refused() {
    let mut w = Workload::new(7);
    for _ in 0..200 {
        w.step();
    }
    rt().block_on(async {
        let mut sm = StateMachine::new(StateApplier::default());
        sm.apply(log_of(&w)).await.unwrap();
        let snap = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        let good = snap.snapshot.into_inner();
        let mut flipped = good.clone();
        flipped[16] ^= 1;
        let cut = good[..good.len() - 3].to_vec();
        for bad in [flipped, cut] {
            let mut other = StateMachine::new(StateApplier::default());
            let r = other
                .install_snapshot(&snap.meta, Box::new(Cursor::new(bad)))
                .await;
            assert!(r.is_err());
            assert_eq!(other.applied_state().await.unwrap().0, None);
            other.with_applier(|a| assert_eq!(a.state.zxid(), 0)).await;
        }
    });
}
