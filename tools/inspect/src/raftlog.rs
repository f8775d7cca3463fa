//! The records of a Raft log (WAL segment format 3) decoded by hand, without the server's Raft
//! types or openraft: an entry's payload is openraft's `Entry<TypeConfig>` in postcard
//! (`src/ensemble/raft/types.rs`), a metadata record the committed log id
//! (`src/ensemble/raft/log_thread.rs`, `encode_committed`).
//!
//! Postcard, as it encodes that entry: a struct is its fields in order; a `u64` is a LEB128
//! varint (7 bits a byte, low first, at most 10 bytes), an `i64` the same of its zigzag
//! (0, -1, 1, -2 ... as 0, 1, 2, 3 ...); an enum is its variant index as a varint, then the
//! variant's fields; bytes are a varint length, then the bytes; a `[u8; 16]` its 16 bytes
//! with no length; a sequence its count as a varint, then each element. So:
//!
//! ```text
//! Entry    = log_id payload
//! log_id   = term:varint node:varint index:varint  (LogId { leader_id: { term, node_id }, index })
//! payload  = 0                                     Blank
//!          | 1 proposal                            Normal(Proposal)
//!          | 2 ...                                 Membership (not decoded here)
//! proposal = 0 txn                                 Txn(Bytes): one Palisade txn
//!          | 1 [16 bytes]                          Key([u8; 16]): the ensemble's password key
//!          | 2 zxid:zigzag-varint digest:varint    Digest { zxid: i64, digest: u64 }
//!          | 3 count:varint txn*count              Txns(Vec<Bytes>): a batch of txns, in order
//! txn      = len:varint [len bytes]
//! ```
//!
//! A committed-id record is 25 bytes: tag 1, then index, term and node as little-endian u64.
#![deny(clippy::arithmetic_side_effects)]

/// A Raft log id: who proposed the entry (term, leader node) and where it is (index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaftLogId {
    pub term: u64,
    pub node: u64,
    pub index: u64,
}

impl std::fmt::Display for RaftLogId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "index {} term {} node {}",
            self.index, self.term, self.node
        )
    }
}

/// What an entry carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaftPayload {
    /// A new leader's empty entry.
    Blank,
    /// One Palisade txn (`palisade_proto::Txn::encode` bytes): `Proposal::Txn`.
    Txn(Vec<u8>),
    /// The ensemble's session-password key (`Proposal::Key`). Its 16 bytes are a secret
    /// (every member derives session passwords from them), so they are not kept.
    Key,
    /// The leader's tree digest right after it applied txn `zxid` (`Proposal::Digest`).
    Digest { zxid: i64, digest: u64 },
    /// Several txns proposed as one entry, in order (`Proposal::Txns`).
    Txns(Vec<Vec<u8>>),
    /// A membership change: `bytes` bytes of postcard, not decoded here.
    Membership { bytes: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftEntry {
    pub log_id: RaftLogId,
    pub payload: RaftPayload,
}

/// The tag of a committed-id metadata record.
const META_COMMITTED: u8 = 1;
const COMMITTED_LEN: usize = 25;

/// Reads one postcard varint u64 at the front of `b`: the value and the bytes after it.
fn varint(b: &[u8]) -> Result<(u64, &[u8]), String> {
    let mut value: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        // The tenth byte holds bit 63 only.
        if i == 9 && byte > 1 {
            return Err("varint overflows u64".into());
        }
        let shift = u32::try_from(i).unwrap_or(u32::MAX).saturating_mul(7);
        value |= bits.checked_shl(shift).unwrap_or(0);
        if byte & 0x80 == 0 {
            return Ok((value, b.get(i.saturating_add(1)..).unwrap_or_default()));
        }
    }
    Err(if b.len() < 10 {
        "payload ends inside a varint".into()
    } else {
        "varint longer than 10 bytes".into()
    })
}

/// Reads one postcard varint i64 (zigzag) at the front of `b`.
fn zigzag(b: &[u8]) -> Result<(i64, &[u8]), String> {
    let (v, rest) = varint(b)?;
    // The bits of v >> 1, as an i64 (a cast of a value below 2^63: no change); flipped when
    // the low bit says negative.
    let half = v.wrapping_shr(1) as i64;
    Ok((if v & 1 == 0 { half } else { !half }, rest))
}

/// Splits `n` bytes off the front of `b`; None if fewer remain.
fn take(b: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    b.split_at_checked(n)
}

/// Reads one txn (a varint length, then the bytes) at the front of `b`.
fn txn(b: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let (len, rest) = varint(b).map_err(|e| format!("length: {e}"))?;
    let n = usize::try_from(len).map_err(|_| format!("length {len}"))?;
    take(rest, n).ok_or_else(|| format!("length {len}, but {} bytes follow", rest.len()))
}

/// The end of a payload: whatever follows it is an error.
fn done(what: &str, rest: &[u8]) -> Result<(), String> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(format!("{} bytes after {what}", rest.len()))
    }
}

/// Decodes a `Proposal` (the payload of a Normal entry), which must fill `b`.
fn decode_proposal(b: &[u8]) -> Result<RaftPayload, String> {
    let (variant, rest) = varint(b).map_err(|e| format!("proposal variant: {e}"))?;
    match variant {
        0 => {
            let (t, rest) = txn(rest).map_err(|e| format!("txn {e}"))?;
            done("a txn entry's txn", rest)?;
            Ok(RaftPayload::Txn(t.to_vec()))
        }
        1 => {
            let (_key, rest) = take(rest, 16)
                .ok_or_else(|| format!("key entry of {} bytes, not 16", rest.len()))?;
            done("a key entry's key", rest)?;
            Ok(RaftPayload::Key)
        }
        2 => {
            let (zxid, rest) = zigzag(rest).map_err(|e| format!("digest zxid: {e}"))?;
            let (digest, rest) = varint(rest).map_err(|e| format!("digest: {e}"))?;
            done("a digest entry's digest", rest)?;
            Ok(RaftPayload::Digest { zxid, digest })
        }
        3 => {
            let (count, mut rest) = varint(rest).map_err(|e| format!("batch count: {e}"))?;
            // Each txn takes at least its length's byte: a count above what is left cannot
            // be, and none is allocated for ahead of its bytes.
            if count > u64::try_from(rest.len()).unwrap_or(u64::MAX) {
                return Err(format!(
                    "batch of {count} txns, but only {} bytes follow",
                    rest.len()
                ));
            }
            let mut txns = Vec::new();
            for i in 0..count {
                let (t, after) = txn(rest).map_err(|e| format!("batch txn {i} of {count}: {e}"))?;
                txns.push(t.to_vec());
                rest = after;
            }
            done("a batch's last txn", rest)?;
            Ok(RaftPayload::Txns(txns))
        }
        v => Err(format!("unknown proposal variant {v}")),
    }
}

/// Decodes an entry record's payload. Trailing bytes after a payload, or an unknown variant,
/// are errors: the payload is then not an entry this build wrote.
pub fn decode_entry(b: &[u8]) -> Result<RaftEntry, String> {
    let (term, rest) = varint(b).map_err(|e| format!("log id term: {e}"))?;
    let (node, rest) = varint(rest).map_err(|e| format!("log id node: {e}"))?;
    let (index, rest) = varint(rest).map_err(|e| format!("log id index: {e}"))?;
    let log_id = RaftLogId { term, node, index };
    let (variant, rest) = varint(rest).map_err(|e| format!("payload variant: {e}"))?;
    let payload = match variant {
        0 => {
            done("a blank entry", rest)?;
            RaftPayload::Blank
        }
        1 => decode_proposal(rest)?,
        2 if !rest.is_empty() => RaftPayload::Membership { bytes: rest.len() },
        2 => return Err("membership entry without a membership".into()),
        v => return Err(format!("unknown entry payload variant {v}")),
    };
    Ok(RaftEntry { log_id, payload })
}

/// Decodes a metadata record's payload if it is a committed log id.
pub fn decode_committed(b: &[u8]) -> Option<RaftLogId> {
    if b.len() != COMMITTED_LEN || b.first() != Some(&META_COMMITTED) {
        return None;
    }
    let word = |at: usize| -> Option<u64> {
        let bytes = b.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    };
    Some(RaftLogId {
        index: word(1)?,
        term: word(9)?,
        node: word(17)?,
    })
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    /// Hex to bytes; spaces are skipped.
    fn hex(s: &str) -> Vec<u8> {
        let s = s.replace(' ', "");
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Golden bytes from openraft 0.9.25 + postcard 1.2 (`postcard::to_allocvec` of
    /// `openraft::Entry<TypeConfig>` with the server's `TypeConfig` and `Proposal`, in a
    /// scratch program outside the repository): a blank entry (term 1, node 2, index 3);
    /// `Proposal::Txn("abc")` (term 300, node 7, index 2^40); `Proposal::Key` of bytes
    /// a0..=af (term 5, node 3, index 128); `Proposal::Digest` after zxid 0x200000041 of
    /// u64::MAX - 1 and after zxid -2 of 0 (term 2, node 1, index 9); `Proposal::Txns` of
    /// "abc", "" and 130 bytes 0x5a (term 4, node 2, index 70000), and of no txns (index 1);
    /// a membership of nodes {1, 2} (term u64::MAX, node 1, index 0).
    const BLANK: &str = "01020300";
    const TXN: &str = "ac0207808080808020010003616263";
    const KEY: &str = "050380010101a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
    const DIGEST: &str = "02010901028281808040feffffffffffffffff01";
    const DIGEST_NEGATIVE: &str = "02010901020300";
    /// Followed by 130 bytes 0x5a ([`txns`]).
    const TXNS_HEAD: &str = "0402f0a20401030303616263008201";
    const TXNS_EMPTY: &str = "040201010300";
    const MEMBERSHIP: &str =
        "ffffffffffffffffff010100020102010202010b3132372e302e302e313a31020b3132372e302e302e313a32";

    /// The whole `Proposal::Txns` golden entry.
    fn txns() -> String {
        format!("{TXNS_HEAD}{}", "5a".repeat(130))
    }

    fn id(term: u64, node: u64, index: u64) -> RaftLogId {
        RaftLogId { term, node, index }
    }

    fn entry(log_id: RaftLogId, payload: RaftPayload) -> Result<RaftEntry, String> {
        Ok(RaftEntry { log_id, payload })
    }

    #[test]
    fn entries_encoded_by_openraft_decode() {
        assert_eq!(
            decode_entry(&hex(BLANK)),
            entry(id(1, 2, 3), RaftPayload::Blank)
        );
        assert_eq!(
            decode_entry(&hex(TXN)),
            entry(id(300, 7, 1 << 40), RaftPayload::Txn(b"abc".to_vec()))
        );
        assert_eq!(
            decode_entry(&hex(KEY)),
            entry(id(5, 3, 128), RaftPayload::Key)
        );
        assert_eq!(
            decode_entry(&hex(DIGEST)),
            entry(
                id(2, 1, 9),
                RaftPayload::Digest {
                    zxid: 0x2_0000_0041,
                    digest: u64::MAX - 1
                }
            )
        );
        assert_eq!(
            decode_entry(&hex(DIGEST_NEGATIVE)),
            entry(
                id(2, 1, 9),
                RaftPayload::Digest {
                    zxid: -2,
                    digest: 0
                }
            )
        );
        assert_eq!(
            decode_entry(&hex(&txns())),
            entry(
                id(4, 2, 70000),
                RaftPayload::Txns(vec![b"abc".to_vec(), vec![], vec![0x5a; 130]])
            )
        );
        assert_eq!(
            decode_entry(&hex(TXNS_EMPTY)),
            entry(id(4, 2, 1), RaftPayload::Txns(vec![]))
        );
        let m = hex(MEMBERSHIP);
        assert_eq!(
            decode_entry(&m),
            entry(
                id(u64::MAX, 1, 0),
                RaftPayload::Membership {
                    bytes: m.len() - 13
                }
            )
        );
    }

    /// The key's bytes are nowhere in what decoding returns.
    #[test]
    fn a_key_entry_keeps_no_key() {
        let e = decode_entry(&hex(KEY)).unwrap();
        let shown = format!("{e:?}").to_lowercase();
        assert!(!shown.contains("a0") && !shown.contains("160"), "{shown}");
    }

    /// How: every prefix of each golden entry, each with a byte appended, and unknown
    /// variants: errors, never a panic or a wrong entry.
    #[test]
    fn damaged_entries_are_errors() {
        for golden in [
            BLANK.to_string(),
            TXN.into(),
            KEY.into(),
            DIGEST.into(),
            DIGEST_NEGATIVE.into(),
            txns(),
            TXNS_EMPTY.into(),
        ] {
            let b = hex(&golden);
            for n in 0..b.len() {
                assert!(decode_entry(&b[..n]).is_err(), "{golden} cut to {n}");
            }
            for extra in [0u8, 0x80, 0xff] {
                let mut longer = b.clone();
                longer.push(extra);
                assert!(decode_entry(&longer).is_err(), "{golden} + {extra:#x}");
            }
        }
        assert!(decode_entry(&hex("01020303"))
            .unwrap_err()
            .contains("variant 3"));
        assert!(decode_entry(&hex("010203")).is_err());
        // An 11-byte varint, and a tenth byte above 1.
        assert!(decode_entry(&hex("ffffffffffffffffffff01020300")).is_err());
        assert!(decode_entry(&hex("ffffffffffffffffff02020300")).is_err());
        // A proposal variant past Txns, and none at all.
        assert!(decode_entry(&hex("0102030104"))
            .unwrap_err()
            .contains("proposal variant 4"));
        assert!(decode_entry(&hex("01020301")).is_err());
        // A key of 15 and of 17 bytes.
        assert!(decode_entry(&hex(&format!("010203 01 01 {}", "00".repeat(15)))).is_err());
        assert!(decode_entry(&hex(&format!("010203 01 01 {}", "00".repeat(17)))).is_err());
    }

    /// A batch whose count or a txn length is beyond the bytes there is an error, found
    /// without allocating for it; so is a batch with a byte left over.
    #[test]
    fn oversized_batches_are_errors() {
        // Count u64::MAX, then nothing / then one empty txn.
        for tail in ["", "00"] {
            let b = hex(&format!("010203 01 03 ffffffffffffffffff01 {tail}"));
            let e = decode_entry(&b).unwrap_err();
            assert!(e.contains("batch of 18446744073709551615 txns"), "{e}");
        }
        // Count 3 with 2 bytes left; with 3 (allowed as a count: three empty txns would
        // fit) but only 2 txns there; with 4, one of them left over.
        let e = decode_entry(&hex("010203 01 03 03 0000")).unwrap_err();
        assert!(e.contains("batch of 3 txns, but only 2 bytes"), "{e}");
        let e = decode_entry(&hex("010203 01 03 03 00 01 61")).unwrap_err();
        assert!(e.contains("batch txn 2 of 3"), "{e}");
        assert_eq!(
            decode_entry(&hex("010203 01 03 03 00 00 00 00")).unwrap_err(),
            "1 bytes after a batch's last txn"
        );
        // A txn length of u64::MAX and of one byte more than there is, in a batch and alone.
        let e = decode_entry(&hex("010203 01 03 01 ffffffffffffffffff01")).unwrap_err();
        assert!(
            e.contains("batch txn 0 of 1: length 18446744073709551615"),
            "{e}"
        );
        let e = decode_entry(&hex("010203 01 03 01 04 616263")).unwrap_err();
        assert!(e.contains("length 4, but 3 bytes follow"), "{e}");
        let e = decode_entry(&hex("010203 01 00 04 616263")).unwrap_err();
        assert!(e.contains("txn length 4, but 3 bytes follow"), "{e}");
    }

    /// Random bytes after the log id and each entry variant (and proposal variant): an
    /// entry or an error, never a panic.
    #[test]
    fn random_payloads_never_panic() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let mut b = hex("010203");
            b.push(rng.u8(..3));
            b.push(rng.u8(..5));
            let n = rng.usize(..40);
            b.extend((0..n).map(|_| rng.u8(..)));
            let _ = decode_entry(&b);
        }
    }

    #[test]
    fn committed_ids_decode_as_the_log_thread_writes_them() {
        let mut b = vec![1u8];
        for w in [9u64, 4, 2] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(
            decode_committed(&b),
            Some(RaftLogId {
                index: 9,
                term: 4,
                node: 2
            })
        );
        assert_eq!(decode_committed(&b[..24]), None);
        b[0] = 2;
        assert_eq!(decode_committed(&b), None);
    }
}
