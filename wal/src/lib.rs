//! Palisade's write-ahead log: checksummed records in preallocated segment files, appended by
//! one log thread with one fdatasync per batch (group commit), and validated at open so that
//! a write torn by a crash is cut off (its bytes kept as evidence) while any other damage
//! stops the server.
//!
//! The WAL does not interpret payloads: the server hands it jute-encoded txns (TxnHeader +
//! record) and gets the same bytes back at replay.
//!
//! # On-disk format (version 1)
//!
//! All integers are little-endian (this is our own format; only payloads are jute, big-endian).
//!
//! ## Directory
//!
//! ```text
//! <dir>/LOCK                          flock'd by the open Wal: one writer per directory
//! <dir>/log.<16 lowercase hex>        a segment, named after the zxid of its first txn
//!                                     (two's-complement bits), e.g. log.000000000000002a
//! <dir>/log.<16 hex>.tmp              a segment being created; removed at open
//! <dir>/detached/                     evidence recovery cut off; never deleted by us
//!     log.<hex>.<offset>.torn         bytes of a torn tail, from <offset> (decimal) on
//!     log.<hex>.<offset>.corrupt      bytes cut under Corruption::Truncate
//!     log.<hex>                       whole segments moved away (a `.N` suffix if taken)
//! ```
//!
//! ## Segment header (32 bytes, at offset 0)
//!
//! ```text
//! 0   u32  magic 0x504C574C ("PLWL" as a number; the bytes on disk read "LWLP")
//! 4   u32  format version = 1
//! 8   i64  first_zxid: must equal the zxid in the file name
//! 16  [12] reserved, zero
//! 28  u32  crc32 (IEEE, crc32fast) of bytes 0..28
//! ```
//!
//! ## Record (24-byte header + payload), from offset 32, back to back
//!
//! ```text
//! 0   u32  magic 0x50414C31 ("PAL1" as a number)
//! 4   u32  payload length (<= Options::max_payload)
//! 8   u8   kind: 1 = Txn, 2 = Meta (anything else: invalid)
//! 9   [3]  reserved, zero
//! 12  i64  zxid (for Meta: whatever the server passed)
//! 20  u32  crc32 of header bytes 0..20 followed by the payload
//! 24  [len] payload
//! ```
//!
//! A segment is preallocated (fallocate, else set_len) to `Options::segment_bytes` of zeros,
//! so fdatasync need not persist a size change. Because every record starts with a non-zero
//! magic and is covered by a crc, a 24-byte all-zero header (or a zero remainder shorter than
//! that) unambiguously means "end of data"; everything after it must be zero too.
//!
//! ## Writing
//!
//! * Txn zxids increase by exactly 1 from record to record across the whole log, and a
//!   segment's first txn equals its name (so a segment is named last txn + 1). Meta records
//!   (e.g. tree digests) sit between txns and are exempt.
//! * When the next record does not fit, the writer rolls: it fdatasyncs the finished segment,
//!   then creates the next one by writing its header to `log.<hex>.tmp`, preallocating,
//!   fsyncing the file, renaming it to `log.<hex>` and fsyncing the directory. So a segment
//!   under a real name always has a durable header (unlike ZOOKEEPER-2332), and every segment
//!   but the last is complete on disk. A record bigger than `segment_bytes` gets a segment
//!   big enough for it. A segment holding no txn yet is extended instead of rolled, since the
//!   next segment would take its name.
//! * `sync` writes the buffered records with one pwrite per segment touched, then one
//!   fdatasync. Any failed write or fsync poisons the writer ([`WalError::Poisoned`]): the
//!   page cache may have dropped the data, so no retry may ever report success.
//!
//! # Recovery rules
//!
//! Segments are checked in zxid order, records from offset 32:
//!
//! 1. A valid record (magic, reserved bytes, kind, length within `max_payload` and within the
//!    file, crc; for a Txn, zxid = previous txn + 1, across segments too) is accepted.
//! 2. A zero header ends the data. The rest of the segment must be zero; otherwise the end
//!    offset is treated as an invalid record (rule 3).
//! 3. At an invalid record at offset X, the rest of the segment is searched, at every byte
//!    offset holding the record magic, for a record whose header and crc validate.
//!    * Nothing found, and this is the last segment: a **torn tail** (a write cut by a crash,
//!      whose fsync never returned, so never acknowledged). The non-zero bytes from X are
//!      copied to `detached/log.<hex>.<X>.torn` (fsynced), then zeroed in place (the
//!      preallocation stays), and the writer resumes at X. Reported as [`Cut`].
//!    * Otherwise (valid data follows, or it is not the last segment): **corruption**. With
//!      [`Corruption::Refuse`] open fails with [`WalError::Corrupt`] naming file and offset.
//!      With [`Corruption::Truncate`] (an explicit operator choice) the bytes from X are kept in
//!      `detached/log.<hex>.<X>.corrupt` and zeroed, every later segment is moved to
//!      `detached/`, and it is reported loudly.
//! 4. A Txn with a valid crc whose zxid breaks continuity (or a segment whose name is not the
//!    previous txn + 1) is a [`WalError::Gap`]; under Truncate it is a cut point like rule 3.
//! 5. A last segment with an unusable header and no valid record in it (the rename survived a
//!    crash but the data did not) is moved to `detached/`. A header with valid records after
//!    it, or in any other segment, is corruption. A valid header of an unknown version is
//!    always [`WalError::UnsupportedVersion`], never cut.
//! 6. A log holding no record at all keeps no segment: header-only segments are deleted (they
//!    hold nothing but a name). `*.tmp` files are deleted too (they never held records).
//!
//! A consequence of rule 3 worth knowing: after a power loss, the kernel may have written a
//! later page of the last (unacknowledged) batch but not an earlier one. Valid records then
//! follow the damage, so open refuses; an operator who checks the report can restart with
//! `Corruption::Truncate`. We prefer refusing to guessing.
//!
//! `max_payload` is part of validation: never lower it below the largest record ever written.
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

mod error;
mod format;
mod recovered;
mod recovery;
mod report;
mod scan;
mod segment;
mod writer;

pub use error::WalError;
pub use recovered::{Records, Recovered};
pub use report::{Cut, CutCause, RecoveryReport};
pub use scan::{scan_segment, End, SegmentScan};
pub use writer::Wal;

use std::path::{Path, PathBuf};

/// Default segment size: ZooKeeper's preAllocSize.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Default record payload limit: well above jute.maxbuffer (1 MiB) to leave room for multi.
pub const DEFAULT_MAX_PAYLOAD: u32 = 16 * 1024 * 1024;
/// Segment header and record header sizes, for tools that print offsets.
pub const SEGMENT_HEADER_BYTES: u64 = format::SEGMENT_HEADER_LEN as u64;
pub const RECORD_HEADER_BYTES: u64 = format::RECORD_HEADER_LEN as u64;
/// Payload crc and end mark after each payload.
pub const RECORD_FOOTER_BYTES: u64 = format::RECORD_FOOTER_LEN as u64;

/// Bytes a record with `payload_len` bytes of payload takes on disk.
pub fn record_bytes(payload_len: usize) -> u64 {
    format::record_len(payload_len)
}

/// Whether `name` is a segment file name (`log.<16 lowercase hex>`).
pub fn is_segment_file_name(name: &str) -> bool {
    format::parse_segment_file_name(name).is_some()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub dir: PathBuf,
    /// Size each segment is preallocated to; a roll happens when the next record won't fit.
    pub segment_bytes: u64,
    /// false = ZooKeeper's forceSync=no: no fdatasync at all. UNSAFE: an OS crash or power
    /// loss can lose acknowledged writes.
    pub sync: bool,
    /// Largest payload accepted by `append` and by recovery.
    pub max_payload: u32,
    /// The data dir's identity, written into every segment header; at open every segment
    /// must carry it ([`WalError::Foreign`] otherwise). None (offline tools, tests): the
    /// first segment's identity, which every other segment must share; a new log gets a
    /// random one.
    pub identity: Option<u64>,
}

impl Options {
    /// Defaults: 64 MiB segments, fdatasync on, 16 MiB payloads.
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            sync: true,
            max_payload: DEFAULT_MAX_PAYLOAD,
            identity: None,
        }
    }
}

/// What `open` does on mid-log corruption (a torn tail is always cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// Fail with `WalError::Corrupt`/`Gap`: the server refuses to start. The default.
    Refuse,
    /// Cut the log at the damage, keeping everything cut in `detached/`. Only by an explicit
    /// operator flag: acknowledged writes after the damage are lost.
    Truncate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A txn: zxids continue the log by exactly 1.
    Txn,
    /// Server metadata (e.g. a tree digest); its zxid is not checked.
    Meta,
}

/// One valid record, borrowed from the mapped (or read) segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub kind: RecordKind,
    pub zxid: i64,
    pub payload: &'a [u8],
    /// Where it lives, for tools: segment file and offset of the record header.
    pub segment: &'a Path,
    pub offset: u64,
}
