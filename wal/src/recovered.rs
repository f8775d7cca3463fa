//! The validated log, memory-mapped, for replay over a snapshot.

use crate::format::Flavour;
use crate::scan::{as_u64, Step, Walker};
use crate::{RecordKind, RecordRef, RecoveryReport};
use memmap2::Mmap;
use std::path::{Path, PathBuf};

/// One validated segment: only its valid prefix `[0, end)` is mapped.
pub(crate) struct MappedSegment {
    pub path: PathBuf,
    pub first_zxid: i64,
    pub map: Option<Mmap>,
    pub last_txn: Option<i64>,
}

/// The log as recovery validated it at open. Later appends are not visible here.
pub struct Recovered {
    pub(crate) segments: Vec<MappedSegment>,
    pub(crate) report: RecoveryReport,
    pub(crate) max_payload: u32,
    pub(crate) flavour: Flavour,
}

impl Recovered {
    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    /// Records for replay from `from_txn_zxid`, in log order: nothing before the first Txn
    /// whose zxid is >= `from_txn_zxid`; from that Txn on, every record, Txn and Meta alike
    /// (a Meta's own zxid plays no part). Meta records before that Txn are skipped. If no Txn
    /// is >= `from_txn_zxid`, nothing is yielded. Use [`Recovered::all_records`] for all.
    pub fn records(&self, from_txn_zxid: i64) -> Records<'_> {
        Records::new(self, Some(from_txn_zxid))
    }

    /// Every valid record, including Meta records before the first Txn.
    pub fn all_records(&self) -> Records<'_> {
        Records::new(self, None)
    }

    /// The validated segments: (path, first zxid from the name).
    pub fn segments(&self) -> impl Iterator<Item = (&Path, i64)> {
        self.segments
            .iter()
            .map(|s| (s.path.as_path(), s.first_zxid))
    }
}

/// Iterator returned by [`Recovered::records`].
pub struct Records<'a> {
    segments: std::slice::Iter<'a, MappedSegment>,
    current: Option<(&'a MappedSegment, Walker<'a>)>,
    /// Some(zxid) until the first Txn >= zxid has been reached.
    from: Option<i64>,
    max_payload: u32,
    flavour: Flavour,
}

impl<'a> Records<'a> {
    fn new(log: &'a Recovered, from: Option<i64>) -> Records<'a> {
        Records {
            segments: log.segments.iter(),
            current: None,
            from,
            max_payload: log.max_payload,
            flavour: log.flavour,
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = RecordRef<'a>;

    fn next(&mut self) -> Option<RecordRef<'a>> {
        loop {
            let Some((segment, walker)) = &mut self.current else {
                let segment = self.segments.next()?;
                // Before the start point, whole segments without a txn >= from are skipped.
                if let Some(from) = self.from {
                    if segment.last_txn.is_none_or(|last| last < from) {
                        continue;
                    }
                }
                let data = segment.map.as_deref().unwrap_or_default();
                let walker = Walker::new(data, segment.first_zxid, self.max_payload, self.flavour);
                self.current = Some((segment, walker));
                continue;
            };
            match walker.next() {
                Some(Step::Record {
                    offset,
                    kind,
                    zxid,
                    payload,
                }) => {
                    if let Some(from) = self.from {
                        if kind != RecordKind::Txn || zxid < from {
                            continue;
                        }
                        self.from = None;
                    }
                    return Some(RecordRef {
                        kind,
                        zxid,
                        payload,
                        segment: &segment.path,
                        offset: as_u64(offset),
                    });
                }
                Some(Step::End(end)) => {
                    let len = segment.map.as_deref().map_or(0, <[u8]>::len);
                    if end.offset() != as_u64(len) {
                        // Only the validated prefix is mapped, so this means the file changed
                        // under us: stop rather than skip anything.
                        tracing::error!(
                            file = %segment.path.display(), ?end,
                            "segment changed after recovery; replay stops here"
                        );
                        self.segments = [].iter();
                        self.current = None;
                        return None;
                    }
                }
                None => self.current = None,
            }
        }
    }
}
