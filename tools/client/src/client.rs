//! The client handle: the ZooKeeper operations the recipes and the test tools need, each one
//! request sent through the connection task and answered in order.

use crate::connection::{self, Call, Command, Reply};
use crate::error::Error;
use crate::ops;
use crate::shared::Shared;
use crate::state::SessionState;
use crate::watch::{watch_pair, WatchFuture, WatchRequest};
use bytes::Bytes;
use palisade_proto::{
    CreateMode, ErrorCode, ExistsRequest, GetChildren2Request, GetChildrenRequest, GetDataRequest,
    JStr, MultiRequest, OpResult, Request, Response, Stat,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// Commands queued for the connection task before callers wait (backpressure beyond it).
const COMMAND_QUEUE: usize = 1024;

/// A ZooKeeper session. Cheap to clone (all clones share the session); usable from any task.
///
/// Requests are pipelined on one connection and answered in the order sent. When the connection
/// breaks, calls in flight fail with [`Error::ConnectionLoss`], the state stream says
/// `Disconnected`, and the client reconnects to the same session; calls made meanwhile wait and
/// go out on the new connection. When the server says the session expired (or it could not be
/// reached for a whole session timeout), every waiter gets [`Error::SessionExpired`] and the
/// state says `Expired`.
///
/// Dropping every clone closes the session (like [`Client::close`], without waiting).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client(session 0x{:x})", self.session_id())
    }
}

impl Client {
    /// Opens a new session on `addr` ("host:port", or an ensemble's "h1:p1,h2:p2,…": tried in
    /// turn, and reconnects move on to the next one), asking for `session_timeout` (the
    /// server clamps it to its min/max). Fails if no server can be reached within that
    /// timeout.
    pub async fn connect(addr: &str, session_timeout: Duration) -> Result<Client, Error> {
        Client::start(addr, 0, connection::no_password(), session_timeout).await
    }

    /// Reopens an existing session (for example one created by another process) from its id
    /// and password. [`Error::SessionExpired`] if the server no longer has it.
    pub async fn resume(
        addr: &str,
        session_id: i64,
        password: Bytes,
        session_timeout: Duration,
    ) -> Result<Client, Error> {
        Client::start(addr, session_id, password, session_timeout).await
    }

    async fn start(
        addr: &str,
        session_id: i64,
        password: Bytes,
        session_timeout: Duration,
    ) -> Result<Client, Error> {
        let ms = i32::try_from(session_timeout.as_millis())
            .map_err(|_| Error::BadArgument("session timeout over i32::MAX ms".into()))?;
        // `addr` may list several members ("h1:p1,h2:p2"): tried in turn until one accepts,
        // within the timeout; a single address gets one attempt with the whole timeout.
        let hosts: Vec<&str> = addr.split(',').collect();
        let total = session_timeout.max(Duration::from_secs(1));
        let deadline = Instant::now() + total;
        let each = if hosts.len() > 1 {
            (total / hosts.len() as u32).max(Duration::from_millis(500))
        } else {
            total
        };
        let mut i = 0;
        let est = loop {
            let host = hosts[i % hosts.len()];
            let hs = connection::handshake(host, session_id, &password, 0, ms);
            let err = match tokio::time::timeout(each, hs).await {
                Err(_) => Error::Timeout,
                Ok(Err(connection::HandshakeError::Expired)) => return Err(Error::SessionExpired),
                Ok(Err(connection::HandshakeError::Io(e))) => Error::Io(e),
                Ok(Err(connection::HandshakeError::Protocol(s))) => Error::Protocol(s),
                Ok(Ok(est)) => break est,
            };
            i += 1;
            if hosts.len() == 1 || Instant::now() >= deadline {
                return Err(err);
            }
            if i % hosts.len() == 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let shared = Arc::new(Shared::new(
            addr.to_string(),
            est.session_id,
            est.password.clone(),
            ms,
            est.timeout_ms,
            0,
            est.sent_at,
        ));
        shared.opened_on(i % hosts.len());
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        tokio::spawn(connection::run(est, shared.clone(), rx));
        Ok(Client {
            inner: Arc::new(Inner { tx, shared }),
        })
    }

    /// The member ("host:port") the latest connection was made to.
    pub fn server_addr(&self) -> String {
        self.inner.shared.connected_to()
    }

    /// The session id the server assigned.
    pub fn session_id(&self) -> i64 {
        self.inner.shared.session_id
    }

    /// The session password (with the id, what [`Client::resume`] needs).
    pub fn password(&self) -> Bytes {
        self.inner.shared.password.clone()
    }

    /// The highest zxid seen in a reply (sent on reconnect so the server never serves an older
    /// state than this client saw).
    pub fn last_zxid(&self) -> i64 {
        self.inner.shared.last_zxid()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.inner.shared.session_timeout()
    }

    /// The send time of the latest request the server answered. The server refreshes a session
    /// whenever it receives from it, so the session cannot expire before this instant plus the
    /// session timeout; the lock recipes measure "lost" from here.
    pub fn last_alive(&self) -> Instant {
        self.inner.shared.last_alive()
    }

    /// The session state now and every change after (`Connected`, `Disconnected`, `Expired`,
    /// `Closed`).
    pub fn state(&self) -> watch::Receiver<SessionState> {
        self.inner.shared.state.subscribe()
    }

    /// Creates a node with the open ACL; its path (with the sequential suffix, if any).
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, Error> {
        match self
            .call(ops::create(path, data, mode)?, None)
            .await?
            .response
        {
            Response::Create(r) => text(&r.path),
            Response::Create2(r) => text(&r.path),
            other => Err(unexpected("create", &other)),
        }
    }

    /// Creates a node; its path and Stat (whose czxid is the create's zxid).
    pub async fn create2(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), Error> {
        match self
            .call(ops::create2(path, data, mode)?, None)
            .await?
            .response
        {
            Response::Create2(r) => Ok((text(&r.path)?, r.stat)),
            other => Err(unexpected("create2", &other)),
        }
    }

    /// Deletes a node; `version` None matches any.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), Error> {
        self.call(ops::delete(path, version), None)
            .await
            .map(|_| ())
    }

    /// The node's Stat, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>, Error> {
        match self.call(exists_req(path, false), None).await {
            Ok(Reply {
                response: Response::Stat(s),
                ..
            }) => Ok(Some(s)),
            Ok(other) => Err(unexpected("exists", &other.response)),
            Err(Error::Zk(ErrorCode::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Client::exists`] and a one-shot watch: fires on the node's creation if it is missing,
    /// else on its data change or deletion.
    pub async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, WatchFuture), Error> {
        let (waiter, fut) = watch_pair();
        let watch = Some((WatchRequest::Exists, path.to_string(), waiter));
        match self.call(exists_req(path, true), watch).await {
            Ok(Reply {
                response: Response::Stat(s),
                ..
            }) => Ok((Some(s), fut)),
            Ok(other) => Err(unexpected("exists", &other.response)),
            Err(Error::Zk(ErrorCode::NoNode)) => Ok((None, fut)),
            Err(e) => Err(e),
        }
    }

    /// The node's data and Stat.
    pub async fn get_data(&self, path: &str) -> Result<(Bytes, Stat), Error> {
        self.get_data_inner(path, None).await
    }

    /// [`Client::get_data`] and a one-shot watch on the node's data change or deletion.
    pub async fn get_data_watch(&self, path: &str) -> Result<(Bytes, Stat, WatchFuture), Error> {
        let (waiter, fut) = watch_pair();
        let watch = Some((WatchRequest::Data, path.to_string(), waiter));
        let (data, stat) = self.get_data_inner(path, watch).await?;
        Ok((data, stat, fut))
    }

    async fn get_data_inner(
        &self,
        path: &str,
        watch: Option<(WatchRequest, String, crate::watch::Waiter)>,
    ) -> Result<(Bytes, Stat), Error> {
        let req = Request::GetData(GetDataRequest {
            path: JStr::from(path),
            watch: watch.is_some(),
        });
        match self.call(req, watch).await?.response {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected("getData", &other)),
        }
    }

    /// Sets the node's data; `version` None matches any. The new Stat.
    pub async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        match self
            .call(ops::set_data(path, data, version), None)
            .await?
            .response
        {
            Response::Stat(s) => Ok(s),
            other => Err(unexpected("setData", &other)),
        }
    }

    /// The node's children (bare names, unordered).
    pub async fn get_children(&self, path: &str) -> Result<Vec<String>, Error> {
        self.children_inner(path, None).await
    }

    /// [`Client::get_children`] and a one-shot watch on the children list (or the node's
    /// deletion).
    pub async fn get_children_watch(
        &self,
        path: &str,
    ) -> Result<(Vec<String>, WatchFuture), Error> {
        let (waiter, fut) = watch_pair();
        let watch = Some((WatchRequest::Child, path.to_string(), waiter));
        Ok((self.children_inner(path, watch).await?, fut))
    }

    /// The node's children and its Stat (getChildren2: cversion, pzxid and numChildren of the
    /// same moment as the list).
    pub async fn get_children2(&self, path: &str) -> Result<(Vec<String>, Stat), Error> {
        let req = Request::GetChildren2(GetChildren2Request {
            path: JStr::from(path),
            watch: false,
        });
        match self.call(req, None).await?.response {
            Response::GetChildren2(r) => {
                let names: Result<Vec<String>, Error> =
                    r.children.unwrap_or_default().iter().map(text).collect();
                Ok((names?, r.stat))
            }
            other => Err(unexpected("getChildren2", &other)),
        }
    }

    async fn children_inner(
        &self,
        path: &str,
        watch: Option<(WatchRequest, String, crate::watch::Waiter)>,
    ) -> Result<Vec<String>, Error> {
        let req = Request::GetChildren(GetChildrenRequest {
            path: JStr::from(path),
            watch: watch.is_some(),
        });
        match self.call(req, watch).await?.response {
            Response::GetChildren(r) => r.children.unwrap_or_default().iter().map(text).collect(),
            other => Err(unexpected("getChildren", &other)),
        }
    }

    /// Runs the ops atomically (build them with [`crate::op`]). On success the per-op results;
    /// when the multi failed, `Err` with the code of the op that failed (as Curator and
    /// ZooKeeper's client report it) and nothing applied.
    pub async fn multi(&self, ops: Vec<Request>) -> Result<Vec<OpResult>, Error> {
        let results = self.multi_results(ops).await?;
        match first_failure(&results) {
            Some(code) => Err(Error::from_code(code)),
            None => Ok(results),
        }
    }

    /// Like [`Client::multi`], but a failed multi is `Ok` with every op's result (`Ok` codes
    /// before the failing op, its code, RuntimeInconsistency after), as the server sent them.
    pub async fn multi_results(&self, ops: Vec<Request>) -> Result<Vec<OpResult>, Error> {
        let req = Request::Multi(MultiRequest::new(ops));
        match self.call(req, None).await?.response {
            Response::Multi(m) => Ok(m.results.into_iter().map(|(_, r)| r).collect()),
            // A multi of no ops has an empty body.
            Response::Empty => Ok(Vec::new()),
            other => Err(unexpected("multi", &other)),
        }
    }

    /// Closes the session: the server deletes its ephemerals and fires their watches. Every
    /// later call fails with [`Error::Closed`]. When disconnected, the client just stops and the
    /// server expires the session after its timeout.
    pub async fn close(&self) -> Result<(), Error> {
        let (tx, rx) = oneshot::channel();
        if self.inner.tx.send(Command::Close(tx)).await.is_err() {
            return Ok(());
        }
        let bound = self.session_timeout().max(Duration::from_secs(1));
        match tokio::time::timeout(bound, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Ok(()),
            Err(_) => Err(Error::Timeout),
        }
    }

    /// Stops the client without closing the session, as a crashed process would: the server
    /// keeps the session (and its ephemerals) until its timeout passes. For tests and tools.
    pub async fn abandon(&self) {
        let _ = self.inner.tx.send(Command::Abandon).await;
    }

    /// Breaks the TCP connection, as a network failure would; the client reconnects to the same
    /// session and re-registers its watches. For tests and tools.
    pub async fn drop_connection(&self) {
        let _ = self.inner.tx.send(Command::DropConnection).await;
    }

    /// Sends any request and returns the decoded reply body (for requests this API does not
    /// wrap). Errors of the reply header come back as `Err`.
    pub async fn request(&self, req: Request) -> Result<Response, Error> {
        Ok(self.call(req, None).await?.response)
    }

    async fn call(
        &self,
        req: Request,
        watch: Option<(WatchRequest, String, crate::watch::Waiter)>,
    ) -> Result<Reply, Error> {
        let (tx, rx) = oneshot::channel();
        let call = Call {
            req,
            reply: tx,
            watch,
        };
        if self.inner.tx.send(Command::Request(call)).await.is_err() {
            return Err(self.final_error());
        }
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(self.final_error()),
        }
    }

    /// The error for a call the connection task can no longer take.
    fn final_error(&self) -> Error {
        match self.inner.shared.state() {
            SessionState::Expired => Error::SessionExpired,
            SessionState::Closed => Error::Closed,
            _ => Error::ConnectionLoss,
        }
    }
}

fn exists_req(path: &str, watch: bool) -> Request {
    Request::Exists(ExistsRequest {
        path: JStr::from(path),
        watch,
    })
}

fn text(s: &JStr) -> Result<String, Error> {
    s.to_lossy()
        .map(|c| c.into_owned())
        .ok_or_else(|| Error::Protocol("null string in reply".into()))
}

fn unexpected(op: &str, r: &Response) -> Error {
    Error::Protocol(format!("unexpected {op} reply: {r:?}"))
}

/// The code ZooKeeper's client reports for a failed multi: the first error result that is
/// neither Ok nor the RuntimeInconsistency given to the ops after the failing one.
fn first_failure(results: &[OpResult]) -> Option<i32> {
    let errs = || {
        results.iter().filter_map(|r| match r {
            OpResult::Error(e) if e.err != 0 => Some(e.err),
            _ => None,
        })
    };
    errs()
        .find(|&c| c != ErrorCode::RuntimeInconsistency.code())
        .or_else(|| errs().next())
}
