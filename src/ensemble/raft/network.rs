//! The peer links: Raft's three RPCs between members over TCP, one frame each way per call:
//! a u32 big-endian length, then the postcard encoding. openraft opens one client per target
//! and awaits each call before the next, so a link carries one call at a time and needs no
//! request ids. A failed or timed-out call drops the connection; the next call reconnects.
//!
//! The peer port is not a client port, but it is a listening socket all the same: a frame's
//! announced length is bounded and its buffer grows only as bytes arrive.

use super::durable::Durable;
use super::types::{NodeId, TypeConfig};
use crate::core::member::{Forward, SyncPoint};
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError, Timeout,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The largest frame either side accepts: a batch of entries or a snapshot chunk (openraft's
/// default chunk is 3 MiB) with room to spare.
pub const MAX_PEER_FRAME: u32 = 64 << 20;

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
    /// (raft/reconfig.rs): its id and peer address.
    Join {
        id: NodeId,
        addr: String,
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
}

/// What a member answers a server asking to join (raft/reconfig.rs).
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

/// What answers a peer's calls: the local Raft (below), or a test's stand-in.
pub trait PeerHandler: Send + Sync + 'static {
    fn append(
        &self,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> impl Future<Output = Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> + Send;
    fn vote(
        &self,
        r: VoteRequest<NodeId>,
    ) -> impl Future<Output = Result<VoteResponse<NodeId>, RaftError<NodeId>>> + Send;
    fn snapshot(
        &self,
        r: InstallSnapshotRequest<TypeConfig>,
    ) -> impl Future<Output = SnapshotResult> + Send;
    /// Forwarded writes; the points of their syncs when this member leads and took them.
    fn forward(&self, _ops: Vec<Forward>) -> impl Future<Output = Option<Vec<SyncPoint>>> + Send {
        async { None }
    }
    fn touch(&self, _sessions: Vec<(i64, u64)>) -> impl Future<Output = ()> + Send {
        async {}
    }
    fn join(&self, _id: NodeId, _addr: String) -> impl Future<Output = JoinReply> + Send {
        async { JoinReply::Later }
    }
}

impl PeerHandler for openraft::Raft<TypeConfig> {
    async fn append(
        &self,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        self.append_entries(r).await
    }
    async fn vote(
        &self,
        r: VoteRequest<NodeId>,
    ) -> Result<VoteResponse<NodeId>, RaftError<NodeId>> {
        openraft::Raft::vote(self, r).await
    }
    async fn snapshot(&self, r: InstallSnapshotRequest<TypeConfig>) -> SnapshotResult {
        self.install_snapshot(r).await
    }
}

async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, msg: &T) -> io::Result<()> {
    // The body is encoded behind room for its length, which is then filled in: one buffer,
    // one write, no copy of a body that can hold a 1 MiB batch.
    let mut buf = postcard::to_extend(msg, vec![0u8; 4]).map_err(io::Error::other)?;
    let body = buf.len().saturating_sub(4);
    let len = u32::try_from(body)
        .ok()
        .filter(|l| *l <= MAX_PEER_FRAME)
        .ok_or_else(|| io::Error::other(format!("frame of {body} bytes too large")))?;
    if let Some(head) = buf.first_chunk_mut::<4>() {
        *head = len.to_be_bytes();
    }
    w.write_all(&buf).await?;
    w.flush().await
}

/// What a frame's announced length may reserve before its bytes arrive.
const FRAME_RESERVE: usize = 64 << 10;

/// Reads one frame. `Ok(None)`: the peer closed the link between frames. Links are read
/// through a `BufReader`, so a frame's length and a small body come in one read call.
async fn read_frame<R: AsyncRead + Unpin, T: for<'a> Deserialize<'a>>(
    r: &mut R,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_PEER_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("peer frame of {len} bytes announced (max {MAX_PEER_FRAME})"),
        ));
    }
    // An announced length reserves at most FRAME_RESERVE; a larger body grows with what
    // arrives. (From nothing, the buffer grew 32, 64, 128… bytes, one read call each: five
    // calls for a one-entry append.)
    let mut body = Vec::with_capacity((len as usize).min(FRAME_RESERVE));
    let got = r.take(u64::from(len)).read_to_end(&mut body).await?;
    if got != len as usize {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    postcard::from_bytes(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Answers peers' calls until `cancel`. A link that sends garbage is closed; others go on.
pub async fn serve<H: PeerHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    cancel: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "peer accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = serve_link(stream, &*handler) => if let Err(e) = r {
                    tracing::warn!(%peer, error = %e, "peer link closed");
                },
            }
        });
    }
}

async fn serve_link<H: PeerHandler>(stream: TcpStream, handler: &H) -> io::Result<()> {
    let mut stream = BufReader::new(stream);
    while let Some(req) = read_frame::<_, PeerRequest>(&mut stream).await? {
        let resp = match req {
            PeerRequest::Append(r) => PeerResponse::Append(handler.append(r).await),
            PeerRequest::Vote(r) => PeerResponse::Vote(handler.vote(r).await),
            PeerRequest::Snapshot(r) => PeerResponse::Snapshot(handler.snapshot(r).await),
            PeerRequest::Forward(ops) => PeerResponse::Forward(handler.forward(ops).await),
            PeerRequest::Touch(ids) => {
                handler.touch(ids).await;
                PeerResponse::Touch
            }
            PeerRequest::Join { id, addr } => PeerResponse::Join(handler.join(id, addr).await),
        };
        write_frame(stream.get_mut(), &resp).await?;
    }
    Ok(())
}

/// The payload bytes one append-entries call carries at most (one entry more than that is
/// sent alone): openraft 0.9 gives the call one heartbeat interval to be answered, and the
/// follower writes and syncs it all before it answers.
pub const APPEND_BYTES: usize = 2 << 20;

fn entry_bytes(e: &openraft::Entry<TypeConfig>) -> usize {
    use super::types::Proposal;
    match &e.payload {
        openraft::EntryPayload::Normal(Proposal::Txn(b)) => b.len(),
        openraft::EntryPayload::Normal(Proposal::Txns(t)) => t.iter().map(|b| b.len()).sum(),
        _ => 0,
    }
}

/// How many of `entries` fit in APPEND_BYTES (at least one), if not all do.
pub fn too_many(entries: &[openraft::Entry<TypeConfig>]) -> Option<u64> {
    let mut bytes = 0usize;
    for (i, e) in entries.iter().enumerate() {
        bytes = bytes.saturating_add(entry_bytes(e));
        if bytes > APPEND_BYTES && i > 0 {
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
}

impl Network {
    pub fn new(me: NodeId, retry: Duration) -> Network {
        Network {
            me,
            retry,
            contacts: Contacts::default(),
            addrs: Default::default(),
            moved_from: Default::default(),
            durable: None,
        }
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

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        let addr = self.addr_of(target, node);
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
            link: None,
            retry: self.retry,
            down: false,
            contacts: Some(self.contacts.clone()),
            durable: self.durable.clone(),
        }
    }
}

pub struct PeerClient {
    me: NodeId,
    target: NodeId,
    addr: String,
    /// The member's previous address while it moves (`Network::moved_from`).
    moved_from: Option<String>,
    link: Option<BufReader<TcpStream>>,
    retry: Duration,
    /// The member could not be reached at the last try (logged once, and once when back).
    down: bool,
    contacts: Option<Contacts>,
    durable: Option<Durable>,
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

impl PeerClient {
    /// A link to the member at `addr` (connected at the first call).
    pub fn new(me: NodeId, target: NodeId, addr: String) -> Self {
        PeerClient {
            me,
            target,
            addr,
            moved_from: None,
            link: None,
            retry: Duration::from_millis(500),
            down: false,
            contacts: None,
            durable: None,
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

    /// Asks the member to let this server join (raft/reconfig.rs).
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
        if r.is_err() {
            self.link = None;
        } else if let Some(c) = &self.contacts {
            c.lock().insert(self.target, std::time::Instant::now());
        }
        r
    }

    async fn call_inner(&mut self, req: PeerRequest) -> Result<PeerResponse, CallError> {
        if self.link.is_none() {
            let s = match TcpStream::connect(&self.addr).await {
                Ok(s) => {
                    self.moved_from = None;
                    s
                }
                Err(e) if self.moved_from.is_some() => {
                    let old = self.moved_from.clone().unwrap_or_default();
                    match TcpStream::connect(&old).await {
                        Ok(s) => {
                            tracing::info!(member = self.target, new = %self.addr, %old, "member not yet at its new address: reached at its previous one");
                            s
                        }
                        Err(_) => return Err(CallError::Unreachable(e)),
                    }
                }
                Err(e) => {
                    if !self.down {
                        tracing::warn!(member = self.target, addr = %self.addr, error = %e, "member unreachable");
                        self.down = true;
                    }
                    return Err(CallError::Unreachable(e));
                }
            };
            if self.down {
                tracing::info!(member = self.target, addr = %self.addr, "member reachable again");
                self.down = false;
            }
            let _ = s.set_nodelay(true);
            self.link = Some(BufReader::new(s));
        }
        let Some(link) = self.link.as_mut() else {
            return Err(CallError::Network(io::ErrorKind::NotConnected.into()));
        };
        write_frame(link.get_mut(), &req)
            .await
            .map_err(CallError::Network)?;
        match read_frame(link).await {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(CallError::Network(io::ErrorKind::UnexpectedEof.into())),
            Err(e) => Err(CallError::Network(e)),
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

    fn mismatch<E: std::error::Error>(&self) -> RPCError<NodeId, BasicNode, E> {
        let e = io::Error::new(io::ErrorKind::InvalidData, "reply of another kind");
        RPCError::Network(NetworkError::new(&e))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    /// One retry interval for the first tries (a member back from a restart hears from the
    /// leader well within the lease), then 200 ms: still inside the time a restarted member
    /// waits before it campaigns (lease + election timeout), and few connects to a dead one.
    fn backoff(&self) -> Backoff {
        let later = Duration::from_millis(200).max(self.retry);
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
            Ok(PeerResponse::Vote(r)) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            Ok(_) => Err(self.mismatch()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::Vote)),
        }
    }
}

#[cfg(test)]
#[path = "network_test.rs"]
mod tests;
