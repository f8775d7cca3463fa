//! A capture written through `SnapshotWriter` in several blocks comes back from
//! `Snapshot::open` item for item, with its trailer, start zxid and name.

mod common;
use common::*;
use palisade_snapshot::{list, Snapshot, SnapshotWriter, Trailer};

/// Sessions, ACLs (index 1 redefined mid-file), 3000 nodes with null, empty and binary data,
/// through blocks of 97 items: open() must return exactly the input, in order.
#[test]
fn items_and_trailer_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let items = sample(3000);
    let path = write(dir.path(), 0x1234, &items, 97);
    assert_eq!(path, dir.path().join("snapshot.0000000000001234"));
    let snap = Snapshot::open(&path).unwrap();
    assert_eq!(snap.start_zxid(), 0x1234);
    assert_eq!(snap.path(), path);
    assert_eq!(
        *snap.trailer(),
        trailer_for(&items, 0x1234 + 10, 0xfeed_beef)
    );
    assert_eq!(snap.block_count(), items.len().div_ceil(97));
    let back: Vec<Owned> = snap.items().map(|i| Owned::from_item(&i)).collect();
    assert_eq!(back.len(), items.len());
    assert_eq!(back, items);
    // Null and empty data are distinct after the trip.
    let datas: Vec<_> = back
        .iter()
        .filter_map(|i| match i {
            Owned::Node(n) => Some(n.data.clone()),
            _ => None,
        })
        .collect();
    assert!(datas.contains(&None) && datas.contains(&Some(vec![])));
    assert_eq!(list(dir.path()).unwrap(), vec![(0x1234, path)]);
}

/// Empty blocks are legal and counted; a capture with no items at all is a valid snapshot;
/// extreme trailer values survive.
#[test]
fn empty_blocks_and_extreme_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SnapshotWriter::create(dir.path(), 0, 0x5a).unwrap();
    w.write_block(&[]).unwrap();
    w.write_block(&[]).unwrap();
    let t = Trailer {
        end_zxid: i64::MAX,
        digest: u64::MAX,
        node_count: 0,
        session_count: 0,
        acl_count: 0,
    };
    let path = w.finish(t).unwrap();
    let snap = Snapshot::open(&path).unwrap();
    assert_eq!(*snap.trailer(), t);
    assert_eq!(snap.block_count(), 2);
    assert_eq!(snap.items().count(), 0);
}

/// The writer's bytes are exactly the documented layout (header, blocks, trailer), as built
/// independently from the format helpers.
#[test]
fn writer_output_is_the_documented_layout() {
    let dir = tempfile::tempdir().unwrap();
    let items = sample(50);
    let path = write(dir.path(), 77, &items, 10);
    let t = trailer_for(&items, 87, 0xfeed_beef);
    let blocks = chunks(&items, 10);
    let mut chain = palisade_snapshot::format::Chain::new();
    for b in &blocks {
        chain.push(u32::from_le_bytes(
            palisade_snapshot::format::encode_block_header(1, b)[8..]
                .try_into()
                .unwrap(),
        ));
    }
    let expected = raw(77, &blocks, Some((t, blocks.len() as u64, chain.value())));
    assert_eq!(std::fs::read(&path).unwrap(), expected);
    // And the header's first bytes are the magic, little-endian.
    assert_eq!(&expected[..8], &[0x4E, 0x53, 0x4C, 0x50, 2, 0, 0, 0]);
    assert_eq!(&expected[16..24], &0x5au64.to_le_bytes(), "the identity");
}

/// Negative and large zxids name files with 16 hex digits and round-trip.
#[test]
fn file_names() {
    assert_eq!(
        palisade_snapshot::file_name(0x1_0000_0001),
        "snapshot.0000000100000001"
    );
    assert_eq!(
        palisade_snapshot::format::parse_file_name("snapshot.0000000100000001"),
        Some(0x1_0000_0001)
    );
    for bad in [
        "snapshot.0000000100000001.tmp",
        "snapshot.000000010000000",
        "snapshot.000000010000000G",
        "snapshot.000000010000000A",
        "log.0000000100000001",
        "snapshot.",
    ] {
        assert_eq!(
            palisade_snapshot::format::parse_file_name(bad),
            None,
            "{bad}"
        );
    }
}
