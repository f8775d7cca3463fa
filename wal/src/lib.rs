//! Palisade's write-ahead log: checksummed records in preallocated segment files, appended by
//! one log thread with one fdatasync per batch (group commit), and validated at open so that
//! a write torn by a crash is cut off (its bytes kept as evidence) while any other damage
//! stops the server.
//!
//! The WAL does not interpret payloads: the server hands it jute-encoded txns (TxnHeader +
//! record) and gets the same bytes back at replay.
//!
//! # On-disk format (version 2)
//!
//! All integers are little-endian (this is our own format; only payloads are jute, big-endian).
//! Version 1 (builds before data-dir identities: no identity, no created size, one crc per
//! record, no end mark) is refused at open ([`WalError::UnsupportedVersion`]).
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
//! Every file and directory the WAL creates is owner-only (0600 / 0700): payloads are client
//! data.
//!
//! ## Segment header (32 bytes, at offset 0)
//!
//! ```text
//! 0   u32  magic 0x504C574C ("PLWL" as a number; the bytes on disk read "LWLP")
//! 4   u32  format version = 2
//! 8   i64  first_zxid: must equal the zxid in the file name
//! 16  u64  identity: the data dir's (non-zero); every segment of a log carries the same
//! 24  u32  created size in KiB, rounded down: the file is never shorter than this
//! 28  u32  crc32 (IEEE, crc32fast) of bytes 0..28
//! ```
//!
//! ## Record (24-byte header + payload + 8-byte footer), from offset 32, back to back
//!
//! ```text
//! 0       u32  magic 0x50414C32 ("PAL2" as a number)
//! 4       u32  payload length (<= Options::max_payload)
//! 8       u8   kind: 1 = Txn, 2 = Meta (anything else: invalid)
//! 9       [3]  reserved, zero
//! 12      i64  zxid (for Meta: whatever the server passed)
//! 20      u32  crc32 of bytes 0..20: the length can be trusted before the payload is read
//! 24      [len] payload
//! 24+len  u32  crc32 of bytes 0..24 followed by the payload
//! 28+len  u32  end mark 0x50454E44 ("PEND" as a number)
//! ```
//!
//! A segment is preallocated (fallocate, else set_len) to `Options::segment_bytes` of zeros,
//! so fdatasync need not persist a size change. Because every record starts with a non-zero
//! magic and is covered by a crc, a 24-byte all-zero header (or a zero remainder shorter than
//! that) unambiguously means "end of data"; everything after it must be zero too.
//!
//! ## What a torn write can leave
//!
//! A write cut short by a crash (its fdatasync never returned, so it was never acknowledged)
//! leaves a prefix of the bytes it wrote, then the zeros that were there: records are only
//! written into preallocated, zeroed space, and a segment is named only once its header is
//! durable. So a tear can leave: a record header cut short with nothing non-zero after it, or
//! a record whose header is whole but whose end mark is missing (or a prefix of it) with
//! nothing non-zero after it. It cannot leave: a record whose end mark is present but whose
//! crc fails (it was written whole: a flipped bit), non-zero bytes after a gap of zeros, a
//! file shorter than its created size or ending inside a record, or a named segment without a
//! valid header.
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
//! * Purging ([`Wal::purge_before`], by the writer's owner) deletes whole segments whose txns
//!   all precede the purge point, oldest first, never the open segment nor the one holding
//!   the log's last txn.
//!
//! # Recovery rules
//!
//! Segments are checked in zxid order, records from offset 32:
//!
//! 1. A valid record (magic, header crc, reserved bytes, kind, length within `max_payload`
//!    and within the file, end mark, crc; for a Txn, zxid = previous txn + 1, across segments
//!    too) is accepted.
//! 2. A zero header ends the data. The rest of the segment must be zero; otherwise the end
//!    offset is treated as an invalid record (rule 3).
//! 3. At an invalid record at offset X, the rest of the segment is searched, at every byte
//!    offset holding the record magic, for a record whose header and crc validate.
//!    * Nothing found, this is the last segment, and the bytes are what a torn write can
//!      leave (above): a **torn tail** (never acknowledged). The non-zero bytes from X are
//!      copied to `detached/log.<hex>.<X>.torn` (fsynced), then zeroed in place (the
//!      preallocation stays), and the writer resumes at X. Reported as [`Cut`].
//!    * Otherwise (valid data follows, not the last segment, or bytes no tear can leave):
//!      **corruption**. With [`Corruption::Refuse`] open fails with [`WalError::Corrupt`]
//!      naming file and offset. With [`Corruption::Truncate`] (an explicit operator choice)
//!      the bytes from X are kept in `detached/log.<hex>.<X>.corrupt` and zeroed (a shortened
//!      segment gets its created size back), every later segment is moved to `detached/`,
//!      and it is reported loudly.
//! 4. A Txn with a valid crc whose zxid breaks continuity (or a segment whose name is not the
//!    previous txn + 1) is a [`WalError::Gap`]; under Truncate it is a cut point like rule 3.
//! 5. A segment with an unusable header, or shorter than its created size, is corruption
//!    (rule 3), in the last segment too: the writer cannot leave either. A valid header of
//!    another version is always [`WalError::UnsupportedVersion`], and one of another identity
//!    than `Options::identity` (or than the first segment's) always [`WalError::Foreign`],
//!    never cut.
//! 6. A log holding no record at all keeps its header-only segment: its name is where the log
//!    starts (`Wal::start_at`, the txn after a snapshot), so the next txn must carry it.
//!    `*.tmp` files are deleted (they never held records).
//!
//! Then the last segment is fdatasynced (unless `Options::sync` is off): a kill -9 between a
//! write and its sync leaves records in the page cache only, and the caller takes what the
//! open found as on disk (a restarted member answers for its log), so a power cut after the
//! restart must not take them back. Earlier segments were synced before the next existed.
//!
//! A consequence of rule 3 worth knowing: after a power loss, the kernel may have written a
//! later page of the last (unacknowledged) batch but not an earlier one. Valid records (or
//! non-zero bytes) then follow the damage, so open refuses; an operator who checks the report
//! can restart with `Corruption::Truncate`. We prefer refusing to guessing.
//!
//! `max_payload` is part of validation: never lower it below the largest record ever written.
//!
//! # The Raft log (segment format 3)
//!
//! An ensemble member's log ([`Wal::open_raft`]) has the same layout and rules as above, with
//! two differences. Its segment headers carry format version 3, so a standalone open refuses
//! it with [`WalError::UnsupportedVersion`] (never cut, never replayed as txns), and a Raft
//! open refuses a version-2 log the same way. Its record kinds are 3 = a Raft entry and
//! 4 = Raft metadata (1 and 2 are unknown kinds there, as 3 and 4 are in a version-2
//! segment). In this API an entry is a `RecordKind::Txn` whose zxid field is the Raft log
//! index (segments are named after their first entry's index; indexes only rise, where
//! txn zxids rise by exactly 1, because openraft's storage suite appends with gaps: the Raft
//! layer checks at open that its entries are contiguous) and
//! whose payload the Raft layer encodes (term, index, payload); `RecordKind::Meta` is the
//! Raft layer's own metadata. Two operations exist for Raft only:
//!
//! * [`Wal::truncate_from`] removes an uncommitted suffix durably: later segments are
//!   deleted newest first, and the segment holding the cut is rewritten (header and the
//!   records before the cut, under `.tmp`, fsynced, renamed over the old file, directory
//!   fsynced). A crash leaves a prefix of the old log at least as long as the kept part:
//!   the entries between were never committed, so Raft accepts either.
//! * [`Wal::reset`] deletes every segment (a snapshot replaced the whole log; the Raft layer
//!   has saved its purge point first).
//!
//! And for readers of a live Raft log: [`Wal::append_at`] tells where a record will be
//! (segment, offset), and [`read_raft_record`] reads one back from there, checked whole.
//!
//! Offline tools read either format without opening (and so without repairing) the log:
//! [`segment_format`] tells a segment's format from its header, and [`scan_segment_as`]
//! walks a segment of that format, reporting its valid records and how it ends (clean, torn,
//! corrupt, gap) by the same rules as recovery. [`scan_segment`] reads format 2 only (a
//! format-3 segment ends `Corrupt` at offset 0 there, "unsupported format version 3").
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
pub use scan::{
    scan_open_segment_as, scan_segment, scan_segment_as, segment_format, End, SegmentScan,
};
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

/// Which of the two segment formats a log has (see the crate docs), for tools that read both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LogFormat {
    /// Format 2, a standalone server's log: kind 1 = `RecordKind::Txn` (a jute txn, zxids
    /// rising by exactly 1), 2 = `RecordKind::Meta`.
    #[default]
    Standalone,
    /// Format 3, an ensemble member's Raft log: kind 3 = a Raft entry (`RecordKind::Txn`, its
    /// zxid field the Raft index, indexes only rising), 4 = Raft metadata (`RecordKind::Meta`).
    Raft,
}

impl LogFormat {
    /// The format version in its segment headers: 2 or 3.
    pub fn version(self) -> u32 {
        self.flavour().version()
    }

    pub(crate) fn flavour(self) -> format::Flavour {
        match self {
            LogFormat::Standalone => format::Flavour::Standalone,
            LogFormat::Raft => format::Flavour::Raft,
        }
    }

    /// Whether a segment named `found` may follow one whose last sequenced record was
    /// `prev`: exactly `prev + 1` for format 2, anything above `prev` for format 3 (Raft
    /// indexes only rise; the Raft layer checks contiguity).
    pub fn segment_follows(self, prev: i64, found: i64) -> bool {
        prev.checked_add(1)
            .is_some_and(|e| self.flavour().continues(e, found))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A txn: zxids continue the log by exactly 1.
    Txn,
    /// Server metadata (e.g. a tree digest); its zxid is not checked.
    Meta,
}

/// Where a record lives: its segment (named after `segment_first_zxid`) and the offset of
/// its header there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordPos {
    pub segment_first_zxid: i64,
    pub offset: u64,
}

/// Reads the record at `pos` of the Raft log in `dir` and checks it whole (header, length,
/// crc, end mark) as recovery does. For readers of a live log: the writer may have removed
/// the segment since (a purge) or rewritten it (a truncation), so the caller checks that the
/// record is the one it expected (a Raft entry carries its log id).
pub fn read_raft_record(
    dir: &Path,
    pos: RecordPos,
    max_payload: u32,
) -> Result<(RecordKind, i64, Vec<u8>), WalError> {
    use std::os::unix::fs::FileExt;
    let path = dir.join(format::segment_file_name(pos.segment_first_zxid));
    let file = std::fs::File::open(&path).map_err(|e| WalError::io(&path, e))?;
    let mut header = [0u8; format::RECORD_HEADER_LEN];
    file.read_exact_at(&mut header, pos.offset)
        .map_err(|e| WalError::io(&path, e))?;
    let corrupt = |reason: String| WalError::Corrupt {
        file: path.clone(),
        offset: pos.offset,
        reason,
    };
    let mut len = [0u8; 4];
    len.copy_from_slice(header.get(4..8).unwrap_or(&[0; 4]));
    let len = u32::from_le_bytes(len);
    if len > max_payload {
        return Err(corrupt(format!("record length {len} over max_payload")));
    }
    let total = usize::try_from(format::record_len(len as usize))
        .map_err(|_| corrupt("record too long".into()))?;
    let mut buf = vec![0u8; total];
    file.read_exact_at(&mut buf, pos.offset)
        .map_err(|e| WalError::io(&path, e))?;
    let r = format::check_record_of(&buf, 0, max_payload, format::Flavour::Raft)
        .map_err(|bad| corrupt(bad.reason))?;
    Ok((r.kind, r.zxid, r.payload.to_vec()))
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
