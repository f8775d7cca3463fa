//! What can be wrong with a ZooKeeper data dir: every error names the file, and the offset
//! where it applies.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ZkError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not what ZooKeeper writes (bad magic, a record that does not decode, a
    /// failed seal or entry checksum).
    #[error("{path}: at byte {offset}: {reason}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Unsupported { path: PathBuf, reason: String },
}

impl ZkError {
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ZkError + '_ {
        move |source| ZkError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
