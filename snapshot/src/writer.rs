//! Writes one snapshot file: header at create, one checksummed block per captured chunk, the
//! trailer at finish, then fsync, rename into place and fsync the directory. Until the rename
//! only `<name>.tmp` exists, so a crash at any point leaves no file that `list` would pick up.

use crate::error::SnapError;
use crate::format::{
    self, encode_block_header, encode_header, encode_trailer, Chain, Trailer, TrailerBlock,
    BLOCK_BYTES_MAX, BLOCK_HEADER_LEN, HEADER_LEN, KIND_ITEMS, KIND_TRAILER,
};
use crate::validate::Validator;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Snapshots hold every node's data: owner-only files and directories.
pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

/// Small writes (block headers) are coalesced; large payloads go straight to the file.
const BUFFER_BYTES: usize = 256 << 10;

/// Written bytes are sent to the disk every this many, and the writer waits for the window
/// before: at most two windows are dirty in the page cache at a time. Without it a snapshot
/// of 10M znodes left ~2 GB dirty until the final fsync, and the WAL's fdatasync queued
/// behind that flush for up to a second, so no write was acknowledged meanwhile.
pub const WRITEBACK_BYTES: u64 = 4 << 20;

/// Lives on the snapshot-writer thread. Dropped without `finish`, it removes its tmp file.
pub struct SnapshotWriter {
    dir: PathBuf,
    tmp: PathBuf,
    target: PathBuf,
    /// `None` once finished or aborted.
    file: Option<BufWriter<File>>,
    start_zxid: i64,
    /// Where the next block starts.
    offset: u64,
    chain: Chain,
    check: Validator,
    poisoned: bool,
    /// File bytes handed to the disk (`sync_file_range`) so far, and those known written.
    started_to: u64,
    written_to: u64,
}

const _: () = {
    const fn send<T: Send>() {}
    send::<SnapshotWriter>();
};

impl SnapshotWriter {
    /// Creates `<dir>/snapshot.<start_zxid hex>.tmp` (replacing a leftover of the same name)
    /// and writes the header. `start_zxid` is the last zxid applied when the capture started;
    /// `identity` is the data dir's (non-zero), carried in the header.
    pub fn create(dir: &Path, start_zxid: i64, identity: u64) -> Result<Self, SnapError> {
        if identity == 0 {
            return Err(SnapError::Invalid {
                path: dir.join(format::file_name(start_zxid)),
                offset: 16,
                reason: "a snapshot needs a non-zero data-dir identity".into(),
            });
        }
        let name = format::file_name(start_zxid);
        let target = dir.join(&name);
        let tmp = dir.join(format!("{name}.tmp"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(SnapError::io(&tmp))?;
        let mut w = SnapshotWriter {
            dir: dir.to_path_buf(),
            tmp,
            target,
            file: Some(BufWriter::with_capacity(BUFFER_BYTES, file)),
            start_zxid,
            offset: HEADER_LEN as u64,
            chain: Chain::new(),
            check: Validator::default(),
            poisoned: false,
            started_to: 0,
            written_to: 0,
        };
        // On error `w` drops here and removes the tmp file.
        w.write(&encode_header(start_zxid, identity))?;
        Ok(w)
    }

    /// The file being written (`.tmp`) until `finish` renames it.
    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// Appends one items block. `items` is a concatenation of encoded items (it may be
    /// empty); it is validated first (decoding, node numbering, parent and ACL references),
    /// and refused with [`SnapError::Invalid`] if `open` would reject it. Any error poisons
    /// the writer: later calls fail with [`SnapError::Poisoned`].
    pub fn write_block(&mut self, items: &[u8]) -> Result<(), SnapError> {
        if self.poisoned {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        }
        let r = self.write_block_inner(items);
        self.poisoned = r.is_err();
        r
    }

    fn write_block_inner(&mut self, items: &[u8]) -> Result<(), SnapError> {
        let payload_at = self.offset.saturating_add(BLOCK_HEADER_LEN as u64);
        if items.len() > BLOCK_BYTES_MAX as usize {
            return Err(self.invalid(
                self.offset,
                format!("block of {} bytes exceeds {BLOCK_BYTES_MAX}", items.len()),
            ));
        }
        if let Err((at, reason)) = self.check.block(items) {
            return Err(self.invalid(payload_at.saturating_add(at as u64), reason));
        }
        let header = encode_block_header(KIND_ITEMS, items);
        self.write(&header)?;
        self.write(items)?;
        let crc = header
            .last_chunk::<4>()
            .map_or(0, |c| u32::from_le_bytes(*c));
        self.chain.push(crc);
        self.offset = payload_at.saturating_add(items.len() as u64);
        if self.offset.saturating_sub(self.started_to) >= WRITEBACK_BYTES {
            self.write_back()?;
        }
        Ok(())
    }

    /// Bytes of the file whose writeback to the disk has completed (not yet durable: the
    /// file's metadata waits for `finish`'s fsync).
    pub fn written_back(&self) -> u64 {
        self.written_to
    }

    /// Starts writeback of everything written since the last call, then waits for the
    /// previous window's: the disk works on one window while the capture fills the next.
    fn write_back(&mut self) -> Result<(), SnapError> {
        let Some(f) = self.file.as_mut() else {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        };
        let file = match f.flush() {
            Ok(()) => f.get_ref(),
            Err(e) => {
                self.poisoned = true;
                return Err(SnapError::io(&self.tmp)(e));
            }
        };
        let (previous, end) = (self.started_to, self.offset);
        range_write_back(file, previous, end)
            .and_then(|()| range_wait(file, self.written_to, previous))
            .map_err(|e| {
                self.poisoned = true;
                SnapError::io(&self.tmp)(e)
            })?;
        self.written_to = previous;
        self.started_to = end;
        Ok(())
    }

    /// Writes the trailer (after checking its counts against the items written), fsyncs the
    /// file, renames it to its final name and fsyncs the directory. Returns the final path.
    /// On error the tmp file is removed.
    pub fn finish(mut self, t: Trailer) -> Result<PathBuf, SnapError> {
        if self.poisoned {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        }
        let block = TrailerBlock {
            trailer: t,
            block_count: self.check.blocks(),
            chain: self.chain.value(),
        };
        if let Err(reason) = self.check.trailer(&block, block.chain, self.start_zxid) {
            return Err(self.invalid(self.offset, reason));
        }
        let payload = encode_trailer(&t, block.block_count, block.chain);
        self.write(&encode_block_header(KIND_TRAILER, &payload))?;
        self.write(&payload)?;
        let Some(buffered) = self.file.take() else {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        };
        let tmp = self.tmp.clone();
        // From here on a failure must still remove the tmp file, which Drop no longer does.
        let published = publish(buffered, &tmp, &self.target, &self.dir);
        if published.is_err() {
            remove_tmp(&tmp);
        }
        published.map(|()| self.target.clone())
    }

    /// Gives up on this snapshot and removes the tmp file.
    pub fn abort(self) {
        // Drop does the work.
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), SnapError> {
        let Some(f) = self.file.as_mut() else {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        };
        f.write_all(bytes).map_err(|e| {
            self.poisoned = true;
            SnapError::io(&self.tmp)(e)
        })
    }

    fn invalid(&self, offset: u64, reason: String) -> SnapError {
        SnapError::Invalid {
            path: self.tmp.clone(),
            offset,
            reason,
        }
    }
}

/// Flush, fsync the file, rename, fsync the directory: after this returns the snapshot
/// survives a power cut under its final name.
fn publish(
    buffered: BufWriter<File>,
    tmp: &Path,
    target: &Path,
    dir: &Path,
) -> Result<(), SnapError> {
    let file = buffered
        .into_inner()
        .map_err(|e| SnapError::io(tmp)(e.into_error()))?;
    file.sync_all().map_err(SnapError::io(tmp))?;
    drop(file);
    std::fs::rename(tmp, target).map_err(SnapError::io(target))?;
    sync_dir(dir)
}

/// Starts writeback of `[from, to)` without waiting for it.
#[cfg(target_os = "linux")]
fn range_write_back(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    sync_range(file, from, to, libc::SYNC_FILE_RANGE_WRITE)
}

/// Waits until `[from, to)` is written back (starting any part not yet started).
#[cfg(target_os = "linux")]
fn range_wait(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    sync_range(
        file,
        from,
        to,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    )
}

#[cfg(target_os = "linux")]
fn sync_range(file: &File, from: u64, to: u64, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    if to <= from {
        return Ok(());
    }
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(from),
        libc::off64_t::try_from(to.saturating_sub(from)),
    ) else {
        return Ok(());
    };
    // SAFETY: a plain syscall on an fd this File owns; no memory is passed.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere the final fsync does all the writing.
#[cfg(not(target_os = "linux"))]
fn range_write_back(_: &File, _: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn range_wait(_: &File, _: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), SnapError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(SnapError::io(dir))
}

fn remove_tmp(tmp: &Path) {
    match std::fs::remove_file(tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(path = %tmp.display(), error = %e, "could not remove unfinished snapshot")
        }
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if let Some(f) = self.file.take() {
            // The buffered tail is not wanted: drop the File without flushing it.
            let (file, _unflushed) = f.into_parts();
            drop(file);
            remove_tmp(&self.tmp);
        }
    }
}
