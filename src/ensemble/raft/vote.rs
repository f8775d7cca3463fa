//! The member's Raft vote, which must be durable before the vote is answered (openraft's
//! `save_vote`): one small file beside the log, `raft-vote`, replaced atomically (write a
//! temporary file, fsync it, rename it over the old one, fsync the directory), so a crash
//! leaves either the old vote or the new one — never a vote that went backwards or half of one.
//!
//! Layout (little-endian, 36 bytes): magic "PLVT", format 1, term u64, node id u64, committed
//! u8 (0/1), 7 reserved zero bytes, then a crc32 of the 32 bytes before it.

use super::types::NodeId;
use openraft::Vote;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"PLVT";
const FORMAT: u32 = 1;
const LEN: usize = 36;

pub const FILE: &str = "raft-vote";

fn encode(v: &Vote<NodeId>) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[0..4].copy_from_slice(MAGIC);
    b[4..8].copy_from_slice(&FORMAT.to_le_bytes());
    b[8..16].copy_from_slice(&v.leader_id().term.to_le_bytes());
    b[16..24].copy_from_slice(&v.leader_id().node_id.to_le_bytes());
    b[24] = u8::from(v.is_committed());
    let crc = crc32fast::hash(&b[..32]);
    b[32..36].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode(path: &Path, b: &[u8]) -> io::Result<Vote<NodeId>> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: {why}; the vote cannot be trusted, refusing to start",
                path.display()
            ),
        )
    };
    let (body, crc) = match (b.len() == LEN, b.split_last_chunk::<4>()) {
        (true, Some(x)) => x,
        _ => return Err(bad("wrong length")),
    };
    if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
        return Err(bad("checksum mismatch"));
    }
    let field = |at: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(body.get(at..at + 8).unwrap_or(&[0; 8]));
        x
    };
    let (head, term, node) = (field(0), field(8), field(16));
    if head[..4] != MAGIC[..] || head[4..] != FORMAT.to_le_bytes() {
        return Err(bad("not a vote file of format 1"));
    }
    let (term, node) = (u64::from_le_bytes(term), u64::from_le_bytes(node));
    match body.get(24..32) {
        Some([0, 0, 0, 0, 0, 0, 0, 0]) => Ok(Vote::new(term, node)),
        Some([1, 0, 0, 0, 0, 0, 0, 0]) => Ok(Vote::new_committed(term, node)),
        _ => Err(bad("reserved bytes set")),
    }
}

#[derive(Clone)]
pub struct VoteFile {
    dir: PathBuf,
}

impl VoteFile {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        VoteFile { dir: dir.into() }
    }

    /// The saved vote; `None` when none was ever saved. A damaged file is an error: answering
    /// votes without knowing our own could elect two leaders in one term.
    pub fn read(&self) -> io::Result<Option<Vote<NodeId>>> {
        let path = self.dir.join(FILE);
        match fs::read(&path) {
            Ok(b) => decode(&path, &b).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes `v` the saved vote, durably, before returning.
    pub fn save(&self, v: &Vote<NodeId>) -> io::Result<()> {
        replace_file(&self.dir, FILE, &encode(v))
    }
}

/// Replaces `dir/name` with `bytes` atomically and durably: a temporary file, fsynced, renamed
/// over the old one, then the directory fsynced. A crash leaves the old content or the new.
pub(super) fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, dir.join(name))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_votes_read_back_and_replace_each_other() {
        let d = tempfile::tempdir().unwrap();
        let f = VoteFile::new(d.path());
        assert_eq!(f.read().unwrap(), None);
        for v in [Vote::new(1, 2), Vote::new_committed(1, 2), Vote::new(7, 3)] {
            f.save(&v).unwrap();
            assert_eq!(f.read().unwrap(), Some(v));
        }
        assert!(!d.path().join("raft-vote.tmp").exists());
    }

    #[test]
    fn every_flipped_bit_and_every_cut_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = VoteFile::new(d.path());
        f.save(&Vote::new_committed(5, 9)).unwrap();
        let path = d.path().join(FILE);
        let good = fs::read(&path).unwrap();
        for bit in 0..good.len() * 8 {
            let mut b = good.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            fs::write(&path, &b).unwrap();
            assert!(f.read().is_err(), "bit {bit} flipped was accepted");
        }
        for cut in 0..good.len() {
            fs::write(&path, &good[..cut]).unwrap();
            assert!(f.read().is_err(), "cut at {cut} was accepted");
        }
    }
}
