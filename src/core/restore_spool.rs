//! What a member holds of an online restore the Raft log carries (ensemble_restore.rs): the
//! chunks applied so far, in memory. Every member applies the same entries in the same order
//! and decides here alone what each one does, so the members that restore, the ones that drop
//! a broken restore and the ones that ignore a stale step are the same members: all of them.

use crate::limits::RESTORE_ENSEMBLE_MAX_BYTES;

/// The restore being spooled: its id, the next chunk's sequence number, the bytes so far.
struct Spool {
    id: u64,
    next: u32,
    bytes: Vec<u8>,
}

/// A member's spool (none, or one restore's).
#[derive(Default)]
pub(super) struct Spooler {
    cur: Option<Spool>,
}

/// What applying a chunk did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Chunked {
    /// The first chunk of a restore: it is spooled (and a half-spooled one before it, if any,
    /// was dropped: its id).
    Started {
        dropped: Option<u64>,
    },
    Appended,
    /// The chunk does not follow the spooled ones, or the whole is past the bound: the spool
    /// of this restore is dropped (a later commit of it fails on every member alike).
    Broken(String),
    /// A chunk of a restore that is not being spooled (already dropped): nothing to do.
    Stale,
}

impl Spooler {
    /// Whether a restore is half-spooled.
    pub(super) fn active(&self) -> bool {
        self.cur.is_some()
    }

    /// The id of the restore being spooled.
    pub(super) fn id(&self) -> Option<u64> {
        self.cur.as_ref().map(|s| s.id)
    }

    /// Drops what is spooled (an abort, an installed snapshot).
    pub(super) fn clear(&mut self) {
        self.cur = None;
    }

    pub(super) fn chunk(&mut self, id: u64, seq: u32, bytes: &[u8]) -> Chunked {
        if seq == 0 {
            let dropped = self.cur.take().map(|s| s.id);
            if bytes.len() > RESTORE_ENSEMBLE_MAX_BYTES {
                return Chunked::Broken(format!("a chunk of {} bytes", bytes.len()));
            }
            self.cur = Some(Spool {
                id,
                next: 1,
                bytes: bytes.to_vec(),
            });
            return Chunked::Started { dropped };
        }
        let Some(s) = self.cur.as_mut().filter(|s| s.id == id) else {
            return Chunked::Stale;
        };
        if s.next != seq {
            let why = format!("chunk {seq} where chunk {} was due", s.next);
            self.cur = None;
            return Chunked::Broken(why);
        }
        if s.bytes.len().saturating_add(bytes.len()) > RESTORE_ENSEMBLE_MAX_BYTES {
            self.cur = None;
            return Chunked::Broken(format!(
                "the backup grew past {RESTORE_ENSEMBLE_MAX_BYTES} bytes"
            ));
        }
        s.bytes.extend_from_slice(bytes);
        s.next = seq.saturating_add(1);
        Chunked::Appended
    }

    /// The commit of restore `id`: the whole stream when every chunk is spooled and it is
    /// the one the commit describes (the spool is emptied either way); None when `id` is not
    /// being spooled (a stale commit: nothing happens).
    pub(super) fn commit(
        &mut self,
        id: u64,
        chunks: u32,
        len: u64,
        crc: u32,
    ) -> Option<Result<Vec<u8>, String>> {
        if self.id() != Some(id) {
            return None;
        }
        let s = self.cur.take()?;
        let got = (s.next, s.bytes.len() as u64, crc32fast::hash(&s.bytes));
        if got != (chunks, len, crc) {
            return Some(Err(format!(
                "the spooled backup is not the one committed: {} chunks, {} bytes, crc {:#x} \
                 against {chunks}, {len}, {crc:#x}",
                got.0, got.1, got.2
            )));
        }
        Some(Ok(s.bytes))
    }

    /// The abort of restore `id`: true when it was being spooled (and is dropped now).
    pub(super) fn abort(&mut self, id: u64) -> bool {
        if self.id() == Some(id) {
            self.cur = None;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_in_order_then_the_matching_commit_give_the_stream() {
        let mut s = Spooler::default();
        assert_eq!(s.chunk(7, 0, b"abc"), Chunked::Started { dropped: None });
        assert_eq!(s.chunk(7, 1, b"de"), Chunked::Appended);
        assert!(s.active());
        // a stale step of another restore changes nothing
        assert_eq!(s.chunk(8, 3, b"zz"), Chunked::Stale);
        assert_eq!(s.commit(8, 1, 1, 0), None);
        assert!(!s.abort(8));
        let crc = crc32fast::hash(b"abcde");
        assert_eq!(s.commit(7, 2, 5, crc), Some(Ok(b"abcde".to_vec())));
        assert!(!s.active());
        // committed twice: the second is stale
        assert_eq!(s.commit(7, 2, 5, crc), None);
    }

    #[test]
    fn a_gap_a_wrong_digest_or_a_new_first_chunk_drops_the_spool() {
        let mut s = Spooler::default();
        s.chunk(1, 0, b"a");
        assert!(matches!(s.chunk(1, 2, b"c"), Chunked::Broken(_)));
        assert!(!s.active());
        assert_eq!(s.chunk(1, 3, b"d"), Chunked::Stale);

        s.chunk(2, 0, b"a");
        s.chunk(2, 1, b"b");
        assert!(matches!(s.commit(2, 2, 2, 0), Some(Err(_))));
        assert!(!s.active());

        s.chunk(3, 0, b"a");
        assert_eq!(s.chunk(4, 0, b"x"), Chunked::Started { dropped: Some(3) });
        assert_eq!(s.id(), Some(4));
        assert!(s.abort(4));
        assert!(!s.active());
    }

    #[test]
    fn a_spool_past_the_bound_is_dropped() {
        let mut s = Spooler::default();
        let big = vec![0u8; RESTORE_ENSEMBLE_MAX_BYTES / 2 + 1];
        s.chunk(1, 0, &big);
        assert!(matches!(s.chunk(1, 1, &big), Chunked::Broken(_)));
        assert!(!s.active());
    }
}
