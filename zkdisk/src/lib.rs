//! Apache ZooKeeper 3.8's on-disk files, for migrating to and from Palisade: snapshots
//! ([`snap`]) and txn logs ([`log`]) read with every Adler32 seal and entry checksum verified,
//! and written exactly as ZooKeeper writes them; the data-dir listing ([`dir`]); ZooKeeper's
//! tree digest ([`digest`]). The records come from proto-spec's spec (the "ZooKeeper's
//! on-disk files" section of spec/zookeeper.jute), the same spec the wire codec is generated
//! from. Every byte read is untrusted: damage is a [`ZkError`] naming the file and offset.
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

pub mod adler32;
pub mod digest;
pub mod dir;
pub mod error;
pub mod log;
pub mod session;
pub mod snap;
mod snappy;

pub use dir::{list, Compression, SnapFile, ZkFiles, VERSION_DIR};
pub use error::ZkError;
pub use log::{read_log, LogEnd, Quirk, ZkEntry, ZkLog};
pub use snap::{read_snapshot, ZkNode, ZkSnapshot};

#[cfg(test)]
mod tests;
