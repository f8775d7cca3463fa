//! Recovery at open: validate every segment in zxid order, cut a torn tail (keeping the bytes
//! in `detached/`), refuse mid-log corruption unless the operator asked to truncate, and map
//! what is valid for replay. The rules are in the crate docs; each has a test in `tests/`.

use crate::format::{Flavour, HeaderCheck, SEGMENT_HEADER_LEN};
use crate::recovered::{MappedSegment, Recovered};
use crate::report::{Cut, CutCause, RecoveryReport};
use crate::scan::{self, nonzero_end, End};
use crate::segment;
use crate::{Corruption, Options, RecordKind, WalError};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Where the writer continues: the last valid segment and the end of its data.
pub(crate) struct Resume {
    pub path: PathBuf,
    pub first_zxid: i64,
    pub offset: u64,
    pub has_txn: bool,
}

/// A segment that passed validation (possibly after a cut at `end`).
struct Kept {
    path: PathBuf,
    first_zxid: i64,
    end: u64,
    records: u64,
    txns: u64,
    metas: u64,
    first_txn: Option<i64>,
    last_txn: Option<i64>,
}

/// Why the log stops being valid inside one segment.
enum Damage {
    /// Torn tail of the last segment: cut silently-but-loudly.
    Torn {
        offset: u64,
        reason: String,
    },
    Corrupt {
        offset: u64,
        reason: String,
    },
    Gap {
        offset: u64,
        expected: i64,
        found: i64,
    },
}

impl Damage {
    fn offset(&self) -> u64 {
        match self {
            Damage::Torn { offset, .. }
            | Damage::Corrupt { offset, .. }
            | Damage::Gap { offset, .. } => *offset,
        }
    }

    fn reason(&self) -> String {
        match self {
            Damage::Torn { reason, .. } | Damage::Corrupt { reason, .. } => reason.clone(),
            Damage::Gap {
                expected, found, ..
            } => format!("zxid gap: expected {expected:#x}, found {found:#x}"),
        }
    }

    fn into_error(self, file: &Path) -> WalError {
        let file = file.to_path_buf();
        match self {
            Damage::Torn { offset, reason } | Damage::Corrupt { offset, reason } => {
                WalError::Corrupt {
                    file,
                    offset,
                    reason,
                }
            }
            Damage::Gap {
                offset,
                expected,
                found,
            } => WalError::Gap {
                file,
                offset,
                expected,
                found,
            },
        }
    }
}

/// What recovery hands the writer: the log, where to resume, and the identity segments carry
/// (None: an empty log opened without one).
pub(crate) type Opened = (Recovered, Option<Resume>, Option<u64>);

pub(crate) fn recover(
    opts: &Options,
    on_corruption: Corruption,
    flavour: Flavour,
) -> Result<Opened, WalError> {
    let dir = opts.dir.as_path();
    let mut identity = opts.identity;
    let removed = segment::remove_tmp_files(dir)?;
    let listed = segment::list(dir)?;
    let mut kept: Vec<Kept> = Vec::new();
    let mut cut = None;
    let mut prev_txn: Option<i64> = None;

    for (i, (name, path)) in listed.iter().enumerate() {
        let is_last = i.saturating_add(1) == listed.len();
        let file = File::open(path).map_err(|e| WalError::io(path, e))?;
        let len = file.metadata().map_err(|e| WalError::io(path, e))?.len();
        let map = segment::map(&file, path, len)?;
        let data = map.as_deref().unwrap_or_default();
        let mut metas = 0u64;
        let s = scan::summarize(
            data,
            Some(*name),
            opts.max_payload,
            flavour,
            |_, kind, _, _| {
                if kind == RecordKind::Meta {
                    metas = metas.saturating_add(1);
                }
            },
        );
        if let HeaderCheck::Unsupported { version } = s.header {
            return Err(WalError::UnsupportedVersion {
                file: path.clone(),
                version,
            });
        }
        if let HeaderCheck::Valid {
            identity: found, ..
        } = s.header
        {
            match identity {
                Some(expected) if expected != found => {
                    return Err(WalError::Foreign {
                        file: path.clone(),
                        found,
                        expected,
                    })
                }
                Some(_) => {}
                None => identity = Some(found),
            }
        }
        let damage = damage_of(&s, *name, prev_txn, is_last, flavour);
        let cut_at = damage.as_ref().map(Damage::offset);
        if cut_at.is_none_or(|at| at >= SEGMENT_HEADER_LEN as u64) {
            prev_txn = s.last_txn.or(prev_txn);
            kept.push(Kept {
                path: path.clone(),
                first_zxid: *name,
                end: cut_at.unwrap_or(s.end.offset()),
                records: s.records,
                txns: s.txns,
                metas,
                first_txn: s.first_txn,
                last_txn: s.last_txn,
            });
        }
        let Some(damage) = damage else { continue };
        let cause = match (&damage, on_corruption) {
            (Damage::Torn { .. }, _) => CutCause::TornTail,
            (_, Corruption::Refuse) => return Err(damage.into_error(path)),
            (_, Corruption::Truncate) => CutCause::Truncated,
        };
        let later = listed.get(i.saturating_add(1)..).unwrap_or_default();
        let c = cut_off(dir, path, map, damage, cause, later, flavour)?;
        if cause == CutCause::Truncated {
            tracing::error!("{c}");
        } else {
            tracing::warn!("{c}");
        }
        cut = Some(c);
        break;
    }

    // A log without a single record keeps its one header-only segment: its name is where the
    // log starts (the txn after a snapshot, `Wal::start_at`), which recovery checks against the
    // snapshot. Several empty ones cannot be written by this crate (a segment is only rolled
    // after a txn) and are left to the rules above.
    let (recovered, resume) = finish(opts, kept, cut, removed, flavour)?;
    Ok((recovered, resume, identity))
}

/// Applies the rules of the crate docs to one scanned segment.
fn damage_of(
    s: &scan::Summary,
    name: i64,
    prev_txn: Option<i64>,
    is_last: bool,
    flavour: Flavour,
) -> Option<Damage> {
    // A segment is named after the txn that follows the previous segment's last txn.
    if let (HeaderCheck::Valid { .. }, Some(prev)) = (&s.header, prev_txn) {
        let expected = prev.checked_add(1);
        if !expected.is_some_and(|e| flavour.continues(e, name)) {
            return Some(Damage::Gap {
                offset: 0,
                expected: expected.unwrap_or(i64::MAX),
                found: name,
            });
        }
    }
    match &s.end {
        End::Clean { .. } => None,
        End::Gap {
            offset,
            expected,
            found,
        } => Some(Damage::Gap {
            offset: *offset,
            expected: *expected,
            found: *found,
        }),
        End::Corrupt { offset, reason } => Some(Damage::Corrupt {
            offset: *offset,
            reason: reason.clone(),
        }),
        End::Torn { offset, reason, .. } if is_last => Some(Damage::Torn {
            offset: *offset,
            reason: reason.clone(),
        }),
        End::Torn { offset, reason, .. } => Some(Damage::Corrupt {
            offset: *offset,
            reason: format!("{reason}; not the last segment"),
        }),
    }
}

/// Cuts the log at the damage: saves the bytes to `detached/` first (durably), then zeroes
/// them in place, or moves the whole segment when the cut is inside its header; every `later`
/// segment moves to `detached/` too.
fn cut_off(
    dir: &Path,
    path: &Path,
    map: Option<memmap2::Mmap>,
    damage: Damage,
    cause: CutCause,
    later: &[(i64, PathBuf)],
    flavour: Flavour,
) -> Result<Cut, WalError> {
    let data = map.as_deref().unwrap_or_default();
    let offset = damage.offset();
    let whole_file = offset < SEGMENT_HEADER_LEN as u64;
    let from = if whole_file {
        0
    } else {
        usize::try_from(offset).unwrap_or(usize::MAX)
    };
    let end = nonzero_end(data);
    let bytes = scan::as_u64(end.saturating_sub(from));
    let mut evidence = Vec::new();
    if whole_file {
        drop(map);
        evidence.push(segment::move_to_detached(dir, path)?);
    } else {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("log");
        let kind = if cause == CutCause::TornTail {
            "torn"
        } else {
            "corrupt"
        };
        let cut_bytes = data.get(from..end).unwrap_or_default();
        evidence.push(segment::save_evidence(
            dir,
            &format!("{name}.{offset}.{kind}"),
            cut_bytes,
        )?);
        // A shortened segment gets its created size back, so the writer's capacity is the
        // one its header promises and the next open does not see it shortened again.
        let restore = match crate::format::check_segment_header_of(data, flavour) {
            HeaderCheck::Valid { min_len, .. } if scan::as_u64(data.len()) < min_len => {
                Some(min_len)
            }
            _ => None,
        };
        // The map must be gone before the bytes under it are rewritten.
        drop(map);
        segment::zero_range(path, offset, scan::as_u64(end))?;
        if let Some(len) = restore {
            let file = segment::open_rw(path)?;
            segment::preallocate(&file, path, len)?;
            file.sync_all().map_err(|e| WalError::io(path, e))?;
        }
    }
    for (_, later_path) in later {
        evidence.push(segment::move_to_detached(dir, later_path)?);
    }
    Ok(Cut {
        cause,
        file: path.to_path_buf(),
        offset,
        bytes,
        reason: damage.reason(),
        evidence,
    })
}

fn finish(
    opts: &Options,
    kept: Vec<Kept>,
    cut: Option<Cut>,
    removed: Vec<PathBuf>,
    flavour: Flavour,
) -> Result<(Recovered, Option<Resume>), WalError> {
    let mut report = RecoveryReport {
        dir: opts.dir.clone(),
        segments: kept.len(),
        cut,
        removed,
        ..RecoveryReport::default()
    };
    let mut segments = Vec::with_capacity(kept.len());
    for k in &kept {
        report.records = report.records.saturating_add(k.records);
        report.txns = report.txns.saturating_add(k.txns);
        report.metas = report.metas.saturating_add(k.metas);
        if report.first_txn_zxid.is_none() {
            report.first_txn_zxid = k.first_txn;
        }
        report.last_txn_zxid = k.last_txn.or(report.last_txn_zxid);
        let file = File::open(&k.path).map_err(|e| WalError::io(&k.path, e))?;
        segments.push(MappedSegment {
            path: k.path.clone(),
            first_zxid: k.first_zxid,
            map: segment::map(&file, &k.path, k.end)?,
            last_txn: k.last_txn,
        });
    }
    let resume = kept.last().map(|k| Resume {
        path: k.path.clone(),
        first_zxid: k.first_zxid,
        offset: k.end,
        has_txn: k.txns > 0,
    });
    report.resume_at = resume.as_ref().map(|r| (r.path.clone(), r.offset));
    let recovered = Recovered {
        segments,
        report,
        max_payload: opts.max_payload,
        flavour,
    };
    Ok((recovered, resume))
}
