//! Everything the WAL can fail with. On-disk problems name the file and the byte offset, so an
//! operator can look at exactly that spot (e.g. with `xxd -s <offset>`).

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Damage that is not a torn tail: valid data follows it, or it is not in the last
    /// segment. The server must refuse to start (or the operator chooses Corruption::Truncate).
    #[error("corrupt log at {}:{offset}: {reason}", file.display())]
    Corrupt {
        file: PathBuf,
        offset: u64,
        reason: String,
    },
    /// A txn record with a valid crc whose zxid does not continue the log.
    #[error("zxid gap at {}:{offset}: expected {expected:#x}, found {found:#x}", file.display())]
    Gap {
        file: PathBuf,
        offset: u64,
        expected: i64,
        found: i64,
    },
    /// A segment of another format (a newer build's, or format 1 of builds before data-dir
    /// identities): never repaired or cut, whatever the flag says.
    #[error("{}: unsupported WAL format version {version} (this build reads version {}{})", file.display(), crate::format::FORMAT_VERSION, version_note(*version))]
    UnsupportedVersion { file: PathBuf, version: u32 },
    /// A segment carrying another data dir's identity: copied in from another server.
    #[error("{}: the segment belongs to another data dir (identity {found:016x}, this data dir's is {expected:016x}); refusing to start: move it out of the log directory", file.display())]
    Foreign {
        file: PathBuf,
        found: u64,
        expected: u64,
    },
    /// An earlier write or fsync failed. Nothing more is accepted: after a failed fsync the
    /// page cache may have dropped the data, so a retry that "succeeds" would lie.
    #[error("the WAL is poisoned by an earlier write or fsync failure; restart to recover")]
    Poisoned,
    /// Another process (or another Wal in this one) holds `<dir>/LOCK`.
    #[error("{}: the log directory is locked by another Palisade process", path.display())]
    Locked { path: PathBuf },
    /// `append` of a txn whose zxid is not the last txn's + 1. Nothing was buffered.
    #[error("txn zxid {found:#x} does not continue the log (expected {expected:#x})")]
    OutOfOrder { expected: i64, found: i64 },
    /// `append` of a payload over `Options::max_payload`: recovery would reject the record.
    #[error("payload of {len} bytes exceeds max_payload ({max} bytes)")]
    PayloadTooLarge { len: usize, max: u32 },
    /// Any other misuse of the writer that was caught before anything was written.
    #[error("{reason}")]
    Rejected { reason: String },
}

/// Why a version this build does not read here was found.
fn version_note(version: u32) -> &'static str {
    if version < crate::format::FORMAT_VERSION {
        "; the file was written by an earlier Palisade build, before data-dir identities, and this build cannot vouch for it"
    } else if version == crate::format::FORMAT_VERSION
        || version == crate::format::RAFT_FORMAT_VERSION
    {
        " for a standalone log and 3 for an ensemble member's Raft log: a log of one kind was opened as the other"
    } else {
        ""
    }
}

impl WalError {
    pub(crate) fn io(path: &Path, source: io::Error) -> WalError {
        WalError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// For callers whose interface speaks `io::Result` (the server's `LogSink`).
impl From<WalError> for io::Error {
    fn from(e: WalError) -> io::Error {
        let kind = match &e {
            WalError::Io { source, .. } => source.kind(),
            WalError::Corrupt { .. } | WalError::Gap { .. } => io::ErrorKind::InvalidData,
            WalError::Locked { .. } => io::ErrorKind::WouldBlock,
            WalError::OutOfOrder { .. }
            | WalError::PayloadTooLarge { .. }
            | WalError::Rejected { .. } => io::ErrorKind::InvalidInput,
            WalError::UnsupportedVersion { .. } | WalError::Poisoned => io::ErrorKind::Other,
            WalError::Foreign { .. } => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}
