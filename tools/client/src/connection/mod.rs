//! The connection task: one per client. It owns the socket, serves one connection at a time
//! (`serve`), and when a connection breaks reconnects to the same session until the session
//! must be presumed expired; then (or when the server says so, or on close) it fails everything
//! still waiting and ends.

mod handshake;
mod pending;
mod serve;
mod writer;

pub(crate) use handshake::{handshake, no_password, Established, HandshakeError};

use crate::error::Error;
use crate::shared::{lock, Shared};
use crate::state::SessionState;
use crate::watch::{Waiter, WatchRequest};
use palisade_proto::{Request, Response};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// The largest frame accepted from the server (a getChildren of a huge node can exceed
/// jute.maxbuffer's 1 MiB default on servers configured higher).
pub(crate) const MAX_FRAME: usize = 16 << 20;

/// A decoded successful reply.
pub(crate) struct Reply {
    pub response: Response,
}

/// One API call waiting for its reply, with the watch to register if it sets one.
pub(crate) struct Call {
    pub req: Request,
    pub reply: oneshot::Sender<Result<Reply, Error>>,
    pub watch: Option<(WatchRequest, String, Waiter)>,
}

pub(crate) enum Command {
    Request(Call),
    Close(oneshot::Sender<Result<(), Error>>),
    /// Break the TCP connection (the client reconnects): simulates a network failure.
    DropConnection,
    /// Stop without closing the session: the server expires it after its timeout.
    Abandon,
}

/// How a connection (or the whole task) ended.
pub(crate) enum Ended {
    /// The connection broke; the session may be alive.
    Lost(String),
    Expired,
    Closed,
    Abandoned,
    /// Every client handle was dropped while disconnected.
    HandlesGone,
}

/// Request xids: 1, 2, …, i32::MAX, then 1 again (negative xids are reserved).
#[derive(Default)]
pub(crate) struct Xid(i32);

impl Xid {
    fn next(&mut self) -> i32 {
        self.0 = if self.0 == i32::MAX { 1 } else { self.0 + 1 };
        self.0
    }
}

pub(crate) async fn run(first: Established, shared: Arc<Shared>, mut rx: mpsc::Receiver<Command>) {
    let mut conn = first;
    let mut backlog = VecDeque::new();
    let mut xid = Xid::default();
    let end = loop {
        match serve::serve(conn, &shared, &mut rx, &mut backlog, &mut xid).await {
            Ended::Lost(why) => {
                tracing::debug!(session = shared.session_id, %why, "connection lost");
                shared.set_state(SessionState::Disconnected);
                match reconnect(&shared, &mut rx, &mut backlog).await {
                    Ok(c) => {
                        conn = c;
                        shared.set_state(SessionState::Connected);
                    }
                    Err(end) => break end,
                }
            }
            end => break end,
        }
    };
    finish(end, &shared, rx, backlog);
}

/// Fails everything still waiting with the final error and publishes the final state.
fn finish(end: Ended, shared: &Shared, mut rx: mpsc::Receiver<Command>, backlog: VecDeque<Call>) {
    let (state, expired) = match end {
        Ended::Expired => (SessionState::Expired, true),
        _ => (SessionState::Closed, false),
    };
    let err = move || {
        if expired {
            Error::SessionExpired
        } else {
            Error::Closed
        }
    };
    tracing::debug!(session = shared.session_id, ?state, "session ended");
    shared.set_state(state);
    lock(&shared.watches).fail_all(err);
    for call in backlog {
        let _ = call.reply.send(Err(err()));
    }
    rx.close();
    while let Ok(cmd) = rx.try_recv() {
        match cmd {
            Command::Request(call) => {
                let _ = call.reply.send(Err(err()));
            }
            Command::Close(tx) => {
                let _ = tx.send(Ok(()));
            }
            Command::DropConnection | Command::Abandon => {}
        }
    }
}

/// Reconnects to the same session. The session cannot have expired before `last_alive +
/// timeout`; past that it is presumed expired (after at least one attempt, which lets a server
/// that restored the session after a restart say otherwise). Requests arriving meanwhile wait
/// in `backlog` and are sent on the new connection.
async fn reconnect(
    shared: &Shared,
    rx: &mut mpsc::Receiver<Command>,
    backlog: &mut VecDeque<Call>,
) -> Result<Established, Ended> {
    let t = shared.session_timeout();
    let deadline = shared.last_alive() + t;
    let max_try = (t / 3).max(Duration::from_millis(250));
    let mut backoff = Duration::from_millis(10);
    let mut tried = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if tried && left.is_zero() {
            return Err(Ended::Expired);
        }
        tried = true;
        let host = shared.next_addr();
        let attempt = tokio::time::timeout(
            left.clamp(Duration::from_millis(250), max_try),
            handshake(
                host,
                shared.session_id,
                &shared.password,
                shared.last_zxid(),
                shared.requested_timeout_ms,
            ),
        );
        match until_command(attempt, rx, backlog).await? {
            Ok(Ok(est)) => {
                shared.connected(host);
                shared.set_session_timeout_ms(est.timeout_ms);
                shared.alive_at(est.sent_at);
                return Ok(est);
            }
            Ok(Err(HandshakeError::Expired)) => return Err(Ended::Expired),
            Ok(Err(e)) => tracing::debug!(?e, "reconnect attempt failed"),
            Err(_) => tracing::debug!("reconnect attempt timed out"),
        }
        let nap = backoff.min(deadline.saturating_duration_since(Instant::now()));
        until_command(tokio::time::sleep(nap), rx, backlog).await?;
        backoff = (backoff * 2).min((t / 10).max(Duration::from_millis(10)));
    }
}

/// Runs `fut` while taking commands: requests join the backlog, close/abandon end the wait.
async fn until_command<F: Future>(
    fut: F,
    rx: &mut mpsc::Receiver<Command>,
    backlog: &mut VecDeque<Call>,
) -> Result<F::Output, Ended> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return Ok(out),
            cmd = rx.recv() => match cmd {
                Some(Command::Request(call)) => backlog.push_back(call),
                // Without a connection the server cannot be told; the session expires on its own.
                Some(Command::Close(tx)) => {
                    let _ = tx.send(Ok(()));
                    return Err(Ended::Closed);
                }
                Some(Command::Abandon) => return Err(Ended::Abandoned),
                Some(Command::DropConnection) => {}
                None => return Err(Ended::HandlesGone),
            }
        }
    }
}
