//! Requests sent on the current connection and not yet answered, in send order (the server
//! answers in request order), and what to do with each reply.

use super::{Call, Reply, MAX_FRAME};
use crate::error::Error;
use crate::shared::{lock, Shared};
use crate::watch::{WatchKind, WatchRequest};
use bytes::Bytes;
use palisade_proto::{ErrorCode, OpCode, ReplyHeader, Response};
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::oneshot;

/// Who waits for a reply.
pub(crate) enum Target {
    Call(Call),
    /// close(): the caller waits for the CloseSession reply.
    Close(Option<oneshot::Sender<Result<(), Error>>>),
    /// setWatches after a reconnect: nobody waits.
    Internal,
}

pub(crate) struct Pending {
    pub xid: i32,
    pub op: OpCode,
    pub sent_at: Instant,
    pub target: Target,
}

/// What a reply means for the connection loop.
pub(crate) enum Outcome {
    Continue,
    /// The CloseSession reply came: the session is closed.
    Closed,
    /// The server said the session expired.
    Expired,
}

#[derive(Default)]
pub(crate) struct PendingQueue {
    q: VecDeque<Pending>,
}

impl PendingQueue {
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn push(&mut self, p: Pending) {
        self.q.push_back(p);
    }

    /// Matches a reply to the oldest request; a reply for any other xid breaks the protocol's
    /// ordering and the connection is dropped (`Err`).
    pub fn complete(
        &mut self,
        hdr: &ReplyHeader,
        body: Bytes,
        shared: &Shared,
    ) -> Result<Outcome, String> {
        let Some(p) = self.q.pop_front() else {
            return Err(format!("reply xid {} with nothing outstanding", hdr.xid));
        };
        if p.xid != hdr.xid {
            let xid = p.xid;
            // Put it back so it fails with ConnectionLoss like the rest.
            self.q.push_front(p);
            return Err(format!("reply xid {} while waiting for {xid}", hdr.xid));
        }
        shared.alive_at(p.sent_at);
        let result = if hdr.err != 0 {
            Err(Error::from_code(hdr.err))
        } else {
            Response::decode(p.op, body, MAX_FRAME)
                .map(|response| Reply { response })
                .map_err(|e| Error::Protocol(format!("{} reply: {e}", p.op.name())))
        };
        let expired = matches!(result, Err(Error::SessionExpired));
        let outcome = match p.target {
            Target::Call(call) => {
                if let Some((want, path, waiter)) = call.watch {
                    if let Some(kind) = registered_kind(want, &result) {
                        lock(&shared.watches).add(kind, path, waiter);
                    }
                }
                let _ = call.reply.send(result);
                Outcome::Continue
            }
            Target::Close(tx) => {
                if let Some(tx) = tx {
                    let _ = tx.send(result.map(|_| ()));
                }
                Outcome::Closed
            }
            Target::Internal => Outcome::Continue,
        };
        Ok(if expired { Outcome::Expired } else { outcome })
    }

    /// Fails every outstanding request (the connection or the session ended).
    pub fn fail_all(&mut self, make: impl Fn() -> Error) {
        for p in self.q.drain(..) {
            match p.target {
                Target::Call(call) => {
                    let _ = call.reply.send(Err(make()));
                }
                Target::Close(Some(tx)) => {
                    // The close was sent; whether or not the server got it, the client is done.
                    let _ = tx.send(Ok(()));
                }
                Target::Close(None) | Target::Internal => {}
            }
        }
    }
}

/// The table a watch goes into, as the server registered it: exists watches a missing node
/// through the exist table; getData and getChildren set nothing when they fail.
fn registered_kind(want: WatchRequest, result: &Result<Reply, Error>) -> Option<WatchKind> {
    match (want, result) {
        (WatchRequest::Exists, Ok(_)) => Some(WatchKind::Data),
        (WatchRequest::Exists, Err(Error::Zk(ErrorCode::NoNode))) => Some(WatchKind::Exist),
        (WatchRequest::Data, Ok(_)) => Some(WatchKind::Data),
        (WatchRequest::Child, Ok(_)) => Some(WatchKind::Child),
        _ => None,
    }
}
