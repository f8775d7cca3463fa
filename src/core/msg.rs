//! What reaches the core (its inbox) and what it sends to a connection's writer.

use crate::core::watch::ConnId;
use bytes::Bytes;
use palisade_proto::{ConnectRequest, DecodeError, FourLetterWord, Request};
use std::net::SocketAddr;
use tokio::sync::{mpsc, oneshot};

/// What the core writes to a connection.
#[derive(Debug)]
pub enum Out {
    /// Bytes to write as they are (notifications, handshake, 4lw text).
    Bytes(Bytes),
    /// The reply to one request: frees one slot of the connection's outstanding budget.
    Reply(Bytes),
    /// Flush what came before, then close.
    Close,
}

pub type OutTx = mpsc::UnboundedSender<Out>;

pub enum CoreMsg {
    Connect {
        conn: ConnId,
        req: ConnectRequest,
        out: OutTx,
        peer: SocketAddr,
        ready: oneshot::Sender<bool>,
    },
    Request {
        conn: ConnId,
        xid: i32,
        req: Request,
    },
    /// A request that did not decode; the core answers it as ZooKeeper would.
    Bad {
        conn: ConnId,
        xid: i32,
        op: i32,
        error: DecodeError,
    },
    Closed {
        conn: ConnId,
    },
    /// An AdminServer command, a metrics scrape or a readiness probe (src/admin).
    Admin(crate::admin::Query),
    FourLetter {
        word: FourLetterWord,
        out: OutTx,
        peer: SocketAddr,
    },
    /// The log made every txn up to this zxid durable.
    Durable(i64),
    LogFailed(String),
    Tick,
    Shutdown,
}
