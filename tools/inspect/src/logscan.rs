//! Reading a log directory without touching it: every segment goes through
//! [`palisade_wal::scan_segment`] (never `Wal::open`, which repairs), and the rules recovery
//! applies across segments (names continue the previous segment's last txn; a torn end is
//! acceptable only in the last segment) are applied here to classify each file. Records of
//! the valid prefix — what recovery would keep — are handed to a visitor in log order.
//!
//! [`walk`] and [`walk_file`] read a standalone log (format 2) only, as validate, replay and
//! invariants need; [`walk_as`] and [`walk_file_as`] read a Raft log (format 3) too, whose
//! entries come as `RecordKind::Txn` records whose zxid is the Raft index (segment names and
//! indexes only rise there), and [`detect_format`] tells which a path holds.

use crate::datadir::{list_segments, MAX_PAYLOAD};
use crate::error::InspectError;
use palisade_wal::{
    scan_open_segment_as, segment_format, End, LogFormat, RecordKind, RecordRef, SegmentScan,
    WalError, SEGMENT_HEADER_BYTES,
};
use std::fs::File;
use std::io::{ErrorKind, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// How a segment ends, judged as recovery would judge it in its place in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentState {
    /// Valid records, then zeros.
    Clean,
    /// The last segment ends in a write cut by a crash: recovery cuts `bytes` bytes at
    /// `offset` (never acknowledged) and keeps them in `log/detached/`.
    TornTail {
        offset: u64,
        bytes: u64,
        reason: String,
    },
    /// The last segment's header is unusable and it holds no record: recovery moves the
    /// file to `log/detached/` (its creation was cut by a crash).
    Headerless { reason: String },
    /// Damage that is not a torn tail: the server refuses to start.
    Corrupt { offset: u64, reason: String },
    /// A txn (or a segment name) that does not continue the log: the server refuses to start.
    Gap {
        offset: u64,
        expected: i64,
        found: i64,
    },
}

impl SegmentState {
    /// Damage that stops the server (as opposed to what recovery repairs by itself).
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            SegmentState::Corrupt { .. } | SegmentState::Gap { .. }
        )
    }

    /// The offset where valid data stops, if the segment does not end cleanly.
    pub fn offset(&self) -> Option<u64> {
        match self {
            SegmentState::Clean => None,
            SegmentState::Headerless { .. } => Some(0),
            SegmentState::TornTail { offset, .. }
            | SegmentState::Corrupt { offset, .. }
            | SegmentState::Gap { offset, .. } => Some(*offset),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            SegmentState::Clean => "clean".into(),
            SegmentState::TornTail {
                offset,
                bytes,
                reason,
            } => format!("torn at offset {offset}: {bytes} bytes ({reason}); recovery cuts them"),
            SegmentState::Headerless { reason } => {
                format!("headerless last segment ({reason}); recovery moves it to detached/")
            }
            SegmentState::Corrupt { offset, reason } => {
                format!("corrupt at offset {offset}: {reason}")
            }
            SegmentState::Gap {
                offset,
                expected,
                found,
            } => format!("zxid gap at offset {offset}: expected {expected:#x}, found {found:#x}"),
        }
    }

    /// A short tag for JSON.
    pub fn tag(&self) -> &'static str {
        match self {
            SegmentState::Clean => "clean",
            SegmentState::TornTail { .. } => "torn",
            SegmentState::Headerless { .. } => "headerless",
            SegmentState::Corrupt { .. } => "corrupt",
            SegmentState::Gap { .. } => "gap",
        }
    }
}

/// One segment file as read.
#[derive(Debug, Clone)]
pub struct SegmentReport {
    pub path: PathBuf,
    /// The zxid in the file name.
    pub name_zxid: i64,
    pub file_len: u64,
    /// Where the segment's valid data ends (the zeros start, or the damage).
    pub end_offset: u64,
    /// Valid records before the end (txns + meta).
    pub records: u64,
    pub txns: u64,
    pub metas: u64,
    pub first_txn: Option<i64>,
    pub last_txn: Option<i64>,
    pub state: SegmentState,
    /// It comes after damage in an earlier segment: none of it is part of the valid log.
    pub after_damage: bool,
    /// The data-dir identity in its header (None if the header is unusable).
    pub identity: Option<u64>,
    /// The format it was read as: for [`LogFormat::Raft`], `txns` counts Raft entries and
    /// `first_txn`/`last_txn` are Raft indexes.
    pub format: LogFormat,
}

/// What a walk over the log found.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    /// Every segment in zxid order (fewer if the visitor stopped the walk).
    pub segments: Vec<SegmentReport>,
    /// First and last txn of the valid prefix (what recovery would keep).
    pub first_txn: Option<i64>,
    pub last_txn: Option<i64>,
    /// The first damage that stops the server: (file, offset, what).
    pub damage: Option<(PathBuf, u64, String)>,
    /// The visitor asked to stop before the end.
    pub stopped_early: bool,
    /// The format the log was read as.
    pub format: LogFormat,
}

impl LogScan {
    /// The valid log begins with zxid 1 (or there is no log at all): replaying it from the
    /// empty tree rebuilds everything.
    pub fn starts_at_zxid_1(&self) -> bool {
        match self.first_txn {
            Some(first) => first == 1,
            None => self
                .segments
                .first()
                .is_none_or(|s| s.name_zxid == 1 && !s.state.is_damage()),
        }
    }
}

/// Opens every segment listed in `log_dir`, oldest first. An open segment stays readable
/// when a live server's retention deletes it; one deleted before it was opened means every
/// older one is being deleted too (retention goes oldest first): the log starts after it.
fn open_segments(log_dir: &Path) -> Result<Vec<(i64, PathBuf, File)>, InspectError> {
    let mut out = Vec::new();
    for (name, path) in list_segments(log_dir)? {
        match File::open(&path) {
            Ok(f) => out.push((name, path, f)),
            Err(e) if e.kind() == ErrorKind::NotFound => out.clear(),
            Err(e) => return Err(wal_io(&path, e).into()),
        }
    }
    Ok(out)
}

/// Scans `file` until its end is clean or two scans in a row end the same way at the same
/// offset. A live server appends while the segment is read: zeros read at a record's start,
/// then the rest of the batch written before the check that nothing follows, look like
/// damage that is not a tear. Real damage stays where it is; a race moves on (bounded: a
/// server writing on every rescan still ends after a few).
fn scan_settled(file: &File, path: &Path, format: LogFormat) -> Result<SegmentScan, WalError> {
    let read = || {
        let mut f = file.try_clone().map_err(|e| wal_io(path, e))?;
        f.seek(SeekFrom::Start(0)).map_err(|e| wal_io(path, e))?;
        scan_open_segment_as(f, path, MAX_PAYLOAD, format)
    };
    let mut scan = read()?;
    for _ in 0..8 {
        if matches!(scan.end, End::Clean { .. }) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        let again = read()?;
        let settled = again.end == scan.end;
        scan = again;
        if settled {
            break;
        }
    }
    Ok(scan)
}

/// The format of the log at `path` (a segment file, or a directory of them): that of the
/// first segment whose header is usable; a standalone log (format 2) if none is.
pub fn detect_format(path: &Path) -> Result<LogFormat, InspectError> {
    let candidates = if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        list_segments(path)?.into_iter().map(|(_, p)| p).collect()
    };
    for p in candidates {
        match segment_format(&p) {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => {}
            Err(WalError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(LogFormat::Standalone)
}

/// Scans every segment of `log_dir` (a standalone log, format 2) and hands each record of
/// the valid prefix to `visit`, in log order, until it returns `Break`. Read-only.
pub fn walk(
    log_dir: &Path,
    visit: impl FnMut(RecordRef<'_>) -> ControlFlow<()>,
) -> Result<LogScan, InspectError> {
    walk_as(log_dir, LogFormat::Standalone, visit)
}

/// [`walk`] over a log of `format`; a segment of the other format is damage there (its
/// header's version is unsupported), as recovery refuses it.
pub fn walk_as(
    log_dir: &Path,
    format: LogFormat,
    mut visit: impl FnMut(RecordRef<'_>) -> ControlFlow<()>,
) -> Result<LogScan, InspectError> {
    let listed = open_segments(log_dir)?;
    let mut out = LogScan {
        format,
        ..LogScan::default()
    };
    let mut prev_txn: Option<i64> = None;
    let count = listed.len();
    for (i, (name, path, file)) in listed.into_iter().enumerate() {
        let is_last = i.saturating_add(1) == count;
        let scan = scan_settled(&file, &path, format)?;
        drop(file);
        let state = classify(
            format,
            scan.first_zxid.is_some(),
            &scan.end,
            name,
            prev_txn,
            is_last,
        );
        let after_damage = out.damage.is_some();
        let keeps_records =
            !after_damage && state.offset().is_none_or(|o| o >= SEGMENT_HEADER_BYTES);
        let mut report = SegmentReport {
            path: path.clone(),
            name_zxid: name,
            file_len: scan.file_len,
            end_offset: scan.end.offset(),
            records: 0,
            txns: 0,
            metas: 0,
            first_txn: None,
            last_txn: None,
            state: state.clone(),
            after_damage,
            identity: scan.identity,
            format,
        };
        let mut stop = false;
        for rec in scan.records() {
            count_record(&mut report, &rec);
            if keeps_records && !stop {
                if rec.kind == RecordKind::Txn {
                    out.first_txn.get_or_insert(rec.zxid);
                    out.last_txn = Some(rec.zxid);
                }
                stop = visit(rec).is_break();
            }
        }
        if keeps_records {
            prev_txn = report.last_txn.or(prev_txn);
        }
        if state.is_damage() && out.damage.is_none() {
            let offset = state.offset().unwrap_or(0);
            out.damage = Some((path, offset, state.describe()));
        }
        out.segments.push(report);
        if stop {
            out.stopped_early = true;
            break;
        }
    }
    Ok(out)
}

/// Scans without visiting: the classification of every segment and the valid range.
pub fn scan(log_dir: &Path) -> Result<LogScan, InspectError> {
    walk(log_dir, |_| ControlFlow::Continue(()))
}

fn count_record(r: &mut SegmentReport, rec: &RecordRef<'_>) {
    r.records = r.records.saturating_add(1);
    match rec.kind {
        RecordKind::Txn => {
            r.txns = r.txns.saturating_add(1);
            r.first_txn.get_or_insert(rec.zxid);
            r.last_txn = Some(rec.zxid);
        }
        RecordKind::Meta => r.metas = r.metas.saturating_add(1),
    }
}

/// Recovery's judgement of one segment (wal/src/recovery.rs `damage_of`): a segment is named
/// after the txn following the previous segment's last txn (in a Raft log, an index above
/// the previous segment's last entry); a torn end is a torn tail only in the last segment,
/// and a torn header there (no records) is a headerless segment.
pub fn classify(
    format: LogFormat,
    header_valid: bool,
    end: &End,
    name: i64,
    prev_txn: Option<i64>,
    is_last: bool,
) -> SegmentState {
    if let (true, Some(prev)) = (header_valid, prev_txn) {
        let expected = prev.checked_add(1);
        if !format.segment_follows(prev, name) {
            return SegmentState::Gap {
                offset: 0,
                expected: expected.unwrap_or(i64::MAX),
                found: name,
            };
        }
    }
    match end {
        End::Clean { .. } => SegmentState::Clean,
        End::Gap {
            offset,
            expected,
            found,
        } => SegmentState::Gap {
            offset: *offset,
            expected: *expected,
            found: *found,
        },
        End::Corrupt { offset, reason } => SegmentState::Corrupt {
            offset: *offset,
            reason: reason.clone(),
        },
        End::Torn {
            offset: 0, reason, ..
        } if is_last => SegmentState::Headerless {
            reason: reason.clone(),
        },
        End::Torn {
            offset,
            bytes,
            reason,
        } if is_last => SegmentState::TornTail {
            offset: *offset,
            bytes: *bytes,
            reason: reason.clone(),
        },
        End::Torn { offset, reason, .. } => SegmentState::Corrupt {
            offset: *offset,
            reason: format!("{reason}; not the last segment"),
        },
    }
}

/// The log of a single segment file (format 2), for `log FILE`: its records and how it ends
/// (judged as if it were the last segment, since nothing else is known).
pub fn walk_file(
    path: &Path,
    visit: impl FnMut(RecordRef<'_>) -> ControlFlow<()>,
) -> Result<LogScan, InspectError> {
    walk_file_as(path, LogFormat::Standalone, visit)
}

/// [`walk_file`] for a segment of `format`.
pub fn walk_file_as(
    path: &Path,
    format: LogFormat,
    mut visit: impl FnMut(RecordRef<'_>) -> ControlFlow<()>,
) -> Result<LogScan, InspectError> {
    let file = File::open(path).map_err(|e| wal_io(path, e))?;
    let scan = scan_settled(&file, path, format)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(crate::datadir::segment_name_zxid);
    let state = classify(
        format,
        scan.first_zxid.is_some(),
        &scan.end,
        name.unwrap_or_default(),
        None,
        true,
    );
    let mut report = SegmentReport {
        path: path.to_path_buf(),
        name_zxid: name.or(scan.first_zxid).unwrap_or_default(),
        file_len: scan.file_len,
        end_offset: scan.end.offset(),
        records: 0,
        txns: 0,
        metas: 0,
        first_txn: None,
        last_txn: None,
        state: state.clone(),
        after_damage: false,
        identity: scan.identity,
        format,
    };
    let mut out = LogScan {
        format,
        ..LogScan::default()
    };
    for rec in scan.records() {
        count_record(&mut report, &rec);
        if visit(rec).is_break() {
            out.stopped_early = true;
            break;
        }
    }
    out.first_txn = report.first_txn;
    out.last_txn = report.last_txn;
    if state.is_damage() {
        out.damage = Some((
            path.to_path_buf(),
            state.offset().unwrap_or(0),
            state.describe(),
        ));
    }
    out.segments.push(report);
    Ok(out)
}

fn wal_io(path: &Path, source: std::io::Error) -> WalError {
    WalError::Io {
        path: path.to_path_buf(),
        source,
    }
}
