//! A last segment whose name exists but whose header does not (ZOOKEEPER-2332: an empty or
//! truncated new log file blocked ZooKeeper's start-up) is moved to detached/ and reported;
//! the server starts and the log continues.

mod common;

use common::*;
use palisade_wal::{CutCause, WalError};
use std::fs;

/// How: write a log, then add a last segment named next-txn that is empty, 10 bytes of its
/// header, or its header zeroed.
#[test]
fn empty_or_partial_last_segment_is_detached() {
    for content in [
        Vec::new(),
        segment_header(21)[..10].to_vec(),
        vec![0u8; 4096],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let recs = records(1, 20, 5);
        write_log(dir.path(), 8192, &recs);
        let bad = dir.path().join("log.0000000000000015");
        fs::write(&bad, &content).unwrap();

        let (mut wal, log) = open(dir.path(), 8192).unwrap();
        assert_eq!(read_all(&log), recs);
        let cut = log.report().cut.clone().unwrap();
        assert_eq!(
            (cut.cause, cut.file.as_path(), cut.offset),
            (CutCause::HeaderlessSegment, bad.as_path(), 0)
        );
        assert_eq!(
            cut.evidence,
            [dir.path().join("detached/log.0000000000000015")]
        );
        assert_eq!(
            fs::read(&cut.evidence[0]).unwrap(),
            content,
            "evidence kept as it was"
        );
        assert!(!bad.exists());

        append_all(&mut wal, &records(21, 5, 0), 2);
        drop((wal, log));
        let (_, log) = open(dir.path(), 8192).unwrap();
        assert_eq!(read_all(&log).len(), recs.len() + 5);
    }
}

/// How: the same unusable header in a segment that is not the last is corruption.
#[test]
fn headerless_segment_in_the_middle_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, &records(1, 5, 0), 4096);
    fs::write(dir.path().join("log.0000000000000003"), []).unwrap();
    write_segment(dir.path(), 6, &records(6, 5, 0), 4096);
    match open(dir.path(), 4096) {
        Err(WalError::Corrupt {
            file,
            offset: 0,
            reason,
        }) => {
            assert_eq!(file, dir.path().join("log.0000000000000003"));
            assert!(reason.contains("not the last segment"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// How: a valid header from a future format version is never cut, whatever the flag.
#[test]
fn unknown_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = segment_header(1);
    h[4] = 2;
    let crc = crc32(&[&h[..28]]);
    h[28..].copy_from_slice(&crc.to_le_bytes());
    let path = dir.path().join("log.0000000000000001");
    fs::write(&path, &h).unwrap();
    for flag in [
        palisade_wal::Corruption::Refuse,
        palisade_wal::Corruption::Truncate,
    ] {
        match palisade_wal::Wal::open(opts(dir.path(), 4096), flag) {
            Err(WalError::UnsupportedVersion { file, version: 2 }) => assert_eq!(file, path),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
