//! Writes one snapshot file: header at create, one checksummed block per captured chunk, the
//! trailer at finish, then fsync, rename into place and fsync the directory. Until the rename
//! only `<name>.tmp` exists, so a crash at any point leaves no file that `list` would pick up.

use crate::error::SnapError;
use crate::format::{
    self, encode_block_header, encode_header, encode_trailer, Chain, Trailer, TrailerBlock,
    BLOCK_BYTES_MAX, BLOCK_HEADER_LEN, HEADER_LEN, KIND_ITEMS, KIND_TRAILER,
};
use crate::validate::Validator;
use crate::writeback::Writeback;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Snapshots hold every node's data: owner-only files and directories.
pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

/// Small writes (block headers) are coalesced; large payloads go straight to the file.
const BUFFER_BYTES: usize = 256 << 10;

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
    /// Paced writeback (`writeback.rs`): a snapshot must not leave the WAL's fdatasync
    /// queued behind a flush of the whole file.
    pace: Writeback,
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
            pace: Writeback::default(),
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
        self.write_back()
    }

    /// Bytes of the file whose writeback to the disk has completed (not yet durable: the
    /// file's metadata waits for `finish`'s fsync).
    pub fn written_back(&self) -> u64 {
        self.pace.written_back()
    }

    /// Hands the bytes written so far to the pacer (flushing the buffer first once a window
    /// has accumulated).
    fn write_back(&mut self) -> Result<(), SnapError> {
        if !self.pace.due(self.offset) {
            return Ok(());
        }
        let Some(f) = self.file.as_mut() else {
            return Err(SnapError::Poisoned {
                path: self.tmp.clone(),
            });
        };
        let paced = f
            .flush()
            .and_then(|()| self.pace.wrote_to(f.get_ref(), self.offset));
        paced.map_err(|e| {
            self.poisoned = true;
            SnapError::io(&self.tmp)(e)
        })
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
