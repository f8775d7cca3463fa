//! A member's Raft storage opened as one: the log (`log_store.rs`) and the state machine
//! (`state_machine.rs`) from the same directory, checked against each other. openraft purges
//! the log only up to a snapshot it has built or installed, and the adapter saves that
//! snapshot before it returns, so the saved snapshot always reaches the purge point; a log
//! purged past it means files from different moments (or a lost snapshot file), and the
//! member refuses to start rather than run with a hole between its state and its log.

use super::log_store::LogStore;
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
    let log = LogStore::open_as(dir, segment_bytes, identity)?;
    let sm = StateMachine::open(dir, applier)
        .await?
        .with_durable(log.durable());
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

    #[test]
    fn a_log_purged_past_the_snapshot_refuses_to_open() {
        let d = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (mut log, _sm) = rt
            .block_on(open(d.path(), 1 << 20, StateApplier::default()))
            .unwrap();
        rt.block_on(log.purge(LogId::new(CommittedLeaderId::new(1, 1), 5)))
            .unwrap();
        drop(log);
        let e = rt
            .block_on(open(d.path(), 1 << 20, StateApplier::default()))
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }
}
