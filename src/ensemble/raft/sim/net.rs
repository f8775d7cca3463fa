//! The in-memory network of the deterministic-time schedules. A request is a call on the
//! target's `Raft` after a random latency (so messages in flight at once overtake each other),
//! unless the link from the sender is cut or the message is dropped (a lossy spell): then the
//! sender learns nothing until its RPC's timeout, as over a black-holed TCP link
//! (`network.rs`: `RPCError::Timeout`). A target that is down refuses at once (`Unreachable`:
//! openraft backs off). The reply is lost the same way when the link back is cut or dropped
//! (a one-way cut: the request took effect, the sender cannot know) or the target crashed while
//! handling it (a dead process answers nothing, whatever its Raft object still returns). A
//! paused member's messages, both ways, wait until it resumes and are delivered late then (a
//! SIGSTOPped process's socket buffers), though its own timers run on. Every failure costs
//! simulated time: an in-memory call that failed at once would let openraft retry in a loop
//! that never lets the paused clock advance.

use crate::ensemble::raft::types::{NodeId, RpcResult, TypeConfig};
use openraft::error::{
    InstallSnapshotError, RPCError, RaftError, RemoteError, Timeout, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RPCTypes, Raft};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub struct Net {
    /// The members up, each with the life it is in.
    up: Mutex<BTreeMap<NodeId, (Raft<TypeConfig>, u64)>>,
    /// Directed pairs (from, to) whose messages are lost.
    pub cut: Mutex<BTreeSet<(NodeId, NodeId)>>,
    /// Members whose messages wait until they resume.
    pub paused: Mutex<BTreeSet<NodeId>>,
    /// Percent of messages dropped (a lossy spell).
    pub loss: AtomicU64,
    /// The longest one-way latency, in microseconds.
    pub latency_us: AtomicU64,
}

impl Net {
    pub fn up(&self, id: NodeId, raft: Raft<TypeConfig>, life: u64) {
        self.up.lock().insert(id, (raft, life));
    }

    pub fn down(&self, id: NodeId) {
        self.up.lock().remove(&id);
    }

    pub fn rafts(&self) -> Vec<(NodeId, Raft<TypeConfig>)> {
        self.up
            .lock()
            .iter()
            .map(|(id, (r, _))| (*id, r.clone()))
            .collect()
    }

    /// The leader of the highest term among the members up, as each sees itself.
    pub fn leader(&self) -> Option<(NodeId, Raft<TypeConfig>)> {
        self.rafts()
            .into_iter()
            .filter_map(|(id, r)| {
                let m = r.metrics().borrow().clone();
                (m.current_leader == Some(id)).then_some((m.current_term, id, r))
            })
            .max_by_key(|(term, id, _)| (*term, *id))
            .map(|(_, id, r)| (id, r))
    }

    /// Ends every fault of the network.
    pub fn heal(&self) {
        self.cut.lock().clear();
        self.paused.lock().clear();
        self.loss.store(0, Relaxed);
    }

    fn life(&self, id: NodeId) -> Option<u64> {
        self.up.lock().get(&id).map(|(_, l)| *l)
    }

    /// One hop from `from` to `to`: waits out a pause of either end and the latency; false
    /// when the message is lost.
    async fn hop(&self, from: NodeId, to: NodeId) -> bool {
        loop {
            let held = {
                let p = self.paused.lock();
                p.contains(&from) || p.contains(&to)
            };
            if !held {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let max = self.latency_us.load(Relaxed);
        if max > 0 {
            tokio::time::sleep(Duration::from_micros(fastrand::u64(0..=max))).await;
        }
        let loss = self.loss.load(Relaxed);
        !(self.cut.lock().contains(&(from, to)) || (loss > 0 && fastrand::u64(0..100) < loss))
    }
}

#[derive(Clone)]
pub struct Router {
    pub me: NodeId,
    /// The life of `me` this router's Raft is.
    pub life: u64,
    pub net: Arc<Net>,
}

pub struct Link {
    from: NodeId,
    life: u64,
    to: NodeId,
    net: Arc<Net>,
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Link;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Link {
        Link {
            from: self.me,
            life: self.life,
            to: target,
            net: self.net.clone(),
        }
    }
}

/// Why a call failed.
enum Fail {
    Down,
    Lost(Duration),
}

impl Link {
    /// The request's way there: the target and its life, if it gets through.
    async fn there(&self, ttl: Duration) -> Result<(Raft<TypeConfig>, u64), Fail> {
        if self.net.life(self.from) != Some(self.life) {
            // A crashed process sends nothing; its Raft is being shut down.
            return Err(Fail::Lost(ttl));
        }
        let Some(target) = self.net.up.lock().get(&self.to).cloned() else {
            return Err(Fail::Down);
        };
        if self.net.hop(self.from, self.to).await {
            Ok(target)
        } else {
            Err(Fail::Lost(ttl))
        }
    }

    /// The reply's way back: it arrives if the hop holds and the target lives the same life.
    async fn back(&self, life: u64, ttl: Duration) -> Result<(), Fail> {
        if self.net.hop(self.to, self.from).await && self.net.life(self.to) == Some(life) {
            Ok(())
        } else {
            Err(Fail::Lost(ttl))
        }
    }

    /// What the sender sees of a failure, after the time it takes to see it.
    async fn fail<E: std::error::Error>(
        &self,
        f: Fail,
        action: RPCTypes,
    ) -> RPCError<NodeId, BasicNode, E> {
        match f {
            Fail::Down => {
                let e = io::Error::new(io::ErrorKind::ConnectionRefused, "down");
                RPCError::Unreachable(Unreachable::new(&e))
            }
            Fail::Lost(ttl) => {
                tokio::time::sleep(ttl).await;
                RPCError::Timeout(Timeout {
                    action,
                    id: self.from,
                    target: self.to,
                    timeout: ttl,
                })
            }
        }
    }
}

impl Link {
    /// One call: there, `rpc` on the target's Raft, and back; a failure either way is what
    /// the sender sees of it (`fail`).
    async fn call<R, E, F>(
        &self,
        kind: RPCTypes,
        option: RPCOption,
        rpc: impl FnOnce(Raft<TypeConfig>) -> F,
    ) -> Result<R, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        F: Future<Output = Result<R, RaftError<NodeId, E>>>,
        E: std::error::Error,
    {
        let ttl = option.hard_ttl();
        let (raft, life) = match self.there(ttl).await {
            Ok(t) => t,
            Err(f) => return Err(self.fail(f, kind).await),
        };
        let r = rpc(raft).await;
        if let Err(f) = self.back(life, ttl).await {
            return Err(self.fail(f, kind).await);
        }
        r.map_err(|e| RemoteError::new(self.to, e).into())
    }
}

impl RaftNetwork<TypeConfig> for Link {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let kind = RPCTypes::AppendEntries;
        self.call(kind, option, |r| async move { r.append_entries(rpc).await })
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let kind = RPCTypes::InstallSnapshot;
        self.call(
            kind,
            option,
            |r| async move { r.install_snapshot(rpc).await },
        )
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.call(RPCTypes::Vote, option, |r| async move { r.vote(rpc).await })
            .await
    }
}
