//! openraft's state machine (storage-v2) as an adapter over an [`Applier`]: it owns no tree.
//! Committed entries go to the applier in log order (in production the core thread, whose
//! `State::apply` is the only mutation; in tests [`StateApplier`], which owns a `State`), and
//! the adapter keeps what openraft asks of a state machine: the last applied log id and the
//! last membership, and the current snapshot.
//!
//! A snapshot here is the applier's state as bytes: for the core, a fuzzy capture taken
//! between batches plus the txns applied meanwhile (`core/role/member/raft_snapshot.rs`), which stands
//! at the log id of the last batch the core had applied when the capture ended — so the
//! builder holds no lock while it waits, and entries keep applying; for `StateApplier`, a
//! whole-state image. Both load back through the `Replayer` recovery uses, which checks the
//! digest.

use super::durable::Durable;
use super::snapshot_buf::SnapshotBuf;
use super::snapshot_file::SnapshotFile;
use super::snapshot_floor::SnapshotFloor;
use super::types::{Node, NodeId, Proposal, TypeConfig};
use crate::durability::image;
use crate::state::State;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, Entry, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StorageIOError, StoredMembership,
};
use palisade_proto::Txn;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::Mutex;

/// A snapshot being taken: resolves to its image and the log id it stands at.
pub type PendingImage =
    Pin<Box<dyn Future<Output = io::Result<(Vec<u8>, Option<LogId<NodeId>>)>> + Send>>;

/// Committed entries with their log ids, in order (each `Proposal` one encoded `Txn`).
pub type Committed = Vec<(LogId<NodeId>, Proposal)>;

/// Where committed txns are applied. Called in log order, never concurrently. Async, so
/// that the core's applier can hand a batch to the core thread and await its acknowledgement
/// without holding a runtime thread.
pub trait Applier: Send + 'static {
    /// Applies committed txns, in order; `upto` is the last entry of the batch (txn or
    /// not): the state then stands there.
    fn apply(
        &mut self,
        txns: Committed,
        upto: LogId<NodeId>,
    ) -> impl Future<Output = io::Result<()>> + Send;
    /// Starts taking the state as bytes [`Applier::install`] restores; the image comes with
    /// the `upto` of the last batch it includes.
    fn begin_snapshot(&mut self) -> impl Future<Output = io::Result<PendingImage>> + Send;
    /// Replaces the whole state with a snapshot's, which stands at `at`.
    fn install(
        &mut self,
        snapshot: &[u8],
        at: Option<LogId<NodeId>>,
    ) -> impl Future<Output = io::Result<()>> + Send;
}

/// An applier that holds no state and takes only an install: applying an entry or building a
/// snapshot is an error. `palisade restore` writes a member's files with it (the image is for
/// the member's core, which checks it when the member starts: backup/member_restore.rs).
pub struct InstallOnly;

impl Applier for InstallOnly {
    async fn apply(&mut self, _: Committed, _: LogId<NodeId>) -> io::Result<()> {
        Err(io::Error::other("a restore applies no entries"))
    }

    async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
        Err(io::Error::other("a restore builds no snapshot"))
    }

    async fn install(&mut self, _: &[u8], _: Option<LogId<NodeId>>) -> io::Result<()> {
        Ok(())
    }
}

struct Stored {
    meta: SnapshotMeta<NodeId, Node>,
    /// The image, unless the snapshot file holds it: an image can be the size of the tree,
    /// and openraft asks for it again only to send it to a member that fell behind.
    data: Option<Vec<u8>>,
}

struct Inner<A> {
    applier: A,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, Node>,
    /// The last few memberships, oldest first (the newest is `membership`).
    memberships: VecDeque<StoredMembership<NodeId, Node>>,
    snapshot: Option<Stored>,
    /// Snapshots built by this process, to tell them apart in their ids.
    built: u64,
    /// Snapshots installed by this process: a build that saw one installed meanwhile is
    /// worth nothing.
    installs: u64,
    /// Where the current snapshot is kept across restarts (None: in memory only, for tests).
    file: Option<SnapshotFile>,
}

impl<A> Inner<A> {
    /// Records the newest membership; `reset` forgets the earlier ones (an installed
    /// snapshot replaces the history).
    fn set_membership(&mut self, m: StoredMembership<NodeId, Node>, reset: bool) {
        if reset {
            self.memberships.clear();
        }
        if self.memberships.len() == crate::limits::RAFT_MEMBERSHIPS_KEPT {
            self.memberships.pop_front();
        }
        self.memberships.push_back(m.clone());
        self.membership = m;
    }

    /// The membership in effect at log id `at`: the newest one recorded at or before it.
    fn membership_at(&self, at: Option<LogId<NodeId>>) -> Option<StoredMembership<NodeId, Node>> {
        self.memberships
            .iter()
            .rev()
            .find(|m| m.log_id() <= &at)
            .cloned()
    }
}

/// The state machine; its snapshot builder shares it.
pub struct StateMachine<A> {
    inner: Arc<Mutex<Inner<A>>>,
    /// The log's durable mark: an entry applies only once it is on disk here (`durable.rs`).
    /// None: tests without a log.
    durable: Option<Durable>,
    /// Told how far each saved snapshot reaches (`storage.rs`). None: tests without a log.
    floor: Option<SnapshotFloor>,
}

impl<A> Clone for StateMachine<A> {
    fn clone(&self) -> Self {
        StateMachine {
            inner: self.inner.clone(),
            durable: self.durable.clone(),
            floor: self.floor.clone(),
        }
    }
}

fn sm_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_state_machine(AnyError::new(&e)).into()
}

impl<A: Applier> StateMachine<A> {
    pub fn new(applier: A) -> Self {
        StateMachine {
            inner: Arc::new(Mutex::new(Inner {
                applier,
                last_applied: None,
                membership: StoredMembership::default(),
                memberships: VecDeque::from([StoredMembership::default()]),
                snapshot: None,
                built: 0,
                installs: 0,
                file: None,
            })),
            durable: None,
            floor: None,
        }
    }

    /// Tells `floor` how far the saved snapshot reaches, now and after each save.
    pub async fn with_floor(mut self, floor: SnapshotFloor) -> Self {
        floor.saved(
            self.inner
                .lock()
                .await
                .snapshot
                .as_ref()
                .and_then(|s| s.meta.last_log_id),
        );
        self.floor = Some(floor);
        self
    }

    fn saved(&self, at: Option<LogId<NodeId>>) {
        if let Some(f) = &self.floor {
            f.saved(at);
        }
    }

    /// Applies entries only once the log holding them is on disk up to them.
    pub fn with_durable(mut self, durable: Durable) -> Self {
        self.durable = Some(durable);
        self
    }

    async fn on_disk(&self, upto: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        match &self.durable {
            Some(d) => d.until(Some(upto)).await.map_err(sm_err),
            None => Ok(()),
        }
    }

    /// A state machine whose snapshots are kept in `dir` (`snapshot_file.rs`): it starts from
    /// the saved one, if any, as openraft expects of a member whose log was purged up to it.
    pub async fn open(dir: &std::path::Path, applier: A) -> io::Result<Self> {
        let file = SnapshotFile::new(dir);
        let saved = file.read()?;
        let sm = Self::new(applier);
        {
            let mut inner = sm.inner.lock().await;
            if let Some((meta, data)) = saved {
                inner.applier.install(&data, meta.last_log_id).await?;
                inner.last_applied = meta.last_log_id;
                inner.set_membership(meta.last_membership.clone(), true);
                drop(data);
                inner.snapshot = Some(Stored { meta, data: None });
            }
            inner.file = Some(file);
        }
        Ok(sm)
    }

    /// The last log id applied (or reached by the installed snapshot).
    pub async fn last_applied(&self) -> Option<LogId<NodeId>> {
        self.inner.lock().await.last_applied
    }

    /// Runs `f` on the applier (tests read the State this way).
    pub async fn with_applier<T>(&self, f: impl FnOnce(&mut A) -> T) -> T {
        f(&mut self.inner.lock().await.applier)
    }
}

impl<A: Applier> RaftStateMachine<TypeConfig> for StateMachine<A> {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Node>), StorageError<NodeId>> {
        let inner = self.inner.lock().await;
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut inner = self.inner.lock().await;
        let mut replies = Vec::new();
        let mut txns = Vec::new();
        let mut upto = None;
        for entry in entries {
            replies.push(());
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(p) => txns.push((entry.log_id, p)),
                EntryPayload::Membership(m) => {
                    // Txns before a membership change apply before it is recorded.
                    if let Some(u) = upto {
                        let before = std::mem::take(&mut txns);
                        self.on_disk(u).await?;
                        inner.applier.apply(before, u).await.map_err(sm_err)?;
                    }
                    inner.set_membership(StoredMembership::new(Some(entry.log_id), m), false);
                }
            }
            upto = Some(entry.log_id);
            inner.last_applied = upto;
        }
        if let Some(u) = upto {
            self.on_disk(u).await?;
            inner.applier.apply(txns, u).await.map_err(sm_err)?;
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self {
        self.clone()
    }

    /// With a snapshot file, beside it: a snapshot of any size is received chunk by chunk
    /// with no more than a chunk in memory.
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotBuf>, StorageError<NodeId>> {
        let dir = self
            .inner
            .lock()
            .await
            .file
            .as_ref()
            .map(|f| f.dir().to_path_buf());
        match dir {
            Some(d) => SnapshotBuf::receive_in(&d)
                .await
                .map(Box::new)
                .map_err(|e| StorageIOError::write_snapshot(None, AnyError::new(&e)).into()),
            None => Ok(Box::new(SnapshotBuf::memory(Vec::new()))),
        }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<SnapshotBuf>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.into_bytes().await.map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                AnyError::new(&e),
            ))
        })?;
        let mut inner = self.inner.lock().await;
        inner
            .applier
            .install(&data, meta.last_log_id)
            .await
            .map_err(|e| {
                StorageError::from(StorageIOError::read_snapshot(
                    Some(meta.signature()),
                    AnyError::new(&e),
                ))
            })?;
        let data = match inner.file.clone() {
            Some(f) => {
                save(&f, meta, data).await?;
                self.saved(meta.last_log_id);
                None
            }
            None => Some(data),
        };
        inner.last_applied = meta.last_log_id;
        inner.set_membership(meta.last_membership.clone(), true);
        inner.snapshot = Some(Stored {
            meta: meta.clone(),
            data,
        });
        inner.installs += 1;
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        // Not under the lock: reading an image from the file can take a while.
        let (meta, data, file) = {
            let inner = self.inner.lock().await;
            match &inner.snapshot {
                Some(s) => (s.meta.clone(), s.data.clone(), inner.file.clone()),
                None => return Ok(None),
            }
        };
        current(meta, data, file).await.map(Some)
    }
}

impl<A: Applier> RaftSnapshotBuilder<TypeConfig> for StateMachine<A> {
    /// openraft 0.9 treats a failed build as fatal: its core stops, and the member with it
    /// (`command_result.result?` in its notification handler). So a capture that a snapshot
    /// installed meanwhile made worthless (the core drops it), or overtook, answers with the
    /// installed snapshot, which openraft takes as "nothing newer" — only a core that is gone
    /// is an error.
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let failed = |e: io::Error| {
            StorageError::from(StorageIOError::write_snapshot(None, AnyError::new(&e)))
        };
        // The lock is not held while the image is taken: entries go on applying.
        let (pending, installs) = {
            let mut inner = self.inner.lock().await;
            let pending = inner.applier.begin_snapshot().await.map_err(failed)?;
            (pending, inner.installs)
        };
        let taken = pending.await;
        let mut inner = self.inner.lock().await;
        let overtaken = match &taken {
            Ok((_, at)) => inner
                .snapshot
                .as_ref()
                .is_some_and(|s| s.meta.last_log_id > *at),
            Err(_) => false,
        };
        let membership = taken
            .as_ref()
            .ok()
            .and_then(|(_, at)| inner.membership_at(*at));
        if inner.installs != installs || overtaken || (taken.is_ok() && membership.is_none()) {
            if let Some(s) = &inner.snapshot {
                tracing::info!(
                    snapshot = %s.meta.snapshot_id,
                    "a snapshot was installed while one was taken: the installed one stands"
                );
                let (meta, data, file) = (s.meta.clone(), s.data.clone(), inner.file.clone());
                drop(inner);
                return current(meta, data, file).await;
            }
        }
        let (data, at) = taken.map_err(failed)?;
        let Some(last_membership) = membership else {
            return Err(failed(io::Error::other(
                "the membership the snapshot stands at is no longer known",
            )));
        };
        inner.built += 1;
        let snapshot_id = match at {
            Some(l) => format!("{}-{}-{}", l.leader_id, l.index, inner.built),
            None => format!("none-{}", inner.built),
        };
        let meta = SnapshotMeta {
            last_log_id: at,
            last_membership,
            snapshot_id,
        };
        // With a file, the image goes to openraft and the file keeps it: no copy of it on
        // the Raft thread, and none held in memory.
        let (data, kept) = match inner.file.clone() {
            Some(f) => {
                let data = save(&f, &meta, data).await?;
                self.saved(meta.last_log_id);
                (data, None)
            }
            None => (data.clone(), Some(data)),
        };
        inner.snapshot = Some(Stored {
            meta: meta.clone(),
            data: kept,
        });
        Ok(Snapshot {
            meta,
            snapshot: Box::new(SnapshotBuf::memory(data)),
        })
    }
}

/// Saves the snapshot to `file` off the Raft thread; gives the image back.
async fn save(
    file: &SnapshotFile,
    meta: &SnapshotMeta<NodeId, Node>,
    data: Vec<u8>,
) -> Result<Vec<u8>, StorageError<NodeId>> {
    let (saved, back) = file.save_off_thread(meta, data).await;
    saved.map_err(|e| {
        StorageError::from(StorageIOError::write_snapshot(
            Some(meta.signature()),
            AnyError::new(&e),
        ))
    })?;
    Ok(back)
}

/// The current snapshot with its image: the one held, or else the snapshot file's, read off
/// the Raft thread. The file is saved before `Stored` changes, so it holds the stored snapshot
/// or one built since, which is as current.
async fn current(
    meta: SnapshotMeta<NodeId, Node>,
    data: Option<Vec<u8>>,
    file: Option<SnapshotFile>,
) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
    let failed = |e: io::Error| {
        StorageError::from(StorageIOError::read_snapshot(
            Some(meta.signature()),
            AnyError::new(&e),
        ))
    };
    let (meta, data) = match (data, file) {
        (Some(d), _) => (meta.clone(), d),
        (None, Some(f)) => {
            let read = tokio::task::spawn_blocking(move || f.read())
                .await
                .map_err(io::Error::other)
                .and_then(|r| r);
            read.map_err(failed)?
                .ok_or_else(|| failed(io::Error::other("the snapshot file is gone")))?
        }
        (None, None) => {
            return Err(failed(io::Error::other(
                "the snapshot's image was not kept",
            )))
        }
    };
    Ok(Snapshot {
        meta,
        snapshot: Box::new(SnapshotBuf::memory(data)),
    })
}

/// An applier that owns a `State` (tests, and a member before the core is wired in).
#[derive(Default)]
pub struct StateApplier {
    pub state: State,
    /// Where the state stands in the log.
    pub upto: Option<LogId<NodeId>>,
}

impl Applier for StateApplier {
    async fn apply(&mut self, txns: Committed, upto: LogId<NodeId>) -> io::Result<()> {
        let each = txns.iter().flat_map(|(log_id, p)| {
            let one = match p {
                Proposal::Txn(b) => std::slice::from_ref(b),
                Proposal::Txns(batch) => batch.as_slice(),
                // the ensemble's key, digests, restores: the core's business
                Proposal::Key(_) | Proposal::Digest { .. } | Proposal::Restore(_) => &[],
            };
            one.iter().map(move |b| (log_id, b))
        });
        for (log_id, bytes) in each {
            let txn = Txn::decode(bytes.clone(), usize::MAX).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("entry {log_id}: undecodable txn: {e}"),
                )
            })?;
            if txn.header.zxid <= self.state.zxid() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "entry {log_id}: txn zxid {:#x} after {:#x}",
                        txn.header.zxid,
                        self.state.zxid()
                    ),
                ));
            }
            self.state.apply(&txn);
        }
        self.upto = Some(upto);
        Ok(())
    }

    async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
        let image = (image::encode(&self.state), self.upto);
        Ok(Box::pin(std::future::ready(Ok(image))))
    }

    async fn install(&mut self, snapshot: &[u8], at: Option<LogId<NodeId>>) -> io::Result<()> {
        self.state = image::decode(snapshot)?;
        self.upto = at;
        Ok(())
    }
}

/// A proposal of one txn, as the leader's prep hands it to Raft.
pub fn proposal(txn: &Txn) -> Proposal {
    Proposal::Txn(txn.encode())
}

#[cfg(test)]
#[path = "state_machine_test.rs"]
mod tests;
