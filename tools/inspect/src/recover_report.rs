//! `recover-report DIR`: runs the server's own start-up recovery on a damaged copy —
//! `Wal::open` with `Corruption::Refuse` (which cuts a torn tail and refuses anything else),
//! then `recovery::recover` (newest valid snapshot, log replayed, digests checked) — and
//! reports what it did: bytes cut and where, corruption refused with file and offset,
//! damaged snapshots skipped for older ones, the zxid and node count it reached.
//! It changes the copy exactly as a server start would, so it too requires the marker.

use crate::damage::require_marker;
use crate::datadir::{list_snapshots, MAX_PAYLOAD};
use crate::error::InspectError;
use crate::format;
use palisade::durability::recovery::recover;
use palisade_snapshot::Snapshot;
use palisade_wal::{Corruption, Options, RecoveryReport, Wal, WalError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What the log stage of recovery did.
#[derive(Debug)]
pub enum LogOutcome {
    /// The log opened; the report says what was cut, if anything.
    Opened(RecoveryReport),
    /// The server refuses to start: `file` and `offset` name the damage when known.
    Refused {
        error: String,
        file: Option<PathBuf>,
        offset: Option<u64>,
    },
}

/// What the tree stage did.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    pub snapshot: Option<PathBuf>,
    pub zxid: i64,
    pub znodes: usize,
    pub sessions: usize,
    pub replayed: u64,
    pub digests_checked: u64,
    pub digest: u64,
}

#[derive(Debug)]
pub struct RecoverReport {
    pub dir: PathBuf,
    /// Snapshots that do not validate, newest first: the server skips them.
    pub damaged_snapshots: Vec<(PathBuf, String)>,
    pub log: LogOutcome,
    /// `None` when the log stage refused; `Err` when the rebuild refused.
    pub rebuilt: Option<Result<Rebuilt, String>>,
}

impl RecoverReport {
    /// The server would start.
    pub fn recovered(&self) -> bool {
        matches!(self.rebuilt, Some(Ok(_)))
    }

    /// Damaged snapshots newer than the one used: recovery fell back past them.
    pub fn fell_back_past(&self) -> Vec<&Path> {
        let used = match &self.rebuilt {
            Some(Ok(r)) => r.snapshot.as_deref(),
            _ => None,
        };
        let used_start = used.and_then(snapshot_start);
        self.damaged_snapshots
            .iter()
            .map(|(p, _)| p.as_path())
            .filter(|p| snapshot_start(p).zip(used_start).is_none_or(|(d, u)| d > u))
            .collect()
    }

    pub fn text(&self) -> String {
        let mut s = format!("recover-report {}\n", self.dir.display());
        match &self.log {
            LogOutcome::Opened(r) => {
                let txns = match (r.first_txn_zxid, r.last_txn_zxid) {
                    (Some(a), Some(b)) => format!(" {}..={}", format::zxid(a), format::zxid(b)),
                    _ => String::new(),
                };
                s.push_str(&format!(
                    "log: opened, {} segments, {} records ({} txns{txns}, {} meta)\n",
                    r.segments, r.records, r.txns, r.metas
                ));
                match &r.cut {
                    Some(cut) => {
                        let evidence: Vec<String> = cut
                            .evidence
                            .iter()
                            .map(|e| e.display().to_string())
                            .collect();
                        s.push_str(&format!(
                            "log: cut {} bytes at {}:{} ({}: {}); kept in {}\n",
                            cut.bytes,
                            cut.file.display(),
                            cut.offset,
                            cut.cause,
                            cut.reason,
                            evidence.join(" ")
                        ));
                    }
                    None => s.push_str("log: nothing cut\n"),
                }
                for p in &r.removed {
                    s.push_str(&format!("log: removed empty {}\n", p.display()));
                }
            }
            LogOutcome::Refused { error, .. } => {
                s.push_str(&format!("log: REFUSED to start: {error}\n"));
            }
        }
        for (p, e) in &self.damaged_snapshots {
            s.push_str(&format!(
                "snapshot {}: damaged, skipped: {e}\n",
                p.display()
            ));
        }
        match &self.rebuilt {
            None => s.push_str("recovery: not reached (the log stage refused)\n"),
            Some(Err(e)) => s.push_str(&format!("recovery: REFUSED to start: {e}\n")),
            Some(Ok(r)) => {
                let from = r
                    .snapshot
                    .as_ref()
                    .map_or_else(|| "the empty tree".into(), |p| p.display().to_string());
                let fell = self.fell_back_past().len();
                let fallback = match fell {
                    0 => String::new(),
                    n => format!(" (fell back past {n} damaged newer snapshot(s))"),
                };
                s.push_str(&format!(
                    "recovery: from {from}{fallback}, replayed {} txns to {}: {} znodes, {} \
                     sessions, {} digests checked, digest {:#018x}\n",
                    r.replayed,
                    format::zxid(r.zxid),
                    r.znodes,
                    r.sessions,
                    r.digests_checked,
                    r.digest
                ));
            }
        }
        s.push_str(if self.recovered() {
            "verdict: the server would start"
        } else {
            "verdict: the server would REFUSE to start"
        });
        s
    }

    pub fn json(&self) -> Value {
        let log = match &self.log {
            LogOutcome::Opened(r) => json!({
                "opened": true,
                "segments": r.segments, "records": r.records, "txns": r.txns, "metas": r.metas,
                "first_txn": r.first_txn_zxid.map(format::zxid),
                "last_txn": r.last_txn_zxid.map(format::zxid),
                "cut": r.cut.as_ref().map(|c| json!({
                    "cause": c.cause.to_string(), "file": c.file.display().to_string(),
                    "offset": c.offset, "bytes": c.bytes, "reason": c.reason,
                    "evidence": c.evidence.iter().map(|e| e.display().to_string()).collect::<Vec<_>>(),
                })),
            }),
            LogOutcome::Refused {
                error,
                file,
                offset,
            } => json!({
                "opened": false, "error": error,
                "file": file.as_ref().map(|f| f.display().to_string()), "offset": offset,
            }),
        };
        let rebuilt = match &self.rebuilt {
            None => Value::Null,
            Some(Err(e)) => json!({"ok": false, "error": e}),
            Some(Ok(r)) => json!({
                "ok": true,
                "snapshot": r.snapshot.as_ref().map(|p| p.display().to_string()),
                "zxid": format::zxid(r.zxid), "znodes": r.znodes, "sessions": r.sessions,
                "replayed": r.replayed, "digests_checked": r.digests_checked,
                "digest": format!("{:#018x}", r.digest),
                "fell_back_past": self.fell_back_past().iter()
                    .map(|p| p.display().to_string()).collect::<Vec<_>>(),
            }),
        };
        json!({
            "type": "recover-report",
            "dir": self.dir.display().to_string(),
            "recovered": self.recovered(),
            "damaged_snapshots": self.damaged_snapshots.iter()
                .map(|(p, e)| json!({"path": p.display().to_string(), "error": e}))
                .collect::<Vec<_>>(),
            "log": log,
            "rebuild": rebuilt,
        })
    }
}

fn snapshot_start(p: &Path) -> Option<i64> {
    p.file_name()
        .and_then(|n| n.to_str())
        .and_then(palisade_snapshot::format::parse_file_name)
}

/// Runs the server's recovery on the marked copy `dir` (a data dir: `log/`, `snapshots/`).
pub fn recover_report(dir: &Path) -> Result<RecoverReport, InspectError> {
    require_marker(dir)?;
    let snap_dir = dir.join("snapshots");
    let mut damaged_snapshots = Vec::new();
    for (_, path) in list_snapshots(&snap_dir)? {
        if let Err(e) = Snapshot::open(&path) {
            damaged_snapshots.push((path, e.to_string()));
        }
    }
    // As the server: the data dir's identity, which every segment and snapshot must carry.
    let identity = std::fs::read(dir.join(palisade::durability::datadir::IDENTITY_FILE))
        .ok()
        .and_then(|b| palisade::durability::datadir::decode_identity(&b).ok());
    let opts = Options {
        max_payload: MAX_PAYLOAD,
        identity,
        ..Options::new(dir.join("log"))
    };
    let (log, rebuilt) = match Wal::open(opts, Corruption::Refuse) {
        Err(e @ WalError::Io { .. }) | Err(e @ WalError::Locked { .. }) => return Err(e.into()),
        Err(e) => (refused(e), None),
        Ok((wal, recovered)) => {
            std::fs::create_dir_all(&snap_dir).map_err(InspectError::io(&snap_dir))?;
            let foreign = identity
                .map(|id| palisade_snapshot::check_identity(&snap_dir, id))
                .transpose()
                .map_err(|e| e.to_string());
            let rebuilt = foreign
                .and_then(|_| recover(&snap_dir, &recovered).map_err(|e| e.to_string()))
                .map(|r| Rebuilt {
                    snapshot: r.snapshot.clone(),
                    zxid: r.state.zxid(),
                    znodes: r.state.tree.znode_count(),
                    sessions: r.state.sessions().len(),
                    replayed: r.replayed,
                    digests_checked: r.digests_checked,
                    digest: r.state.tree.digest(),
                });
            let report = recovered.report().clone();
            drop(recovered);
            drop(wal);
            (LogOutcome::Opened(report), Some(rebuilt))
        }
    };
    Ok(RecoverReport {
        dir: dir.to_path_buf(),
        damaged_snapshots,
        log,
        rebuilt,
    })
}

fn refused(e: WalError) -> LogOutcome {
    let (file, offset) = match &e {
        WalError::Corrupt { file, offset, .. } | WalError::Gap { file, offset, .. } => {
            (Some(file.clone()), Some(*offset))
        }
        WalError::UnsupportedVersion { file, .. } | WalError::Foreign { file, .. } => {
            (Some(file.clone()), None)
        }
        _ => (None, None),
    };
    LogOutcome::Refused {
        error: e.to_string(),
        file,
        offset,
    }
}
