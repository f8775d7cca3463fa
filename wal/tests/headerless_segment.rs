//! A segment whose name exists but whose header does not (empty, shortened, zeroed) cannot
//! come from a crash: the writer makes the header durable under a `.tmp` name before the
//! rename (so ZOOKEEPER-2332's empty new log file cannot happen here). Open refuses it,
//! naming the file, even as the last segment (issue 12 item 9: truncating the only segment
//! after acknowledged writes must not start an empty server); under `Corruption::Truncate`
//! it is moved to detached/ and the log continues.

mod common;

use common::*;
use palisade_wal::{Corruption, CutCause, Wal, WalError};
use std::fs;

/// How: write a log, then add a last segment named next-txn that is empty, 10 bytes of its
/// header, or its header zeroed; also truncate a log's only segment to 0 and 20 bytes.
#[test]
fn empty_or_partial_last_segment_is_refused_and_cut_only_by_the_flag() {
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

        match open(dir.path(), 8192) {
            Err(WalError::Corrupt {
                file, offset: 0, ..
            }) => assert_eq!(file, bad),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let (mut wal, log) = Wal::open(opts(dir.path(), 8192), Corruption::Truncate).unwrap();
        assert_eq!(read_all(&log), recs);
        let cut = log.report().cut.clone().unwrap();
        assert_eq!(
            (cut.cause, cut.file.as_path(), cut.offset),
            (CutCause::Truncated, bad.as_path(), 0)
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

/// How: 100 txns in one segment, then the segment truncated to 0 or 20 bytes, or to a record
/// boundary well before its created size: each is refused naming the file, never read as an
/// empty or shorter log.
#[test]
fn truncated_only_segment_is_refused() {
    for len in [0usize, 20, 4000] {
        let dir = tempfile::tempdir().unwrap();
        let recs = records(1, 100, 0);
        write_log(dir.path(), 1 << 16, &recs);
        let seg = segments(dir.path()).pop().unwrap();
        let spans = record_spans(&seg);
        let len = if len == 4000 {
            spans
                .iter()
                .map(|s| s.1 as usize)
                .find(|&e| e >= 4000)
                .unwrap()
        } else {
            len
        };
        let bytes = fs::read(&seg).unwrap();
        fs::write(&seg, &bytes[..len]).unwrap();
        match open(dir.path(), 1 << 16) {
            Err(e @ WalError::Corrupt { .. }) => {
                assert!(e.to_string().contains(seg.to_str().unwrap()), "{e}")
            }
            other => panic!("len {len}: {:?}", other.map(|(_, l)| l.report().clone())),
        }
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
            assert!(reason.contains("header"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// How: a valid header from a future format version, or from format 1 (earlier builds,
/// without data-dir identities), is never cut, whatever the flag.
#[test]
fn unknown_format_version_is_refused() {
    for version in [1u8, 3] {
        let dir = tempfile::tempdir().unwrap();
        let mut h = segment_header(1);
        h[4] = version;
        let crc = crc32(&[&h[..28]]);
        h[28..].copy_from_slice(&crc.to_le_bytes());
        let path = dir.path().join("log.0000000000000001");
        fs::write(&path, &h).unwrap();
        for flag in [
            palisade_wal::Corruption::Refuse,
            palisade_wal::Corruption::Truncate,
        ] {
            match palisade_wal::Wal::open(opts(dir.path(), 4096), flag) {
                Err(WalError::UnsupportedVersion { file, version: v }) => {
                    assert_eq!((file, v), (path.clone(), u32::from(version)))
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        }
    }
}

/// How: a segment stamped with another identity than the log's (another data dir's file
/// copied in) is refused naming it, whatever the flag (issue 12 item 10).
#[test]
fn a_segment_of_another_identity_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, &records(1, 5, 0), 4096);
    let mut bytes = segment_header_with(6, 0xbad, 4096);
    for r in records(6, 5, 0) {
        bytes.extend(encode(r.kind, r.zxid, &r.payload));
    }
    bytes.resize(4096, 0);
    let foreign = dir.path().join("log.0000000000000006");
    fs::write(&foreign, bytes).unwrap();
    for flag in [Corruption::Refuse, Corruption::Truncate] {
        match Wal::open(opts(dir.path(), 4096), flag) {
            Err(WalError::Foreign {
                file,
                found,
                expected,
            }) => {
                assert_eq!(
                    (file, found, expected),
                    (foreign.clone(), 0xbad, TEST_IDENTITY)
                )
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
    let mut o = opts(dir.path(), 4096);
    o.identity = Some(0xbad);
    assert!(matches!(
        Wal::open(o, Corruption::Refuse),
        Err(WalError::Foreign {
            found: TEST_IDENTITY,
            ..
        })
    ));
}
