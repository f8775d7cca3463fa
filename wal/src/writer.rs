//! The writer, owned by the log thread: `append` lays records out in memory (deciding already
//! which segment each lands in), `sync` writes them with one pwrite per segment and one
//! fdatasync. Any I/O error poisons it for good.

use crate::format::{self, Flavour, SEGMENT_HEADER_LEN};
use crate::recovery::{self, Resume};
use crate::scan::{Step, Walker};
use crate::segment;
use crate::{Corruption, Options, RecordKind, RecordPos, Recovered, WalError};
use std::fs::{File, OpenOptions, TryLockError};
use std::ops::Range;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The segment being appended to (on disk).
struct Active {
    file: File,
    path: PathBuf,
    /// Written since its last fdatasync.
    dirty: bool,
}

/// Where the next record goes, counting what is buffered.
#[derive(Clone, Copy)]
struct Cursor {
    first_zxid: i64,
    offset: u64,
    capacity: u64,
    has_txn: bool,
}

/// Buffered bytes bound for one segment: the open one, or one that sync must create first.
struct Chunk {
    new_segment: Option<(i64, u64)>,
    /// The open segment must first be extended to this size (see `grow`).
    grow_to: Option<u64>,
    file_offset: u64,
    bytes: Range<usize>,
}

/// The write-ahead log writer. Send; owned by one thread.
pub struct Wal {
    opts: Options,
    _lock: File,
    active: Option<Active>,
    cursor: Option<Cursor>,
    buf: Vec<u8>,
    chunks: Vec<Chunk>,
    last_txn: Option<i64>,
    durable_txn: Option<i64>,
    poisoned: bool,
    /// Written into every new segment's header.
    identity: u64,
    /// A standalone log (format 2) or a Raft log (format 3).
    flavour: Flavour,
    /// fdatasyncs issued, for tests and metrics: group commit is one per `sync`.
    fsyncs: u64,
}

impl Wal {
    /// Validates every segment, repairs a torn tail (see the crate docs), and returns the
    /// writer positioned right after the last valid record, plus the validated log for replay.
    /// Creates `opts.dir` if missing. Fails with [`WalError::Locked`] if another `Wal` holds
    /// the directory.
    pub fn open(opts: Options, on_corruption: Corruption) -> Result<(Wal, Recovered), WalError> {
        Self::open_flavoured(opts, on_corruption, Flavour::Standalone)
    }

    /// [`Wal::open`] for a Raft log (segment format 3, see the crate docs): its entries are
    /// the sequenced records (`RecordKind::Txn` in this API, their zxid field the Raft index),
    /// its `Meta` records the Raft layer's own. It refuses a standalone log's segments
    /// ([`WalError::UnsupportedVersion`]), as a standalone open refuses its segments.
    pub fn open_raft(
        opts: Options,
        on_corruption: Corruption,
    ) -> Result<(Wal, Recovered), WalError> {
        Self::open_flavoured(opts, on_corruption, Flavour::Raft)
    }

    fn open_flavoured(
        opts: Options,
        on_corruption: Corruption,
        flavour: Flavour,
    ) -> Result<(Wal, Recovered), WalError> {
        segment::create_private_dir(&opts.dir)?;
        let lock = lock_dir(&opts.dir)?;
        let (recovered, resume, identity) = recovery::recover(&opts, on_corruption, flavour)?;
        let identity = match identity {
            Some(id) => id,
            None => random_identity(&opts.dir)?,
        };
        tracing::info!("{}", recovered.report());
        let (active, cursor) = match resume {
            Some(r) => open_active(r)?,
            None => (None, None),
        };
        // A kill -9 between a write and its fdatasync leaves those records in the page cache
        // only, and only in the last segment (`write_chunks` syncs a finished segment before
        // the next exists). They are synced before anything is answered from them: the
        // caller takes what the open found as on disk, and a power cut after the restart
        // must not take back what it acknowledged since.
        let mut fsyncs = 0;
        if let Some(a) = active.as_ref().filter(|_| opts.sync) {
            a.file.sync_data().map_err(|e| WalError::io(&a.path, e))?;
            fsyncs = 1;
        }
        let last_txn = recovered.report().last_txn_zxid;
        let wal = Wal {
            opts,
            _lock: lock,
            active,
            cursor,
            buf: Vec::new(),
            chunks: Vec::new(),
            last_txn,
            durable_txn: last_txn,
            poisoned: false,
            identity,
            flavour,
            fsyncs,
        };
        Ok((wal, recovered))
    }

    /// Buffers one record (no syscall). A Txn's zxid must be the last txn's + 1 (or, in a log
    /// without txns, the open segment's name; in an empty log, anything). Meta records carry
    /// any zxid but cannot open an empty log. Errors here buffer nothing and do not poison.
    pub fn append(&mut self, kind: RecordKind, zxid: i64, payload: &[u8]) -> Result<(), WalError> {
        self.append_at(kind, zxid, payload).map(drop)
    }

    /// [`Wal::append`], telling where the record will be once synced: the segment (by its
    /// first zxid) and the offset of the record header in it. A Raft log reads entries back
    /// from there ([`read_raft_record`]).
    pub fn append_at(
        &mut self,
        kind: RecordKind,
        zxid: i64,
        payload: &[u8],
    ) -> Result<RecordPos, WalError> {
        if self.poisoned {
            return Err(WalError::Poisoned);
        }
        if u32::try_from(payload.len()).map_or(true, |l| l > self.opts.max_payload) {
            return Err(WalError::PayloadTooLarge {
                len: payload.len(),
                max: self.opts.max_payload,
            });
        }
        let expected = self.expected_txn()?;
        if kind == RecordKind::Txn {
            if let Some(expected) = expected.filter(|&e| !self.flavour.continues(e, zxid)) {
                return Err(WalError::OutOfOrder {
                    expected,
                    found: zxid,
                });
            }
        }
        let len = format::record_len(payload.len());
        match self.cursor {
            Some(c) if c.offset.saturating_add(len) <= c.capacity => self.start_chunk(c, None),
            Some(c) if !c.has_txn => self.grow(c, len),
            _ => self.plan_roll(kind, zxid, expected, len)?,
        }
        let pos = self.cursor.map(|c| RecordPos {
            segment_first_zxid: c.first_zxid,
            offset: c.offset,
        });
        format::encode_record_of(&mut self.buf, self.flavour, kind, zxid, payload);
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.bytes.end = self.buf.len();
        }
        if let Some(c) = &mut self.cursor {
            c.offset = c.offset.saturating_add(len);
            c.has_txn |= kind == RecordKind::Txn;
        }
        if kind == RecordKind::Txn {
            self.last_txn = Some(zxid);
        }
        pos.ok_or_else(|| WalError::Rejected {
            reason: "no segment planned for the record".into(),
        })
    }

    /// The zxid the next txn must carry, if constrained.
    fn expected_txn(&self) -> Result<Option<i64>, WalError> {
        match (self.last_txn, self.cursor) {
            (Some(last), _) => last.checked_add(1).map(Some).ok_or(WalError::Rejected {
                reason: "the log reached zxid i64::MAX".into(),
            }),
            // Only a log without txns has no last txn: its open segment names the next one.
            (None, Some(c)) => Ok(Some(c.first_zxid)),
            (None, None) => Ok(None),
        }
    }

    /// Opens a chunk for the cursor's segment unless the last chunk already is one.
    fn start_chunk(&mut self, c: Cursor, grow_to: Option<u64>) {
        match self.chunks.last_mut() {
            Some(chunk) => match (&mut chunk.new_segment, grow_to) {
                (Some((_, size)), Some(to)) => *size = to,
                (None, Some(to)) => chunk.grow_to = Some(to),
                (_, None) => {}
            },
            None => self.chunks.push(Chunk {
                new_segment: None,
                grow_to,
                file_offset: c.offset,
                bytes: self.buf.len()..self.buf.len(),
            }),
        }
    }

    /// A segment without a txn cannot roll: the next segment would take its name (that of the
    /// next txn). It is extended instead. This happens when a Meta record opened the segment,
    /// or when recovery left a header-only segment shorter than the next record.
    fn grow(&mut self, mut c: Cursor, len: u64) {
        let to = self.opts.segment_bytes.max(c.offset.saturating_add(len));
        c.capacity = to;
        self.cursor = Some(c);
        self.start_chunk(c, Some(to));
    }

    /// Starts a new segment for a record of `len` bytes that does not fit the current one.
    /// It is named after the next txn: this record's zxid if it is a Txn, else last txn + 1.
    fn plan_roll(
        &mut self,
        kind: RecordKind,
        zxid: i64,
        expected: Option<i64>,
        len: u64,
    ) -> Result<(), WalError> {
        let first_zxid = match (kind, expected) {
            (RecordKind::Txn, _) => zxid,
            (RecordKind::Meta, Some(next)) => next,
            (RecordKind::Meta, None) => {
                return Err(WalError::Rejected {
                    reason: "a Meta record cannot open an empty log: append a Txn first".into(),
                })
            }
        };
        let header = SEGMENT_HEADER_LEN as u64;
        let size = self.opts.segment_bytes.max(header.saturating_add(len));
        self.chunks.push(Chunk {
            new_segment: Some((first_zxid, size)),
            grow_to: None,
            file_offset: header,
            bytes: self.buf.len()..self.buf.len(),
        });
        self.cursor = Some(Cursor {
            first_zxid,
            offset: header,
            capacity: size,
            has_txn: false,
        });
        Ok(())
    }
    /// Starts an empty log at `first_zxid`: creates its first segment, durably, holding no
    /// record, so the next txn must be `first_zxid` and recovery can see where the log begins.
    /// For a data dir whose history before `first_zxid` is all in a snapshot (an import).
    pub fn start_at(&mut self, first_zxid: i64) -> Result<(), WalError> {
        if self.cursor.is_some() || self.last_txn.is_some() || !self.chunks.is_empty() {
            return Err(WalError::Rejected {
                reason: "start_at needs a log without segments".into(),
            });
        }
        let header = SEGMENT_HEADER_LEN as u64;
        let size = self.opts.segment_bytes.max(header);
        self.chunks.push(Chunk {
            new_segment: Some((first_zxid, size)),
            grow_to: None,
            file_offset: header,
            bytes: self.buf.len()..self.buf.len(),
        });
        self.cursor = Some(Cursor {
            first_zxid,
            offset: header,
            capacity: size,
            has_txn: false,
        });
        self.sync()
    }

    /// Writes everything buffered (one pwrite per segment touched, rolling as planned) and,
    /// unless `opts.sync` is false, one fdatasync. Only after Ok may the caller acknowledge
    /// those records. Any error poisons the writer: every later call returns `Poisoned`.
    pub fn sync(&mut self) -> Result<(), WalError> {
        if self.poisoned {
            return Err(WalError::Poisoned);
        }
        if self.chunks.is_empty() {
            return Ok(());
        }
        let result = self.write_chunks();
        self.chunks.clear();
        self.buf.clear();
        match result {
            Ok(()) => {
                self.durable_txn = self.last_txn;
                Ok(())
            }
            Err(e) => {
                self.poisoned = true;
                tracing::error!(error = %e, "WAL write failed; poisoned");
                Err(e)
            }
        }
    }

    fn write_chunks(&mut self) -> Result<(), WalError> {
        for chunk in &self.chunks {
            if let Some((first_zxid, size)) = chunk.new_segment {
                // The finished segment is made durable before the next one exists, so only
                // the last segment can ever have a torn tail.
                if let Some(old) = self.active.as_mut().filter(|a| a.dirty && self.opts.sync) {
                    old.file
                        .sync_data()
                        .map_err(|e| WalError::io(&old.path, e))?;
                    self.fsyncs = self.fsyncs.saturating_add(1);
                }
                let (file, path) = segment::create_with(
                    &self.opts.dir,
                    first_zxid,
                    size,
                    self.identity,
                    self.flavour,
                    &[],
                    false,
                )?;
                self.active = Some(Active {
                    file,
                    path,
                    dirty: false,
                });
            }
            let active = self.active.as_mut().ok_or_else(|| WalError::Rejected {
                reason: "no open segment to write to".into(),
            })?;
            if let Some(size) = chunk.grow_to {
                segment::preallocate(&active.file, &active.path, size)?;
            }
            let bytes = self.buf.get(chunk.bytes.clone()).unwrap_or_default();
            active
                .file
                .write_all_at(bytes, chunk.file_offset)
                .map_err(|e| WalError::io(&active.path, e))?;
            active.dirty = true;
        }
        if let Some(active) = self.active.as_mut().filter(|a| a.dirty && self.opts.sync) {
            active
                .file
                .sync_data()
                .map_err(|e| WalError::io(&active.path, e))?;
            active.dirty = false;
            self.fsyncs = self.fsyncs.saturating_add(1);
        }
        Ok(())
    }

    /// Removes, durably, every sequenced record (txn, Raft entry) with zxid >= `from` and
    /// every record after the first of them: Raft's truncation of an uncommitted suffix.
    /// Segments named `from` or later are deleted newest first, so a crash midway leaves a
    /// prefix of the log (entries a truncation removes are never committed, so any prefix
    /// down to the cut is a state Raft accepts). The segment holding the cut is rewritten
    /// under a temporary name with the records before the cut and renamed over the old one:
    /// a crash leaves the old file or the new, never zeros in the middle of the log.
    /// Writes anything buffered first. A failure poisons the writer.
    pub fn truncate_from(&mut self, from: i64) -> Result<(), WalError> {
        self.sync()?;
        if self.last_txn.is_none_or(|last| from > last) {
            return Ok(());
        }
        let result = self.cut_from(from);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn cut_from(&mut self, from: i64) -> Result<(), WalError> {
        let dir = self.opts.dir.clone();
        let segments = segment::list(&dir)?;
        self.active = None;
        self.cursor = None;
        let mut kept = None;
        for (i, (first, path)) in segments.iter().enumerate().rev() {
            if *first < from {
                kept = Some((i, *first, path.clone()));
                break;
            }
            std::fs::remove_file(path).map_err(|e| WalError::io(path, e))?;
            segment::sync_dir(&dir)?;
        }
        let Some((i, first, path)) = kept else {
            self.last_txn = None;
            self.durable_txn = None;
            return Ok(());
        };
        let data = std::fs::read(&path).map_err(|e| WalError::io(&path, e))?;
        let mut last = None;
        let mut cut = None;
        let mut end = SEGMENT_HEADER_LEN;
        for step in Walker::new(&data, first, self.opts.max_payload, self.flavour) {
            match step {
                Step::Record {
                    offset,
                    kind,
                    zxid,
                    payload,
                } => {
                    if kind == RecordKind::Txn && zxid >= from {
                        cut = Some(offset);
                        break;
                    }
                    if kind == RecordKind::Txn {
                        last = Some(zxid);
                    }
                    let len = usize::try_from(format::record_len(payload.len()));
                    end = offset.saturating_add(len.unwrap_or(usize::MAX));
                }
                Step::End(e) => {
                    end = usize::try_from(e.offset()).unwrap_or(end);
                    break;
                }
            }
        }
        let capacity = crate::scan::as_u64(data.len());
        let file = match cut {
            Some(at) => {
                let body = data.get(SEGMENT_HEADER_LEN..at).unwrap_or_default();
                end = at;
                segment::create_with(
                    &dir,
                    first,
                    capacity,
                    self.identity,
                    self.flavour,
                    body,
                    true,
                )?
                .0
            }
            None => segment::open_rw(&path)?,
        };
        // A segment without a txn is only ever the last: its predecessors end at first - 1.
        let has_txn = last.is_some();
        self.last_txn = last.or_else(|| (i > 0).then(|| first.checked_sub(1)).flatten());
        self.durable_txn = self.last_txn;
        self.cursor = Some(Cursor {
            first_zxid: first,
            offset: crate::scan::as_u64(end),
            capacity,
            has_txn,
        });
        self.active = Some(Active {
            file,
            path,
            dirty: false,
        });
        tracing::info!(from, last = ?self.last_txn, "truncated the log");
        Ok(())
    }

    /// Deletes every segment, oldest first, leaving an empty log whose next record may carry
    /// any zxid: for a Raft log whose whole content a snapshot replaced (the Raft layer keeps
    /// the purge point itself, durably, before calling this). A failure poisons the writer.
    pub fn reset(&mut self) -> Result<(), WalError> {
        self.sync()?;
        self.active = None;
        self.cursor = None;
        self.last_txn = None;
        self.durable_txn = None;
        let result = segment::list(&self.opts.dir).and_then(|segments| {
            for (_, path) in &segments {
                std::fs::remove_file(path).map_err(|e| WalError::io(path, e))?;
            }
            segment::sync_dir(&self.opts.dir)
        });
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    /// fdatasyncs this writer has issued on segments (not counting segment creation).
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs
    }

    /// The last txn appended (buffered or written).
    pub fn last_txn_zxid(&self) -> Option<i64> {
        self.last_txn
    }

    /// The last txn a successful `sync` made durable (or that recovery found).
    pub fn durable_txn_zxid(&self) -> Option<i64> {
        self.durable_txn
    }

    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Deletes whole segments all of whose txns have zxid < `keep_from`: segment i goes iff a
    /// later segment exists whose first zxid <= `keep_from`. The last segment (the active one)
    /// never goes. Oldest first, so a crash midway still leaves a contiguous log. Lists the
    /// directory rather than asking the writer, so the snapshot thread can call it.
    pub fn purge(dir: &Path, keep_from: i64) -> Result<Vec<PathBuf>, WalError> {
        Self::purge_listed(dir, keep_from, segment::list(dir)?)
    }

    /// [`Wal::purge`] by the writer's owner (the log thread), which also knows whether the
    /// open segment holds a txn yet: if it does not, the segment before it (which holds the
    /// log's last txn) stays too, so the log never loses its last txn to a purge: recovery
    /// checks a snapshot against it.
    pub fn purge_before(&self, keep_from: i64) -> Result<Vec<PathBuf>, WalError> {
        let doomed = self.purgeable(keep_from)?;
        Self::remove_segments(&self.opts.dir, &doomed)?;
        Ok(doomed)
    }

    /// The segments [`Wal::purge_before`] would delete, oldest first, deleting nothing: the
    /// owner can have [`Wal::remove_segments`] delete them on another thread (unlinking a
    /// gigabyte of segments takes the file system hundreds of ms, which no append should
    /// wait for).
    pub fn purgeable(&self, keep_from: i64) -> Result<Vec<PathBuf>, WalError> {
        let mut segments = segment::list(&self.opts.dir)?;
        let active_has_txn = self.cursor.is_none_or(|c| c.has_txn);
        if !active_has_txn {
            segments.pop();
        }
        Ok(Self::doomed(keep_from, segments))
    }

    /// Deletes `segments` of the log in `dir` in the order given (oldest first: a crash
    /// midway leaves a contiguous log), then syncs the directory. One already gone is skipped.
    pub fn remove_segments(dir: &Path, segments: &[PathBuf]) -> Result<(), WalError> {
        for path in segments {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(WalError::io(path, e)),
            }
        }
        if !segments.is_empty() {
            segment::sync_dir(dir)?;
            tracing::info!(count = segments.len(), "purged WAL segments");
        }
        Ok(())
    }

    fn purge_listed(
        dir: &Path,
        keep_from: i64,
        segments: Vec<(i64, PathBuf)>,
    ) -> Result<Vec<PathBuf>, WalError> {
        let doomed = Self::doomed(keep_from, segments);
        Self::remove_segments(dir, &doomed)?;
        Ok(doomed)
    }

    /// Segment i goes iff the next segment's first zxid <= `keep_from`.
    fn doomed(keep_from: i64, segments: Vec<(i64, PathBuf)>) -> Vec<PathBuf> {
        let mut doomed = Vec::new();
        for pair in segments.windows(2) {
            let [(_, path), (next_first, _)] = pair else {
                continue;
            };
            if *next_first > keep_from {
                break;
            }
            doomed.push(path.clone());
        }
        doomed
    }
}

/// The identity of a new log opened without one (tools and tests; the server always passes
/// its data dir's).
fn random_identity(dir: &Path) -> Result<u64, WalError> {
    use std::io::Read;
    let mut b = [0u8; 8];
    loop {
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .map_err(|e| WalError::io(dir, e))?;
        let id = u64::from_le_bytes(b);
        if id != 0 {
            return Ok(id);
        }
    }
}

/// The identity this writer stamps on new segments.
impl Wal {
    pub fn identity(&self) -> u64 {
        self.identity
    }
}

fn lock_dir(dir: &Path) -> Result<File, WalError> {
    let path = dir.join(segment::LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(segment::FILE_MODE)
        .open(&path)
        .map_err(|e| WalError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(WalError::Locked { path }),
        Err(TryLockError::Error(e)) => Err(WalError::io(&path, e)),
    }
}

fn open_active(r: Resume) -> Result<(Option<Active>, Option<Cursor>), WalError> {
    let file = segment::open_rw(&r.path)?;
    let capacity = file.metadata().map_err(|e| WalError::io(&r.path, e))?.len();
    let cursor = Cursor {
        first_zxid: r.first_zxid,
        offset: r.offset,
        capacity,
        has_txn: r.has_txn,
    };
    let active = Active {
        file,
        path: r.path,
        dirty: false,
    };
    Ok((Some(active), Some(cursor)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &Path) -> Options {
        Options {
            segment_bytes: 4096,
            ..Options::new(dir)
        }
    }

    /// How: swap the open segment's descriptor for a read-only one, so the next pwrite fails
    /// with EBADF as a real I/O error would; afterwards nothing is accepted.
    #[test]
    fn failed_write_poisons() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(opts(dir.path()), Corruption::Refuse).unwrap();
        wal.append(RecordKind::Txn, 1, b"one").unwrap();
        wal.sync().unwrap();
        let active = wal.active.as_mut().unwrap();
        active.file = File::open(&active.path).unwrap();
        wal.append(RecordKind::Txn, 2, b"two").unwrap();
        assert!(matches!(wal.sync(), Err(WalError::Io { .. })));
        assert!(wal.is_poisoned());
        assert!(matches!(
            wal.append(RecordKind::Txn, 3, b"x"),
            Err(WalError::Poisoned)
        ));
        assert!(matches!(wal.sync(), Err(WalError::Poisoned)));
        assert_eq!(wal.durable_txn_zxid(), Some(1));
        drop(wal);
        let (_, log) = Wal::open(opts(dir.path()), Corruption::Refuse).unwrap();
        assert_eq!(log.report().last_txn_zxid, Some(1));
    }

    /// The writer moves to the log thread; the recovered log may be replayed on another.
    #[test]
    fn wal_is_send_and_recovered_is_send_sync() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<Wal>();
        send_sync::<Recovered>();
    }

    /// How: the cursor is checked against what sync actually wrote: one chunk per segment.
    #[test]
    fn one_chunk_per_segment_touched() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(opts(dir.path()), Corruption::Refuse).unwrap();
        for z in 1..=100 {
            wal.append(RecordKind::Txn, z, &[7u8; 100]).unwrap();
        }
        // 4096-byte segments hold 30 records of 132 bytes: 100 records touch 4 segments.
        assert_eq!(wal.chunks.len(), 4);
        wal.sync().unwrap();
        assert_eq!(segment::list(dir.path()).unwrap().len(), 4);
    }
    /// A log started at a zxid survives a reopen as a segment of that name with no txn, and
    /// takes that zxid (only) as its first txn.
    #[test]
    fn start_at_opens_an_empty_log_at_a_zxid() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(opts(dir.path()), Corruption::Refuse).unwrap();
        wal.start_at(0x77).unwrap();
        assert!(wal.start_at(0x78).is_err());
        drop(wal);
        let (mut wal, rec) = Wal::open(opts(dir.path()), Corruption::Refuse).unwrap();
        assert_eq!(rec.report().last_txn_zxid, None);
        assert_eq!(
            rec.segments().map(|(_, z)| z).collect::<Vec<_>>(),
            vec![0x77]
        );
        assert!(matches!(
            wal.append(RecordKind::Txn, 0x78, b"x"),
            Err(WalError::OutOfOrder { .. })
        ));
        wal.append(RecordKind::Txn, 0x77, b"x").unwrap();
        wal.sync().unwrap();
        assert_eq!(segment::list(dir.path()).unwrap().len(), 1);
    }
}
