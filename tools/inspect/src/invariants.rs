//! `invariants DATADIR`: replays the whole retained log and checks, after every txn, what
//! the server promises about counters and names:
//!
//! | rule | what it says |
//! |---|---|
//! | `zxid-continuity` | txn zxids go up by exactly 1 (and each txn's header agrees with its record) |
//! | `create-counter` | a parent's stored create counter C never decreases |
//! | `pzxid` | a parent's pzxid never decreases |
//! | `parent-cversion` | a create's parentCVersion is the parent's C before it + 1 |
//! | `sequential-suffix` | a sequential create's suffix is the parent's C before it |
//! | `suffix-reuse` | suffixes under one parent strictly increase: never reused |
//! | `digest` | every digest record (and the start snapshot's) matches the replayed tree |
//! | `create-without-parent` | a logged create has a parent (failed creates are error txns) |
//!
//! "Parent" means one incarnation of it (same czxid): a parent deleted and created again
//! starts over at C = 0, as in ZooKeeper. The log does not record whether a create was
//! sequential; a created name ending in 10 digits is taken as sequential.
//!
//! Starting point: the empty tree if the log starts at zxid 1, else the oldest valid
//! snapshot the log covers; then checks start after the capture's end (before it the tree is
//! fuzzy, and a replayed create may find its parent's counter already raised).

use crate::checker::Checker;
use crate::datadir::{list_snapshots, DataDir};
use crate::error::InspectError;
use crate::format;
use crate::logscan::{self, SegmentState};
use crate::replay::Base;
use palisade::durability::recovery::Replayer;
use palisade_snapshot::Snapshot;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub zxid: i64,
    pub rule: &'static str,
    pub path: String,
    /// The evidence: before and after values, earlier zxids.
    pub detail: String,
}

#[derive(Debug, Clone)]
pub struct InvariantsReport {
    pub base: Base,
    /// The first zxid whose state was checked.
    pub checked_from: i64,
    /// The last txn replayed.
    pub last_zxid: i64,
    pub txns: u64,
    pub creates: u64,
    pub sequential: u64,
    pub digests_checked: u64,
    pub violations: Vec<Violation>,
    /// Why the replay stopped before the end of the log, if it did.
    pub stopped: Option<String>,
}

impl InvariantsReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && self.stopped.is_none()
    }

    pub fn text(&self) -> String {
        let mut s = format!(
            "invariants from {}: {} txns to {}, checked from {}; {} creates ({} sequential), \
             {} digests checked\n",
            self.base.text(),
            self.txns,
            format::zxid(self.last_zxid),
            format::zxid(self.checked_from),
            self.creates,
            self.sequential,
            self.digests_checked
        );
        for v in &self.violations {
            let path = if v.path.is_empty() {
                String::new()
            } else {
                format!(" {}", v.path)
            };
            s.push_str(&format!(
                "VIOLATION at {} {}{path}: {}\n",
                format::zxid(v.zxid),
                v.rule,
                v.detail
            ));
        }
        if let Some(why) = &self.stopped {
            s.push_str(&format!("STOPPED: {why}\n"));
        }
        match (self.ok(), self.violations.len()) {
            (true, _) => s.push_str("verdict: OK"),
            (false, n) => s.push_str(&format!("verdict: FAILED ({n} violations)")),
        }
        s
    }

    pub fn json_lines(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .violations
            .iter()
            .map(|v| {
                json!({"type": "violation", "zxid": format::zxid(v.zxid), "rule": v.rule,
                       "path": v.path, "detail": v.detail})
            })
            .collect();
        out.push(json!({
            "type": "summary", "ok": self.ok(), "base": self.base.text(),
            "checked_from": format::zxid(self.checked_from),
            "last_zxid": format::zxid(self.last_zxid), "txns": self.txns,
            "creates": self.creates, "sequential": self.sequential,
            "digests_checked": self.digests_checked,
            "violations": self.violations.len(), "stopped": self.stopped,
        }));
        out
    }
}

pub fn invariants(dir: &DataDir) -> Result<InvariantsReport, InspectError> {
    let log = logscan::scan(&dir.log_dir)?;
    let (replayer, base) = match log.first_txn {
        _ if log.starts_at_zxid_1() => (Replayer::new(), Base::Empty),
        Some(first) => oldest_covering_snapshot(dir, first)?,
        None => newest_snapshot(dir)?,
    };
    let checked_from = match &base {
        Base::Empty => 1,
        Base::Snapshot { end, .. } => end.saturating_add(1),
    };
    let mut c = Checker::new(replayer, base, checked_from);
    let scan = logscan::walk(&dir.log_dir, |rec| c.record(&rec))?;
    if c.report.stopped.is_none() {
        if let Some((file, offset, what)) = &scan.damage {
            let rule = match scan
                .segments
                .iter()
                .find(|s| &s.path == file)
                .map(|s| &s.state)
            {
                Some(SegmentState::Gap { .. }) => "zxid-continuity",
                _ => "log-damage",
            };
            let detail = format!("{}:{offset}: {what}", file.display());
            c.violate(c.r.zxid().saturating_add(1), rule, "", detail);
            c.report.stopped = Some("the valid log ends at the damage".into());
        }
    }
    let mut report = c.finish();
    // What this run started from, if a live server's retention removed it meanwhile: the
    // snapshot, or (starting from the empty tree) the log's first segment.
    let removed = match &report.base {
        Base::Snapshot { path, .. } => Some(path.clone()),
        Base::Empty => log.segments.first().map(|s| s.path.clone()),
    };
    if let Some(path) = removed {
        if !report.ok() && !path.exists() {
            let note = format!(
                "{} was removed while this ran (a live server's retention), and the log after it \
                 may have been purged: check a stopped server's data dir, or a copy",
                path.display()
            );
            report.stopped = Some(match report.stopped.take() {
                Some(why) => format!("{why}; {note}"),
                None => note,
            });
        }
    }
    Ok(report)
}

/// The oldest valid snapshot whose start the log continues: it lets the most log be checked.
fn oldest_covering_snapshot(dir: &DataDir, first: i64) -> Result<(Replayer, Base), InspectError> {
    let mut listed = list_snapshots(&dir.snap_dir)?;
    listed.reverse();
    for (start, path) in listed {
        if start.saturating_add(1) < first {
            continue;
        }
        let Ok(snap) = Snapshot::open(&path) else {
            continue;
        };
        if let Ok(r) = Replayer::from_snapshot(&snap) {
            let end = snap.trailer().end_zxid;
            return Ok((r, Base::Snapshot { path, start, end }));
        }
    }
    Err(InspectError::Cannot(format!(
        "the log starts at {} and no valid snapshot starts at or after {}",
        format::zxid(first),
        format::zxid(first.saturating_sub(1))
    )))
}

/// No txn to check: the state is the newest valid snapshot's (or the empty tree).
fn newest_snapshot(dir: &DataDir) -> Result<(Replayer, Base), InspectError> {
    for (start, path) in list_snapshots(&dir.snap_dir)? {
        if let Ok(snap) = Snapshot::open(&path) {
            let end = snap.trailer().end_zxid;
            return Ok((
                Replayer::from_snapshot(&snap)?,
                Base::Snapshot { path, start, end },
            ));
        }
    }
    Ok((Replayer::new(), Base::Empty))
}
