//! ZooKeeper 3.8's quorum protocol (Zab), as a ZooKeeper observer speaks it: the first part of
//! live migration (issue 35), where a Palisade member joins a running ZooKeeper ensemble.
//!
//! - [`packet`]: QuorumPackets with their data decoded by type ([`Packet`], [`Body`]);
//!   [`txn`]: the txns in PROPOSAL / INFORM, read as zkdisk reads a txn log.
//! - [`stream`]: incremental, bounded decoding of a link's bytes ([`Decoder`]): the link has
//!   no framing, and after SNAP the snapshot follows unframed ([`snapshot`]), handed on in
//!   bounded batches of items.
//! - [`learner`]: the observer's side as a sans-IO state machine ([`Learner`]).
//!
//! No sockets, clock or files here: the driver reads and writes the connection, feeds the
//! time in ticks, and loads snapshots and applies txns. zab/README.md holds the protocol
//! facts (checked against ZooKeeper 3.8's source and classes, and the golden captures in
//! zab/testdata) and 3.9's differences.
//!
//! - [`auth`]: quorum SASL's `QuorumAuthPacket`s, exchanged before the first QuorumPacket
//!   when the learner runs SASL (`quorum.auth.learnerRequireSasl`); the mechanism (DIGEST-MD5)
//!   and the TLS around the whole link (`sslQuorum`) are the driver's.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]
#![deny(unsafe_code)]

pub mod auth;
pub mod error;
pub mod learner;
pub mod packet;
mod scan;
pub mod snapshot;
pub mod stream;
pub mod txn;

pub use auth::{AuthDecoder, AuthPacket, AuthStatus, QUORUM_AUTH_MAGIC};
pub use error::CodecError;
pub use learner::{Input, Learner, LearnerConfig, Output, Pending, Resync, SyncMode};
pub use packet::{
    epoch_of, make_zxid, Body, Direction, ForwardedBody, ForwardedRequest, Packet, PacketType,
    PROTOCOL_VERSION,
};
pub use snapshot::{assemble, SnapItem, SnapshotEnd, SIGNATURE};
pub use stream::{Decoder, Frame, Limits};
pub use txn::TxnEntry;
