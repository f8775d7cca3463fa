//! After a failed write the writer is poisoned: every later append and sync fails with
//! Poisoned, because a retry could report durability that the disk never gave.

mod common;

use common::*;
use palisade_wal::{RecordKind, WalError};

/// How: delete the log directory under a live writer, then append past the segment's end so
/// sync must create a new segment: the create fails (ENOENT), a real I/O error.
#[test]
fn failed_roll_poisons_the_writer() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("wal");
    let (mut wal, _) = open(&dir, 1024).unwrap();
    append_all(&mut wal, &records(1, 3, 0), 10);
    std::fs::remove_dir_all(&dir).unwrap();

    for r in records(4, 20, 0) {
        wal.append(r.kind, r.zxid, &r.payload).unwrap();
    }
    match wal.sync() {
        Err(WalError::Io { path, .. }) => assert!(path.starts_with(&dir), "{path:?}"),
        other => panic!("{other:?}"),
    }
    assert!(wal.is_poisoned());
    assert_eq!(
        wal.durable_txn_zxid(),
        Some(3),
        "nothing after the failure is durable"
    );
    assert!(matches!(
        wal.append(RecordKind::Txn, 24, b"x"),
        Err(WalError::Poisoned)
    ));
    assert!(matches!(wal.sync(), Err(WalError::Poisoned)));
    assert!(
        matches!(wal.sync(), Err(WalError::Poisoned)),
        "and it stays so"
    );
}
