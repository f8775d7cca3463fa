//! The core's inbox: the messages connections, the AdminServer and the consensus glue send
//! (`CoreMsg`, carrying the channel ends their answers go to), split here into the engine's
//! inputs (`Input`, carrying reply tokens: core/token.rs). The runtime keeps each reply end
//! under its token's id and sends the engine's answers at the turn's end (`Replies`). And the
//! core's inbox as the consensus glue sends to it (seam.rs `CoreInbox`).

use crate::core::admin::Query;
use crate::core::token::{Abandoned, Answered, Token};
use crate::core::{Ends, Handshake, Input, Msg, Tokens};
use crate::seam::{CommittedBatch, CoreGone, CoreInbox, Forward, Image, LogPos, Notice, SyncPoint};
use hashbrown::HashMap;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};

/// The inbox's messages carry one-shot channel ends.
pub struct Oneshots;

impl Ends for Oneshots {
    type End<T: Send + 'static> = oneshot::Sender<T>;
}

/// What reaches the core's inbox.
pub type CoreMsg = Msg<Oneshots>;

/// A reply end kept for a token: sends the engine's answer (of the token's type).
type End = Box<dyn FnOnce(Box<dyn Any + Send>) + Send>;

/// A watched reply end: whether its asker went away.
type Closed = Box<dyn Fn() -> bool + Send>;

/// The reply ends the engine holds tokens for.
pub(super) struct Replies {
    next: u64,
    ends: HashMap<u64, End>,
    /// Of `ends`, those whose asker may go away while the engine works for it (a backup's
    /// HTTP request): looked at each turn, and the engine told (`Core::asker_gone`).
    watched: Vec<(u64, Closed)>,
    abandoned: Abandoned,
}

impl Replies {
    pub(super) fn new() -> Self {
        Replies {
            next: 1,
            ends: HashMap::new(),
            watched: Vec::new(),
            abandoned: Abandoned::default(),
        }
    }

    fn id(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Keeps `end`, and gives the engine a token for it.
    fn token<T: Send + 'static>(&mut self, end: oneshot::Sender<T>) -> Token<T> {
        let id = self.id();
        self.ends.insert(
            id,
            Box::new(move |v: Box<dyn Any + Send>| {
                // The token's type is the end's: the downcast holds.
                if let Ok(v) = v.downcast::<T>() {
                    let _ = end.send(*v);
                }
            }),
        );
        Token::new(id, self.abandoned.clone())
    }

    /// As `token`, for an ask whose asker's going away the engine is told of (`gone`).
    fn watched<T: Send + 'static>(&mut self, end: oneshot::Sender<T>) -> Token<T> {
        let id = self.id();
        let end = Arc::new(parking_lot::Mutex::new(Some(end)));
        let kept = end.clone();
        self.ends.insert(
            id,
            Box::new(move |v: Box<dyn Any + Send>| {
                if let (Ok(v), Some(end)) = (v.downcast::<T>(), kept.lock().take()) {
                    let _ = end.send(*v);
                }
            }),
        );
        let closed = move || end.lock().as_ref().is_none_or(|e| e.is_closed());
        self.watched.push((id, Box::new(closed)));
        Token::new(id, self.abandoned.clone())
    }

    /// The tokens of watched asks whose askers went away since the last look.
    pub(super) fn gone(&mut self) -> Vec<u64> {
        if self.watched.is_empty() {
            return Vec::new();
        }
        let mut gone = Vec::new();
        self.watched.retain(|(id, closed)| {
            let g = closed();
            if g {
                gone.push(*id);
            }
            !g
        });
        gone
    }

    /// Sends the engine's answers; drops the ends of tokens it dropped unanswered.
    pub(super) fn answer(&mut self, answers: Vec<Answered>) {
        for a in answers {
            if let Some(end) = self.ends.remove(&a.id) {
                end(a.value);
            }
            self.unwatch(a.id);
        }
        let abandoned = std::mem::take(&mut *self.abandoned.lock());
        for id in abandoned {
            self.ends.remove(&id);
            self.unwatch(id);
        }
    }

    fn unwatch(&mut self, id: u64) {
        if !self.watched.is_empty() {
            self.watched.retain(|(w, _)| *w != id);
        }
    }

    /// The engine's input for `m`: its reply ends kept here, tokens in their place.
    pub(super) fn split(&mut self, m: CoreMsg) -> Input {
        match m {
            Msg::Connect(h) => Msg::Connect(Handshake {
                ready: self.token(h.ready),
                conn: h.conn,
                req: h.req,
                out: h.out,
                peer: h.peer,
                x509: h.x509,
            }),
            Msg::Request {
                conn,
                xid,
                req,
                frame,
            } => Msg::Request {
                conn,
                xid,
                req,
                frame,
            },
            Msg::Bad {
                conn,
                xid,
                op,
                error,
            } => Msg::Bad {
                conn,
                xid,
                op,
                error,
            },
            Msg::Closed { conn } => Msg::Closed { conn },
            Msg::Admin(q) => Msg::Admin(self.split_query(q)),
            Msg::FourLetter { word, out, peer } => Msg::FourLetter { word, out, peer },
            Msg::Drained(c) => Msg::Drained(c),
            Msg::Durable(z) => Msg::Durable(z),
            Msg::LogFailed(e) => Msg::LogFailed(e),
            Msg::Committed {
                items,
                at,
                log_bytes,
                ack,
            } => Msg::Committed {
                items,
                at,
                log_bytes,
                ack: self.token(ack),
            },
            Msg::Role(v) => Msg::Role(v),
            Msg::Forwarded(ops, reply) => Msg::Forwarded(ops, reply.map(|r| self.token(r))),
            Msg::SyncPoints(p) => Msg::SyncPoints(p),
            Msg::Touched(t) => Msg::Touched(t),
            Msg::ForwardFailed(f) => Msg::ForwardFailed(f),
            Msg::Image(reply) => Msg::Image(self.token(reply)),
            Msg::Install { image, at, ack } => Msg::Install {
                image,
                at,
                ack: self.token(ack),
            },
            Msg::Tick => Msg::Tick,
            Msg::Shutdown => Msg::Shutdown,
        }
    }

    fn split_query(&mut self, q: Query<Oneshots>) -> Query<Tokens> {
        match q {
            Query::Command { cmd, reply } => Query::Command {
                cmd,
                reply: self.token(reply),
            },
            Query::Metrics { reply } => Query::Metrics {
                reply: self.token(reply),
            },
            Query::Ready { reply } => Query::Ready {
                reply: self.token(reply),
            },
            Query::Shed { percentage, reply } => Query::Shed {
                percentage,
                reply: self.token(reply),
            },
            Query::Leadership { ask, reply } => Query::Leadership {
                ask,
                reply: self.token(reply),
            },
            Query::Restore {
                state,
                stream,
                reply,
            } => Query::Restore {
                state,
                stream,
                reply: self.token(reply),
            },
            Query::RootAcl { reply } => Query::RootAcl {
                reply: self.token(reply),
            },
            // A backup's capture is dropped once nobody waits for it (core/backup.rs).
            Query::Backup { reply } => Query::Backup {
                reply: self.watched(reply),
            },
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

#[cfg(test)]
#[path = "inbox_test.rs"]
mod tests;
