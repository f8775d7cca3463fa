//! Deterministic-time fault schedules over 3 and 5 members in one process (issue 15): the
//! members run on in-memory storage whose durability is modelled (`mem_log.rs`, `mem_sm.rs`),
//! linked by an in-memory network (`net.rs`), under tokio's paused clock, so that thousands
//! of short seeded schedules fit in CI time (`schedules_test.rs`). The real WAL-backed log
//! store is exercised on real time by `chaos_test.rs`.
//!
//! Test code only (compiled under `cfg(test)`). Owns: the in-memory log, state machine and
//! network. May not touch: files, sockets, the wall clock.

use crate::ensemble::raft::state_machine::{StateApplier, StateMachine};
use crate::ensemble::raft::types::NodeId;
use crate::testkit::{dump, NodeDump};
use std::collections::BTreeMap;

mod cluster;
mod ledger;
mod mem_log;
mod mem_sm;
mod net;

#[cfg(test)]
#[path = "mem_log_test.rs"]
mod mem_log_test;
#[cfg(test)]
#[path = "schedules_test.rs"]
mod schedules_test;

/// A member's state at the end of a schedule (here or in chaos_test.rs): the acknowledged
/// paths it lost, its zxid, digest and tree.
pub(super) struct MemberState {
    id: NodeId,
    lost: Vec<String>,
    zxid: i64,
    digest: u64,
    nodes: BTreeMap<String, NodeDump>,
}

/// What member `id`'s state machine holds, and which of `acked` it lost.
pub(super) async fn member_state(
    id: NodeId,
    sm: &StateMachine<StateApplier>,
    acked: Vec<String>,
) -> MemberState {
    sm.with_applier(move |a| MemberState {
        id,
        lost: acked
            .into_iter()
            .filter(|p| a.state.tree.lookup(p).is_none())
            .collect(),
        zxid: a.state.zxid(),
        digest: a.state.tree.digest(),
        nodes: dump(&a.state.tree),
    })
    .await
}

/// No member lost an acknowledged write, and all hold one state (zxid, digest, every node);
/// `run` names the schedule in the messages.
pub(super) fn assert_one_state(states: &[MemberState], run: &str) {
    for s in states {
        assert!(
            s.lost.is_empty(),
            "{run}: member {} lost acknowledged writes {:?}",
            s.id,
            s.lost
        );
    }
    let Some((first, rest)) = states.split_first() else {
        return;
    };
    for s in rest {
        let what = format!("{run}: member {} vs member {}", s.id, first.id);
        assert_eq!(s.zxid, first.zxid, "{what}: zxid");
        assert_eq!(s.digest, first.digest, "{what}: digest");
        assert!(s.nodes == first.nodes, "{what}: trees differ");
    }
}
