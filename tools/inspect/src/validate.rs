//! `validate DATADIR`: every snapshot opened and checked, every log segment scanned and
//! judged in its place in the log, then full replays — from each valid snapshot the log
//! covers, and from the empty tree if the log starts at zxid 1 — checking every digest the
//! server recorded, and that all replays end in the same tree. Read-only.

use crate::datadir::{list_snapshots, tmp_files, DataDir};
use crate::error::InspectError;
use crate::format;
use crate::logscan::{self, LogScan, SegmentReport, SegmentState};
use crate::replay::{self, Base, Replayed};
use palisade::durability::recovery::{RecoveryError, Replayer};
use palisade_snapshot::{SnapError, Snapshot};
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// Not a fault: something recovery repairs by itself, or a check that cannot run here.
    Warning,
    /// Wrong: damage, a digest mismatch, replays that disagree.
    Failed,
}

impl Status {
    pub fn text(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Failed => "FAILED",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// `snapshot`, `segment`, `tmp`, `replay` or `agreement`.
    pub kind: &'static str,
    /// The file (or the replay's starting point).
    pub subject: String,
    pub status: Status,
    pub detail: String,
    /// Where the damage is, for damaged files.
    pub offset: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct ValidateReport {
    pub verdicts: Vec<Verdict>,
}

impl ValidateReport {
    pub fn problems(&self) -> usize {
        self.verdicts
            .iter()
            .filter(|v| v.status == Status::Failed)
            .count()
    }

    pub fn ok(&self) -> bool {
        self.problems() == 0
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        for v in &self.verdicts {
            let at = v
                .offset
                .map(|o| format!(" at offset {o}"))
                .unwrap_or_default();
            s.push_str(&format!(
                "{} {}: {}{at}: {}\n",
                v.kind,
                v.subject,
                v.status.text(),
                v.detail
            ));
        }
        match self.problems() {
            0 => s.push_str("verdict: OK"),
            n => s.push_str(&format!("verdict: FAILED ({n} problems)")),
        }
        s
    }

    pub fn json_lines(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .verdicts
            .iter()
            .map(|v| {
                json!({"type": v.kind, "subject": v.subject, "status": v.status.text(),
                       "detail": v.detail, "offset": v.offset})
            })
            .collect();
        out.push(json!({"type": "verdict", "ok": self.ok(), "problems": self.problems()}));
        out
    }

    fn push(&mut self, kind: &'static str, subject: String, status: Status, detail: String) {
        self.verdicts.push(Verdict {
            kind,
            subject,
            status,
            detail,
            offset: None,
        });
    }
}

pub fn validate(dir: &DataDir) -> Result<ValidateReport, InspectError> {
    // Snapshots before the log: on a live server every snapshot listed now ends at a zxid
    // the log scanned afterwards already holds.
    let mut snapshots = ValidateReport::default();
    let valid = check_snapshots(dir, &mut snapshots)?;
    let log = logscan::scan(&dir.log_dir)?;
    let mut report = ValidateReport::default();
    for seg in &log.segments {
        report.verdicts.push(segment_verdict(seg));
    }
    for tmp in tmp_files(&dir.log_dir)?
        .into_iter()
        .chain(tmp_files(&dir.snap_dir)?)
    {
        let detail = "unfinished file; the server removes it at start".into();
        report.push("tmp", show(&tmp), Status::Warning, detail);
    }
    report.verdicts.append(&mut snapshots.verdicts);
    identities(dir, &log, &valid, &mut report);
    // Every replay stops at the log's last txn as scanned, so all can be compared there
    // even while a server appends.
    let mut ends: Vec<(String, i64, u64)> = Vec::new();
    for (i, snap) in valid.iter().enumerate() {
        replay_from_snapshot(dir, &log, snap, i == 0, &mut report, &mut ends)?;
    }
    replay_from_empty(dir, &log, valid.is_empty(), &mut report, &mut ends);
    if log.damage.is_some() {
        let detail = "not checked: every replay stops at the damage in the log".into();
        report.push("agreement", "replays".into(), Status::Warning, detail);
    } else {
        agreement(&ends, &mut report);
    }
    Ok(report)
}

/// Every segment and snapshot must carry the data dir's identity (`dataDir/identity`, next
/// to `snapshots/`): the server refuses to start on any other (issue 12 item 10).
fn identities(dir: &DataDir, log: &LogScan, snaps: &[Snapshot], report: &mut ValidateReport) {
    use palisade::durability::datadir::{decode_identity, IDENTITY_FILE};
    let file = dir
        .snap_dir
        .parent()
        .map(|d| d.join(IDENTITY_FILE))
        .unwrap_or_else(|| PathBuf::from(IDENTITY_FILE));
    let expected = match std::fs::read(&file) {
        Ok(b) => match decode_identity(&b) {
            Ok(id) => Some(id),
            Err(why) => {
                let detail =
                    format!("not a valid identity file ({why}): the server refuses to start");
                report.push("identity", show(&file), Status::Failed, detail);
                return;
            }
        },
        Err(_) => None,
    };
    let files = log
        .segments
        .iter()
        .filter_map(|s| s.identity.map(|id| (s.path.clone(), Some(id))))
        .chain(snaps.iter().map(|s| (s.path().to_path_buf(), s.identity())));
    let mut reference = expected;
    let mut checked = 0usize;
    for (path, id) in files {
        checked = checked.saturating_add(1);
        let detail = match (id, reference) {
            (None, _) => "format 1 (an earlier build): no identity; the server refuses it".into(),
            (Some(id), Some(want)) if id != want => format!(
                "identity {id:016x}, not the data dir's {want:016x}: it belongs to another data dir; the server refuses it"
            ),
            (Some(id), None) => {
                reference = Some(id);
                continue;
            }
            _ => continue,
        };
        report.push("identity", show(&path), Status::Failed, detail);
    }
    match expected {
        Some(id) => {
            let detail = format!("{id:016x}; {checked} files checked against it");
            report.push("identity", show(&file), Status::Ok, detail);
        }
        None if checked > 0 => {
            let detail =
                "missing while the data dir holds a log or snapshots: the server refuses to start"
                    .into();
            report.push("identity", show(&file), Status::Failed, detail);
        }
        None => {}
    }
}

fn show(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn segment_verdict(seg: &SegmentReport) -> Verdict {
    let txns = match (seg.first_txn, seg.last_txn) {
        (Some(a), Some(b)) => format!("txns {}..={}", format::zxid(a), format::zxid(b)),
        _ => "no txns".into(),
    };
    let summary = format!("{txns}, {} digest/meta records", seg.metas);
    let (status, detail) = match &seg.state {
        _ if seg.after_damage => (
            Status::Warning,
            format!("{summary}; after damage in an earlier segment, so recovery never reads it"),
        ),
        SegmentState::Clean => (
            Status::Ok,
            format!("{summary}, clean end at offset {}", seg.end_offset),
        ),
        s @ (SegmentState::TornTail { .. } | SegmentState::Headerless { .. }) => {
            (Status::Warning, format!("{summary}; {}", s.describe()))
        }
        s => (Status::Failed, format!("{summary}; {}", s.describe())),
    };
    Verdict {
        kind: "segment",
        subject: show(&seg.path),
        status,
        detail,
        offset: seg.state.offset().filter(|_| status != Status::Ok),
    }
}

/// Opens every snapshot; returns the valid ones, newest first.
fn check_snapshots(
    dir: &DataDir,
    report: &mut ValidateReport,
) -> Result<Vec<Snapshot>, InspectError> {
    let mut valid = Vec::new();
    for (_, path) in list_snapshots(&dir.snap_dir)? {
        let snap = match Snapshot::open(&path) {
            Ok(s) => s,
            // Retention on a live server deleted it since the listing.
            Err(SnapError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue
            }
            Err(e @ SnapError::Io { .. }) => return Err(e.into()),
            Err(e) => {
                let offset = match &e {
                    SnapError::Corrupt { offset, .. } => Some(*offset),
                    _ => None,
                };
                report.verdicts.push(Verdict {
                    kind: "snapshot",
                    subject: show(&path),
                    status: Status::Failed,
                    detail: format!("{e} (the server skips it for an older one)"),
                    offset,
                });
                continue;
            }
        };
        let t = *snap.trailer();
        let what = format!(
            "captured {}..={}, {} nodes, {} sessions",
            format::zxid(snap.start_zxid()),
            format::zxid(t.end_zxid),
            t.node_count,
            t.session_count
        );
        match Replayer::from_snapshot(&snap) {
            Ok(_) => {
                let digest = if snap.start_zxid() == t.end_zxid {
                    "digest matches"
                } else {
                    "digest checked by the replay below"
                };
                report.push(
                    "snapshot",
                    show(&path),
                    Status::Ok,
                    format!("{what}; {digest}"),
                );
                valid.push(snap);
            }
            Err(e) => report.push(
                "snapshot",
                show(&path),
                Status::Failed,
                format!("{what}; {e}"),
            ),
        }
    }
    Ok(valid)
}

fn replay_from_snapshot(
    dir: &DataDir,
    log: &LogScan,
    snap: &Snapshot,
    newest: bool,
    report: &mut ValidateReport,
    ends: &mut Vec<(String, i64, u64)>,
) -> Result<(), InspectError> {
    let (start, end) = (snap.start_zxid(), snap.trailer().end_zxid);
    let subject = format!("from {}", show(snap.path()));
    let needs_log = end > start || log.last_txn.is_some_and(|l| l > start);
    let starts_in_time = log.first_txn.is_some_and(|f| f <= start.saturating_add(1));
    if needs_log && !starts_in_time && !snap.path().exists() {
        // A live server took newer snapshots since the listing, deleted this one and purged
        // the log it needed (the log thread purges once the retained count is reached).
        let detail = "removed (with its log) by the server while this ran; not checked".into();
        report.push("replay", subject, Status::Warning, detail);
        return Ok(());
    }
    if needs_log && !starts_in_time {
        let (status, why) = if newest {
            (
                Status::Failed,
                "the server would start from it and find txns missing",
            )
        } else {
            (
                Status::Warning,
                "older than the retained log; not replayable",
            )
        };
        let detail = format!(
            "needs {}.. but {}: {why}",
            format::zxid(start.saturating_add(1)),
            replay::log_range(log)
        );
        report.push("replay", subject, status, detail);
        return Ok(());
    }
    let base = Base::Snapshot {
        path: snap.path().to_path_buf(),
        start,
        end,
    };
    let result = Replayer::from_snapshot(snap)
        .map_err(InspectError::from)
        .and_then(|r| replay::run(dir, r, base, log.last_txn, Vec::new()));
    if result.is_err() && !snap.path().exists() {
        // A live server's retention deleted it, and purged the log it needed, meanwhile.
        let detail = "removed (with its log) by the server while this ran; not checked".into();
        report.push("replay", subject, Status::Warning, detail);
        return Ok(());
    }
    record(subject, result, log, report, ends);
    Ok(())
}

/// Segments scanned at the start are gone: a live server purged them during the run.
fn purged_meanwhile(log: &LogScan) -> bool {
    log.segments.iter().any(|s| !s.path.exists())
}

fn replay_from_empty(
    dir: &DataDir,
    log: &LogScan,
    no_snapshot: bool,
    report: &mut ValidateReport,
    ends: &mut Vec<(String, i64, u64)>,
) {
    let subject = "from the empty tree".to_string();
    if log.starts_at_zxid_1() {
        let result = replay::run(dir, Replayer::new(), Base::Empty, log.last_txn, Vec::new());
        record(subject, result, log, report, ends);
        return;
    }
    let start = match log.first_txn {
        Some(first) => format!("the log starts at {}", format::zxid(first)),
        None if log.damage.is_some() => "the valid log holds no txn".into(),
        None => "the log holds no txn but does not start at 0x1".into(),
    };
    if no_snapshot && log.damage.is_none() {
        let detail = format!("no valid snapshot, and {start}: the txns before are gone");
        report.push("replay", subject, Status::Failed, detail);
    } else {
        report.push("replay", subject, Status::Ok, format!("skipped: {start}"));
    }
}

fn record(
    subject: String,
    result: Result<Replayed, InspectError>,
    log: &LogScan,
    report: &mut ValidateReport,
    ends: &mut Vec<(String, i64, u64)>,
) {
    match result {
        Ok(r) => {
            let (digest, full) = (r.tree.digest(), r.tree.full_digest());
            let (status, extra) = if digest != full {
                (
                    Status::Failed,
                    format!("; but the digest recomputed from scratch is {full:#018x}"),
                )
            } else if log.damage.is_some() {
                (
                    Status::Warning,
                    "; stopped where the damage in the log begins".to_string(),
                )
            } else {
                (Status::Ok, String::new())
            };
            let detail = format!(
                "{} txns replayed to {}, {} digests checked, digest {digest:#018x}, {} znodes{extra}",
                r.replayed,
                format::zxid(r.zxid),
                r.digests_checked,
                r.tree.znode_count()
            );
            ends.push((subject.clone(), r.zxid, digest));
            report.push("replay", subject, status, detail);
        }
        Err(_) if purged_meanwhile(log) => {
            let detail = "not checked: the server purged log segments while this ran".into();
            report.push("replay", subject, Status::Warning, detail);
        }
        Err(e) => {
            let detail = match &e {
                InspectError::Recovery(RecoveryError::Diverged { .. }) => {
                    format!("{e}")
                }
                _ => format!("replay failed: {e}"),
            };
            report.push("replay", subject, Status::Failed, detail);
        }
    }
}

fn agreement(ends: &[(String, i64, u64)], report: &mut ValidateReport) {
    let Some((first_subject, zxid, digest)) = ends.first() else {
        return;
    };
    let disagree: Vec<String> = ends
        .iter()
        .filter(|(_, z, d)| (z, d) != (zxid, digest))
        .map(|(s, z, d)| format!("{s} ends at {} with {d:#018x}", format::zxid(*z)))
        .collect();
    if disagree.is_empty() {
        let detail = format!(
            "{} replays end at {} with digest {digest:#018x}",
            ends.len(),
            format::zxid(*zxid)
        );
        report.push("agreement", "replays".into(), Status::Ok, detail);
    } else {
        let detail = format!(
            "{first_subject} ends at {} with {digest:#018x}, but {}",
            format::zxid(*zxid),
            disagree.join("; ")
        );
        report.push("agreement", "replays".into(), Status::Failed, detail);
    }
}

/// Paths of the files a report names as failed (for callers that act on them).
pub fn failed_files(report: &ValidateReport) -> Vec<PathBuf> {
    report
        .verdicts
        .iter()
        .filter(|v| v.status == Status::Failed && matches!(v.kind, "snapshot" | "segment"))
        .map(|v| PathBuf::from(&v.subject))
        .collect()
}
