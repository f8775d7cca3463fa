//! The files of a ZooKeeper data dir: `<dir>/version-2/snapshot.<hex zxid>[.gz|.snappy]` and
//! `<dir>/version-2/log.<hex zxid>` (ZooKeeper's Util.getZxidFromName: the part after the
//! first dot, as hex).

use crate::error::ZkError;
use std::path::{Path, PathBuf};

/// The subdirectory ZooKeeper keeps its files in (FileTxnSnapLog.version + VERSION).
pub const VERSION_DIR: &str = "version-2";

/// How a snapshot file is compressed, from its name (SnapStream.getStreamMode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapFile {
    pub zxid: i64,
    pub path: PathBuf,
    pub compression: Compression,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZkFiles {
    /// Newest first.
    pub snapshots: Vec<SnapFile>,
    /// Oldest first: (zxid of the first txn the name promises, path).
    pub logs: Vec<(i64, PathBuf)>,
}

/// The zxid in a name like `snapshot.1a2b` or `log.1a2b` (None if it is not one).
pub fn zxid_from_name(name: &str, prefix: &str) -> Option<i64> {
    let mut parts = name.split('.');
    if parts.next()? != prefix {
        return None;
    }
    let hex = parts.next()?;
    u64::from_str_radix(hex, 16).ok().map(|z| z as i64)
}

/// Lists `dir` (a `version-2` directory). A missing directory is an empty list.
pub fn list(dir: &Path) -> Result<ZkFiles, ZkError> {
    let mut files = ZkFiles::default();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(ZkError::io(dir)(e)),
    };
    for ent in rd {
        let ent = ent.map_err(ZkError::io(dir))?;
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(zxid) = zxid_from_name(name, "snapshot") {
            let compression = if name.ends_with(".gz") {
                Compression::Gzip
            } else if name.ends_with(".snappy") {
                Compression::Snappy
            } else {
                Compression::None
            };
            files.snapshots.push(SnapFile {
                zxid,
                path: ent.path(),
                compression,
            });
        } else if let Some(zxid) = zxid_from_name(name, "log") {
            files.logs.push((zxid, ent.path()));
        }
    }
    files.snapshots.sort_by_key(|s| std::cmp::Reverse(s.zxid));
    files.logs.sort();
    Ok(files)
}

/// ZooKeeper's name for a snapshot taken at `zxid`.
pub fn snapshot_name(zxid: i64) -> String {
    format!("snapshot.{:x}", zxid as u64)
}

/// ZooKeeper's name for a log whose first txn is `zxid`.
pub fn log_name(zxid: i64) -> String {
    format!("log.{:x}", zxid as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(zxid_from_name("snapshot.1f", "snapshot"), Some(0x1f));
        assert_eq!(zxid_from_name("snapshot.1f.gz", "snapshot"), Some(0x1f));
        assert_eq!(zxid_from_name("log.100000001", "log"), Some(0x1_0000_0001));
        assert_eq!(zxid_from_name("log.zz", "log"), None);
        assert_eq!(zxid_from_name("snapshot", "snapshot"), None);
        assert_eq!(snapshot_name(0x1_0000_002a), "snapshot.10000002a");
    }
}
