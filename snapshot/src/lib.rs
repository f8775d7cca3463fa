//! Palisade's fuzzy snapshots: the file format, the item encoding, the writer, the validating
//! reader and the snapshot directory.
//!
//! The core thread captures the tree a chunk at a time between batches of writes, encodes each
//! chunk with [`encode_node`] and friends, and hands it to the snapshot-writer thread, which
//! appends it as one checksummed block ([`SnapshotWriter::write_block`]); the trailer ends the
//! file ([`SnapshotWriter::finish`]). Because writes continue between chunks, a snapshot mixes
//! states from `start_zxid` to `end_zxid`; recovery replays the log from `start_zxid + 1` over
//! it ([`load_newest`], then the WAL). This crate knows nothing of the server's tree: it
//! checks only what the format itself promises.
//!
//! # File format, version 2
//!
//! Name: `<dir>/snapshot.<start_zxid as 16 lowercase hex digits>`. Written as `<name>.tmp`
//! (mode 0600), then fsync the file, rename, fsync the directory. All integers are
//! little-endian. Version 1 (earlier builds) differs only in the header: bytes 16..24 are
//! zero (no identity). It is still read ([`Snapshot::identity`] is `None`) so that the server
//! can refuse it by name ([`check_identity`]).
//!
//! ## Header (32 bytes)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic u32 `0x504C534E` ("PLSN" as a word; bytes `4E 53 4C 50`) |
//! | 4 | 4 | format version u32 = 2 |
//! | 8 | 8 | start_zxid i64: the last zxid applied when the capture started |
//! | 16 | 8 | identity u64: the data dir's, non-zero |
//! | 24 | 4 | reserved, zero |
//! | 28 | 4 | crc32 u32 of bytes 0..28 |
//!
//! ## Blocks, one after another from offset 32
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | len u32: payload bytes, ≤ 64 MiB ([`format::BLOCK_BYTES_MAX`]) |
//! | 4 | 1 | kind u8: 1 = items, 2 = trailer |
//! | 5 | 3 | reserved, zero |
//! | 8 | 4 | crc32 u32 over bytes 0..8 of this header, then the payload |
//! | 12 | len | payload |
//!
//! An items block's payload is a concatenation of whole encoded items (possibly none).
//!
//! ## Trailer block (kind 2): last, exactly one, nothing after it; payload 52 bytes
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | end_zxid i64: the last zxid applied when the capture finished (≥ start_zxid) |
//! | 8 | 8 | digest u64: the server's tree digest at end_zxid (opaque here) |
//! | 16 | 8 | node_count u64 |
//! | 24 | 8 | session_count u64 |
//! | 32 | 8 | acl_count u64 (ACL definitions, redefinitions included) |
//! | 40 | 8 | block_count u64: items blocks |
//! | 48 | 4 | chain u32: crc32 over the items blocks' crcs in file order, each as 4 LE bytes |
//!
//! ## Items (tag u8, then fields; byte strings are u32 length + bytes)
//!
//! | tag | item | fields |
//! |---|---|---|
//! | 1 | session | id i64, timeout_ms i32 |
//! | 2 | ACL | index u32, count u32 (≤ 65536), count × (perms i32, scheme bytes, id bytes) |
//! | 3 | node | parent u32, acl u32, czxid i64, mzxid i64, pzxid i64, ctime i64, mtime i64, version i32, cversion i32, aversion i32, owner i64, name bytes (≤ 64 KiB), data: u32 length (≤ 64 MiB, or `u32::MAX` = null) + bytes |
//!
//! Nodes are numbered in file order from 0. Node 0 is the root, with parent [`NO_PARENT`];
//! every other node's parent is an earlier node's number. A node's `acl` is an index defined
//! by an earlier ACL item; a later ACL item with the same index replaces the list for the
//! nodes after it.
//!
//! ## Validity
//!
//! [`Snapshot::open`] accepts a file only if: the header is intact and version 2 (with a
//! non-zero identity) or 1 (with none); every block
//! is complete, within the length limit, of a known kind, with zero reserved bytes and a
//! matching crc; exactly one trailer ends the file; its block count, chain and item counts
//! match the items blocks; `end_zxid ≥ start_zxid`; every item decodes within its limits;
//! every parent and ACL reference points backwards; and a file named like a snapshot carries
//! the start zxid of its name. Anything else is a [`SnapError`] naming the file and offset.
//! [`SnapshotWriter`] runs the same item checks on each block and the trailer, so a capture
//! that would be rejected at the next start is refused when written.
//!
//! # For callers
//!
//! - [`Snapshot::items`] is infallible: `open` already decoded and checked every item.
//! - Counts in [`Trailer`] are the caller's claim; the writer refuses a trailer that
//!   disagrees with the blocks it wrote ([`SnapError::Invalid`]).
//! - [`load_newest`] is for startup: it first removes leftover `.tmp` files ([`clean`]).
//! - [`retain`] validates each snapshot fully (tens of ms per 150 MB file) before counting
//!   it as kept, and moves damaged ones to `detached/` instead of deleting them. It reports a
//!   log purge point only once `keep` valid snapshots exist. [`retain_known`] skips the
//!   files the caller already knows valid (the server's snapshot thread: the ones it wrote).
//! - [`check_identity`] (startup) refuses any snapshot of another data dir, or of version 1.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::arithmetic_side_effects
    )
)]
#![deny(unsafe_code)]

mod cursor;
mod dir;
mod error;
pub mod format;
mod item;
mod reader;
mod validate;
mod writeback;
mod writer;

pub use dir::{check_identity, clean, list, load_newest, retain, retain_known, DETACHED_DIR};
pub use error::SnapError;
pub use format::{file_name, Trailer};
pub use item::{
    decode_items, encode_acl, encode_item, encode_node, encode_session, AclEntry, Item, ItemError,
    ItemReader, NodeItem, ACL_ENTRIES_MAX, DATA_BYTES_MAX, NAME_BYTES_MAX, NO_PARENT,
};
pub use reader::{Items, Snapshot};
pub use writeback::{write_paced, Writeback, WRITEBACK_BYTES};
pub use writer::SnapshotWriter;
