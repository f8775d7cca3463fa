//! Txn zxids must increase by exactly 1 across the whole log. A record with a valid crc that
//! breaks this is a Gap (file, offset, expected, found), never silently accepted.

mod common;

use common::*;
use palisade_wal::{Corruption, CutCause, Wal, WalError};

const SEGMENT: u64 = 4096;

fn expect_gap(
    dir: &std::path::Path,
    file: &std::path::Path,
    offset: u64,
    expected: i64,
    found: i64,
) {
    match open(dir, SEGMENT) {
        Err(WalError::Gap {
            file: f,
            offset: o,
            expected: e,
            found: x,
        }) => assert_eq!((f.as_path(), o, e, x), (file, offset, expected, found)),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// How: a hand-built segment holding txns 1, 2, 3, 5.
#[test]
fn skipped_zxid_inside_a_segment() {
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        Rec::txn(1),
        Rec::txn(2),
        Rec::meta(2),
        Rec::txn(3),
        Rec::txn(5),
    ];
    let path = write_segment(dir.path(), 1, &recs, 4096);
    let offset = record_spans(&path)[3].1;
    expect_gap(dir.path(), &path, offset, 4, 5);

    let err = open(dir.path(), SEGMENT).err().unwrap().to_string();
    assert!(
        err.contains(&format!("{}:{offset}", path.display())),
        "{err}"
    );

    // Under Truncate the gap is a cut point like any corruption.
    let (_, log) = Wal::open(opts(dir.path(), SEGMENT), Corruption::Truncate).unwrap();
    assert_eq!(read_all(&log), recs[..4]);
    let cut = log.report().cut.clone().unwrap();
    assert_eq!((cut.cause, cut.offset), (CutCause::Truncated, offset));
}

/// How: a repeated zxid is a gap too (expected 3, found 2).
#[test]
fn repeated_zxid() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_segment(
        dir.path(),
        1,
        &[Rec::txn(1), Rec::txn(2), Rec::txn(2)],
        4096,
    );
    expect_gap(dir.path(), &path, record_spans(&path)[1].1, 3, 2);
}

/// How: a segment's first txn must equal its name.
#[test]
fn first_txn_differs_from_the_segment_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_segment(dir.path(), 1, &[Rec::txn(2), Rec::txn(3)], 4096);
    expect_gap(dir.path(), &path, 32, 1, 2);
}

/// How: two well-formed segments, 1..=10 and 12..=20: the second is not named last + 1.
#[test]
fn gap_between_segments() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, &records(1, 10, 0), 4096);
    let second = write_segment(dir.path(), 12, &records(12, 9, 0), 4096);
    expect_gap(dir.path(), &second, 0, 11, 12);

    let (_, log) = Wal::open(opts(dir.path(), SEGMENT), Corruption::Truncate).unwrap();
    assert_eq!(read_all(&log), records(1, 10, 0));
    assert!(!second.exists(), "moved to detached/");
    assert_eq!(
        detached(dir.path()),
        [dir.path().join("detached").join("log.000000000000000c")]
    );
}
