//! One member's client of another's peer port: the link it keeps (made on a task of its own,
//! dropped at a failed call), each call one frame each way within its time, and Raft's three
//! RPCs answered as openraft expects (`RaftNetwork`), an oversized append split
//! (`too_many`).

use super::durable::Durable;
use super::rpc::{too_many, vote_ok, JoinReply, PeerRequest, PeerResponse};
use super::types::{NodeId, RpcResult, TypeConfig};
use crate::ensemble::link::{self, read_frame, write_frame, Link, Security};
use crate::limits::PEER_FRAME;
use crate::seam::{Forward, SyncPoint};
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RemoteError, Timeout,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// A client's link to its member.
pub(super) enum LinkState {
    Down,
    /// Its handshake runs on a task of its own: a call that times out meanwhile leaves it to
    /// finish for the next call (a handshake can take longer than a heartbeat's call).
    Dialing(Dialing),
    Up(Link),
}

/// The task making a link; aborted if the client goes first.
pub(super) struct Dialing(tokio::task::JoinHandle<io::Result<(Link, bool)>>);

impl Drop for Dialing {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// When each member last answered a call (the leader's heartbeats keep it fresh): who is
/// in touch, for a reconfig's synced-quorum check.
pub type Contacts = Arc<parking_lot::Mutex<std::collections::BTreeMap<NodeId, std::time::Instant>>>;

pub struct PeerClient {
    pub(super) me: NodeId,
    pub(super) target: NodeId,
    pub(super) addr: String,
    /// The member's previous address while it moves (`Network::moved_from`).
    pub(super) moved_from: Option<String>,
    pub(super) link: LinkState,
    pub(super) retry: Duration,
    /// The member could not be reached at the last try (logged once, and once when back).
    pub(super) down: bool,
    pub(super) contacts: Option<Contacts>,
    pub(super) durable: Option<Durable>,
    pub(super) security: Arc<Security>,
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
    /// A link from member `me` to the member at `addr` (made at the first call), secured
    /// as `security` says.
    pub fn new(me: NodeId, security: Arc<Security>, target: NodeId, addr: String) -> Self {
        PeerClient {
            me,
            target,
            addr,
            moved_from: None,
            link: LinkState::Down,
            retry: crate::limits::PEER_RETRY,
            down: false,
            contacts: None,
            durable: None,
            security,
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
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
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
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
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
    ) -> RpcResult<VoteResponse<NodeId>> {
        match self.call(PeerRequest::Vote(rpc), option.hard_ttl()).await {
            Ok(PeerResponse::Vote(Ok(r))) if !vote_ok(&r.vote) => Err(self.mismatch()),
            Ok(PeerResponse::Vote(r)) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            Ok(_) => Err(self.mismatch()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::Vote)),
        }
    }
}
