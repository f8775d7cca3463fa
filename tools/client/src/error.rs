//! The client's error type: a server's error code, or what happened to the connection or session.

use palisade_proto::ErrorCode;

/// Why a call failed.
///
/// The connection-level variants tell a caller what it may assume:
/// * [`Error::ConnectionLoss`]: the request was sent but the connection broke before its reply;
///   a write may or may not have been applied. The session may still be alive (the client is
///   reconnecting to it).
/// * [`Error::SessionExpired`]: the session is gone for good; its ephemerals are deleted (or
///   will be when the server expires it). Every later call fails the same way.
/// * [`Error::Closed`]: [`crate::Client::close`] ran (or the client was abandoned).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with this error code.
    #[error("server error {}", .0.name())]
    Zk(ErrorCode),
    /// The connection broke after the request was sent and before its reply arrived.
    #[error("connection lost before the reply")]
    ConnectionLoss,
    /// The session expired (said by the server, or presumed by the client after being unable to
    /// reach the server for a whole session timeout).
    #[error("session expired")]
    SessionExpired,
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// Connecting failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The server sent something this client cannot read (an undecodable frame, a reply out of
    /// order, an unknown error code).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A deadline passed: connecting, or acquiring a lock.
    #[error("timed out")]
    Timeout,
    /// The caller passed an argument the client refuses (for example a TTL create mode to
    /// `create`).
    #[error("bad argument: {0}")]
    BadArgument(String),
}

impl Error {
    /// The error for a non-zero reply code. Codes that describe the connection or the session
    /// map to those variants, so callers match one thing whichever way they learned of it.
    pub fn from_code(code: i32) -> Error {
        match ErrorCode::from_i32(code) {
            Some(ErrorCode::SessionExpired) => Error::SessionExpired,
            Some(ErrorCode::ConnectionLoss) => Error::ConnectionLoss,
            Some(c) => Error::Zk(c),
            None => Error::Protocol(format!("unknown error code {code}")),
        }
    }

    /// The server's error code, when the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Zk(c) => Some(*c),
            Error::SessionExpired => Some(ErrorCode::SessionExpired),
            Error::ConnectionLoss => Some(ErrorCode::ConnectionLoss),
            _ => None,
        }
    }

    /// True for [`Error::Zk`] with this code.
    pub fn is(&self, code: ErrorCode) -> bool {
        matches!(self, Error::Zk(c) if *c == code)
    }

    /// True when the session can no longer be used (expired or closed).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Error::SessionExpired | Error::Closed)
    }
}
