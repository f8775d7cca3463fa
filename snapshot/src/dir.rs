//! The snapshot directory: listing, loading the newest valid snapshot, retention, and removal
//! of unfinished `.tmp` files. Damaged snapshots are never deleted: they are skipped loudly and
//! moved to `detached/` (the evidence is kept, as ClickHouse Keeper does for broken logs).

use crate::error::SnapError;
use crate::format;
use crate::reader::Snapshot;
use crate::writer::sync_dir;
use std::collections::HashSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Where `retain` moves damaged snapshots.
pub const DETACHED_DIR: &str = "detached";

/// Snapshots in `dir` by start zxid, newest first. Only names of the form
/// `snapshot.<16 lowercase hex digits>` count; `.tmp` files, `detached/` and foreign files are
/// ignored. A missing directory is an empty list (a fresh data dir).
pub fn list(dir: &Path) -> Result<Vec<(i64, PathBuf)>, SnapError> {
    let mut found = Vec::new();
    for (name, path) in entries(dir)? {
        if let Some(zxid) = format::parse_file_name(&name) {
            found.push((zxid, path));
        }
    }
    found.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(found)
}

/// File names and paths in `dir` (names that are not UTF-8 cannot be ours and are skipped).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>, SnapError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SnapError::io(dir)(e)),
    };
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(SnapError::io(dir))?;
        if let Ok(name) = entry.file_name().into_string() {
            out.push((name, entry.path()));
        }
    }
    Ok(out)
}

/// For the startup path: removes leftover `snapshot.<hex>.tmp` files (a writer that crashed
/// or was dropped before its rename). Must not run while a [`crate::SnapshotWriter`] is
/// writing into `dir`. Returns the files removed.
pub fn clean(dir: &Path) -> Result<Vec<PathBuf>, SnapError> {
    let mut removed = Vec::new();
    for (name, path) in entries(dir)? {
        let is_ours = name
            .strip_suffix(".tmp")
            .and_then(format::parse_file_name)
            .is_some();
        if is_ours {
            std::fs::remove_file(&path).map_err(SnapError::io(&path))?;
            tracing::info!(path = %path.display(), "removed unfinished snapshot");
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Startup: every snapshot in `dir` whose header is intact must carry `identity`: a file of
/// another data dir ([`SnapError::Foreign`]) or of format 1 ([`SnapError::Unidentified`]) is
/// refused by name, whether or not it is the newest. Only the 32-byte headers are read; a
/// damaged header is left to [`load_newest`], which skips the file as damaged.
pub fn check_identity(dir: &Path, identity: u64) -> Result<(), SnapError> {
    use std::io::Read;
    for (_, path) in list(dir)? {
        let mut head = Vec::with_capacity(format::HEADER_LEN);
        std::fs::File::open(&path)
            .and_then(|f| f.take(format::HEADER_LEN as u64).read_to_end(&mut head))
            .map_err(SnapError::io(&path))?;
        match format::decode_header(&head) {
            Ok(h) if h.identity == Some(identity) => {}
            Ok(format::Header {
                identity: Some(found),
                ..
            }) => {
                return Err(SnapError::Foreign {
                    path,
                    found,
                    expected: identity,
                })
            }
            Ok(_) => return Err(SnapError::Unidentified { path }),
            Err(_) => {}
        }
    }
    Ok(())
}

/// Startup: removes leftover `.tmp` files (see [`clean`]), then opens the newest snapshot that
/// validates. Each damaged newer one is reported (`tracing::warn!` naming file and error),
/// skipped, and returned in the rejected list. `Ok((None, rejected))` if none validates or
/// there are none; `Err` only if the directory itself cannot be read.
#[allow(clippy::type_complexity)]
pub fn load_newest(dir: &Path) -> Result<(Option<Snapshot>, Vec<(PathBuf, SnapError)>), SnapError> {
    clean(dir)?;
    let mut rejected = Vec::new();
    for (_, path) in list(dir)? {
        match Snapshot::open(&path) {
            Ok(snap) => return Ok((Some(snap), rejected)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping damaged snapshot");
                rejected.push((path, e));
            }
        }
    }
    Ok((None, rejected))
}

/// Keeps the `keep` newest valid snapshots (at least one), deletes older valid ones, and moves
/// damaged ones to `<dir>/detached/`. Returns the start zxid of the oldest kept snapshot once
/// `keep` valid snapshots exist, so the caller can purge log segments wholly before it; `None`
/// while fewer exist: then every snapshot but the log from zxid 1 is a recovery point, and a
/// damaged snapshot must not lose the log it would need (`autopurge.snapRetainCount` means
/// that many independent recovery points). An I/O
/// error opening a snapshot (not damage) stops retention with nothing further touched.
/// Each snapshot is fully validated, as `open` does.
pub fn retain(dir: &Path, keep: usize) -> Result<Option<i64>, SnapError> {
    retain_known(dir, keep, &mut HashSet::new())
}

/// [`retain`] for the process that writes the snapshots: those in `valid` (start zxids this
/// process wrote, or validated whole before) are not read again — at 10M znodes reading the
/// retained files took 2.3 s of a core after every snapshot. Each file found valid is added;
/// each deleted or detached one removed.
pub fn retain_known(
    dir: &Path,
    keep: usize,
    valid: &mut HashSet<i64>,
) -> Result<Option<i64>, SnapError> {
    let keep = keep.max(1);
    let mut kept: Vec<i64> = Vec::new();
    let mut changed = false;
    for (zxid, path) in list(dir)? {
        let checked = if valid.contains(&zxid) {
            Ok(())
        } else {
            Snapshot::open(&path).map(|_| {
                valid.insert(zxid);
            })
        };
        match checked {
            Ok(()) if kept.len() < keep => kept.push(zxid),
            Ok(()) => {
                remove_gradually(&path)?;
                valid.remove(&zxid);
                tracing::info!(path = %path.display(), "deleted old snapshot");
                changed = true;
            }
            Err(e @ SnapError::Io { .. }) => return Err(e),
            Err(e) => {
                let to = detach(dir, &path)?;
                tracing::warn!(path = %path.display(), moved_to = %to.display(), error = %e,
                    "damaged snapshot detached");
                changed = true;
            }
        }
    }
    if changed {
        sync_dir(dir)?;
    }
    if kept.len() < keep {
        return Ok(None);
    }
    Ok(kept.last().copied())
}

/// Deletes an old snapshot a slice at a time. Freeing a 1.8 GB file's extents in one unlink
/// held the file system's journal for ~70 ms, and every WAL fdatasync waited with it. The
/// file is first renamed to its `.tmp` name, so a crash midway leaves what [`clean`] removes.
fn remove_gradually(path: &Path) -> Result<(), SnapError> {
    const SLICE: u64 = 64 << 20;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::rename(path, &tmp).map_err(SnapError::io(path))?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&tmp)
        .map_err(SnapError::io(&tmp))?;
    let mut len = file.metadata().map_err(SnapError::io(&tmp))?.len();
    while len > SLICE {
        len = len.saturating_sub(SLICE);
        file.set_len(len).map_err(SnapError::io(&tmp))?;
        // Lets the journal commit (and the WAL's fdatasync behind it) between slices.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    drop(file);
    std::fs::remove_file(&tmp).map_err(SnapError::io(&tmp))
}

/// Moves `path` into `<dir>/detached/`, never over an earlier detached file of the same name.
fn detach(dir: &Path, path: &Path) -> Result<PathBuf, SnapError> {
    let detached = dir.join(DETACHED_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(crate::writer::DIR_MODE)
        .create(&detached)
        .map_err(SnapError::io(&detached))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Bounded: a thousand earlier detachments of the same zxid means something else is wrong.
    for n in 0..1000u32 {
        let to = match n {
            0 => detached.join(&name),
            n => detached.join(format!("{name}.{n}")),
        };
        if to.try_exists().map_err(SnapError::io(&to))? {
            continue;
        }
        std::fs::rename(path, &to).map_err(SnapError::io(path))?;
        sync_dir(&detached)?;
        return Ok(to);
    }
    Err(SnapError::Io {
        path: detached,
        source: std::io::Error::other(format!("too many detached copies of {name}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of several slices (sparse here) goes whole, and no `.tmp` is left behind.
    #[test]
    fn a_large_file_is_removed_slice_by_slice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format::file_name(0x42));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(200 << 20).unwrap();
        drop(f);
        remove_gradually(&path).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
