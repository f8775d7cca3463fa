//! Retention keeps the N newest valid snapshots, deletes older valid ones, moves damaged ones
//! to detached/ (never deletes them), and reports the oldest kept start zxid. A crash before
//! the rename leaves only a .tmp file that nothing mistakes for a snapshot.

mod common;
use common::*;
use palisade_snapshot::{
    clean, list, load_newest, retain, retain_known, SnapshotWriter, DETACHED_DIR,
};
use std::collections::HashSet;

fn zxids(dir: &std::path::Path) -> Vec<i64> {
    list(dir).unwrap().into_iter().map(|(z, _)| z).collect()
}

#[test]
fn keeps_newest_valid_and_detaches_damaged() {
    let dir = tempfile::tempdir().unwrap();
    for z in [10, 20, 30, 40, 50] {
        write(dir.path(), z, &sample(8), 4);
    }
    // The second newest is damaged: it must not count as one of the kept.
    let damaged = dir.path().join(palisade_snapshot::file_name(40));
    let mut b = std::fs::read(&damaged).unwrap();
    b.truncate(b.len() - 1);
    std::fs::write(&damaged, b).unwrap();

    assert_eq!(retain(dir.path(), 3).unwrap(), Some(20));
    assert_eq!(zxids(dir.path()), vec![50, 30, 20]);
    let detached = dir
        .path()
        .join(DETACHED_DIR)
        .join(palisade_snapshot::file_name(40));
    assert!(detached.exists(), "damaged snapshot kept as evidence");
    // Idempotent.
    assert_eq!(retain(dir.path(), 3).unwrap(), Some(20));
    assert_eq!(retain(dir.path(), 1).unwrap(), Some(50));
    assert_eq!(zxids(dir.path()), vec![50]);
}

/// A second damaged file of the same name does not overwrite the first detached copy;
/// keep = 0 still keeps one; no valid snapshot → None.
#[test]
fn detach_never_overwrites_and_none_without_valid() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..2 {
        std::fs::write(
            dir.path().join("snapshot.0000000000000007"),
            format!("bad {round}"),
        )
        .unwrap();
        assert_eq!(retain(dir.path(), 2).unwrap(), None);
    }
    let d = dir.path().join(DETACHED_DIR);
    assert_eq!(
        std::fs::read(d.join("snapshot.0000000000000007")).unwrap(),
        b"bad 0"
    );
    assert_eq!(
        std::fs::read(d.join("snapshot.0000000000000007.1")).unwrap(),
        b"bad 1"
    );
    write(dir.path(), 8, &sample(2), 2);
    write(dir.path(), 9, &sample(2), 2);
    assert_eq!(retain(dir.path(), 0).unwrap(), Some(9));
    assert_eq!(zxids(dir.path()), vec![9]);
}

/// Crash between the tmp write and the rename: only `<name>.tmp` exists; list() and
/// load_newest() ignore it, and load_newest()/clean() remove it.
#[test]
fn crash_before_rename_leaves_only_tmp() {
    let dir = tempfile::tempdir().unwrap();
    let kept = write(dir.path(), 5, &sample(4), 2);
    let mut w = SnapshotWriter::create(dir.path(), 6, 0x5a).unwrap();
    for c in chunks(&sample(20), 5) {
        w.write_block(&c).unwrap();
    }
    let tmp = w.tmp_path().to_path_buf();
    std::mem::forget(w); // the process dies: no finish, no Drop
                         // Even a complete, valid image under the .tmp name is not a snapshot.
    std::fs::copy(&kept, dir.path().join("snapshot.0000000000000009.tmp")).unwrap();
    assert!(tmp.exists());
    assert_eq!(zxids(dir.path()), vec![5]);
    assert_eq!(retain(dir.path(), 3).unwrap(), None, "one of 3 snapshots");

    let (snap, rejected) = load_newest(dir.path()).unwrap();
    assert_eq!(snap.unwrap().path(), kept);
    assert!(rejected.is_empty());
    assert!(!tmp.exists(), "load_newest removes leftovers");
    assert!(!dir.path().join("snapshot.0000000000000009.tmp").exists());
    assert!(clean(dir.path()).unwrap().is_empty());
    // Foreign .tmp files are not ours to remove.
    std::fs::write(dir.path().join("other.tmp"), b"x").unwrap();
    assert!(clean(dir.path()).unwrap().is_empty());
    assert!(dir.path().join("other.tmp").exists());
}

/// Until `keep` valid snapshots exist no purge point is reported: the log before the first
/// snapshot is the only recovery point left if a snapshot is damaged (issue 12 item 13).
#[test]
fn no_purge_point_until_keep_valid_snapshots_exist() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 10, &sample(4), 2);
    assert_eq!(retain(dir.path(), 3).unwrap(), None);
    write(dir.path(), 20, &sample(4), 2);
    assert_eq!(retain(dir.path(), 3).unwrap(), None);
    // A damaged third does not count.
    std::fs::write(dir.path().join(palisade_snapshot::file_name(30)), b"bad").unwrap();
    assert_eq!(retain(dir.path(), 3).unwrap(), None);
    write(dir.path(), 40, &sample(4), 2);
    assert_eq!(retain(dir.path(), 3).unwrap(), Some(10));
    write(dir.path(), 50, &sample(4), 2);
    assert_eq!(retain(dir.path(), 3).unwrap(), Some(20));
    assert_eq!(zxids(dir.path()), vec![50, 40, 20]);
}

/// `retain_known` reads only the files it does not know valid, learns the ones it reads,
/// and forgets the ones it deletes.
#[test]
fn known_valid_snapshots_are_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    for z in [10, 20, 30, 40] {
        write(dir.path(), z, &sample(8), 4);
    }
    // 30 is known valid (this process wrote it) and then damaged on disk: not read, so kept;
    // 40 is unknown and damaged: read, so detached.
    for z in [30, 40] {
        let path = dir.path().join(palisade_snapshot::file_name(z));
        let mut b = std::fs::read(&path).unwrap();
        b.truncate(b.len() - 1);
        std::fs::write(&path, b).unwrap();
    }
    let mut valid: HashSet<i64> = [30].into();
    assert_eq!(retain_known(dir.path(), 2, &mut valid).unwrap(), Some(20));
    assert_eq!(zxids(dir.path()), vec![30, 20]);
    assert_eq!(
        valid,
        [30, 20].into(),
        "20 learned, 10 deleted and forgotten"
    );
    // The plain retain reads everything: the damaged 30 goes now.
    assert_eq!(retain(dir.path(), 2).unwrap(), None);
    assert_eq!(zxids(dir.path()), vec![20]);
}
