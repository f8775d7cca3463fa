//! One writer per directory: a second open fails while the first Wal lives.

mod common;

use common::*;
use palisade_wal::WalError;

#[test]
fn second_open_fails_while_the_first_wal_lives() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, _) = open(dir.path(), 4096).unwrap();
    match open(dir.path(), 4096) {
        Err(WalError::Locked { path }) => assert_eq!(path, dir.path().join("LOCK")),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let msg = open(dir.path(), 4096).err().unwrap().to_string();
    assert!(msg.contains("locked"), "{msg}");
    append_all(&mut first, &records(1, 5, 0), 2);
    drop(first);
    let (_, log) = open(dir.path(), 4096).unwrap();
    assert_eq!(read_all(&log), records(1, 5, 0));
}
