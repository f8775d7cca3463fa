//! Segment files on disk: listing, crash-safe creation, preallocation, mapping, and the
//! `detached/` folder that keeps evidence of anything recovery cut off.

use crate::format::{self, Flavour, SEGMENT_HEADER_LEN};
use crate::WalError;
use memmap2::{Mmap, MmapOptions};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub const DETACHED_DIR: &str = "detached";
pub const LOCK_FILE: &str = "LOCK";
const TMP_SUFFIX: &str = ".tmp";
/// Txn payloads are client data: files the WAL creates are readable by their owner only, and
/// so are the directories it creates (group and others get nothing).
pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

/// `mkdir -p` whose created directories are 0700 (existing ones are left as they are).
pub fn create_private_dir(dir: &Path) -> Result<(), WalError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| WalError::io(dir, e))
}

/// The segment files of `dir` (`log.<16 hex>`), in zxid order. Other names are ignored.
pub fn list(dir: &Path) -> Result<Vec<(i64, PathBuf)>, WalError> {
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| WalError::io(dir, e))? {
        let entry = entry.map_err(|e| WalError::io(dir, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if let Some(zxid) = format::parse_segment_file_name(&name) {
            segments.push((zxid, entry.path()));
        }
    }
    segments.sort_by_key(|(zxid, _)| *zxid);
    Ok(segments)
}

/// Removes `*.tmp` leftovers: segments whose creation never reached the rename, so they hold
/// a header and zeros at most (records are only written after the rename).
pub fn remove_tmp_files(dir: &Path) -> Result<Vec<PathBuf>, WalError> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| WalError::io(dir, e))? {
        let entry = entry.map_err(|e| WalError::io(dir, e))?;
        let path = entry.path();
        let is_tmp = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(TMP_SUFFIX));
        if is_tmp && path.is_file() {
            fs::remove_file(&path).map_err(|e| WalError::io(&path, e))?;
            tracing::info!(path = %path.display(), "removed unfinished segment");
            removed.push(path);
        }
    }
    if !removed.is_empty() {
        sync_dir(dir)?;
    }
    Ok(removed)
}

/// Creates `log.<hex>` holding a header and `size` bytes in all. The header is written and
/// made durable under a `.tmp` name, then renamed and the directory synced, so a crash never
/// leaves a headerless segment under a real name (ZOOKEEPER-2332).
///
/// For a log of `flavour`, with `body` (whole records) written after the header
/// before the rename. With `replace`, an existing segment of that name is replaced whole by
/// the rename: a crash leaves the old file or the new one, never a mix (Raft truncation).
pub fn create_with(
    dir: &Path,
    first_zxid: i64,
    size: u64,
    identity: u64,
    flavour: Flavour,
    body: &[u8],
    replace: bool,
) -> Result<(File, PathBuf), WalError> {
    let size = size.max((SEGMENT_HEADER_LEN as u64).saturating_add(body.len() as u64));
    let name = format::segment_file_name(first_zxid);
    let path = dir.join(&name);
    let tmp = dir.join(format!("{name}{TMP_SUFFIX}"));
    if path.exists() && !replace {
        return Err(WalError::Rejected {
            reason: format!("{} already exists", path.display()),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&tmp)
        .map_err(|e| WalError::io(&tmp, e))?;
    file.write_all_at(
        &format::encode_segment_header_of(flavour, first_zxid, identity, size),
        0,
    )
    .map_err(|e| WalError::io(&tmp, e))?;
    if !body.is_empty() {
        file.write_all_at(body, SEGMENT_HEADER_LEN as u64)
            .map_err(|e| WalError::io(&tmp, e))?;
    }
    preallocate(&file, &tmp, size)?;
    file.sync_all().map_err(|e| WalError::io(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| WalError::io(&path, e))?;
    sync_dir(dir)?;
    Ok((file, path))
}

static FALLOCATE_WARNED: AtomicBool = AtomicBool::new(false);

/// Reserves `size` bytes of zeros (never shrinks) so later fdatasyncs need not persist a
/// size change.
pub fn preallocate(file: &File, path: &Path, size: u64) -> Result<(), WalError> {
    match fallocate(file, size) {
        Ok(()) => return Ok(()),
        Err(e) if !fallocate_unsupported(&e) => return Err(WalError::io(path, e)),
        Err(e) => {
            if !FALLOCATE_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    path = %path.display(), error = %e,
                    "fallocate not supported here; preallocating with set_len (sparse file)"
                );
            }
        }
    }
    let len = file.metadata().map_err(|e| WalError::io(path, e))?.len();
    if len < size {
        file.set_len(size).map_err(|e| WalError::io(path, e))?;
    }
    Ok(())
}

fn fallocate_unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
    )
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn fallocate(file: &File, size: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(size)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "size too large"))?;
    // SAFETY: plain syscall on a file descriptor we own; no memory is passed.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn fallocate(_file: &File, _size: u64) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Makes a rename, create or unlink in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), WalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| WalError::io(dir, e))
}

/// Maps the first `len` bytes of `file`, or None for an empty range (which cannot be mapped).
/// Only the validated prefix of a segment is mapped, so the writer appending after it never
/// changes bytes a `&[u8]` into the map can see.
#[allow(unsafe_code)]
pub fn map(file: &File, path: &Path, len: u64) -> Result<Option<Mmap>, WalError> {
    let len = usize::try_from(len).map_err(|_| WalError::Rejected {
        reason: format!("{}: too large to map", path.display()),
    })?;
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the mapped bytes must not change while mapped. We hold `<dir>/LOCK`, so no other
    // Palisade writes this log; our writer and recovery only write past `len` or after the map
    // is dropped. Truncation by a foreign process would be SIGBUS, as for any mmap reader.
    unsafe { MmapOptions::new().len(len).map(file) }
        .map(Some)
        .map_err(|e| WalError::io(path, e))
}

pub fn open_rw(path: &Path) -> Result<File, WalError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| WalError::io(path, e))
}

/// `<dir>/detached`, created (and made durable) if missing.
pub fn detached_dir(dir: &Path) -> Result<PathBuf, WalError> {
    let detached = dir.join(DETACHED_DIR);
    if !detached.is_dir() {
        create_private_dir(&detached)?;
        sync_dir(dir)?;
    }
    Ok(detached)
}

/// A path in `detached/` named `base`, or `base.1`, `base.2`, ... so evidence is never
/// overwritten.
fn unique_in(detached: &Path, base: &str) -> Result<PathBuf, WalError> {
    let first = detached.join(base);
    if !first.exists() {
        return Ok(first);
    }
    (1..10_000u32)
        .map(|n| detached.join(format!("{base}.{n}")))
        .find(|p| !p.exists())
        .ok_or_else(|| WalError::Rejected {
            reason: format!(
                "{}: too many evidence files named {base}",
                detached.display()
            ),
        })
}

/// Writes `bytes` to a new durable file `detached/<base>` and returns its path.
pub fn save_evidence(dir: &Path, base: &str, bytes: &[u8]) -> Result<PathBuf, WalError> {
    let detached = detached_dir(dir)?;
    let path = unique_in(&detached, base)?;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&path)
        .map_err(|e| WalError::io(&path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| WalError::io(&path, e))?;
    sync_dir(&detached)?;
    Ok(path)
}

/// Moves a whole segment file into `detached/`, durably.
pub fn move_to_detached(dir: &Path, path: &Path) -> Result<PathBuf, WalError> {
    let detached = detached_dir(dir)?;
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("segment")
        .to_owned();
    let target = unique_in(&detached, &base)?;
    fs::rename(path, &target).map_err(|e| WalError::io(path, e))?;
    sync_dir(&detached)?;
    sync_dir(dir)?;
    Ok(target)
}

/// Overwrites `[from, to)` with zeros and fdatasyncs: the preallocation stays, the cut bytes
/// read as "end of data" from now on.
pub fn zero_range(path: &Path, from: u64, to: u64) -> Result<(), WalError> {
    const CHUNK: u64 = 64 * 1024;
    let file = open_rw(path)?;
    let zeros = [0u8; CHUNK as usize];
    let mut at = from;
    while at < to {
        let n = (to - at).min(CHUNK);
        let chunk = zeros.get(..n as usize).unwrap_or_default();
        file.write_all_at(chunk, at)
            .map_err(|e| WalError::io(path, e))?;
        at += n;
    }
    file.sync_data().map_err(|e| WalError::io(path, e))
}
