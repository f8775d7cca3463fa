//! Decode errors: each says what was wrong so the server can answer as ZooKeeper does
//! (close the connection, MARSHALLINGERROR, or UNIMPLEMENTED).

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("record truncated: needed {need} more bytes, {have} left")]
    Truncated { need: usize, have: usize },
    #[error("negative length {0}")]
    NegativeLength(i32),
    #[error("length {len} exceeds jute.maxbuffer {max}")]
    TooLong { len: usize, max: usize },
    #[error("{0} bytes left after the record")]
    TrailingBytes(usize),
    #[error("vector element consumed no bytes")]
    EmptyElement,
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    #[error("opcode {op} is not allowed {context}")]
    OpNotAllowed { op: i32, context: &'static str },
    #[error("multi request mixes read and write operations")]
    MixedMulti,
    #[error("invalid {what} value {value}")]
    BadEnum { what: &'static str, value: i32 },
}

impl DecodeError {
    /// ZooKeeper answers an unknown opcode with UNIMPLEMENTED and closes; any other malformed
    /// body of a known request gets MARSHALLINGERROR.
    pub fn is_unknown_opcode(&self) -> bool {
        matches!(self, DecodeError::UnknownOpCode(_))
    }
}

/// Framing errors: the server closes the connection without a reply.
#[derive(Debug, Error)]
pub enum FrameError {
    #[error("frame length {0} is negative or exceeds jute.maxbuffer")]
    BadLength(i64),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}
