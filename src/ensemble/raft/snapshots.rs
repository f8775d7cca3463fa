//! The snapshot task: the core's snapshot asks (snapCount, `csnp`), to Raft.

use super::types::TypeConfig;
use openraft::Raft;
use tokio::sync::mpsc;

/// The core's snapshot requests, to Raft (which ignores one while it builds another).
pub(super) async fn snapshots(raft: Raft<TypeConfig>, mut rx: mpsc::Receiver<()>) {
    while rx.recv().await.is_some() {
        if raft.trigger().snapshot().await.is_err() {
            return;
        }
    }
}
