//! The fail-safe tasks: a member whose Raft stops, or whose Raft log cannot be written,
//! stops its core (and so its process) rather than serve a tree that no longer follows the
//! log.

use super::durable::Durable;
use super::types::TypeConfig;
use crate::seam::{CoreInbox, Notice};
use openraft::Raft;
use tokio_util::sync::CancellationToken;

/// openraft stops its core for good on a storage error or a fault it detects (a panic); the
/// member then stops too, rather than go on serving clients from a tree that no longer follows
/// the log (its process exits non-zero: `server.rs`, when the core stops).
pub(super) async fn stop_with_raft<C: CoreInbox>(
    raft: Raft<TypeConfig>,
    core: C,
    stop: CancellationToken,
) {
    let mut rx = raft.metrics();
    loop {
        let state = rx.borrow().running_state.clone();
        if let Err(e) = state {
            if !stop.is_cancelled() {
                tracing::error!(error = %e, "Raft stopped: this member stops");
                let _ = core.tell(Notice::Shutdown).await;
            }
            return;
        }
        if rx.changed().await.is_err() {
            if !stop.is_cancelled() {
                tracing::error!("Raft stopped: this member stops");
                let _ = core.tell(Notice::Shutdown).await;
            }
            return;
        }
    }
}

/// A member whose Raft log cannot be written (a full disk, no descriptors left, an I/O
/// error, its data dir removed) stops, loudly, rather than lead on committing nothing (it once
/// went on leading, logging thousands of lines a second): its lease runs out and the others
/// elect a leader; it is started again (its service manager restarts it) once the fault is
/// gone, and catches up from its log on disk. A follower's failed append already stops Raft
/// (openraft takes the failed flush as a storage error); a leader reports its own entries
/// flushed before they are written (durable.rs), so it learns here.
pub(super) async fn stop_on_log_failure<C: CoreInbox>(
    durable: Durable,
    core: C,
    stop: CancellationToken,
) {
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = durable.failed() => {
            tracing::error!(
                "the Raft log cannot be written: this member stops (it is restarted once the \
                 fault is fixed, and catches up from its log)"
            );
            let _ = core.tell(Notice::Shutdown).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::CoreMsg;
    use crate::ensemble::raft::election;
    use crate::ensemble::raft::network::Network;
    use crate::ensemble::raft::state_machine::InstallOnly;
    use crate::ensemble::raft::storage;
    use crate::ensemble::raft::types::Proposal;
    use openraft::BasicNode;
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::sync::mpsc;

    /// A lone member 1 whose applier fails to apply an entry (and the dir its log is in):
    /// openraft stops its core on the storage error this makes.
    async fn broken_raft() -> (Raft<TypeConfig>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let (log, sm) = storage::open(dir.path(), 64 << 10, InstallOnly)
            .await
            .unwrap();
        let config = Arc::new(election::raft_config(200, 10, 5, 1000).unwrap());
        let network = Network::new(1, Duration::from_millis(10));
        let raft = Raft::new(1, config, network, log, sm).await.unwrap();
        (raft, dir)
    }

    #[tokio::test]
    async fn a_member_whose_raft_stops_stops_its_core() {
        let (raft, _dir) = broken_raft().await;
        let (core, mut from) = mpsc::channel::<CoreMsg>(8);
        let stop = CancellationToken::new();
        tokio::spawn(stop_with_raft(raft.clone(), core, stop.clone()));
        raft.initialize(BTreeMap::from([(1, BasicNode::new("127.0.0.1:1"))]))
            .await
            .unwrap();
        // the lone voter elects itself (the driver), then its first entry fails to apply
        tokio::spawn(election::run(raft.clone(), 1));
        let _ = raft.client_write(Proposal::Key([1; 16])).await;
        let got = tokio::time::timeout(Duration::from_secs(10), from.recv()).await;
        assert!(
            matches!(got, Ok(Some(CoreMsg::Shutdown))),
            "the core was not stopped"
        );

        // a Raft shut down on purpose stops nothing
        let (raft, _dir) = broken_raft().await;
        let (core, mut from) = mpsc::channel::<CoreMsg>(8);
        let stop = CancellationToken::new();
        let watch = tokio::spawn(stop_with_raft(raft.clone(), core, stop.clone()));
        stop.cancel();
        raft.shutdown().await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), watch)
            .await
            .unwrap()
            .unwrap();
        assert!(from.try_recv().is_err());
    }
}
