//! Damage mode, for recovery drills on a copy of a data dir: `prepare` copies a data dir and
//! leaves a marker file in the copy; every damage refuses to touch a directory without that
//! marker, so a live data dir is never damaged by mistake. Each damage is appended to the
//! marker, which so doubles as the copy's damage journal.
//!
//! - tear the log: zero the last segment's bytes from an offset on, exactly what a write cut
//!   by a crash leaves in a preallocated (zero-filled) segment;
//! - flip one bit anywhere in the copy;
//! - delete the newest snapshot.

use crate::datadir::{list_segments, list_snapshots, MAX_PAYLOAD};
use crate::error::InspectError;
use crate::format;
use palisade_wal::scan_segment;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

/// The file `prepare` leaves in a copy; damage and `recover-report` require it.
pub const MARKER: &str = ".palisade-inspect-copy";

/// One way to damage a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Zero the last log segment from this offset to the end of its data.
    TearLogAt(u64),
    /// Tear the last segment inside one of its last 8 records, chosen by the seed.
    TearLogRandom(u64),
    /// XOR one bit: `file` relative to the copy, byte `offset`, `bit` 0..=7.
    FlipBit { file: PathBuf, offset: u64, bit: u8 },
    /// Delete the snapshot with the highest start zxid.
    DropNewestSnapshot,
}

/// What a damage did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub file: PathBuf,
    pub offset: Option<u64>,
    pub description: String,
}

/// Copies the data dir `source` to `target` (which must not exist, or be empty) and marks
/// the copy as one that may be damaged. `log/LOCK` is not copied.
pub fn prepare(source: &Path, target: &Path) -> Result<(), InspectError> {
    if !source.join("log").is_dir() && !source.join("snapshots").is_dir() {
        return Err(InspectError::Cannot(format!(
            "{}: not a data dir (no log/ or snapshots/)",
            source.display()
        )));
    }
    let empty = fs::read_dir(target).map(|mut d| d.next().is_none());
    match empty {
        Ok(true) => {}
        Ok(false) => {
            return Err(InspectError::Cannot(format!(
                "{}: exists and is not empty",
                target.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(InspectError::io(target)(e)),
    }
    let src = source.canonicalize().map_err(InspectError::io(source))?;
    fs::create_dir_all(target).map_err(InspectError::io(target))?;
    let dst = target.canonicalize().map_err(InspectError::io(target))?;
    if dst.starts_with(&src) {
        return Err(InspectError::Cannot(format!(
            "{}: inside the data dir it would copy",
            target.display()
        )));
    }
    copy_tree(&src, &dst)?;
    let note = format!("palisade-inspect damage copy of {}\n", src.display());
    fs::write(dst.join(MARKER), note).map_err(InspectError::io(&dst))?;
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), InspectError> {
    fs::create_dir_all(to).map_err(InspectError::io(to))?;
    for entry in fs::read_dir(from).map_err(InspectError::io(from))? {
        let entry = entry.map_err(InspectError::io(from))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(InspectError::io(&path))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&path, &target)?;
        } else if kind.is_file() && entry.file_name() != "LOCK" {
            fs::copy(&path, &target).map_err(InspectError::io(&path))?;
        }
    }
    Ok(())
}

/// Refuses any directory `prepare` did not make.
pub fn require_marker(dir: &Path) -> Result<(), InspectError> {
    if dir.join(MARKER).is_file() {
        Ok(())
    } else {
        Err(InspectError::Cannot(format!(
            "refusing: {} has no {MARKER} marker; damage only copies made with \
             `palisade-inspect damage --prepare SRC DST`",
            dir.display()
        )))
    }
}

/// Applies one damage to the copy `dir`.
pub fn damage(dir: &Path, what: &Damage) -> Result<Damaged, InspectError> {
    require_marker(dir)?;
    let done = match what {
        Damage::TearLogAt(offset) => tear(dir, TearAt::Offset(*offset))?,
        Damage::TearLogRandom(seed) => tear(dir, TearAt::Random(*seed))?,
        Damage::FlipBit { file, offset, bit } => flip(dir, file, *offset, *bit)?,
        Damage::DropNewestSnapshot => drop_newest(dir)?,
    };
    let mut journal = OpenOptions::new()
        .append(true)
        .open(dir.join(MARKER))
        .map_err(InspectError::io(dir))?;
    writeln!(journal, "damage: {}", done.description).map_err(InspectError::io(dir))?;
    Ok(done)
}

enum TearAt {
    Offset(u64),
    Random(u64),
}

fn tear(dir: &Path, at: TearAt) -> Result<Damaged, InspectError> {
    let log_dir = dir.join("log");
    let Some((_, seg)) = list_segments(&log_dir)?.pop() else {
        return Err(InspectError::Cannot(format!(
            "{}: no log segment",
            log_dir.display()
        )));
    };
    let data = fs::read(&seg).map_err(InspectError::io(&seg))?;
    let data_end = data
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i.saturating_add(1)) as u64;
    let scan = scan_segment(&seg, MAX_PAYLOAD)?;
    // (offset, end, zxid, kind) of each valid record.
    let records: Vec<(u64, u64, i64)> = scan
        .records()
        .map(|r| {
            let len = palisade_wal::record_bytes(r.payload.len());
            (r.offset, r.offset.saturating_add(len), r.zxid)
        })
        .collect();
    let offset = match at {
        TearAt::Offset(o) => o,
        TearAt::Random(seed) => random_offset(seed, &records)
            .ok_or_else(|| InspectError::Cannot(format!("{}: no record to tear", seg.display())))?,
    };
    if offset >= data_end {
        return Err(InspectError::Cannot(format!(
            "{}: offset {offset} is at or past the end of its data ({data_end})",
            seg.display()
        )));
    }
    zero(&seg, offset, data_end)?;
    let hit = records
        .iter()
        .position(|&(s, e, _)| s <= offset && offset < e);
    let what = match hit.and_then(|i| records.get(i).map(|r| (i, r))) {
        Some((i, &(start, _, zxid))) => format!(
            "record at offset {start} (zxid {}) cut after {} of its bytes; {} later records gone",
            format::zxid(zxid),
            offset.saturating_sub(start),
            records.len().saturating_sub(i).saturating_sub(1)
        ),
        None => "no valid record starts before it".into(),
    };
    Ok(Damaged {
        description: format!(
            "tore {} at offset {offset}: zeroed {} bytes ({what})",
            seg.display(),
            data_end.saturating_sub(offset)
        ),
        file: seg,
        offset: Some(offset),
    })
}

/// An offset strictly inside one of the last 8 records (so the record is left partial).
fn random_offset(seed: u64, records: &[(u64, u64, i64)]) -> Option<u64> {
    let mut state = seed;
    let tail = records.get(records.len().saturating_sub(8)..)?;
    let count = u64::try_from(tail.len()).ok().filter(|&n| n > 0)?;
    let pick = usize::try_from(splitmix(&mut state) % count).ok()?;
    let &(start, end, _) = tail.get(pick)?;
    let span = end.checked_sub(start)?.checked_sub(1).filter(|&s| s > 0)?;
    Some(
        start
            .saturating_add(1)
            .saturating_add(splitmix(&mut state) % span),
    )
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn zero(path: &Path, from: u64, to: u64) -> Result<(), InspectError> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(InspectError::io(path))?;
    const CHUNK: u64 = 64 << 10;
    let zeros = [0u8; CHUNK as usize];
    let mut at = from;
    while at < to {
        let n = to.saturating_sub(at).min(CHUNK);
        let chunk = zeros
            .get(..usize::try_from(n).unwrap_or(0))
            .unwrap_or_default();
        f.write_all_at(chunk, at).map_err(InspectError::io(path))?;
        at = at.saturating_add(n);
    }
    f.sync_all().map_err(InspectError::io(path))
}

/// A path inside the copy: relative, no `..`.
fn inside(dir: &Path, file: &Path) -> Result<PathBuf, InspectError> {
    let plain = file
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(InspectError::Cannot(format!(
            "{}: give a path relative to the copy, without ..",
            file.display()
        )));
    }
    Ok(dir.join(file))
}

fn flip(dir: &Path, file: &Path, offset: u64, bit: u8) -> Result<Damaged, InspectError> {
    if bit > 7 {
        return Err(InspectError::Cannot(format!("bit {bit}: must be 0..=7")));
    }
    let path = inside(dir, file)?;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(InspectError::io(&path))?;
    let len = f.metadata().map_err(InspectError::io(&path))?.len();
    if offset >= len {
        return Err(InspectError::Cannot(format!(
            "{}: offset {offset} is past its end ({len} bytes)",
            path.display()
        )));
    }
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, offset)
        .map_err(InspectError::io(&path))?;
    let [old] = byte;
    let new = old ^ (1u8 << bit);
    f.write_all_at(&[new], offset)
        .and_then(|()| f.sync_all())
        .map_err(InspectError::io(&path))?;
    Ok(Damaged {
        description: format!(
            "flipped bit {bit} of byte {offset} in {}: {old:#04x} -> {new:#04x}",
            path.display(),
        ),
        file: path,
        offset: Some(offset),
    })
}

fn drop_newest(dir: &Path) -> Result<Damaged, InspectError> {
    let snap_dir = dir.join("snapshots");
    let Some((start, path)) = list_snapshots(&snap_dir)?.into_iter().next() else {
        return Err(InspectError::Cannot(format!(
            "{}: no snapshot",
            snap_dir.display()
        )));
    };
    fs::remove_file(&path).map_err(InspectError::io(&path))?;
    Ok(Damaged {
        description: format!(
            "deleted the newest snapshot {} (start {})",
            path.display(),
            format::zxid(start)
        ),
        file: path,
        offset: None,
    })
}

/// Parses `FILE:OFFSET:BIT` (the file may itself contain `:`).
pub fn parse_flip(s: &str) -> Result<Damage, String> {
    let bad = || format!("{s:?}: expected FILE:OFFSET:BIT");
    let (rest, bit) = s.rsplit_once(':').ok_or_else(bad)?;
    let (file, offset) = rest.rsplit_once(':').ok_or_else(bad)?;
    Ok(Damage::FlipBit {
        file: PathBuf::from(file),
        offset: offset.parse().map_err(|_| bad())?,
        bit: bit.parse().map_err(|_| bad())?,
    })
}
