//! Walking the records of one segment and classifying how it ends. Used by recovery (over an
//! mmap), by replay, and by offline tools through [`scan_segment`]. The bytes are untrusted.
#![deny(clippy::arithmetic_side_effects)]

use crate::format::{
    self, BadRecord, Flavour, HeaderCheck, RECORD_HEADER_LEN, RECORD_MAGIC, SEGMENT_HEADER_LEN,
};
use crate::{LogFormat, RecordKind, RecordRef, WalError};
use std::path::{Path, PathBuf};

/// How a segment's data ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Valid records up to `offset`, then zeros (or the end of the file).
    Clean { offset: u64 },
    /// The bytes at `offset` are not a valid record, no valid record follows anywhere in this
    /// file, and a write cut short could have left them (see `format::check_record`): `bytes`
    /// non-zero bytes from `offset` on. Recovery treats this as a torn tail only in the last
    /// segment.
    Torn {
        offset: u64,
        bytes: u64,
        reason: String,
    },
    /// The bytes at `offset` are not a valid record, and either a valid record follows or no
    /// torn write could have left them (a record written whole that fails its crc, a file
    /// shorter than it was created, an unusable segment header): damage, not a tear.
    Corrupt { offset: u64, reason: String },
    /// A txn with a valid crc at `offset` whose zxid does not continue the segment.
    Gap {
        offset: u64,
        expected: i64,
        found: i64,
    },
}

impl End {
    /// Where valid data stops.
    pub fn offset(&self) -> u64 {
        match self {
            End::Clean { offset }
            | End::Torn { offset, .. }
            | End::Corrupt { offset, .. }
            | End::Gap { offset, .. } => *offset,
        }
    }
}

/// One step of a [`Walker`].
pub(crate) enum Step<'a> {
    Record {
        offset: usize,
        kind: RecordKind,
        zxid: i64,
        payload: &'a [u8],
    },
    End(End),
}

/// Walks records from the end of the segment header, checking txn continuity from `expected`
/// (the segment's first txn must equal its name). Yields every valid record, then one End.
pub(crate) struct Walker<'a> {
    data: &'a [u8],
    at: usize,
    max_payload: u32,
    flavour: Flavour,
    /// Zxid the next txn must carry; None once a txn at i64::MAX leaves no successor.
    expected: Option<i64>,
    done: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        data: &'a [u8],
        first_zxid: i64,
        max_payload: u32,
        flavour: Flavour,
    ) -> Walker<'a> {
        Walker {
            data,
            at: SEGMENT_HEADER_LEN,
            max_payload,
            flavour,
            expected: Some(first_zxid),
            done: false,
        }
    }

    fn end(&mut self, end: End) -> Option<Step<'a>> {
        self.done = true;
        Some(Step::End(end))
    }

    /// The bytes at `at` are not a valid record: torn if a tear explains them and nothing
    /// valid follows in this file.
    fn invalid(&mut self, at: usize, bad: BadRecord) -> Option<Step<'a>> {
        let end = classify_invalid(self.data, at, bad, self.max_payload, self.flavour);
        self.end(end)
    }
}

impl<'a> Iterator for Walker<'a> {
    type Item = Step<'a>;

    fn next(&mut self) -> Option<Step<'a>> {
        if self.done {
            return None;
        }
        let at = self.at;
        let rest = self.data.get(at..).unwrap_or_default();
        let header = rest.get(..RECORD_HEADER_LEN).unwrap_or(rest);
        if header.iter().all(|&b| b == 0) {
            // A zero header (or a zero remainder shorter than a header) ends the data; the
            // rest of the segment must be zero as well.
            return match rest.iter().position(|&b| b != 0) {
                None => self.end(End::Clean { offset: as_u64(at) }),
                Some(i) => {
                    let at_nonzero = at.saturating_add(i);
                    // A write cut short leaves zeros after what it wrote, never before.
                    let reason =
                        format!("zero record header, but non-zero bytes at offset {at_nonzero}");
                    self.invalid(
                        at,
                        BadRecord {
                            reason,
                            maybe_torn: false,
                        },
                    )
                }
            };
        }
        let record = match format::check_record_of(self.data, at, self.max_payload, self.flavour) {
            Ok(r) => r,
            Err(reason) => return self.invalid(at, reason),
        };
        if record.kind == RecordKind::Txn {
            match self.expected {
                Some(e) if self.flavour.continues(e, record.zxid) => {
                    self.expected = record.zxid.checked_add(1)
                }
                Some(e) => {
                    return self.end(End::Gap {
                        offset: as_u64(at),
                        expected: e,
                        found: record.zxid,
                    })
                }
                None => {
                    return self.end(End::Corrupt {
                        offset: as_u64(at),
                        reason: "txn after zxid i64::MAX".into(),
                    })
                }
            }
        }
        self.at = record.end;
        Some(Step::Record {
            offset: at,
            kind: record.kind,
            zxid: record.zxid,
            payload: record.payload,
        })
    }
}

pub(crate) fn classify_invalid(
    data: &[u8],
    at: usize,
    bad: BadRecord,
    max_payload: u32,
    flavour: Flavour,
) -> End {
    let reason = bad.reason;
    match find_valid_record(data, at.saturating_add(1), max_payload, flavour) {
        Some(next) => End::Corrupt {
            offset: as_u64(at),
            reason: format!("{reason}; a valid record follows at offset {next}"),
        },
        None if bad.maybe_torn => End::Torn {
            offset: as_u64(at),
            bytes: as_u64(nonzero_end(data).saturating_sub(at)),
            reason,
        },
        None => End::Corrupt {
            offset: as_u64(at),
            reason,
        },
    }
}

/// Offset of the first valid record (magic, header and crc) at or after `from`, trying every
/// byte offset where the record magic appears.
pub(crate) fn find_valid_record(
    data: &[u8],
    from: usize,
    max_payload: u32,
    flavour: Flavour,
) -> Option<usize> {
    let magic = RECORD_MAGIC.to_le_bytes();
    let tail = data.get(from..)?;
    tail.windows(magic.len())
        .enumerate()
        .filter(|(_, w)| *w == magic)
        .map(|(i, _)| from.saturating_add(i))
        .find(|&at| format::check_record_of(data, at, max_payload, flavour).is_ok())
}

/// Length of `data` without its trailing zero bytes.
pub(crate) fn nonzero_end(data: &[u8]) -> usize {
    data.iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i.saturating_add(1))
}

pub(crate) fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// What a segment holds: used by recovery to decide, and by [`scan_segment`] for tools.
pub(crate) struct Summary {
    pub header: HeaderCheck,
    pub records: u64,
    pub txns: u64,
    pub first_txn: Option<i64>,
    pub last_txn: Option<i64>,
    pub end: End,
}

/// Checks the header, walks every record. `name` is the zxid from the file name, when known.
pub(crate) fn summarize(
    data: &[u8],
    name: Option<i64>,
    max_payload: u32,
    flavour: Flavour,
    mut on_record: impl FnMut(usize, RecordKind, i64, &[u8]),
) -> Summary {
    let mut header = format::check_segment_header_of(data, flavour);
    if let (HeaderCheck::Valid { first_zxid, .. }, Some(name)) = (&header, name) {
        if *first_zxid != name {
            header = HeaderCheck::Invalid {
                reason: format!(
                    "segment header says first zxid {first_zxid:#x}, file name says {name:#x}"
                ),
            };
        }
    }
    let mut s = Summary {
        header: header.clone(),
        records: 0,
        txns: 0,
        first_txn: None,
        last_txn: None,
        end: End::Clean { offset: 0 },
    };
    let shortened;
    let first_zxid = match header {
        HeaderCheck::Valid {
            first_zxid,
            min_len,
            ..
        } => {
            shortened = (as_u64(data.len()) < min_len).then_some(min_len);
            first_zxid
        }
        HeaderCheck::Unsupported { version } => {
            s.end = End::Corrupt {
                offset: 0,
                reason: format!(
                    "unsupported format version {version} (read as format {})",
                    flavour.version()
                ),
            };
            return s;
        }
        HeaderCheck::Invalid { reason } => {
            // A segment gets its name only after its header is durable (tmp file, fsync,
            // rename), so no crash leaves a named segment without one: this is damage.
            s.end = End::Corrupt {
                offset: 0,
                reason: match find_valid_record(data, 0, max_payload, flavour) {
                    Some(next) => format!("{reason}; a valid record follows at offset {next}"),
                    None => format!(
                        "{reason}; a named segment always has a durable header, so the file was damaged or shortened"
                    ),
                },
            };
            return s;
        }
    };
    for step in Walker::new(data, first_zxid, max_payload, flavour) {
        match step {
            Step::Record {
                offset,
                kind,
                zxid,
                payload,
            } => {
                s.records = s.records.saturating_add(1);
                if kind == RecordKind::Txn {
                    s.txns = s.txns.saturating_add(1);
                    s.first_txn.get_or_insert(zxid);
                    s.last_txn = Some(zxid);
                }
                on_record(offset, kind, zxid, payload);
            }
            Step::End(end) => s.end = end,
        }
    }
    if let Some(min_len) = shortened {
        // Segments are preallocated before they get their name and only ever grow: the
        // valid data is kept up to where it stops, and the rest is damage, never a tear.
        s.end = End::Corrupt {
            offset: s.end.offset(),
            reason: format!(
                "the segment is {} bytes but was created with at least {min_len}: it was shortened",
                data.len()
            ),
        };
    }
    s
}

/// A read-only scan of one segment file (see [`scan_segment`]).
#[derive(Debug)]
pub struct SegmentScan {
    pub path: PathBuf,
    /// From a valid header; None if the header is unusable.
    pub first_zxid: Option<i64>,
    /// The data-dir identity in a valid header.
    pub identity: Option<u64>,
    /// The format the segment was read as: its records' kinds mean what they mean there
    /// (for [`LogFormat::Raft`], `RecordKind::Txn` is a Raft entry and its zxid the index).
    pub format: LogFormat,
    pub file_len: u64,
    /// How the data ends: recovery would cut a `Torn` end only in the last segment.
    pub end: End,
    data: Vec<u8>,
    records: Vec<(usize, RecordKind, i64, usize, usize)>,
}

impl SegmentScan {
    /// The valid records before `end`, in file order.
    pub fn records(&self) -> impl Iterator<Item = RecordRef<'_>> {
        self.records
            .iter()
            .filter_map(move |&(offset, kind, zxid, start, len)| {
                let payload = self.data.get(start..start.checked_add(len)?)?;
                Some(RecordRef {
                    kind,
                    zxid,
                    payload,
                    segment: &self.path,
                    offset: as_u64(offset),
                })
            })
    }

    pub fn record_count(&self) -> usize {
        self.records.len()
    }
}

/// Read-only scan of one segment file of format 2 (a standalone log), for offline tools
/// (inspector, validator): never modifies anything. Txn continuity is checked within the file
/// (its first txn must equal its name). The file is read into memory rather than mapped,
/// because a tool may look at the log of a running server, which keeps writing to the active
/// segment. A segment of another format ends `Corrupt` at offset 0 ("unsupported format
/// version"); [`scan_segment_as`] reads a Raft log's.
pub fn scan_segment(path: &Path, max_payload: u32) -> Result<SegmentScan, WalError> {
    scan_segment_as(path, max_payload, LogFormat::Standalone)
}

/// [`scan_segment`] for a segment of `format`. For [`LogFormat::Raft`] the records are Raft
/// entries (`RecordKind::Txn`, zxid = Raft index: each must be at least the file's name and
/// above its predecessor, as recovery requires) and Raft metadata (`RecordKind::Meta`); the
/// torn-tail and corruption verdicts are recovery's, as for format 2.
pub fn scan_segment_as(
    path: &Path,
    max_payload: u32,
    format: LogFormat,
) -> Result<SegmentScan, WalError> {
    let file = std::fs::File::open(path).map_err(|e| WalError::io(path, e))?;
    scan_open_segment_as(file, path, max_payload, format)
}

/// [`scan_segment_as`] on a segment already open (named `path`): a tool that opens every
/// segment of a live server's log first reads them all even if the server's retention
/// deletes some meanwhile.
pub fn scan_open_segment_as(
    mut file: std::fs::File,
    path: &Path,
    max_payload: u32,
    format: LogFormat,
) -> Result<SegmentScan, WalError> {
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut data).map_err(|e| WalError::io(path, e))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(format::parse_segment_file_name);
    let mut records = Vec::new();
    let summary = summarize(
        &data,
        name,
        max_payload,
        format.flavour(),
        |offset, kind, zxid, payload| {
            let start = offset.saturating_add(RECORD_HEADER_LEN);
            records.push((offset, kind, zxid, start, payload.len()));
        },
    );
    let (first_zxid, identity) = match summary.header {
        HeaderCheck::Valid {
            first_zxid,
            identity,
            ..
        } => (Some(first_zxid), Some(identity)),
        _ => (None, None),
    };
    Ok(SegmentScan {
        path: path.to_path_buf(),
        first_zxid,
        identity,
        format,
        file_len: as_u64(data.len()),
        end: summary.end,
        data,
        records,
    })
}

/// The format of the segment at `path`, from its header (magic, crc and a version this crate
/// reads: 2 or 3), or None if the header is unusable (damaged, shortened, another version).
/// Reads the 32 header bytes only.
pub fn segment_format(path: &Path) -> Result<Option<LogFormat>, WalError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| WalError::io(path, e))?;
    let mut header = Vec::with_capacity(SEGMENT_HEADER_LEN);
    file.take(as_u64(SEGMENT_HEADER_LEN))
        .read_to_end(&mut header)
        .map_err(|e| WalError::io(path, e))?;
    Ok(format_of_header(&header))
}

pub(crate) fn format_of_header(header: &[u8]) -> Option<LogFormat> {
    [LogFormat::Standalone, LogFormat::Raft]
        .into_iter()
        .find(|f| {
            matches!(
                format::check_segment_header_of(header, f.flavour()),
                HeaderCheck::Valid { .. }
            )
        })
}
