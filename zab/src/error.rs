//! What can be wrong with the bytes on a quorum link. Every error ends the connection: the
//! link has no framing to resynchronise on, so the learner reconnects and syncs again.

use crate::packet::{Direction, PacketType};
use palisade_proto::DecodeError;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    /// A length (or the packet, or the snapshot, as far as read) over its limit: refused
    /// before anything of that size is allocated.
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        what: &'static str,
        len: u64,
        max: u64,
    },
    #[error("{what}: negative length {len}")]
    NegativeLength { what: &'static str, len: i32 },
    #[error("unknown packet type {0}")]
    UnknownType(i32),
    /// A type only the other side sends (e.g. a learner's ACK coming from a leader).
    #[error("{kind:?} is not sent {dir:?}")]
    WrongDirection { kind: PacketType, dir: Direction },
    /// The data of a packet is not what ZooKeeper puts in a packet of its type.
    #[error("{kind:?} (zxid {zxid:#x}): {reason}")]
    Malformed {
        kind: PacketType,
        zxid: i64,
        reason: String,
    },
    /// A packet whose lengths were walked whole but which does not decode as a QuorumPacket.
    #[error("QuorumPacket: {0}")]
    Packet(String),
    /// A QuorumAuthPacket that is not one, or one more than an exchange takes.
    #[error("quorum SASL: {0}")]
    Auth(String),
    /// The snapshot that follows SNAP does not parse.
    #[error("snapshot stream at byte {offset}: {reason}")]
    Snapshot { offset: u64, reason: String },
}

impl CodecError {
    pub(crate) fn malformed(kind: PacketType, zxid: i64, reason: impl Into<String>) -> Self {
        CodecError::Malformed {
            kind,
            zxid,
            reason: reason.into(),
        }
    }

    pub(crate) fn decode(kind: PacketType, zxid: i64, e: DecodeError) -> Self {
        Self::malformed(kind, zxid, e.to_string())
    }
}
