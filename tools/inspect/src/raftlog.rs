//! The records of a Raft log (WAL segment format 3) decoded by hand, without the server's Raft
//! types or openraft: an entry's payload is openraft's `Entry<TypeConfig>` in postcard
//! (`src/ensemble/raft/types.rs`), a metadata record the committed log id
//! (`src/ensemble/raft/log_thread.rs`, `encode_committed`).
//!
//! Postcard, as it encodes that entry: a struct is its fields in order; a `u64` is a LEB128
//! varint (7 bits a byte, low first, at most 10 bytes); an enum is its variant index as a
//! varint, then the variant's fields; bytes are a varint length, then the bytes. So:
//!
//! ```text
//! Entry   = log_id payload
//! log_id  = term:varint node:varint index:varint   (LogId { leader_id: { term, node_id }, index })
//! payload = 0                                      Blank
//!         | 1 len:varint [len bytes]               Normal(Proposal(Bytes)): a Palisade txn
//!         | 2 ...                                  Membership (not decoded here)
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
    /// A Palisade txn (`palisade_proto::Txn::encode` bytes).
    Normal(Vec<u8>),
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

/// Decodes an entry record's payload. Trailing bytes after a Blank or Normal payload, or an
/// unknown variant, are errors: the payload is then not an entry this build wrote.
pub fn decode_entry(b: &[u8]) -> Result<RaftEntry, String> {
    let (term, rest) = varint(b).map_err(|e| format!("log id term: {e}"))?;
    let (node, rest) = varint(rest).map_err(|e| format!("log id node: {e}"))?;
    let (index, rest) = varint(rest).map_err(|e| format!("log id index: {e}"))?;
    let log_id = RaftLogId { term, node, index };
    let (variant, rest) = varint(rest).map_err(|e| format!("payload variant: {e}"))?;
    let payload = match variant {
        0 => {
            if !rest.is_empty() {
                return Err(format!("{} bytes after a blank entry", rest.len()));
            }
            RaftPayload::Blank
        }
        1 => {
            let (len, rest) = varint(rest).map_err(|e| format!("txn length: {e}"))?;
            let len = usize::try_from(len).map_err(|_| format!("txn length {len}"))?;
            if rest.len() != len {
                return Err(format!("txn length {len}, but {} bytes follow", rest.len()));
            }
            RaftPayload::Normal(rest.to_vec())
        }
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

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Golden bytes from openraft 0.9.25 + postcard 1.2 (`postcard::to_allocvec` of
    /// `openraft::Entry<TypeConfig>` with the server's `TypeConfig`, in a scratch program):
    /// a blank entry (term 1, node 2, index 3), a txn "abc" (term 300, node 7, index 2^40),
    /// and a membership of nodes {1, 2} (term u64::MAX, node 1, index 0).
    const BLANK: &str = "01020300";
    const NORMAL: &str = "ac02078080808080200103616263";
    const MEMBERSHIP: &str =
        "ffffffffffffffffff010100020102010202010b3132372e302e302e313a31020b3132372e302e302e313a32";

    #[test]
    fn entries_encoded_by_openraft_decode() {
        let id = |term, node, index| RaftLogId { term, node, index };
        assert_eq!(
            decode_entry(&hex(BLANK)),
            Ok(RaftEntry {
                log_id: id(1, 2, 3),
                payload: RaftPayload::Blank
            })
        );
        assert_eq!(
            decode_entry(&hex(NORMAL)),
            Ok(RaftEntry {
                log_id: id(300, 7, 1 << 40),
                payload: RaftPayload::Normal(b"abc".to_vec())
            })
        );
        let m = hex(MEMBERSHIP);
        assert_eq!(
            decode_entry(&m),
            Ok(RaftEntry {
                log_id: id(u64::MAX, 1, 0),
                payload: RaftPayload::Membership {
                    bytes: m.len() - 13
                }
            })
        );
    }

    /// How: every prefix of each golden entry, each with a byte appended, and unknown
    /// variants: errors, never a panic or a wrong entry.
    #[test]
    fn damaged_entries_are_errors() {
        for golden in [BLANK, NORMAL] {
            let b = hex(golden);
            for n in 0..b.len() {
                assert!(decode_entry(&b[..n]).is_err(), "{golden} cut to {n}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(decode_entry(&longer).is_err(), "{golden} + 1 byte");
        }
        assert!(decode_entry(&hex("01020303"))
            .unwrap_err()
            .contains("variant 3"));
        assert!(decode_entry(&hex("010203")).is_err());
        // An 11-byte varint, and a tenth byte above 1.
        assert!(decode_entry(&hex("ffffffffffffffffffff01020300")).is_err());
        assert!(decode_entry(&hex("ffffffffffffffffff02020300")).is_err());
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
