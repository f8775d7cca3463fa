//! The one error type of the crate. Every variant names the file, so a caller can log it as is.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SnapError {
    /// An operating-system call failed (open, read, write, fsync, rename, readdir, ...).
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file's bytes are not a valid snapshot; `offset` is where the damage was found.
    #[error("{}: corrupt snapshot at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The header is intact but written by a format version this build does not read.
    #[error("{}: snapshot format version {found} is not supported (this build reads version {})", path.display(), crate::format::FORMAT_VERSION)]
    Version { path: PathBuf, found: u32 },
    /// The writer was handed a block or trailer that would not validate on open; nothing of
    /// it was written. `offset` is where in the file it would have been.
    #[error("{}: refused to write at offset {offset}: {reason}", path.display())]
    Invalid {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// A valid snapshot header carrying another data dir's identity (a file copied in).
    #[error("{}: the snapshot belongs to another data dir (identity {found:016x}, this data dir's is {expected:016x}); refusing to start: move it out of the snapshot directory", path.display())]
    Foreign {
        path: PathBuf,
        found: u64,
        expected: u64,
    },
    /// A version-1 snapshot (earlier builds): its header carries no identity, so this build
    /// cannot tell it from another server's.
    #[error("{}: snapshot format version 1, written by an earlier Palisade build before data-dir identities; this build cannot vouch for it (see docs/durability.md)", path.display())]
    Unidentified { path: PathBuf },
    /// An earlier call on this writer failed, so the file may hold a partial block.
    #[error("{}: an earlier write to this snapshot failed", path.display())]
    Poisoned { path: PathBuf },
}

impl SnapError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SnapError::Io { path, .. }
            | SnapError::Corrupt { path, .. }
            | SnapError::Version { path, .. }
            | SnapError::Invalid { path, .. }
            | SnapError::Poisoned { path }
            | SnapError::Foreign { path, .. }
            | SnapError::Unidentified { path } => path,
        }
    }

    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapError + '_ {
        move |source| SnapError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
