//! Recovery's entry point: the newest snapshot that validates wins; damaged newer ones are
//! skipped and reported, never silently.

mod common;
use common::*;
use palisade_snapshot::{load_newest, SnapError};

fn damage(path: &std::path::Path) {
    let mut b = std::fs::read(path).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(path, b).unwrap();
}

/// Newest damaged → the older one is loaded and the damaged one is in the rejected list.
#[test]
fn falls_back_past_a_damaged_newest() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(dir.path(), 100, &sample(30), 8);
    let new = write(dir.path(), 200, &sample(40), 8);
    damage(&new);
    let (snap, rejected) = load_newest(dir.path()).unwrap();
    let snap = snap.expect("the older snapshot");
    assert_eq!(snap.path(), old);
    assert_eq!(snap.start_zxid(), 100);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].0, new);
    assert!(
        matches!(rejected[0].1, SnapError::Corrupt { .. }),
        "{:?}",
        rejected[0].1
    );
    // Nothing was moved or deleted: load_newest only reads.
    assert!(new.exists());
}

/// Every snapshot damaged → Ok((None, all of them, newest first)).
#[test]
fn all_damaged_is_none_with_every_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), 1, &sample(5), 3);
    let b = write(dir.path(), 2, &sample(5), 3);
    damage(&a);
    std::fs::write(&b, b"").unwrap();
    let (snap, rejected) = load_newest(dir.path()).unwrap();
    assert!(snap.is_none());
    let paths: Vec<_> = rejected.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(paths, vec![b, a]);
}

/// No snapshots (an empty or missing directory) → Ok((None, [])).
#[test]
fn none_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (snap, rejected) = load_newest(dir.path()).unwrap();
    assert!(snap.is_none() && rejected.is_empty());
    let (snap, rejected) = load_newest(&dir.path().join("missing")).unwrap();
    assert!(snap.is_none() && rejected.is_empty());
}

/// The newest valid one is picked by zxid, not by file age, and foreign files are ignored.
#[test]
fn newest_by_zxid() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 0x30, &sample(3), 3);
    let newest = write(dir.path(), 0x1_0000_0000, &sample(3), 3);
    write(dir.path(), 0x20, &sample(3), 3);
    std::fs::write(dir.path().join("snapshot.zzz"), b"junk").unwrap();
    std::fs::write(dir.path().join("log.0000000000000001"), b"junk").unwrap();
    let (snap, rejected) = load_newest(dir.path()).unwrap();
    assert_eq!(snap.unwrap().path(), newest);
    assert!(rejected.is_empty());
}
