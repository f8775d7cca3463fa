//! The one error type of the inspectors. Damage found in a data dir is not an error: it is
//! what the reports describe. Errors are what stops a tool from producing its report.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Wal(#[from] palisade_wal::WalError),
    #[error(transparent)]
    Snapshot(#[from] palisade_snapshot::SnapError),
    #[error(transparent)]
    Recovery(#[from] palisade::durability::recovery::RecoveryError),
    /// The request cannot be served from this data dir (e.g. no snapshot and log reach the
    /// zxid asked for), or an argument is unusable. The text says why.
    #[error("{0}")]
    Cannot(String),
    /// The server would refuse to start on this data dir; the text names file and offset.
    #[error("the server would refuse to start: {0}")]
    Refused(String),
}

impl InspectError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InspectError + '_ {
        move |source| InspectError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
