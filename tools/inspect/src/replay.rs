//! Rebuilding the tree as of any zxid, read-only: a starting point (a snapshot, or the fresh
//! tree) and the log replayed over it with the server's own `Replayer`.
//!
//! Which starting points are exact for a target zxid Z: a fuzzy snapshot captured between its
//! start S and end E mixes states from S to E, and replaying S+1.. over it yields the exact
//! tree only from E on. So a snapshot serves Z only if E ≤ Z and the log holds S+1..=Z. The
//! newest such snapshot is used; failing that, the fresh tree if the log starts at zxid 1.
//!
//! [`recover_readonly`] instead does what the server does at start (newest valid snapshot,
//! then the whole valid log), refusing where it would refuse.

use crate::datadir::{list_snapshots, DataDir};
use crate::describe::decode_txn;
use crate::error::InspectError;
use crate::format;
use crate::logscan::{self, LogScan};
use palisade::durability::recovery::{RecoveryError, Replayer};
use palisade::state::tree::DataTree;
use palisade_snapshot::Snapshot;
use palisade_wal::{RecordKind, RecordRef};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Where a replay started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// ZooKeeper's fresh tree at zxid 0.
    Empty,
    /// A snapshot captured from `start` to `end`.
    Snapshot { path: PathBuf, start: i64, end: i64 },
}

impl Base {
    pub fn text(&self) -> String {
        match self {
            Base::Empty => "the empty tree (zxid 0)".into(),
            Base::Snapshot { path, start, end } => format!(
                "{} (captured {}..={})",
                path.display(),
                format::zxid(*start),
                format::zxid(*end)
            ),
        }
    }

    fn of(snap: &Snapshot) -> Base {
        Base::Snapshot {
            path: snap.path().to_path_buf(),
            start: snap.start_zxid(),
            end: snap.trailer().end_zxid,
        }
    }
}

/// A rebuilt state.
pub struct Replayed {
    pub base: Base,
    pub tree: DataTree,
    /// Session id → timeout, for sessions alive at `zxid`.
    pub sessions: BTreeMap<i64, i32>,
    /// The last txn applied.
    pub zxid: i64,
    pub replayed: u64,
    pub digests_checked: u64,
    /// Snapshots not used, newest first, and why.
    pub passed_over: Vec<(PathBuf, String)>,
}

/// The tree as of `to` (the end of the valid log if `None`). Read-only.
///
/// On a live server the end of the log is a moving target: a snapshot taken after the scan
/// can end after it (and retention purge the snapshot that served it), or the walk can read
/// a record being written. Without `to`, a state that cannot be rebuilt is looked for again,
/// a few times, before the failure is reported; damage stays where it is and fails each time.
pub fn replay(dir: &DataDir, to: Option<i64>) -> Result<Replayed, InspectError> {
    let mut attempt = replay_once(dir, to);
    for _ in 0..4 {
        match attempt {
            Err(InspectError::Cannot(_)) if to.is_none() => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                attempt = replay_once(dir, to);
            }
            _ => break,
        }
    }
    attempt
}

fn replay_once(dir: &DataDir, to: Option<i64>) -> Result<Replayed, InspectError> {
    let log = logscan::scan(&dir.log_dir)?;
    let mut passed_over = Vec::new();
    let mut opened = Vec::new();
    for (_, path) in list_snapshots(&dir.snap_dir)? {
        match Snapshot::open(&path) {
            Ok(s) => opened.push(s),
            Err(e) => passed_over.push((path, format!("damaged: {e}"))),
        }
    }
    let target = match to {
        Some(z) if z < 0 => return Err(InspectError::Cannot(format!("zxid {z} is negative"))),
        Some(z) => z,
        None => log
            .last_txn
            .or_else(|| opened.first().map(|s| s.trailer().end_zxid))
            .unwrap_or(0),
    };
    for snap in opened {
        let (start, end) = (snap.start_zxid(), snap.trailer().end_zxid);
        let why_not = if end > target {
            Some(format!(
                "its capture ends at {}, after {}: it is exact only from there on",
                format::zxid(end),
                format::zxid(target)
            ))
        } else if start < target && !covers(&log, start.saturating_add(1), target) {
            Some(format!(
                "the log does not hold {}..={} ({})",
                format::zxid(start.saturating_add(1)),
                format::zxid(target),
                log_range(&log)
            ))
        } else {
            None
        };
        match why_not {
            Some(reason) => passed_over.push((snap.path().to_path_buf(), reason)),
            None => match Replayer::from_snapshot(&snap) {
                Ok(r) => {
                    let base = Base::of(&snap);
                    drop(snap);
                    return run(dir, r, base, Some(target), passed_over);
                }
                Err(e) => passed_over.push((snap.path().to_path_buf(), e.to_string())),
            },
        }
    }
    if target == 0 || covers(&log, 1, target) {
        return run(dir, Replayer::new(), Base::Empty, Some(target), passed_over);
    }
    let mut why = format!(
        "cannot rebuild zxid {}: no snapshot serves it and the log does not start at 0x1 ({})",
        format::zxid(target),
        log_range(&log)
    );
    for (p, reason) in &passed_over {
        why.push_str(&format!("\n  {}: {reason}", p.display()));
    }
    Err(InspectError::Cannot(why))
}

/// What the server's recovery would rebuild, without changing anything: the newest snapshot
/// that validates, then every txn of the valid log. Fails where the server refuses to start
/// (damage in the log, a digest mismatch, a log shorter than the snapshot).
pub fn recover_readonly(dir: &DataDir) -> Result<Replayed, InspectError> {
    let log = logscan::scan(&dir.log_dir)?;
    if let Some((file, offset, what)) = &log.damage {
        return Err(InspectError::Refused(format!(
            "{}:{offset}: {what}",
            file.display()
        )));
    }
    let mut passed_over = Vec::new();
    for (_, path) in list_snapshots(&dir.snap_dir)? {
        match Snapshot::open(&path) {
            Ok(snap) => {
                let base = Base::of(&snap);
                let r = Replayer::from_snapshot(&snap)?;
                drop(snap);
                return run(dir, r, base, None, passed_over);
            }
            Err(e) => passed_over.push((path, format!("damaged: {e}"))),
        }
    }
    run(dir, Replayer::new(), Base::Empty, None, passed_over)
}

/// Replays the valid log over `r` from its zxid + 1 up to `to` (the end if `None`).
pub(crate) fn run(
    dir: &DataDir,
    mut r: Replayer,
    base: Base,
    to: Option<i64>,
    passed_over: Vec<(PathBuf, String)>,
) -> Result<Replayed, InspectError> {
    let mut failed = None;
    let from = r.zxid();
    let mut started = false;
    let scan = logscan::walk(&dir.log_dir, |rec| {
        if rec.kind == RecordKind::Txn {
            if rec.zxid <= from {
                return ControlFlow::Continue(());
            }
            if to.is_some_and(|t| rec.zxid > t) {
                return ControlFlow::Break(());
            }
            started = true;
        } else if !started {
            // As recovery: nothing before the first txn it replays, digest records included.
            return ControlFlow::Continue(());
        }
        match feed(&mut r, &rec) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(t) = to.filter(|&t| r.zxid() < t) {
        return Err(InspectError::Cannot(format!(
            "the valid log ends at {}, before {}{}",
            format::zxid(r.zxid()),
            format::zxid(t),
            damage_note(&scan)
        )));
    }
    let digests_checked = r.digests_checked();
    let restored = r.finish()?;
    Ok(Replayed {
        base,
        zxid: restored.state.zxid(),
        sessions: restored.state.sessions().clone(),
        tree: restored.state.tree.into_inner(),
        replayed: restored.replayed,
        digests_checked,
        passed_over,
    })
}

/// One record into the replayer, decoded and checked as recovery does.
pub(crate) fn feed(r: &mut Replayer, rec: &RecordRef<'_>) -> Result<(), RecoveryError> {
    match rec.kind {
        RecordKind::Txn => {
            let txn = decode_txn(rec.payload).map_err(|reason| RecoveryError::BadTxn {
                zxid: rec.zxid,
                reason,
            })?;
            if txn.header.zxid != rec.zxid {
                return Err(RecoveryError::BadTxn {
                    zxid: rec.zxid,
                    reason: format!("its header says zxid {:#x}", txn.header.zxid),
                });
            }
            r.txn(&txn)
        }
        RecordKind::Meta => r.meta(rec.payload),
    }
}

/// The log holds every txn of `from..=to`.
pub(crate) fn covers(log: &LogScan, from: i64, to: i64) -> bool {
    log.first_txn.is_some_and(|f| f <= from) && log.last_txn.is_some_and(|l| l >= to)
}

pub(crate) fn log_range(log: &LogScan) -> String {
    match (log.first_txn, log.last_txn) {
        (Some(a), Some(b)) => format!(
            "the valid log holds {}..={}",
            format::zxid(a),
            format::zxid(b)
        ),
        _ => "the log holds no txn".into(),
    }
}

fn damage_note(scan: &LogScan) -> String {
    scan.damage
        .as_ref()
        .map(|(f, o, what)| format!(" (damage at {}:{o}: {what})", f.display()))
        .unwrap_or_default()
}

impl Replayed {
    /// Where the state came from and what it holds (the tree is printed separately).
    pub fn summary_text(&self) -> String {
        let mut s = format!(
            "state at {} from {}: {} txns replayed, {} digests checked, digest {:#018x}, {} \
             znodes, {} sessions",
            format::zxid(self.zxid),
            self.base.text(),
            self.replayed,
            self.digests_checked,
            self.tree.digest(),
            self.tree.znode_count(),
            self.sessions.len()
        );
        for (p, why) in &self.passed_over {
            s.push_str(&format!("\nnot used: {}: {why}", p.display()));
        }
        for (id, timeout) in &self.sessions {
            s.push_str(&format!(
                "\nsession {} timeout={timeout}ms",
                format::zxid(*id)
            ));
        }
        s
    }

    pub fn summary_json(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "state",
            "zxid": format::zxid(self.zxid),
            "base": self.base.text(),
            "replayed": self.replayed,
            "digests_checked": self.digests_checked,
            "digest": format!("{:#018x}", self.tree.digest()),
            "znodes": self.tree.znode_count(),
            "sessions": self.sessions.iter()
                .map(|(id, t)| serde_json::json!({"id": format::zxid(*id), "timeout_ms": t}))
                .collect::<Vec<_>>(),
            "not_used": self.passed_over.iter()
                .map(|(p, why)| serde_json::json!({"path": p.display().to_string(), "why": why}))
                .collect::<Vec<_>>(),
        })
    }
}
