//! A member's Raft storage opened as one: the log (`log_store.rs`) and the state machine
//! (`state_machine.rs`) from the same directory, checked against each other, and tied by the
//! [`SnapshotFloor`]: the log purges no further than the saved snapshot reaches. openraft 0.9
//! issues an installed snapshot's purge beside the install, not after it (the state machine
//! runs in its own task, and `PurgeLog` waits on nothing), so without the floor a kill -9 or
//! a refused image between the two left a log purged past its snapshot. A log purged past it
//! means files from different moments (or a lost snapshot file), and the member refuses to
//! start rather than run with a hole between its state and its log.

use super::log_store::LogStore;
use super::snapshot_floor::SnapshotFloor;
use super::state_machine::{Applier, StateMachine};
use std::io;
use std::path::Path;

pub async fn open<A: Applier>(
    dir: &Path,
    segment_bytes: u64,
    applier: A,
) -> io::Result<(LogStore, StateMachine<A>)> {
    open_as(dir, segment_bytes, None, applier).await
}

/// As [`open`], the log bound to the data dir `identity` names.
pub async fn open_as<A: Applier>(
    dir: &Path,
    segment_bytes: u64,
    identity: Option<u64>,
    applier: A,
) -> io::Result<(LogStore, StateMachine<A>)> {
    let floor = SnapshotFloor::default();
    let sm = StateMachine::open(dir, applier)
        .await?
        .with_floor(floor.clone())
        .await;
    let log = LogStore::open_as(dir, segment_bytes, identity, floor.get())?.with_floor(floor);
    let sm = sm.with_durable(log.durable());
    let (purged, applied) = (log.purged(), sm.last_applied().await);
    if purged.is_some_and(|p| applied.is_none_or(|a| a.index < p.index)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: the Raft log is purged up to {purged:?} but the saved snapshot reaches only \
                 {applied:?}: the entries between are gone; refusing to start",
                dir.display()
            ),
        ));
    }
    Ok((log, sm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::raft::state_machine::StateApplier;
    use openraft::storage::RaftLogStorage;
    use openraft::{CommittedLeaderId, LogId};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_log_purged_past_the_snapshot_refuses_to_open() {
        let d = tempfile::tempdir().unwrap();
        let rt = rt();
        // Alone, without the floor: as files from different moments would leave it.
        let mut log = LogStore::open(d.path(), 1 << 20).unwrap();
        rt.block_on(log.purge(LogId::new(CommittedLeaderId::new(1, 1), 5)))
            .unwrap();
        drop(log);
        let e = rt
            .block_on(open(d.path(), 1 << 20, StateApplier::default()))
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }

    /// openraft 0.9 purges an installed snapshot's entries beside the install: a member
    /// stopped between the two, or whose install was refused, must still open; the purge
    /// happens once a saved snapshot reaches it.
    #[test]
    fn a_purge_past_the_saved_snapshot_waits_for_one() {
        let d = tempfile::tempdir().unwrap();
        let rt = rt();
        let id = |i| LogId::new(CommittedLeaderId::new(1, 1), i);
        let (mut log, sm) = rt
            .block_on(open(d.path(), 1 << 20, StateApplier::default()))
            .unwrap();
        rt.block_on(log.purge(id(5))).unwrap();
        assert_eq!(log.purged(), None, "no snapshot is saved: nothing purged");
        drop((log, sm));
        let (log, sm) = rt
            .block_on(open(d.path(), 1 << 20, StateApplier::default()))
            .unwrap();
        drop((log, sm));

        let floor = SnapshotFloor::default();
        let mut log = LogStore::open(d.path(), 1 << 20)
            .unwrap()
            .with_floor(floor.clone());
        rt.block_on(log.purge(id(7))).unwrap();
        floor.saved(Some(id(4)));
        rt.block_on(log.purge(id(3))).unwrap();
        assert_eq!(log.purged(), Some(id(4)), "as far as the snapshot reaches");
        floor.saved(Some(id(8)));
        rt.block_on(log.purge(id(3))).unwrap();
        assert_eq!(
            log.purged(),
            Some(id(7)),
            "the deferred purge, once reached"
        );
        floor.saved(Some(id(2)));
        assert_eq!(floor.get(), Some(id(8)), "the floor never goes down");
    }
}
