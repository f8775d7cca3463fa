//! Raft's three RPCs and the ensemble's own calls between members, over the authenticated
//! links of `ensemble/link/`: one frame each way per call, a u32 big-endian length, then the
//! postcard encoding. openraft opens one client per target and awaits each call before the
//! next, so a link carries one call at a time and needs no request ids. A failed call drops
//! the link; the next call makes another. A link's handshake runs on a task of its own, so a
//! call that times out while the link is being made leaves it to finish for the next call.
//!
//! A link speaks only as the member it proved to be: a vote, append or snapshot whose vote
//! names another candidate or leader, a join for another id, or anything but a join from a
//! server no configuration names closes it (`serve_link`). The calling side, one member's
//! client of another, is `peer_client.rs`.

pub use super::peer_client::PeerClient;
use super::peer_client::{Contacts, LinkState};
use super::rpc::{JoinReply, PeerRequest, PeerResponse, SnapshotResult};

use super::durable::Durable;
use super::types::{NodeId, TypeConfig};
use crate::ensemble::link::{self, read_frame, write_frame, Directory, Link, Peer, Security};
use crate::limits::PEER_FRAME;
use crate::seam::{Forward, SyncPoint};
use openraft::error::RaftError;
use openraft::network::RaftNetworkFactory;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftMetrics};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What answers a peer's calls: the local Raft (below), or a test's stand-in. `from` is the
/// member the link proved to be.
pub trait PeerHandler: Send + Sync + 'static {
    fn append(
        &self,
        from: NodeId,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> impl Future<Output = Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> + Send;
    fn vote(
        &self,
        from: NodeId,
        r: VoteRequest<NodeId>,
    ) -> impl Future<Output = Result<VoteResponse<NodeId>, RaftError<NodeId>>> + Send;
    fn snapshot(
        &self,
        from: NodeId,
        r: InstallSnapshotRequest<TypeConfig>,
    ) -> impl Future<Output = SnapshotResult> + Send;
    /// Forwarded writes; the points of their syncs when this member leads and took them.
    fn forward(
        &self,
        _from: NodeId,
        _ops: Vec<Forward>,
    ) -> impl Future<Output = Option<Vec<SyncPoint>>> + Send {
        async { None }
    }
    fn touch(&self, _from: NodeId, _sessions: Vec<(i64, u64)>) -> impl Future<Output = ()> + Send {
        async {}
    }
    fn join(&self, _id: NodeId, _addr: String) -> impl Future<Output = JoinReply> + Send {
        async { JoinReply::Later }
    }
    fn elect(&self, _from: NodeId, _term: u64) -> impl Future<Output = bool> + Send {
        async { false }
    }
    fn transfer(&self, _to: NodeId) -> impl Future<Output = bool> + Send {
        async { false }
    }
    /// Looked at before a call is answered: an error closes the link, and the call changes
    /// nothing (raft/peer.rs: terms, entries, snapshot chunks).
    fn admit(&self, _from: NodeId, _req: &PeerRequest) -> Result<(), String> {
        Ok(())
    }
}

impl PeerHandler for openraft::Raft<TypeConfig> {
    async fn append(
        &self,
        _from: NodeId,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        self.append_entries(r).await
    }
    async fn vote(
        &self,
        _from: NodeId,
        r: VoteRequest<NodeId>,
    ) -> Result<VoteResponse<NodeId>, RaftError<NodeId>> {
        openraft::Raft::vote(self, r).await
    }
    async fn snapshot(
        &self,
        _from: NodeId,
        r: InstallSnapshotRequest<TypeConfig>,
    ) -> SnapshotResult {
        self.install_snapshot(r).await
    }
}

/// Answers peers' calls until `cancel`, on links that proved which member they come from
/// (`network`'s security and directory). A link that sends garbage, or speaks for another
/// member than it proved to be, is closed; others go on.
pub async fn serve<H: PeerHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    network: &Network,
    cancel: CancellationToken,
) {
    let sec = network.security.clone();
    let budget = sec.budget().clone();
    let dir: Arc<dyn Directory> = Arc::new(network.clone());
    link::listen(listener, sec, dir, cancel, move |link, peer| {
        let handler = handler.clone();
        let budget = budget.clone();
        async move {
            let id = peer.id;
            if let Err(e) = serve_link(link, &peer, &*handler, &budget).await {
                tracing::warn!(member = id, error = %e, "peer link closed");
            }
        }
    })
    .await
}

/// The candidate or leader a vote names.
fn speaker(v: &openraft::Vote<NodeId>) -> Option<NodeId> {
    v.leader_id().voted_for()
}

fn not_as(peer: &Peer, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("member {} sent {what}", peer.id),
    )
}

async fn serve_link<H: PeerHandler>(
    mut link: Link,
    peer: &Peer,
    handler: &H,
    budget: &link::FrameBudget,
) -> io::Result<()> {
    let from = peer.id;
    while let Some(req) = read_frame::<_, PeerRequest>(&mut link, PEER_FRAME, budget).await? {
        if peer.joiner && !matches!(req, PeerRequest::Join { .. }) {
            return Err(not_as(
                peer,
                "a call other than a join before it is a member",
            ));
        }
        if let Err(why) = handler.admit(from, &req) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("member {from}: {why}"),
            ));
        }
        let resp = match req {
            PeerRequest::Append(r) if speaker(&r.vote) == Some(from) => {
                PeerResponse::Append(handler.append(from, r).await)
            }
            PeerRequest::Vote(r) if speaker(&r.vote) == Some(from) => {
                PeerResponse::Vote(handler.vote(from, r).await)
            }
            PeerRequest::Snapshot(r) if speaker(&r.vote) == Some(from) => {
                PeerResponse::Snapshot(handler.snapshot(from, r).await)
            }
            PeerRequest::Append(_) | PeerRequest::Vote(_) | PeerRequest::Snapshot(_) => {
                return Err(not_as(peer, "a vote naming another member"));
            }
            PeerRequest::Forward(ops) => PeerResponse::Forward(handler.forward(from, ops).await),
            PeerRequest::Touch(ids) => {
                handler.touch(from, ids).await;
                PeerResponse::Touch
            }
            PeerRequest::Join { id, addr } if id == from && (!peer.joiner || addr == peer.addr) => {
                PeerResponse::Join(handler.join(id, addr).await)
            }
            PeerRequest::Join { .. } => {
                return Err(not_as(peer, "a join for another id or another address"))
            }
            PeerRequest::Elect { term } => PeerResponse::Elect(handler.elect(from, term).await),
            PeerRequest::Transfer { to } if to == from => {
                PeerResponse::Transfer(handler.transfer(to).await)
            }
            PeerRequest::Transfer { .. } => {
                return Err(not_as(peer, "a hand-over to another member"))
            }
        };
        write_frame(link.get_mut(), &resp, PEER_FRAME).await?;
    }
    Ok(())
}

/// Makes one [`PeerClient`] per target, as openraft asks.
#[derive(Clone)]
pub struct Network {
    /// The local member's id, for openraft's timeout errors.
    pub me: NodeId,
    /// How long openraft waits before it calls an unreachable member again, for the first
    /// few tries. Its default (500 ms) outlasts the lease: a member back from a restart would
    /// hear nothing for that long and campaign, unseating a healthy leader.
    pub retry: Duration,
    pub contacts: Contacts,
    /// Where this member reaches each other member: its own zoo.cfg's `server.N` lines, then
    /// (reconfigEnabled) the committed configuration's (`Network::follow`).
    pub addrs: Arc<parking_lot::RwLock<BTreeMap<NodeId, String>>>,
    /// A member's address before a configuration moved it: tried when the new one refuses,
    /// until the new one has answered once. The leader follows a move as soon as the
    /// reconfig is committed, but the moved member listens at the new address only once it
    /// has applied it, and it learns the commit from the leader: without the old address
    /// it would never hear of it.
    pub moved_from: Arc<parking_lot::RwLock<BTreeMap<NodeId, String>>>,
    /// This member's log on disk: a follower's acknowledgement is handed to openraft only
    /// once it is on disk here too (`durable.rs`). None: tests whose log is never early.
    pub durable: Option<Durable>,
    /// How this member's links prove who they are (quorum TLS, quorum SASL, or its address).
    pub security: Arc<Security>,
    /// Members openraft has made a client for (the membership's, learners included), at the
    /// address it gave: a server a reconfig or a join added, which no zoo.cfg line names.
    pub known: Arc<parking_lot::RwLock<BTreeMap<NodeId, String>>>,
    /// reconfigEnabled: a server no configuration names may link to ask to join.
    pub joiners: bool,
    /// The local Raft's metrics, once it runs: its membership names members too.
    membership:
        Arc<std::sync::OnceLock<tokio::sync::watch::Receiver<RaftMetrics<NodeId, BasicNode>>>>,
}

impl Network {
    /// A member whose links carry no credential (each proves its address).
    pub fn new(me: NodeId, retry: Duration) -> Network {
        Network {
            me,
            retry,
            contacts: Contacts::default(),
            addrs: Default::default(),
            moved_from: Default::default(),
            durable: None,
            security: Security::plain(me),
            known: Default::default(),
            joiners: false,
            membership: Default::default(),
        }
    }

    /// Lets the links accept the members `raft`'s membership names (learners a join or a
    /// reconfig added, at the address the membership gives).
    pub fn watch_membership(&self, raft: &openraft::Raft<TypeConfig>) {
        let _ = self.membership.set(raft.metrics());
    }

    /// Links secured as `security` says (its id must be this member's).
    pub fn with_security(mut self, security: Arc<Security>) -> Network {
        debug_assert_eq!(security.me(), self.me);
        self.security = security;
        self
    }

    /// Lets a server no configuration names link to ask to join (reconfigEnabled).
    pub fn with_joiners(mut self, joiners: bool) -> Network {
        self.joiners = joiners;
        self
    }

    /// A client for calls of the ensemble's own (forwards, touches, joins) to `target`.
    pub fn client(&self, target: NodeId, addr: String) -> PeerClient {
        PeerClient::new(self.me, self.security.clone(), target, addr)
    }

    /// Holds back followers' acknowledgements until `durable` reaches them.
    pub fn with_durable(mut self, durable: Durable) -> Network {
        self.durable = Some(durable);
        self
    }

    /// Reaches the members named here at these addresses, whatever the Raft membership says.
    pub fn with_addrs(mut self, addrs: BTreeMap<NodeId, String>) -> Network {
        self.addrs = Arc::new(parking_lot::RwLock::new(addrs));
        self
    }

    /// With reconfigEnabled, a committed configuration's addresses replace zoo.cfg's for the
    /// members it names, as ZooKeeper's dynamic configuration replaces its static one (a
    /// reconfig may move a member, or add one no zoo.cfg names). Links made from now on use
    /// them; openraft makes its replication links anew at every membership change.
    pub fn follow(&self, config: impl IntoIterator<Item = (NodeId, String)>) {
        let mut addrs = self.addrs.write();
        let mut moved = self.moved_from.write();
        for (id, addr) in config {
            match addrs.insert(id, addr.clone()) {
                Some(old) if old != addr => {
                    moved.insert(id, old);
                }
                _ => {}
            }
        }
    }

    /// The address of `target`: the local configuration's, as ZooKeeper reads each member's
    /// from its own zoo.cfg, else the one the membership carries. The membership's addresses
    /// are those of the member that formed the ensemble (or of a snapshot's sender), which
    /// need not be how this member reaches them (a proxy, another network, another name).
    pub fn addr_of(&self, target: NodeId, node: &BasicNode) -> String {
        self.addrs
            .read()
            .get(&target)
            .cloned()
            .unwrap_or_else(|| node.addr.clone())
    }
}

impl Directory for Network {
    fn addr_of(&self, id: u64) -> Option<String> {
        let configured = self.addrs.read().get(&id).cloned();
        configured
            .or_else(|| self.known.read().get(&id).cloned())
            .or_else(|| {
                let m = self.membership.get()?.borrow();
                let node = m.membership_config.membership().get_node(&id)?;
                Some(node.addr.clone())
            })
    }

    fn open_to_joiners(&self) -> bool {
        self.joiners
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        self.known.write().insert(target, node.addr.clone());
        let addr = Network::addr_of(self, target, node);
        let moved_from = self
            .moved_from
            .read()
            .get(&target)
            .filter(|old| **old != addr)
            .cloned();
        PeerClient {
            me: self.me,
            target,
            addr,
            moved_from,
            link: LinkState::Down,
            retry: self.retry,
            down: false,
            contacts: Some(self.contacts.clone()),
            durable: self.durable.clone(),
            security: self.security.clone(),
        }
    }
}

#[cfg(test)]
#[path = "network_test.rs"]
mod tests;
