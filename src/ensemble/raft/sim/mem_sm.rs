//! The state machine of the deterministic-time schedules: the adapter the server uses
//! (`StateMachine`) over the `StateApplier` the other Raft tests use, with its current snapshot
//! saved on the member's [`Disk`] instead of in `raft-snapshot` — before `build_snapshot` and
//! `install_snapshot` return, as `snapshot_file.rs` is, since openraft purges the log up to a
//! snapshot once it has one. A restart starts from that snapshot and the log after it, as
//! `storage::open` does, and refuses (a violation) when the log was purged past it.

use super::ledger::Ledger;
use super::mem_log::SharedDisk;
use crate::ensemble::raft::snapshot_buf::SnapshotBuf;
use crate::ensemble::raft::state_machine::{StateApplier, StateMachine};
use crate::ensemble::raft::types::{Node, NodeId, TypeConfig};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{Entry, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError, StoredMembership};
use std::sync::Arc;

#[derive(Clone)]
pub struct MemSm {
    pub sm: StateMachine<StateApplier>,
    disk: SharedDisk,
    life: u64,
    ledger: Option<Arc<Ledger>>,
    me: NodeId,
}

impl MemSm {
    /// The state machine as a restart finds it: the saved snapshot, if any.
    pub async fn open(
        me: NodeId,
        disk: SharedDisk,
        ledger: Option<Arc<Ledger>>,
    ) -> Result<MemSm, StorageError<NodeId>> {
        let (saved, purged, life) = {
            let d = disk.lock();
            (d.snapshot.clone(), d.purged, d.life)
        };
        let mut sm = StateMachine::new(StateApplier::default());
        let at = saved.as_ref().and_then(|(meta, _)| meta.last_log_id);
        if let Some((meta, data)) = saved {
            sm.install_snapshot(&meta, Box::new(SnapshotBuf::memory(data)))
                .await?;
        }
        if purged.is_some_and(|p| at.is_none_or(|a| a.index < p.index)) {
            let v =
                format!("member {me}: log purged up to {purged:?} but the snapshot reaches {at:?}");
            if let Some(l) = &ledger {
                l.violation(v.clone());
            }
            panic!("{v}");
        }
        Ok(MemSm {
            sm,
            disk,
            life,
            ledger,
            me,
        })
    }

    fn save(&self, meta: &SnapshotMeta<NodeId, Node>, data: &[u8]) {
        let mut d = self.disk.lock();
        if d.life == self.life {
            d.snapshot = Some((meta.clone(), data.to_vec()));
        }
    }
}

impl RaftStateMachine<TypeConfig> for MemSm {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Node>), StorageError<NodeId>> {
        self.sm.applied_state().await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        if let Some(l) = &self.ledger {
            for e in &entries {
                l.applied(self.me, e.log_id);
            }
        }
        self.sm.apply(entries).await
    }

    async fn get_snapshot_builder(&mut self) -> Self {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotBuf>, StorageError<NodeId>> {
        self.sm.begin_receiving_snapshot().await
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<SnapshotBuf>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.in_memory().unwrap_or_default().to_vec();
        self.sm.install_snapshot(meta, snapshot).await?;
        self.save(meta, &data);
        if let Some(l) = &self.ledger {
            l.installed();
        }
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        self.sm.get_current_snapshot().await
    }
}

impl RaftSnapshotBuilder<TypeConfig> for MemSm {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let s = self.sm.build_snapshot().await?;
        self.save(&s.meta, s.snapshot.in_memory().unwrap_or_default());
        Ok(s)
    }
}
