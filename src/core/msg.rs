//! What reaches the core: its inbox's messages, and the engine's inputs made of them (the
//! same messages with reply tokens for their channel ends, token.rs). What the engine sends to
//! a connection is conn_out.rs's.

use super::conn_out::OutTx;
use super::token::{Ends, Tokens};
use crate::core::conn_id::ConnId;
use ::core::net::SocketAddr;
use bytes::Bytes;
use palisade_proto::{ConnectRequest, DecodeError, FourLetterWord, Request};

/// One input of the engine (`Core::step`).
pub type Input = Msg<Tokens>;

/// What reaches the core, its answers' ends carried as `E` says.
pub enum Msg<E: Ends> {
    Connect(Handshake<E>),
    Request {
        conn: ConnId,
        xid: i32,
        req: Request,
        /// The client's message as it came (header and body): what a follower forwards, so
        /// that the leader decodes the client's bytes, not a re-encoding of them.
        frame: Bytes,
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
    Admin(super::admin::Query<E>),
    FourLetter {
        word: FourLetterWord,
        out: OutTx,
        peer: SocketAddr,
    },
    /// A connection whose reads the core held back is under its output budget again
    /// (`None`: the server's budget, for every held connection).
    Drained(Option<ConnId>),
    /// The log made every txn up to this zxid durable.
    Durable(i64),
    LogFailed(String),
    /// Ensemble: entries committed by the quorum, in log order; acknowledged once applied.
    /// `at`: where in the Raft log the batch ends.
    Committed {
        items: Vec<super::member::Committed>,
        at: Option<super::member::LogPos>,
        /// The entries' bytes in the log, for the snapshot rule (role/member/raft_snapshot.rs).
        log_bytes: u64,
        ack: E::End<()>,
    },
    /// Ensemble: who leads now, and whether this member may prep.
    Role(super::member::RoleView),
    /// Ensemble, on the leader: writes its followers' clients sent; answered with the
    /// points of the syncs among them (None: this member does not lead).
    Forwarded(
        Vec<super::member::Forward>,
        Option<E::End<Option<Vec<super::member::SyncPoint>>>>,
    ),
    /// Ensemble, on a follower: the leader's points for its syncs.
    SyncPoints(Vec<super::member::SyncPoint>),
    /// Ensemble, on the leader: sessions alive on a follower, with the ms each has left there.
    Touched(Vec<(i64, u64)>),
    /// Ensemble, on a follower: these forwarded requests (session, cxid) did not reach the
    /// leader.
    ForwardFailed(Vec<(i64, i32)>),
    /// Ensemble: a fuzzy image of the state for a Raft snapshot, taken between batches; the
    /// answer says where in the Raft log the image stands.
    Image(E::End<(Vec<u8>, Option<super::member::LogPos>)>),
    /// Ensemble: replace the state with a Raft snapshot's image, which stands at `at`.
    Install {
        image: Vec<u8>,
        at: Option<super::member::LogPos>,
        ack: E::End<Result<(), String>>,
    },
    Tick,
    Shutdown,
}

/// A client's handshake, as `Msg::Connect` brings it; in the engine's hands (handshake.rs),
/// also what waits for this member to catch up (pending.rs, role/member/syncs.rs).
pub struct Handshake<E: Ends = Tokens> {
    pub conn: ConnId,
    pub req: ConnectRequest,
    pub out: OutTx,
    pub peer: SocketAddr,
    pub ready: E::End<bool>,
    /// The subject of the client's verified TLS certificate (the `x509` identity).
    pub x509: Option<Box<str>>,
}
