//! The data dir's own files: its private permissions, the session-password secret and the
//! data-dir identity that every WAL segment and snapshot header carries.
//!
//! * Everything Palisade creates in the data dir is owner-only: files 0600, directories 0700
//!   (txn payloads and snapshots hold client data; the secret derives every session's
//!   password). A `secret` that group or others can read is made 0600 at start, with a warning.
//! * `identity`: 20 bytes, magic u32 `0x504C4944` ("PLID"), version u32 = 1, id u64 (random,
//!   non-zero), crc32 of bytes 0..16; all little-endian. Written once, when the data dir holds
//!   no log segment and no snapshot. A data dir that holds either but no identity file is
//!   refused: this build cannot tell its files from another server's.
#![deny(clippy::arithmetic_side_effects)]

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;
pub const SECRET_FILE: &str = "secret";
pub const IDENTITY_FILE: &str = "identity";
const IDENTITY_MAGIC: u32 = 0x504C_4944;
const IDENTITY_VERSION: u32 = 1;
const IDENTITY_LEN: usize = 20;

/// `mkdir -p` whose created directories are 0700; an existing directory that group or
/// others can enter is reported (its mode is the operator's choice, so it is left alone).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| with_path(dir, e))?;
    if let Some(mode) = open_to_others(dir)? {
        tracing::warn!(dir = %dir.display(), mode = format_args!("{:o}", mode & 0o777),
            "the data directory is accessible to group or others; Palisade creates its files 0600");
    }
    Ok(())
}

fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes `bytes` to `dir/name` durably and owner-only: a `.tmp` file, fsync, rename, fsync
/// of the directory.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&tmp)
        .map_err(|e| with_path(&tmp, e))?;
    // A leftover tmp file keeps its old mode: set it before any secret byte goes in.
    f.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| with_path(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| with_path(&path, e))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| with_path(dir, e))
}

fn random<const N: usize>() -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

/// Reads the server secret (for session passwords) from the data dir, creating it once.
/// A secret readable by group or others is made 0600, with a warning.
pub fn load_secret(data_dir: &Path) -> io::Result<[u8; 16]> {
    create_private_dir(data_dir)?;
    let path = data_dir.join(SECRET_FILE);
    match fs::read(&path) {
        Ok(b) => {
            if let Ok(secret) = <[u8; 16]>::try_from(b.as_slice()) {
                tighten(&path)?;
                return Ok(secret);
            }
            tracing::warn!(path = %path.display(), len = b.len(), "secret is not 16 bytes; replacing it (live sessions' passwords change)");
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(&path, e)),
    }
    let secret = random::<16>()?;
    write_private(data_dir, SECRET_FILE, &secret)?;
    Ok(secret)
}

/// The mode of `path` if group or others have any permission on it.
fn open_to_others(path: &Path) -> io::Result<Option<u32>> {
    let mode = fs::metadata(path)
        .map_err(|e| with_path(path, e))?
        .permissions()
        .mode();
    Ok((mode & 0o077 != 0).then_some(mode))
}

/// Makes an existing file owner-only if group or others may read or write it.
fn tighten(path: &Path) -> io::Result<()> {
    if let Some(mode) = open_to_others(path)? {
        tracing::warn!(path = %path.display(), was = format_args!("{:o}", mode & 0o777),
            "secret was readable by group or others (any local user could derive every session's password); made it 0600");
        fs::set_permissions(path, fs::Permissions::from_mode(FILE_MODE))
            .map_err(|e| with_path(path, e))?;
    }
    Ok(())
}

pub fn encode_identity(id: u64) -> [u8; IDENTITY_LEN] {
    let mut b = [0u8; IDENTITY_LEN];
    let mut body = Vec::with_capacity(IDENTITY_LEN);
    body.extend_from_slice(&IDENTITY_MAGIC.to_le_bytes());
    body.extend_from_slice(&IDENTITY_VERSION.to_le_bytes());
    body.extend_from_slice(&id.to_le_bytes());
    let crc = crc32fast::hash(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    b.copy_from_slice(&body);
    b
}

/// The id in an identity file's bytes, or why they are not one.
pub fn decode_identity(b: &[u8]) -> Result<u64, String> {
    let field = |at: usize, n: usize| b.get(at..at.saturating_add(n)).unwrap_or_default();
    if b.len() != IDENTITY_LEN {
        return Err(format!("{} bytes, not {IDENTITY_LEN}", b.len()));
    }
    let u32_at = |at| u32::from_le_bytes(field(at, 4).try_into().unwrap_or_default());
    if u32_at(0) != IDENTITY_MAGIC {
        return Err("bad magic".into());
    }
    if crc32fast::hash(field(0, 16)) != u32_at(16) {
        return Err("crc mismatch".into());
    }
    if u32_at(4) != IDENTITY_VERSION {
        return Err(format!("unsupported version {}", u32_at(4)));
    }
    let id = u64::from_le_bytes(field(8, 8).try_into().unwrap_or_default());
    if id == 0 {
        return Err("id is zero".into());
    }
    Ok(id)
}

/// A log segment or snapshot already in the data dir, if any (names only; the files' own
/// headers are checked by the WAL and snapshot readers).
fn existing_data_file(dirs: &[PathBuf]) -> io::Result<Option<PathBuf>> {
    for dir in dirs {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(with_path(dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| with_path(dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if palisade_wal::is_segment_file_name(&name)
                || palisade_snapshot::format::parse_file_name(&name).is_some()
            {
                return Ok(Some(entry.path()));
            }
        }
    }
    Ok(None)
}

/// The data dir's identity: read from `data_dir/identity`, or created when `data_dirs` (the
/// log and snapshot directories) hold no segment and no snapshot yet.
pub fn load_identity(data_dir: &Path, data_dirs: &[PathBuf]) -> io::Result<u64> {
    create_private_dir(data_dir)?;
    let path = data_dir.join(IDENTITY_FILE);
    match fs::read(&path) {
        Ok(b) => {
            return decode_identity(&b).map_err(|why| {
                io::Error::other(format!(
                    "{}: not a valid identity file ({why}); refusing to start: without it this \
                     server cannot tell its own log and snapshots from another server's",
                    path.display()
                ))
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(&path, e)),
    }
    if let Some(file) = existing_data_file(data_dirs)? {
        return Err(io::Error::other(format!(
            "{} is missing but the data dir already holds {}: refusing to start, because this \
             server cannot vouch for files it did not identify (a data dir written by a Palisade \
             build before data-dir identities, format 1, is not read by this build; see \
             docs/durability.md)",
            path.display(),
            file.display()
        )));
    }
    let id = loop {
        let id = u64::from_le_bytes(random::<8>()?);
        if id != 0 {
            break id;
        }
    };
    write_private(data_dir, IDENTITY_FILE, &encode_identity(id))?;
    tracing::info!(path = %path.display(), identity = format_args!("{id:016x}"), "new data dir: identity written");
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_round_trips_and_every_bit_flip_is_caught() {
        let b = encode_identity(0x0123_4567_89ab_cdef);
        assert_eq!(decode_identity(&b), Ok(0x0123_4567_89ab_cdef));
        for bit in 0..IDENTITY_LEN * 8 {
            let mut d = b;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_identity(&d).is_err(), "bit {bit}");
        }
        assert!(decode_identity(&b[..19]).is_err());
        assert!(decode_identity(&encode_identity(0)).is_err());
    }
}
