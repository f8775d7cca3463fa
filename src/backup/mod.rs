//! Online backup and restore (issue 37; ZooKeeper 3.9's admin `snapshot` and `restore`,
//! docs/ADMIN.md): the stream's format ([`stream`]), ZooKeeper's rate limiter ([`rate`]), and
//! the `palisade backup` / `palisade restore` commands ([`cli`]) with the small HTTP client
//! they use ([`client`]).
//!
//! The stream is a ZooKeeper snapshot file exactly as ZooKeeper 3.9 writes one (and streams
//! it): uncompressed, with the digest and the last processed zxid after the tree, each section
//! sealed by the running Adler32. ZooKeeper 3.9 restores it; ZooKeeper 3.8 loads it as a
//! snapshot file (it stops reading after the digest's seal); Palisade's `restore` and
//! `import-zookeeper` read both forms.
//!
//! Owns: the stream format, the rate limiter, the two commands and their HTTP client, and the
//! member data dir a restore writes (`member_restore.rs`). May not touch: a running server's
//! state or files — a running server's backup and restore are the core's (`CoreMsg::Admin`),
//! answered through the AdminServer.

pub mod cli;
pub mod client;
pub mod member_restore;
pub mod rate;
pub mod stream;
