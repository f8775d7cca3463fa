//! The writer refuses what `open` would reject, leaves no tmp file behind when a snapshot is
//! given up, and never publishes a partial file.

mod common;
use common::*;
use palisade_snapshot::{list, SnapError, SnapshotWriter, NO_PARENT};

fn tmp_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

/// A block with a node referencing an undefined ACL is refused at its offset, and the
/// writer is poisoned afterwards.
#[test]
fn bad_block_is_refused_and_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SnapshotWriter::create(dir.path(), 1, 0x5a).unwrap();
    let mut ok = Vec::new();
    acl(0, "world", "anyone").encode(&mut ok);
    node(NO_PARENT, "", None, 0).encode(&mut ok);
    w.write_block(&ok).unwrap();
    let mut bad = Vec::new();
    node(0, "a", None, 0).encode(&mut bad);
    let bad_at = 32 + 12 + ok.len() + 12 + bad.len();
    node(0, "b", None, 3).encode(&mut bad);
    match w.write_block(&bad) {
        Err(SnapError::Invalid { offset, reason, .. }) => {
            assert_eq!(offset, bad_at as u64);
            assert!(reason.contains("undefined ACL"), "{reason}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert!(matches!(
        w.write_block(&ok),
        Err(SnapError::Poisoned { .. })
    ));
    assert!(matches!(
        w.finish(trailer_for(&[], 1, 0)),
        Err(SnapError::Poisoned { .. })
    ));
    assert_eq!(tmp_files(dir.path()), 0);
    assert!(list(dir.path()).unwrap().is_empty());
}

/// Undecodable bytes (a truncated item) are refused too.
#[test]
fn undecodable_block_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SnapshotWriter::create(dir.path(), 1, 0x5a).unwrap();
    let mut b = Vec::new();
    Owned::Session {
        id: 1,
        timeout_ms: 2,
    }
    .encode(&mut b);
    b.pop();
    assert!(matches!(w.write_block(&b), Err(SnapError::Invalid { .. })));
}

/// A trailer whose counts disagree with the blocks is refused; nothing is published.
#[test]
fn wrong_trailer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let items = sample(10);
    let mut w = SnapshotWriter::create(dir.path(), 1, 0x5a).unwrap();
    for c in chunks(&items, 4) {
        w.write_block(&c).unwrap();
    }
    let mut t = trailer_for(&items, 2, 0);
    t.node_count -= 1;
    match w.finish(t) {
        Err(SnapError::Invalid { reason, .. }) => {
            assert!(reason.contains("node count"), "{reason}")
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert_eq!(tmp_files(dir.path()), 0);
    assert!(list(dir.path()).unwrap().is_empty());

    let mut w = SnapshotWriter::create(dir.path(), 5, 0x5a).unwrap();
    let t = palisade_snapshot::Trailer {
        end_zxid: 4,
        digest: 0,
        node_count: 0,
        session_count: 0,
        acl_count: 0,
    };
    assert!(matches!(w.write_block(&[]), Ok(())));
    assert!(
        matches!(w.finish(t), Err(SnapError::Invalid { .. })),
        "end before start"
    );
}

/// abort() and a plain drop both remove the tmp file; a leftover tmp of the same name is
/// replaced by create().
#[test]
fn abort_and_drop_remove_tmp() {
    let dir = tempfile::tempdir().unwrap();
    let w = SnapshotWriter::create(dir.path(), 1, 0x5a).unwrap();
    assert_eq!(tmp_files(dir.path()), 1);
    w.abort();
    assert_eq!(tmp_files(dir.path()), 0);
    {
        let mut w = SnapshotWriter::create(dir.path(), 1, 0x5a).unwrap();
        w.write_block(&chunks(&sample(3), 100)[0]).unwrap();
    }
    assert_eq!(tmp_files(dir.path()), 0);
    std::fs::write(
        dir.path().join("snapshot.0000000000000001.tmp"),
        b"leftover",
    )
    .unwrap();
    let items = sample(3);
    let path = write(dir.path(), 1, &items, 2);
    assert_eq!(read_all(&path), items);
    assert_eq!(tmp_files(dir.path()), 0);
}

/// A directory that does not exist is an Io error naming the file.
#[test]
fn missing_dir_is_io() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    match SnapshotWriter::create(&missing, 1, 0x5a) {
        Err(SnapError::Io { path, .. }) => assert!(path.starts_with(&missing)),
        other => panic!("expected Io, got {:?}", other.map(|_| ())),
    }
}
