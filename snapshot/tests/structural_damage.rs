//! Damage that every crc survives — a missing trailer, blocks dropped, duplicated or moved,
//! wrong counts, references that do not point backwards — is still caught, with the reason
//! and offset named. Files are built by hand because the writer refuses to produce them.

mod common;
use common::*;
use palisade_snapshot::format::{self, Chain};
use palisade_snapshot::{SnapError, Trailer, NO_PARENT};

fn blocks_of(items: &[Owned], per: usize) -> Vec<Vec<u8>> {
    chunks(items, per)
}

fn chain_of(blocks: &[Vec<u8>]) -> u32 {
    let mut c = Chain::new();
    for b in blocks {
        c.push(u32::from_le_bytes(
            format::encode_block_header(1, b)[8..].try_into().unwrap(),
        ));
    }
    c.value()
}

/// The hand builder itself produces valid files, so each failure below is the damage's.
#[test]
fn hand_built_baseline_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let items = sample(20);
    let bytes = raw(4, &blocks_of(&items, 5), None);
    open_bytes(dir.path(), "ok", &bytes).unwrap();
}

#[test]
fn missing_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(write(dir.path(), 3, &sample(10), 4)).unwrap();
    let (t_start, _, _) = *spans(&good).last().unwrap();
    let (offset, reason) = corrupt(open_bytes(dir.path(), "m", &good[..t_start]));
    assert_eq!(offset, t_start as u64);
    assert!(reason.contains("no trailer"), "{reason}");
    // A header alone is not a snapshot either.
    let (_, reason) = corrupt(open_bytes(dir.path(), "h", &good[..format::HEADER_LEN]));
    assert!(reason.contains("no trailer"), "{reason}");
}

/// A dropped or a duplicated block: each block is intact, but the trailer's block count
/// (and chain) no longer match.
#[test]
fn dropped_or_duplicated_block() {
    let dir = tempfile::tempdir().unwrap();
    // Sessions only, so neither counts of references give it away: just the blocks.
    let items: Vec<Owned> = (0..30)
        .map(|i| Owned::Session {
            id: i,
            timeout_ms: 1,
        })
        .collect();
    let good = std::fs::read(write(dir.path(), 3, &items, 5)).unwrap();
    let s = spans(&good);
    let (b_start, b_end, _) = s[2];
    let mut dropped = good[..b_start].to_vec();
    dropped.extend_from_slice(&good[b_end..]);
    let (_, reason) = corrupt(open_bytes(dir.path(), "d", &dropped));
    assert!(reason.contains("block count"), "{reason}");
    let mut dup = good[..b_end].to_vec();
    dup.extend_from_slice(&good[b_start..]);
    let (_, reason) = corrupt(open_bytes(dir.path(), "u", &dup));
    assert!(reason.contains("block count"), "{reason}");
}

/// Blocks swapped, or a block dropped with the trailer's counts made to agree: only the chain
/// can tell.
#[test]
fn chain_catches_moved_and_dropped_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<Owned> = (0..30)
        .map(|i| Owned::Session {
            id: i,
            timeout_ms: 1,
        })
        .collect();
    let good = std::fs::read(write(dir.path(), 3, &items, 5)).unwrap();
    let s = spans(&good);
    let mut swapped = good[..s[1].0].to_vec();
    swapped.extend_from_slice(&good[s[2].0..s[2].1]);
    swapped.extend_from_slice(&good[s[1].0..s[1].1]);
    swapped.extend_from_slice(&good[s[3].0..]);
    assert_eq!(swapped.len(), good.len());
    let (offset, reason) = corrupt(open_bytes(dir.path(), "s", &swapped));
    assert!(reason.contains("chain"), "{reason}");
    assert_eq!(
        offset,
        s.last().unwrap().0 as u64,
        "reported at the trailer"
    );

    let blocks = blocks_of(&items, 5);
    let mut fewer = blocks.clone();
    fewer.remove(2);
    let t = Trailer {
        end_zxid: 3,
        digest: 0,
        node_count: 0,
        session_count: 25,
        acl_count: 0,
    };
    let forged = raw(3, &fewer, Some((t, 5, chain_of(&blocks))));
    let (_, reason) = corrupt(open_bytes(dir.path(), "f", &forged));
    assert!(reason.contains("chain"), "{reason}");
}

/// Each trailer count that disagrees with the items is named.
#[test]
fn counts_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let items = sample(20);
    let blocks = blocks_of(&items, 7);
    let good = trailer_for(&items, 4, 0);
    type Damage = fn(&mut Trailer);
    let cases: [(&str, Damage); 3] = [
        ("node count", |t| t.node_count += 1),
        ("session count", |t| t.session_count -= 1),
        ("ACL count", |t| t.acl_count = 0),
    ];
    for (what, damage) in cases {
        let mut t = good;
        damage(&mut t);
        let bytes = raw(
            4,
            &blocks,
            Some((t, blocks.len() as u64, chain_of(&blocks))),
        );
        let (_, reason) = corrupt(open_bytes(dir.path(), "c", &bytes));
        assert!(reason.contains(what), "{what}: {reason}");
    }
    let mut t = good;
    t.end_zxid = 3;
    let bytes = raw(
        4,
        &blocks,
        Some((t, blocks.len() as u64, chain_of(&blocks))),
    );
    let (_, reason) = corrupt(open_bytes(dir.path(), "e", &bytes));
    assert!(reason.contains("before start zxid"), "{reason}");
}

/// References: a later (or its own) parent, a non-root without parent, a root with one, and
/// an ACL index not defined before the node (including one defined only after it). Counts
/// and chain are right, so only the reference check can fail; the offset is the bad node's.
#[test]
fn bad_references() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Owned, Vec<Owned>)> = vec![
        ("not an earlier node", node(3, "later", None, 0), vec![]),
        ("not an earlier node", node(2, "itself", None, 0), vec![]),
        ("has no parent", node(NO_PARENT, "orphan", None, 0), vec![]),
        ("undefined ACL index 5", node(1, "b", None, 5), vec![]),
        (
            "undefined ACL index 5",
            node(1, "b", None, 5),
            vec![acl(5, "x", "y")],
        ),
    ];
    for (i, (want, bad, after)) in cases.into_iter().enumerate() {
        let mut block = Vec::new();
        for it in [
            acl(0, "world", "anyone"),
            node(NO_PARENT, "", None, 0),
            node(0, "a", None, 0),
        ] {
            it.encode(&mut block);
        }
        let bad_at = format::HEADER_LEN + format::BLOCK_HEADER_LEN + block.len();
        bad.encode(&mut block);
        for it in &after {
            it.encode(&mut block);
        }
        let (offset, reason) = corrupt(open_bytes(dir.path(), "r", &raw(1, &[block], None)));
        assert!(reason.contains(want), "case {i}: {reason}");
        assert_eq!(offset, bad_at as u64, "case {i}: {reason}");
    }
    // The root must have no parent.
    let mut block = Vec::new();
    acl(0, "world", "anyone").encode(&mut block);
    node(0, "", None, 0).encode(&mut block);
    let (_, reason) = corrupt(open_bytes(dir.path(), "root", &raw(1, &[block], None)));
    assert!(reason.contains("root"), "{reason}");
}

/// Header damage the crc cannot see: a foreign file, another format version, a file renamed
/// to another zxid.
#[test]
fn header_identity() {
    let dir = tempfile::tempdir().unwrap();
    let (_, reason) = corrupt(open_bytes(dir.path(), "z", &[0u8; 64]));
    assert!(reason.contains("magic"), "{reason}");

    let mut v3 = raw(1, &[], None);
    v3[4] = 3;
    let crc = crc32fast::hash(&v3[..28]);
    v3[28..32].copy_from_slice(&crc.to_le_bytes());
    match open_bytes(dir.path(), "v", &v3) {
        Err(SnapError::Version { found: 3, .. }) => {}
        other => panic!("expected Version, got {other:?}"),
    }
    // Version 2 without an identity, version 1 with one: neither was ever written.
    for (version, id) in [(2u8, 0u64), (1, 7)] {
        let mut h = raw(1, &[], None);
        h[4] = version;
        h[16..24].copy_from_slice(&id.to_le_bytes());
        let crc = crc32fast::hash(&h[..28]);
        h[28..32].copy_from_slice(&crc.to_le_bytes());
        let (offset, _) = corrupt(open_bytes(dir.path(), "i", &h));
        assert_eq!(offset, 16, "version {version}, identity {id}");
    }

    let (offset, reason) = corrupt(open_bytes(
        dir.path(),
        "snapshot.0000000000000002",
        &raw(1, &[], None),
    ));
    assert_eq!(offset, 8);
    assert!(reason.contains("file name"), "{reason}");
    open_bytes(dir.path(), "snapshot.0000000000000001", &raw(1, &[], None)).unwrap();
}

/// A block longer than 64 MiB is corruption, found from its length field alone.
#[test]
fn oversized_block_length() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = raw(1, &[], None);
    let at = format::HEADER_LEN;
    bytes[at..at + 4].copy_from_slice(&(format::BLOCK_BYTES_MAX + 1).to_le_bytes());
    let (offset, reason) = corrupt(open_bytes(dir.path(), "o", &bytes));
    assert_eq!(offset, at as u64);
    assert!(reason.contains("exceeds"), "{reason}");
}
