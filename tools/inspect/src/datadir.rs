//! Where a data dir keeps its files (`log/log.<hex>`, `snapshots/snapshot.<hex>`), and the
//! record size limit the server's log uses, so offline reads accept exactly what it accepts.

use crate::error::InspectError;
use std::path::{Path, PathBuf};

/// The server's `max_payload` for its log: a smaller value would call its big records damage.
pub const MAX_PAYLOAD: u32 = palisade::limits::MAX_TXN_BYTES;

/// The two directories a recovery reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    /// `dataDir/log`, or `dataLogDir/log`.
    pub log_dir: PathBuf,
    /// `dataDir/snapshots`.
    pub snap_dir: PathBuf,
}

impl DataDir {
    /// The layout of `dataDir` without `dataLogDir`.
    pub fn new(data_dir: impl AsRef<Path>) -> DataDir {
        let d = data_dir.as_ref();
        DataDir {
            log_dir: d.join("log"),
            snap_dir: d.join("snapshots"),
        }
    }

    /// The log lives under `dataLogDir` instead (the directory that holds `log/`).
    pub fn with_data_log_dir(mut self, data_log_dir: impl AsRef<Path>) -> DataDir {
        self.log_dir = data_log_dir.as_ref().join("log");
        self
    }
}

/// The zxid a segment file name stands for (`log.` + 16 lowercase hex digits), as the WAL
/// names them; `None` for any other name.
pub fn segment_name_zxid(name: &str) -> Option<i64> {
    let hex = name.strip_prefix("log.")?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if hex.len() != 16 || !hex.bytes().all(lower_hex) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

/// The segment files of `log_dir` in zxid order. A missing directory is an empty log.
pub fn list_segments(log_dir: &Path) -> Result<Vec<(i64, PathBuf)>, InspectError> {
    let mut out = Vec::new();
    for (name, path) in entries(log_dir)? {
        if let Some(z) = segment_name_zxid(&name) {
            out.push((z, path));
        }
    }
    out.sort_by_key(|(z, _)| *z);
    Ok(out)
}

/// The snapshot files of `snap_dir`, newest first. A missing directory holds none.
pub fn list_snapshots(snap_dir: &Path) -> Result<Vec<(i64, PathBuf)>, InspectError> {
    Ok(palisade_snapshot::list(snap_dir)?)
}

/// `*.tmp` leftovers in `dir` (a segment or snapshot whose creation never finished).
pub fn tmp_files(dir: &Path) -> Result<Vec<PathBuf>, InspectError> {
    Ok(entries(dir)?
        .into_iter()
        .filter(|(name, _)| name.ends_with(".tmp"))
        .map(|(_, p)| p)
        .collect())
}

/// File names and paths in `dir`, sorted by name; a missing directory is empty.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>, InspectError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(InspectError::io(dir)(e)),
    };
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(InspectError::io(dir))?;
        if let Ok(name) = entry.file_name().into_string() {
            out.push((name, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Parses a zxid as the tools print them: `0x` hex or decimal.
pub fn parse_zxid(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).map(|v| v as i64).ok(),
        None => t.parse::<i64>().ok(),
    };
    parsed.ok_or_else(|| format!("{s:?} is not a zxid (hex with 0x, or decimal)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_zxids_parse_as_the_wal_writes_them() {
        assert_eq!(segment_name_zxid("log.000000000000002a"), Some(42));
        assert_eq!(segment_name_zxid("log.000000000000002A"), None);
        assert_eq!(segment_name_zxid("log.2a"), None);
        assert_eq!(parse_zxid("0x2a"), Ok(42));
        assert_eq!(parse_zxid("42"), Ok(42));
        assert!(parse_zxid("x").is_err());
    }
}
