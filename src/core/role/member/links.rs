//! A member's links to consensus (`MemberLinks`, handed in by `Core::join`), its Durability
//! (`Proposer`: what its leader preps is proposed), and the core's inbox as the consensus
//! glue sends to it (seam.rs `CoreInbox`).

use crate::core::CoreMsg;
use crate::durability::Durability;
use crate::seam::{
    CommittedBatch, CoreGone, CoreInbox, Forward, Image, LeadershipAsk, LogPos, Notice, Proposed,
    RaftInfo, SyncPoint, ToLeader,
};
use palisade_proto::Txn;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::sync::oneshot;

/// The channels to consensus.
pub struct MemberLinks {
    pub myid: u64,
    /// What `conf` adds for a member (serverId, limits, membership), from members.rs.
    pub conf: String,
    pub info: std::sync::Arc<parking_lot::Mutex<RaftInfo>>,
    pub propose: UnboundedSender<Vec<Proposed>>,
    /// Bounded (limits.rs `FORWARD_QUEUE`): sent with `try_send`, never waited on.
    pub to_leader: mpsc::Sender<ToLeader>,
    /// Asks Raft for a snapshot: every snapCount/2..snapCount applied txns (randomised, as
    /// ZooKeeper does, so that members do not snapshot together) and on `csnp`. Raft's own
    /// policy counts entries, and an entry holds a whole batch. Bounded
    /// (`RAFT_SNAPSHOT_ASKS`): full means an ask is on its way.
    pub snapshot: mpsc::Sender<()>,
    pub snap_count: u64,
    /// readonlymode.enabled: how long this member must be without a quorum before it serves
    /// read-only clients (ZooKeeper's max(2 s, tickTime)); None: never.
    pub read_only: Option<std::time::Duration>,
    /// zoo.cfg's server.N lines: the configuration until one is committed (reconfig.rs).
    pub members: Vec<crate::membership::members::Member>,
    /// This member's configuration, for Raft's side to bring the membership to (its leader).
    pub desired: tokio::sync::watch::Sender<std::sync::Arc<crate::membership::dynamic::DynConfig>>,
    /// `ydld` and `rqld`, to the Raft side.
    pub leadership: UnboundedSender<LeadershipAsk>,
    /// `--force-new-ensemble`: the first ready leadership commits a configuration of this
    /// member alone (core/reconfig.rs `commit_alone_config`).
    pub alone: bool,
}

/// What became of forwards handed to the forwarder.
pub(super) enum Handed {
    Sent,
    /// Its queue is full (a leader that does not answer): here they are back.
    Full(Vec<Forward>),
    /// The forwarder is gone (shutting down).
    Gone,
}

impl MemberLinks {
    /// Hands forwards to the forwarder without waiting (`FORWARD_QUEUE` bounds it).
    pub(super) fn hand_forwards(&self, ops: Vec<Forward>) -> Handed {
        match self.to_leader.try_send(ToLeader::Forward(ops)) {
            Ok(()) => Handed::Sent,
            Err(mpsc::error::TrySendError::Full(ToLeader::Forward(ops))) => Handed::Full(ops),
            Err(_) => Handed::Gone,
        }
    }

    /// Asks Raft for a snapshot; false when the Raft side is gone. A full queue means an ask
    /// is on its way, which this one joins.
    pub(super) fn ask_snapshot(&self) -> bool {
        !matches!(
            self.snapshot.try_send(()),
            Err(mpsc::error::TrySendError::Closed(_))
        )
    }
}

/// The Durability of a member: prepped txns are proposed, one batch per core turn. Digest
/// records are not logged: every member applies the same entries (the digests in Raft
/// snapshots are checked at install).
pub struct Proposer {
    tx: UnboundedSender<Vec<Proposed>>,
    queued: Vec<Proposed>,
}

impl Proposer {
    pub fn new(tx: UnboundedSender<Vec<Proposed>>) -> Self {
        Proposer {
            tx,
            queued: Vec::new(),
        }
    }
}

impl Durability for Proposer {
    fn append(&mut self, txn: &Txn) {
        self.queued.push(Proposed::Txn(txn.encode()));
    }
    fn digest(&mut self, _zxid: i64, _digest: u64) {}
    fn flush(&mut self) {
        if !self.queued.is_empty() && self.tx.send(std::mem::take(&mut self.queued)).is_err() {
            tracing::error!("consensus is gone; writes cannot be committed");
        }
    }
}

/// The core's inbox as the consensus glue sends to it (seam.rs): each call becomes its
/// `CoreMsg`, a request paired here with the one-shot channel its answer comes back on.
impl CoreInbox for mpsc::Sender<CoreMsg> {
    type Answer<T: Send + 'static> = Answer<T>;

    async fn tell(&self, n: Notice) -> Result<(), CoreGone> {
        self.send(notice(n)).await.map_err(|_| CoreGone)
    }

    fn try_tell(&self, n: Notice) -> bool {
        self.try_send(notice(n)).is_ok()
    }

    async fn committed(&self, batch: CommittedBatch) -> Result<Answer<()>, CoreGone> {
        let (ack, done) = oneshot::channel();
        let CommittedBatch {
            items,
            at,
            log_bytes,
        } = batch;
        let m = CoreMsg::Committed {
            items,
            at,
            log_bytes,
            ack,
        };
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(done))
    }

    async fn image(&self) -> Result<Answer<Image>, CoreGone> {
        let (tx, rx) = oneshot::channel();
        self.send(CoreMsg::Image(tx)).await.map_err(|_| CoreGone)?;
        Ok(Answer(rx))
    }

    async fn install(
        &self,
        image: Vec<u8>,
        at: Option<LogPos>,
    ) -> Result<Answer<Result<(), String>>, CoreGone> {
        let (ack, done) = oneshot::channel();
        let m = CoreMsg::Install { image, at, ack };
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(done))
    }

    async fn forwarded(
        &self,
        ops: Vec<Forward>,
    ) -> Result<Answer<Option<Vec<SyncPoint>>>, CoreGone> {
        let (tx, rx) = oneshot::channel();
        let m = CoreMsg::Forwarded(ops, Some(tx));
        self.send(m).await.map_err(|_| CoreGone)?;
        Ok(Answer(rx))
    }
}

fn notice(n: Notice) -> CoreMsg {
    match n {
        Notice::Role(v) => CoreMsg::Role(v),
        Notice::SyncPoints(p) => CoreMsg::SyncPoints(p),
        Notice::Touched(ids) => CoreMsg::Touched(ids),
        Notice::ForwardFailed(f) => CoreMsg::ForwardFailed(f),
        Notice::Shutdown => CoreMsg::Shutdown,
    }
}

/// The core's answer to a request of the glue: `CoreGone` if it dropped the request.
pub struct Answer<T>(oneshot::Receiver<T>);

impl<T> Future for Answer<T> {
    type Output = Result<T, CoreGone>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map_err(|_| CoreGone)
    }
}
