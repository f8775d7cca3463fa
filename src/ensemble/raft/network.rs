//! Raft's three RPCs and the ensemble's own calls between members, over the authenticated
//! links of `ensemble/link/`: one frame each way per call, a u32 big-endian length, then the
//! postcard encoding. openraft opens one client per target and awaits each call before the
//! next, so a link carries one call at a time and needs no request ids. A failed call drops
//! the link; the next call makes another. A link's handshake runs on a task of its own, so a
//! call that times out while the link is being made leaves it to finish for the next call.
//!
//! A link speaks only as the member it proved to be: a vote, append or snapshot whose vote
//! names another candidate or leader, a join for another id, or anything but a join from a
//! server no configuration names closes it (`serve_link`).

use super::durable::Durable;
use super::peer::vote_ok;
use super::types::{NodeId, TypeConfig};
use crate::ensemble::link::{self, read_frame, write_frame, Directory, Link, Peer, Security};
use crate::limits::{PEER_APPEND_BYTES, PEER_FRAME};
use crate::seam::{Forward, SyncPoint};
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError, Timeout,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftMetrics};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Serialize, Deserialize)]
pub enum PeerRequest {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<TypeConfig>),
    /// A follower's clients' writes, for the leader to prep.
    Forward(Vec<Forward>),
    /// Sessions alive on a follower (its clients' pings, in one message a tick).
    Touch(Vec<(i64, u64)>),
    /// A member not yet in the ensemble (reconfigEnabled) asks to be replicated to
    /// (raft/join.rs): its id and peer address.
    Join {
        id: NodeId,
        addr: String,
    },
    /// The leader of `term` tells this member to campaign: it hands over (raft/transfer.rs).
    Elect {
        term: u64,
    },
    /// A member asks the leader to hand over to it (`rqld`).
    Transfer {
        to: NodeId,
    },
}

type SnapshotResult =
    Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>;

#[derive(Debug, Serialize, Deserialize)]
pub enum PeerResponse {
    Append(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    Snapshot(SnapshotResult),
    /// The points of the forwarded syncs (None: this member does not lead).
    Forward(Option<Vec<SyncPoint>>),
    Touch,
    Join(JoinReply),
    /// Whether the campaign will be made / the hand-over begun.
    Elect(bool),
    Transfer(bool),
}

/// What a member answers a server asking to join (raft/join.rs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JoinReply {
    /// This member has formed no ensemble yet.
    NotFormed,
    /// The asker is in this member's membership already: the leader replicates to it.
    Member,
    /// This member leads and has made the asker a learner.
    Added,
    /// Ask the leader, here.
    Leader { id: NodeId, addr: String },
    /// Formed, but no leader is known (or joining is off): ask again later.
    Later,
}

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

fn entry_bytes(e: &openraft::Entry<TypeConfig>) -> usize {
    use super::types::Proposal;
    match &e.payload {
        openraft::EntryPayload::Normal(Proposal::Txn(b)) => b.len(),
        openraft::EntryPayload::Normal(Proposal::Txns(t)) => t.iter().map(|b| b.len()).sum(),
        _ => 0,
    }
}

/// How many of `entries` fit in `PEER_APPEND_BYTES` (at least one), if not all do.
pub fn too_many(entries: &[openraft::Entry<TypeConfig>]) -> Option<u64> {
    let mut bytes = 0usize;
    for (i, e) in entries.iter().enumerate() {
        bytes = bytes.saturating_add(entry_bytes(e));
        if bytes > PEER_APPEND_BYTES && i > 0 {
            return Some(i as u64);
        }
    }
    None
}

/// When each member last answered a call (the leader's heartbeats keep it fresh): who is
/// in touch, for a reconfig's synced-quorum check.
pub type Contacts = Arc<parking_lot::Mutex<std::collections::BTreeMap<NodeId, std::time::Instant>>>;

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
        PeerClient::new(self, target, addr)
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

/// A client's link to its member.
enum LinkState {
    Down,
    /// Its handshake runs on a task of its own: a call that times out meanwhile leaves it to
    /// finish for the next call (a handshake can take longer than a heartbeat's call).
    Dialing(Dialing),
    Up(Link),
}

/// The task making a link; aborted if the client goes first.
struct Dialing(tokio::task::JoinHandle<io::Result<(Link, bool)>>);

impl Drop for Dialing {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub struct PeerClient {
    me: NodeId,
    target: NodeId,
    addr: String,
    /// The member's previous address while it moves (`Network::moved_from`).
    moved_from: Option<String>,
    link: LinkState,
    retry: Duration,
    /// The member could not be reached at the last try (logged once, and once when back).
    down: bool,
    contacts: Option<Contacts>,
    durable: Option<Durable>,
    security: Arc<Security>,
}

enum CallError {
    /// Could not connect: openraft backs off before the next try.
    Unreachable(io::Error),
    /// The link failed mid-call.
    Network(io::Error),
    Timeout(Duration),
}

impl CallError {
    fn into_io(self) -> io::Error {
        match self {
            CallError::Unreachable(e) | CallError::Network(e) => e,
            CallError::Timeout(t) => io::Error::new(io::ErrorKind::TimedOut, format!("{t:?}")),
        }
    }
}

/// Makes a link to `target` at `addr`, or at `old` (its address before a move) if `addr`
/// cannot be reached; `true` when it was `addr`.
async fn dial(
    addr: String,
    old: Option<String>,
    target: NodeId,
    sec: Arc<Security>,
) -> io::Result<(Link, bool)> {
    match link::dial(&addr, target, &sec).await {
        Ok(l) => Ok((l, true)),
        Err(e) => match old {
            Some(old) if e.kind() != io::ErrorKind::PermissionDenied => {
                let l = link::dial(&old, target, &sec).await.map_err(|_| e)?;
                tracing::info!(member = target, new = %addr, %old, "member not yet at its new address: reached at its previous one");
                Ok((l, false))
            }
            _ => Err(e),
        },
    }
}

impl PeerClient {
    /// A link to the member at `addr` (made at the first call), secured as `network`'s.
    pub fn new(network: &Network, target: NodeId, addr: String) -> Self {
        PeerClient {
            me: network.me,
            target,
            addr,
            moved_from: None,
            link: LinkState::Down,
            retry: crate::limits::PEER_RETRY,
            down: false,
            contacts: None,
            durable: None,
            security: network.security.clone(),
        }
    }

    pub fn target(&self) -> NodeId {
        self.target
    }

    /// Hands forwarded writes to the member, which must lead: Ok(None) if it does not.
    pub async fn forward(
        &mut self,
        ops: Vec<Forward>,
        ttl: Duration,
    ) -> io::Result<Option<Vec<SyncPoint>>> {
        match self.call(PeerRequest::Forward(ops), ttl).await {
            Ok(PeerResponse::Forward(ok)) => Ok(ok),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply of another kind",
            )),
            Err(e) => Err(e.into_io()),
        }
    }

    /// Where this client reaches its member.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Asks the member to let this server join (raft/join.rs).
    pub async fn join(&mut self, id: NodeId, addr: String, ttl: Duration) -> io::Result<JoinReply> {
        match self.call(PeerRequest::Join { id, addr }, ttl).await {
            Ok(PeerResponse::Join(r)) => Ok(r),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply of another kind",
            )),
            Err(e) => Err(e.into_io()),
        }
    }

    /// Any call, its reply as sent.
    pub async fn call_for(&mut self, req: PeerRequest, ttl: Duration) -> io::Result<PeerResponse> {
        self.call(req, ttl).await.map_err(CallError::into_io)
    }

    pub async fn touch(&mut self, ids: Vec<(i64, u64)>, ttl: Duration) -> io::Result<()> {
        match self.call(PeerRequest::Touch(ids), ttl).await {
            Ok(_) => Ok(()),
            Err(e) => Err(e.into_io()),
        }
    }

    async fn call(&mut self, req: PeerRequest, ttl: Duration) -> Result<PeerResponse, CallError> {
        let r = tokio::time::timeout(ttl, self.call_inner(req)).await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout(ttl)),
        };
        match &r {
            // A link being made is left to finish; one that was mid-call is unusable.
            Err(_) if matches!(self.link, LinkState::Up(_)) => self.link = LinkState::Down,
            Err(_) => {}
            Ok(_) => {
                if let Some(c) = &self.contacts {
                    c.lock().insert(self.target, std::time::Instant::now());
                }
            }
        }
        r
    }

    async fn call_inner(&mut self, req: PeerRequest) -> Result<PeerResponse, CallError> {
        loop {
            match &mut self.link {
                LinkState::Up(link) => {
                    write_frame(link.get_mut(), &req, PEER_FRAME)
                        .await
                        .map_err(CallError::Network)?;
                    return match read_frame(link, PEER_FRAME, self.security.budget()).await {
                        Ok(Some(r)) => Ok(r),
                        Ok(None) => Err(CallError::Network(io::ErrorKind::UnexpectedEof.into())),
                        Err(e) => Err(CallError::Network(e)),
                    };
                }
                LinkState::Dialing(task) => {
                    let made = (&mut task.0).await;
                    match made {
                        Ok(Ok((link, new_addr))) => {
                            if new_addr {
                                self.moved_from = None;
                            }
                            if self.down {
                                tracing::info!(member = self.target, addr = %self.addr, "member reachable again");
                                self.down = false;
                            }
                            self.link = LinkState::Up(link);
                        }
                        Ok(Err(e)) => {
                            self.link = LinkState::Down;
                            if !self.down {
                                tracing::warn!(member = self.target, addr = %self.addr, error = %e, "member unreachable");
                                self.down = true;
                            }
                            return Err(CallError::Unreachable(e));
                        }
                        Err(e) => {
                            self.link = LinkState::Down;
                            return Err(CallError::Unreachable(io::Error::other(e)));
                        }
                    }
                }
                LinkState::Down => {
                    let task = tokio::spawn(dial(
                        self.addr.clone(),
                        self.moved_from.clone(),
                        self.target,
                        self.security.clone(),
                    ));
                    self.link = LinkState::Dialing(Dialing(task));
                }
            }
        }
    }

    fn rpc_error<E: std::error::Error>(
        &self,
        e: CallError,
        action: RPCTypes,
    ) -> RPCError<NodeId, BasicNode, E> {
        match e {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
            CallError::Timeout(timeout) => RPCError::Timeout(Timeout {
                action,
                id: self.me,
                target: self.target,
                timeout,
            }),
        }
    }

    /// A reply of another kind, or one whose vote no member could hold (its term past what a
    /// zxid carries: openraft would adopt it and overflow).
    fn mismatch<E: std::error::Error>(&self) -> RPCError<NodeId, BasicNode, E> {
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            "reply of another kind, or a term past the largest",
        );
        RPCError::Network(NetworkError::new(&e))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    /// One retry interval for the first tries (a member back from a restart hears from the
    /// leader well within the lease), then 200 ms: still inside the time a restarted member
    /// waits before it campaigns (lease + election timeout), and few connects to a dead one.
    fn backoff(&self) -> Backoff {
        let later = crate::limits::PEER_RETRY_LATER.max(self.retry);
        Backoff::new(std::iter::repeat_n(self.retry, 8).chain(std::iter::repeat(later)))
    }

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        if let Some(fit) = too_many(&rpc.entries) {
            // openraft sends this many next time (for a few calls), then tries more again.
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(fit),
            ));
        }
        let sent = std::time::Instant::now();
        let upto = rpc.entries.last().map(|e| e.log_id).or(rpc.prev_log_id);
        let r = match self.call(PeerRequest::Append(rpc), option.hard_ttl()).await {
            Ok(PeerResponse::Append(r)) => r.map_err(|e| RemoteError::new(self.target, e))?,
            Ok(_) => return Err(self.mismatch()),
            Err(e) => return Err(self.rpc_error(e, RPCTypes::AppendEntries)),
        };
        if let AppendEntriesResponse::HigherVote(v) = &r {
            if !vote_ok(v) {
                return Err(self.mismatch());
            }
        }
        // The follower matches the leader up to `upto`: openraft counts that toward a commit
        // once the leader's own copy is on disk as well.
        let matched = match &r {
            AppendEntriesResponse::Success => upto,
            AppendEntriesResponse::PartialSuccess(m) => *m,
            _ => return Ok(r),
        };
        if let Some(d) = &self.durable {
            let left = option.hard_ttl().saturating_sub(sent.elapsed());
            if let Err(e) = d.reach(matched, left).await {
                return Err(if e.kind() == io::ErrorKind::TimedOut {
                    self.rpc_error(
                        CallError::Timeout(option.hard_ttl()),
                        RPCTypes::AppendEntries,
                    )
                } else {
                    RPCError::Network(NetworkError::new(&e))
                });
            }
        }
        Ok(r)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        match self
            .call(PeerRequest::Snapshot(rpc), option.hard_ttl())
            .await
        {
            Ok(PeerResponse::Snapshot(Ok(r))) if !vote_ok(&r.vote) => Err(self.mismatch()),
            Ok(PeerResponse::Snapshot(r)) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            Ok(_) => Err(self.mismatch()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::InstallSnapshot)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        match self.call(PeerRequest::Vote(rpc), option.hard_ttl()).await {
            Ok(PeerResponse::Vote(Ok(r))) if !vote_ok(&r.vote) => Err(self.mismatch()),
            Ok(PeerResponse::Vote(r)) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            Ok(_) => Err(self.mismatch()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::Vote)),
        }
    }
}

#[cfg(test)]
#[path = "network_test.rs"]
mod tests;
