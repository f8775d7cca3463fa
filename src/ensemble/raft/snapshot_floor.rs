//! How far the saved snapshot reaches, which the log purges no further than (storage.rs says
//! why): written by the state machine, read by the log store. A leaf both name.

use super::types::NodeId;
use openraft::LogId;
use parking_lot::Mutex;
use std::sync::Arc;

/// Where the saved snapshot file reaches: set by the state machine once a snapshot is on
/// disk, read by the log before it purges.
#[derive(Clone, Default)]
pub struct SnapshotFloor(Arc<Mutex<Option<LogId<NodeId>>>>);

impl SnapshotFloor {
    pub fn get(&self) -> Option<LogId<NodeId>> {
        *self.0.lock()
    }

    /// A saved snapshot reaching `at`; the floor never goes down.
    pub fn saved(&self, at: Option<LogId<NodeId>>) {
        let mut f = self.0.lock();
        if at > *f {
            *f = at;
        }
    }
}
