//! A whole-state image: the state captured in one go (not fuzzy) as bytes, and loaded back
//! through the same `Replayer` recovery uses, which checks the digest. An ensemble member's
//! Raft snapshot is one (docs/ENSEMBLE.md); the fuzzy snapshot files plus the log they span
//! are the eventual format.
//!
//! Layout: start zxid, then the trailer (end zxid, digest, node, session and ACL counts), all
//! 8 bytes little-endian, then the capture items of `capture.rs`.

use super::capture::Capture;
use super::recovery::Replayer;
use crate::state::State;
use palisade_snapshot::{decode_items, Trailer};
use std::io;

const HEADER: usize = 6 * 8;

/// The state as an image.
pub fn encode(s: &State) -> Vec<u8> {
    let mut items = Vec::new();
    let sessions = s.sessions().iter().map(|(&id, &t)| (id, t));
    let mut capture = Capture::begin(&s.tree, sessions, s.zxid(), &mut items);
    while !capture.step(&s.tree, usize::MAX, &mut items) {}
    let t = capture.trailer(s.zxid(), s.tree.digest());
    let mut out = Vec::with_capacity(HEADER + items.len());
    out.extend_from_slice(&s.zxid().to_le_bytes());
    out.extend_from_slice(&t.end_zxid.to_le_bytes());
    for n in [t.digest, t.node_count, t.session_count, t.acl_count] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&items);
    out
}

/// The state an image holds, its digest and counts checked.
pub fn decode(image: &[u8]) -> io::Result<State> {
    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
    let (head, items) = image
        .split_at_checked(HEADER)
        .ok_or_else(|| bad("state image shorter than its header".into()))?;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(head.get(i * 8..i * 8 + 8).unwrap_or(&[0; 8]));
        w
    };
    let start = i64::from_le_bytes(word(0));
    let trailer = Trailer {
        end_zxid: i64::from_le_bytes(word(1)),
        digest: u64::from_le_bytes(word(2)),
        node_count: u64::from_le_bytes(word(3)),
        session_count: u64::from_le_bytes(word(4)),
        acl_count: u64::from_le_bytes(word(5)),
    };
    let items = decode_items(items)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("state image items: {e:?}")))?;
    let path = std::path::Path::new("(state image)");
    Replayer::from_items(items.into_iter(), start, &trailer, path)
        .and_then(Replayer::finish)
        .map(|r| r.state)
        .map_err(|e| bad(e.to_string()))
}
