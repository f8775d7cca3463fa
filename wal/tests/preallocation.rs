//! Preallocated zeros after the last record are a clean end: no cut, nothing detached, and
//! the writer resumes right after the last record.

mod common;

use common::*;
use palisade_wal::RecordKind;

/// How: 1 MiB segments holding a few KiB of records; the file is full size at once (the
/// preallocation), and reopening reports no cut.
#[test]
fn zero_filled_preallocation_is_a_clean_end() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 30, 4);
    write_log(dir.path(), 1 << 20, &recs);
    let segs = segments(dir.path());
    assert_eq!(segs.len(), 1);
    assert_eq!(std::fs::metadata(&segs[0]).unwrap().len(), 1 << 20);

    let (_, log) = open(dir.path(), 1 << 20).unwrap();
    assert_eq!(read_all(&log), recs);
    let report = log.report();
    assert_eq!(report.cut, None);
    assert!(detached(dir.path()).is_empty());
    let data_end = record_spans(&segs[0]).last().unwrap().1;
    assert_eq!(report.resume_at, Some((segs[0].clone(), data_end)));
}

/// How: a segment that is exactly full (no zeros at all after its data) is clean too.
#[test]
fn exactly_full_segment_is_a_clean_end() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 3, 0);
    let len = 32 + recs.iter().map(|r| 32 + r.payload.len()).sum::<usize>();
    write_segment(dir.path(), 1, &recs, len);
    let (mut wal, log) = open(dir.path(), 4096).unwrap();
    assert_eq!(read_all(&log), recs);
    assert_eq!(log.report().cut, None);
    append_all(&mut wal, &records(4, 3, 0), 1);
    assert_eq!(segments(dir.path()).len(), 2, "the next record rolls");
}

/// How: a log with no record at all keeps its header-only segment, whose name is where the log
/// starts (`Wal::start_at`: the txn after a snapshot), so the next txn must carry that zxid.
#[test]
fn header_only_segment_of_an_empty_log_names_the_next_txn() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_segment(dir.path(), 42, &[], 4096);
    let (mut wal, log) = open(dir.path(), 4096).unwrap();
    assert!(log.report().removed.is_empty());
    assert!(path.exists());
    assert!(wal.append(RecordKind::Txn, 7, b"x").is_err());
    append_all(&mut wal, &records(42, 3, 0), 10);
    drop((wal, log));
    let (_, log) = open(dir.path(), 4096).unwrap();
    assert_eq!(read_all(&log), records(42, 3, 0));
}
