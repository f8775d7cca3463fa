//! `log DIR|FILE`: every record of a log directory (or of one segment file) as a line, then
//! how each segment ends. Read-only: segments are read with `scan_segment_as`. A standalone
//! log (format 2) shows its txns and digests; a Raft log (format 3, an ensemble member's)
//! its entries by Raft index (log id, and what each carries: a txn, a batch of txns a line
//! each, the ensemble key by name only, a digest) and its committed log ids.

use crate::describe::{describe_as, RecordLine};
use crate::error::InspectError;
use crate::format;
use crate::logscan::{self, LogScan, SegmentReport};
use palisade_wal::{LogFormat, RecordKind};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Which records to show, by the zxid in the record header (inclusive bounds); in a Raft
/// log, by the Raft index.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZxidRange {
    pub from: Option<i64>,
    pub to: Option<i64>,
}

impl ZxidRange {
    fn contains(&self, z: i64) -> bool {
        self.from.is_none_or(|f| z >= f) && self.to.is_none_or(|t| z <= t)
    }
}

/// The log directory a path names: a segment file's own path, `DIR/log` if `DIR` is a data
/// dir, else `DIR` itself.
pub fn resolve(path: &Path) -> PathBuf {
    let nested = path.join("log");
    if path.is_dir() && nested.is_dir() {
        nested
    } else {
        path.to_path_buf()
    }
}

/// Hands every record within `range` to `line`, in log order, and returns how each segment
/// ends. The walk stops at the first txn (Raft entry) past `range.to`. The log's format is
/// that of its first usable segment header ([`logscan::detect_format`]).
pub fn read_log(
    path: &Path,
    range: ZxidRange,
    mut line: impl FnMut(RecordLine),
) -> Result<LogScan, InspectError> {
    let target = resolve(path);
    let log_format = logscan::detect_format(&target)?;
    let mut visit = |rec: palisade_wal::RecordRef<'_>| {
        if rec.kind == RecordKind::Txn && range.to.is_some_and(|t| rec.zxid > t) {
            return ControlFlow::Break(());
        }
        if range.contains(rec.zxid) {
            line(describe_as(log_format, &rec));
        }
        ControlFlow::Continue(())
    };
    if target.is_file() {
        logscan::walk_file_as(&target, log_format, &mut visit)
    } else if target.is_dir() {
        logscan::walk_as(&target, log_format, &mut visit)
    } else {
        Err(InspectError::Cannot(format!(
            "{}: neither a log segment nor a directory",
            path.display()
        )))
    }
}

/// The closing line of one segment: its records and how it ends.
pub fn segment_text(s: &SegmentReport) -> String {
    let name = s.path.file_name().map_or_else(
        || s.path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let raft = s.format == LogFormat::Raft;
    let txns = match (s.first_txn, s.last_txn) {
        (Some(a), Some(b)) if raft => format!(" {a}..={b}"),
        (Some(a), Some(b)) => format!(" {}..={}", format::zxid(a), format::zxid(b)),
        _ => String::new(),
    };
    let (txn_word, meta_word) = if raft {
        ("entries", "raft meta")
    } else {
        ("txns", "meta")
    };
    let state = match s.state {
        logscan::SegmentState::Clean => format!("clean at offset {}", s.end_offset),
        ref other => other.describe(),
    };
    let after = if s.after_damage {
        " [after earlier damage: not part of the valid log]"
    } else {
        ""
    };
    format!(
        "--- {name}: {} records ({} {txn_word}{txns}, {} {meta_word}), {} bytes: {state}{after}",
        s.records, s.txns, s.metas, s.file_len
    )
}

pub fn segment_json(s: &SegmentReport) -> Value {
    let mut v = json!({
        "type": "segment",
        "path": s.path.display().to_string(),
        "name_zxid": format::zxid(s.name_zxid),
        "file_len": s.file_len,
        "records": s.records,
        "txns": s.txns,
        "metas": s.metas,
        "first_txn": s.first_txn.map(format::zxid),
        "last_txn": s.last_txn.map(format::zxid),
        "end": s.state.tag(),
        "end_offset": s.state.offset().unwrap_or(s.end_offset),
        "after_damage": s.after_damage,
        "format": s.format.version(),
    });
    if let (Some(m), LogFormat::Raft) = (v.as_object_mut(), s.format) {
        // A Raft log's sequenced records are entries, numbered by Raft index.
        m.insert("first_index".into(), json!(s.first_txn));
        m.insert("last_index".into(), json!(s.last_txn));
    }
    if let (Some(m), false) = (v.as_object_mut(), s.state == logscan::SegmentState::Clean) {
        m.insert("detail".into(), json!(s.state.describe()));
    }
    v
}
