//! What recovery found and did, for the server's start-up log and for tests.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub dir: PathBuf,
    /// Segments in the validated log.
    pub segments: usize,
    /// Valid records (txns + meta).
    pub records: u64,
    pub txns: u64,
    pub metas: u64,
    pub first_txn_zxid: Option<i64>,
    pub last_txn_zxid: Option<i64>,
    /// What recovery cut off, if anything.
    pub cut: Option<Cut>,
    /// Files deleted because they held nothing: `*.tmp` leftovers of segment creation, and
    /// header-only segments of a log without any record.
    pub removed: Vec<PathBuf>,
    /// Where the writer appends next (segment, offset), if a segment is open.
    pub resume_at: Option<(PathBuf, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutCause {
    /// Damage at the end of the last segment that only a write cut short can leave (a prefix
    /// of a record, then zeros) with nothing valid after it: never acknowledged.
    TornTail,
    /// Mid-log corruption cut off because the operator chose `Corruption::Truncate`.
    Truncated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub cause: CutCause,
    /// The segment where the damage starts.
    pub file: PathBuf,
    pub offset: u64,
    /// Non-zero bytes removed from `file` at `offset` (the whole file for a moved segment).
    pub bytes: u64,
    /// Why the data at `offset` was rejected.
    pub reason: String,
    /// Where the removed bytes went: `detached/log.<hex>.<offset>.{torn,corrupt}` for a part of
    /// a segment, `detached/log.<hex>` for whole segments moved away.
    pub evidence: Vec<PathBuf>,
}

impl fmt::Display for CutCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CutCause::TornTail => "torn tail",
            CutCause::Truncated => "CORRUPTION TRUNCATED by operator flag",
        })
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cut {} bytes at {}:{} ({}: {}); evidence in",
            self.bytes,
            self.file.display(),
            self.offset,
            self.cause,
            self.reason
        )?;
        for e in &self.evidence {
            write!(f, " {}", e.display())?;
        }
        Ok(())
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wal {}: {} segments, {} records ({} txns",
            self.dir.display(),
            self.segments,
            self.records,
            self.txns
        )?;
        if let (Some(first), Some(last)) = (self.first_txn_zxid, self.last_txn_zxid) {
            write!(f, " {first:#x}..={last:#x}")?;
        }
        write!(f, ", {} meta)", self.metas)?;
        match &self.cut {
            Some(cut) => write!(f, "; {cut}"),
            None => f.write_str("; clean"),
        }
    }
}
