//! The member's small metadata files beside its log, and the layout they share: 36 bytes,
//! little-endian — a 4-byte magic naming the file, format u32 = 1, a 24-byte payload of three
//! u64 words, then a crc32 of the 32 bytes before it — written with [`replace_file`].
//! [`SealedFile`] is one such file holding one value, read back whole or refused:
//!
//! - `raft-vote` ([`VoteFile`], magic "PLVT"): the member's Raft vote, which must be durable
//!   before the vote is answered (openraft's `save_vote`), so a crash leaves either the old
//!   vote or the new one — never a vote that went backwards or half of one. Words: term, node
//!   id, committed (0/1: one byte and seven reserved zero bytes).
//! - `raft-purged` ([`PurgedFile`], magic "PLPG"): the log id up to which the Raft log was
//!   purged (openraft's `last_purged_log_id`), replaced before any segment is deleted: after a
//!   restart, entries at or below it are gone even if their segment is not, and the log's
//!   start (and the term of the entry before it, which replication needs as its
//!   `prev_log_id`) is known even when a snapshot replaced the whole log. Words: index, term,
//!   leader node id.

use super::types::NodeId;
use openraft::{CommittedLeaderId, LogId, Vote};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// What names a sealed file: its name, its magic, and what refusing a damaged one means (for
/// the message).
pub struct Format {
    file: &'static str,
    magic: &'static [u8; 4],
    consequence: &'static str,
}

const VOTE: Format = Format {
    file: "raft-vote",
    magic: b"PLVT",
    // Answering votes without knowing our own could elect two leaders in one term.
    consequence: "the vote cannot be trusted",
};

const PURGED: Format = Format {
    file: "raft-purged",
    magic: b"PLPG",
    // Guessing where the log starts could serve a purged entry or lose a live one.
    consequence: "where the Raft log starts is unknown",
};

/// A value kept in a sealed file: its file's format, and the three words of its payload.
pub trait Sealed: Sized {
    const FORMAT: Format;
    fn words(&self) -> [u64; 3];
    /// The value of the words read back from `path` (whose seal held), or why it is refused.
    fn from_words(path: &Path, w: [u64; 3]) -> io::Result<Self>;
}

/// The saved vote; `read` is `None` when none was ever saved. A damaged file is an error.
pub type VoteFile = SealedFile<Vote<NodeId>>;

/// The saved purge point; `read` is `None` when the log was never purged. A damaged file is
/// an error.
pub type PurgedFile = SealedFile<LogId<NodeId>>;

impl Sealed for Vote<NodeId> {
    const FORMAT: Format = VOTE;

    fn words(&self) -> [u64; 3] {
        let leader = self.leader_id();
        [leader.term, leader.node_id, u64::from(self.is_committed())]
    }

    fn from_words(path: &Path, [term, node, committed]: [u64; 3]) -> io::Result<Self> {
        // A vote no member can hold: saved from a forged vote request by a build that took any
        // term (openraft then panicked at every start adding one to it).
        if term > crate::limits::PEER_MAX_TERM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: holds a vote of term {term}, past the largest a member takes ({}); it \
                     cannot have come from a member of this ensemble. This member's log and \
                     snapshots are intact: move the file aside and start it again while the \
                     other members run (docs/design/ENSEMBLE.md, \"A vote file that cannot be used\")",
                    path.display(),
                    crate::limits::PEER_MAX_TERM
                ),
            ));
        }
        match committed {
            0 => Ok(Vote::new(term, node)),
            1 => Ok(Vote::new_committed(term, node)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: reserved bytes set; the vote cannot be trusted, refusing to start",
                    path.display()
                ),
            )),
        }
    }
}

impl Sealed for LogId<NodeId> {
    const FORMAT: Format = PURGED;

    fn words(&self) -> [u64; 3] {
        [self.index, self.leader_id.term, self.leader_id.node_id]
    }

    fn from_words(_: &Path, [index, term, node]: [u64; 3]) -> io::Result<Self> {
        Ok(LogId::new(CommittedLeaderId::new(term, node), index))
    }
}

/// The sealed file of a `T` in a directory, replaced atomically and durably.
pub struct SealedFile<T> {
    dir: PathBuf,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for SealedFile<T> {
    fn clone(&self) -> Self {
        SealedFile {
            dir: self.dir.clone(),
            value: PhantomData,
        }
    }
}

impl<T: Sealed> SealedFile<T> {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SealedFile {
            dir: dir.into(),
            value: PhantomData,
        }
    }

    /// The saved value; `None` when none was ever saved. A damaged file is an error.
    pub fn read(&self) -> io::Result<Option<T>> {
        let path = self.path();
        let f = T::FORMAT;
        read_optional(&path)?
            .map(|b| T::from_words(&path, words_of(&unseal(&path, &b, f.magic, f.consequence)?)))
            .transpose()
    }

    /// Makes `v` the saved value, durably, before returning.
    pub fn save(&self, v: &T) -> io::Result<()> {
        let f = T::FORMAT;
        replace_file(&self.dir, f.file, &seal(f.magic, &words(v.words())))
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(T::FORMAT.file)
    }
}

/// A payload of three little-endian u64 words, the shape every sealed value has.
fn words(w: [u64; 3]) -> [u8; 24] {
    let mut p = [0u8; 24];
    for (at, v) in p.chunks_exact_mut(8).zip(w) {
        at.copy_from_slice(&v.to_le_bytes());
    }
    p
}

const FORMAT: u32 = 1;
const LEN: usize = 36;

fn seal(magic: &[u8; 4], payload: &[u8; 24]) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[0..4].copy_from_slice(magic);
    b[4..8].copy_from_slice(&FORMAT.to_le_bytes());
    b[8..32].copy_from_slice(payload);
    let crc = crc32fast::hash(&b[..32]);
    b[32..36].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The payload of a file `b` read from `path`, or why it cannot be trusted (`consequence`
/// says what refusing means, for the message).
fn unseal(path: &Path, b: &[u8], magic: &[u8; 4], consequence: &str) -> io::Result<[u8; 24]> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: {why}; {consequence}, refusing to start",
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
    if body.get(..4) != Some(&magic[..]) || body.get(4..8) != Some(&FORMAT.to_le_bytes()[..]) {
        return Err(bad("not a file of this kind and format 1"));
    }
    body.get(8..32)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| bad("wrong length"))
}

/// The three little-endian u64 words of a payload ([`words`] read back).
fn words_of(p: &[u8; 24]) -> [u64; 3] {
    let mut w = [0u64; 3];
    for (v, b) in w.iter_mut().zip(p.chunks_exact(8)) {
        *v = b.try_into().map_or(0, u64::from_le_bytes);
    }
    w
}

/// Reads `dir/name`; `None` when it does not exist.
fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces `dir/name` with `bytes` atomically and durably: a temporary file, fsynced, renamed
/// over the old one, then the directory fsynced. A crash leaves the old content or the new.
fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    replace_file_parts(dir, name, &[bytes])
}

/// [`replace_file`] with the content in parts, written one after the other (a large body
/// need not be copied behind its header first). A large body is written back a window at a
/// time (`write_paced`), as snapshot files are: a Raft snapshot of a 900,000-znode tree
/// (175 MB) left dirty until its fsync held every member's WAL fdatasync behind its flush.
pub(super) fn replace_file_parts(dir: &Path, name: &str, parts: &[&[u8]]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    palisade_snapshot::write_paced(&mut f, parts)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, dir.join(name))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Debug;

    /// (`raft-purged` and `raft-vote`, both sealed files.) Each value saved replaces the one
    /// before and reads back; the file left is refused
    /// with any one bit flipped or cut short anywhere.
    fn round_trips<T: Sealed + PartialEq + Debug>(values: &[T]) {
        let d = tempfile::tempdir().unwrap();
        let f = SealedFile::<T>::new(d.path());
        assert_eq!(f.read().unwrap(), None);
        for v in values {
            f.save(v).unwrap();
            assert_eq!(f.read().unwrap().as_ref(), Some(v));
        }
        assert!(!f.path().with_extension("tmp").exists());
        let path = f.path();
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

    #[test]
    fn purge_points_read_back_and_damage_is_refused() {
        round_trips(&[LogId::new(CommittedLeaderId::new(3, 2), 41)]);
    }

    #[test]
    fn saved_votes_read_back_replace_each_other_and_damage_is_refused() {
        round_trips(&[Vote::new(1, 2), Vote::new_committed(1, 2), Vote::new(7, 3)]);
        round_trips(&[Vote::new_committed(5, 9)]);
    }

    /// The term-overflow attack saved a vote of term 2^64-1; every start then panicked.
    #[test]
    fn a_vote_of_a_term_no_member_can_hold_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let f = VoteFile::new(d.path());
        f.save(&Vote::new(u64::MAX, 1)).unwrap();
        let e = f.read().unwrap_err().to_string();
        assert!(
            e.contains("raft-vote") && e.contains("past the largest"),
            "{e}"
        );
        f.save(&Vote::new(crate::limits::PEER_MAX_TERM, 1)).unwrap();
        assert!(f.read().is_ok());
    }
}
