//! A state image as bytes, loaded back through the same `Replayer` recovery uses, which
//! checks the digest. Two kinds:
//! - whole (`encode`): the state captured in one go, start = end (tests' appliers);
//! - fuzzy (`encode_fuzzy`): a capture the core took a few nodes at a time between batches,
//!   from zxid start to end, followed by the txns it applied meanwhile — an ensemble member's
//!   Raft snapshot, so that building one never stops the core (docs/design/ENSEMBLE.md). Loading
//!   replays those txns over the capture, as recovery replays the log over a fuzzy snapshot
//!   file, and checks the digest at the end.
//!
//! Layout: start zxid, then the trailer (end zxid, digest, node, session and ACL counts), all
//! 8 bytes little-endian, then the capture items of `capture.rs`; a fuzzy image puts the
//! items' length (8 bytes) before them and the txns after them, each a u32 length and the
//! txn's encoding.

use super::capture::Capture;
use super::recovery::Replayer;
use crate::state::State;
use palisade_proto::Txn;
use palisade_snapshot::{decode_items, Trailer};
use std::io;

const HEADER: usize = 6 * 8;

fn header(out: &mut Vec<u8>, start: i64, t: &Trailer) {
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&t.end_zxid.to_le_bytes());
    for n in [t.digest, t.node_count, t.session_count, t.acl_count] {
        out.extend_from_slice(&n.to_le_bytes());
    }
}

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

fn read_header(image: &[u8]) -> io::Result<(i64, Trailer, &[u8])> {
    let (head, rest) = image
        .split_at_checked(HEADER)
        .ok_or_else(|| bad("state image shorter than its header".into()))?;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(head.get(i * 8..i * 8 + 8).unwrap_or(&[0; 8]));
        w
    };
    let trailer = Trailer {
        end_zxid: i64::from_le_bytes(word(1)),
        digest: u64::from_le_bytes(word(2)),
        node_count: u64::from_le_bytes(word(3)),
        session_count: u64::from_le_bytes(word(4)),
        acl_count: u64::from_le_bytes(word(5)),
    };
    Ok((i64::from_le_bytes(word(0)), trailer, rest))
}

fn replayer(items: &[u8], start: i64, trailer: &Trailer) -> io::Result<Replayer> {
    let items = decode_items(items)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("state image items: {e:?}")))?;
    let path = std::path::Path::new("(state image)");
    Replayer::from_items(items.into_iter(), start, trailer, path).map_err(|e| bad(e.to_string()))
}

/// The state as an image.
pub fn encode(s: &State) -> Vec<u8> {
    let mut items = Vec::new();
    let sessions = s.sessions().iter().map(|(&id, &t)| (id, t));
    let mut capture = Capture::begin(&s.tree, sessions, s.zxid(), &mut items);
    while !capture.step(&s.tree, usize::MAX, &mut items) {}
    let t = capture.trailer(s.zxid(), s.tree.digest());
    let mut out = Vec::with_capacity(HEADER + items.len());
    header(&mut out, s.zxid(), &t);
    out.extend_from_slice(&items);
    out
}

/// The state an image holds, its digest and counts checked.
pub fn decode(image: &[u8]) -> io::Result<State> {
    let (start, trailer, items) = read_header(image)?;
    replayer(items, start, &trailer)?
        .finish()
        .map(|r| r.state)
        .map_err(|e| bad(e.to_string()))
}

/// Appends a fuzzy image to `out`: the capture's items from `start`, its trailer at the end,
/// and `txns` — the txns applied while it was taken, each a u32 big-endian length and the
/// txn's encoding.
pub fn encode_fuzzy(out: &mut Vec<u8>, start: i64, t: &Trailer, items: &[u8], txns: &[u8]) {
    out.reserve(FUZZY_HEAD + items.len() + txns.len());
    let at = out.len();
    out.resize(at + FUZZY_HEAD, 0);
    out.extend_from_slice(items);
    finish_fuzzy(out, at, start, t, txns);
}

/// The bytes before a fuzzy image's items: header and the items' length.
pub const FUZZY_HEAD: usize = HEADER + 8;

/// Completes a fuzzy image built in place: `out[at..]` holds FUZZY_HEAD bytes reserved for
/// the head, then the capture's items (the capture wrote them there, so an image the size
/// of the tree is never copied); the head is written over the reserved bytes and `txns`
/// appended.
pub fn finish_fuzzy(out: &mut Vec<u8>, at: usize, start: i64, t: &Trailer, txns: &[u8]) {
    let items = out.len().saturating_sub(at).saturating_sub(FUZZY_HEAD);
    let mut head = Vec::with_capacity(FUZZY_HEAD);
    header(&mut head, start, t);
    head.extend_from_slice(&(items as u64).to_le_bytes());
    if let Some(slot) = out.get_mut(at..at.saturating_add(FUZZY_HEAD)) {
        slot.copy_from_slice(&head);
    }
    out.extend_from_slice(txns);
}

/// Appends one txn to a fuzzy image's txns.
pub fn push_txn(txns: &mut Vec<u8>, txn: &Txn) {
    let bytes = txn.encode();
    txns.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    txns.extend_from_slice(&bytes);
}

/// The state a fuzzy image holds: its txns replayed over its capture (zxids strictly
/// increasing: an ensemble's jump at each new epoch), the digest at its end checked.
pub fn decode_fuzzy(image: &[u8]) -> io::Result<State> {
    let (start, trailer, rest) = read_header(image)?;
    let (len, rest) = rest
        .split_first_chunk::<8>()
        .ok_or_else(|| bad("fuzzy image without its items' length".into()))?;
    let len = usize::try_from(u64::from_le_bytes(*len))
        .map_err(|_| bad("fuzzy image items' length".into()))?;
    let (items, mut txns) = rest
        .split_at_checked(len)
        .ok_or_else(|| bad("fuzzy image shorter than its items".into()))?;
    let mut r = replayer(items, start, &trailer)?;
    while !txns.is_empty() {
        let (n, rest) = txns
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("fuzzy image: torn txn length".into()))?;
        let (txn, rest) = rest
            .split_at_checked(u32::from_be_bytes(*n) as usize)
            .ok_or_else(|| bad("fuzzy image: torn txn".into()))?;
        let txn = Txn::decode(bytes::Bytes::copy_from_slice(txn), usize::MAX)
            .map_err(|e| bad(format!("fuzzy image: undecodable txn: {e}")))?;
        r.txn_increasing(&txn).map_err(|e| bad(e.to_string()))?;
        txns = rest;
    }
    r.finish().map(|r| r.state).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How: an image finished in place over reserved head room behind a prefix, and one
    /// `encode_fuzzy` appends after the same prefix, are both byte for byte the layout.
    #[test]
    fn an_image_finished_in_place_equals_one_encoded_from_parts() {
        let t = Trailer {
            end_zxid: 0x1_0000_0009,
            digest: 0xdead_beef,
            node_count: 3,
            session_count: 1,
            acl_count: 2,
        };
        let items: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let txns = vec![0, 0, 0, 3, 7, 8, 9];
        // The layout, by hand (module docs).
        let mut want = vec![3u8; 17];
        for w in [0x1_0000_0001i64, 0x1_0000_0009] {
            want.extend_from_slice(&w.to_le_bytes());
        }
        for w in [0xdead_beefu64, 3, 1, 2, items.len() as u64] {
            want.extend_from_slice(&w.to_le_bytes());
        }
        want.extend_from_slice(&items);
        want.extend_from_slice(&txns);
        let mut parts = vec![3u8; 17];
        encode_fuzzy(&mut parts, 0x1_0000_0001, &t, &items, &txns);
        assert_eq!(parts, want);
        let mut in_place = vec![3u8; 17];
        in_place.resize(17 + FUZZY_HEAD, 0);
        in_place.extend_from_slice(&items);
        finish_fuzzy(&mut in_place, 17, 0x1_0000_0001, &t, &txns);
        assert_eq!(in_place, want);
    }
}
