//! What is appended and synced comes back at reopen, byte for byte and in order, across many
//! tiny segments; `records(from)` starts where the docs say; the writer's checks hold.

mod common;

use common::*;
use palisade_wal::{Corruption, RecordKind, Wal, WalError};

const SEGMENT: u64 = 2048;

/// How: 300 txns with a Meta after every 7th, synced in batches of 7, over 2 KiB segments
/// (about 20 of them); reopen and compare everything.
#[test]
fn every_record_comes_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 300, 7);
    write_log(dir.path(), SEGMENT, &recs);
    assert!(
        segments(dir.path()).len() > 10,
        "the test must cross many rolls"
    );

    let (wal, log) = open(dir.path(), SEGMENT).unwrap();
    assert_eq!(read_all(&log), recs);
    let report = log.report();
    assert_eq!(report.cut, None);
    assert_eq!(report.records, recs.len() as u64);
    assert_eq!(report.txns, 300);
    assert_eq!(report.metas, 300 / 7);
    assert_eq!(
        (report.first_txn_zxid, report.last_txn_zxid),
        (Some(1), Some(300))
    );
    assert_eq!(report.segments, segments(dir.path()).len());
    assert_eq!(wal.last_txn_zxid(), Some(300));
    assert!(
        report.to_string().contains("300 txns 0x1..=0x12c"),
        "{report}"
    );
}

/// How: every segment's name is the zxid of its first txn, and its header says the same.
#[test]
fn segments_are_named_after_their_first_txn() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), SEGMENT, &records(5, 200, 3));
    for path in segments(dir.path()) {
        let scan = palisade_wal::scan_segment(&path, u32::MAX).unwrap();
        let first_txn = scan
            .records()
            .find(|r| r.kind == RecordKind::Txn)
            .unwrap()
            .zxid;
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("log.{first_txn:016x}"));
        assert_eq!(scan.first_zxid, Some(first_txn));
        assert!(matches!(scan.end, palisade_wal::End::Clean { .. }));
    }
}

/// How: for every `from` below, at and past the log, compare with the documented rule: start
/// at the first Txn >= from, then everything (Meta included) in log order.
#[test]
fn records_from_starts_at_the_first_txn_at_or_after_from() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(10, 120, 4);
    write_log(dir.path(), SEGMENT, &recs);
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    for from in -3..140 {
        let start = recs
            .iter()
            .position(|r| r.kind == RecordKind::Txn && r.zxid >= from)
            .unwrap_or(recs.len());
        let got: Vec<Rec> = log
            .records(from)
            .map(|r| Rec {
                kind: r.kind,
                zxid: r.zxid,
                payload: r.payload.to_vec(),
            })
            .collect();
        assert_eq!(got, recs[start..], "from {from}");
    }
}

/// How: reopen, append more, reopen again: continuity holds across writer lifetimes.
#[test]
fn appending_continues_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = records(1, 50, 5);
    write_log(dir.path(), SEGMENT, &recs);
    for round in 0..3 {
        let (mut wal, log) = open(dir.path(), SEGMENT).unwrap();
        assert_eq!(read_all(&log), recs, "round {round}");
        let next = wal.last_txn_zxid().unwrap() + 1;
        let more = records(next, 37, 5);
        append_all(&mut wal, &more, 10);
        recs.extend(more);
    }
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    assert_eq!(read_all(&log), recs);
}

/// How: a txn that skips or repeats a zxid is refused, nothing is buffered, and the writer
/// keeps working (misuse is not an I/O failure).
#[test]
fn out_of_order_txn_is_rejected_without_poisoning() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path(), SEGMENT).unwrap();
    wal.append(RecordKind::Txn, 7, b"a").unwrap();
    for bad in [7, 9, 6] {
        match wal.append(RecordKind::Txn, bad, b"b") {
            Err(WalError::OutOfOrder { expected: 8, found }) => assert_eq!(found, bad),
            other => panic!("{other:?}"),
        }
    }
    wal.append(RecordKind::Meta, -1, b"meta zxids are not checked")
        .unwrap();
    wal.append(RecordKind::Txn, 8, b"c").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    let zxids: Vec<_> = log.all_records().map(|r| (r.kind, r.zxid)).collect();
    assert_eq!(
        zxids,
        [
            (RecordKind::Txn, 7),
            (RecordKind::Meta, -1),
            (RecordKind::Txn, 8)
        ]
    );
}

#[test]
fn payload_over_max_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path(), SEGMENT);
    o.max_payload = 100;
    let (mut wal, _) = Wal::open(o, Corruption::Refuse).unwrap();
    assert!(matches!(
        wal.append(RecordKind::Txn, 1, &[0; 101]),
        Err(WalError::PayloadTooLarge { len: 101, max: 100 })
    ));
    wal.append(RecordKind::Txn, 1, &[0; 100]).unwrap();
    wal.sync().unwrap();
}

/// How: a record bigger than segment_bytes gets a segment of its own, big enough for it.
#[test]
fn oversized_record_gets_its_own_segment() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![0xab; 10_000];
    let (mut wal, _) = open(dir.path(), SEGMENT).unwrap();
    wal.append(RecordKind::Txn, 1, b"small").unwrap();
    wal.append(RecordKind::Txn, 2, &big).unwrap();
    wal.append(RecordKind::Txn, 3, b"small again").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let segs = segments(dir.path());
    assert_eq!(segs.len(), 3);
    assert_eq!(std::fs::metadata(&segs[1]).unwrap().len(), 32 + 32 + 10_000);
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    let got: Vec<_> = log.all_records().map(|r| r.payload.len()).collect();
    assert_eq!(got, [5, 10_000, 11]);
}

#[test]
fn meta_cannot_open_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path(), SEGMENT).unwrap();
    assert!(matches!(
        wal.append(RecordKind::Meta, 0, b"x"),
        Err(WalError::Rejected { .. })
    ));
    assert!(wal.sync().is_ok(), "nothing buffered, nothing to do");
    assert!(segments(dir.path()).is_empty());
}

/// How: sync=false skips fdatasync but still writes: a reopen in the same process (page cache
/// intact) sees everything.
#[test]
fn sync_false_still_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path(), SEGMENT);
    o.sync = false;
    let recs = records(1, 100, 0);
    let (mut wal, _) = Wal::open(o, Corruption::Refuse).unwrap();
    append_all(&mut wal, &recs, 9);
    drop(wal);
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    assert_eq!(read_all(&log), recs);
}

/// How: the bytes the writer produces equal the documented layout, built by hand in
/// tests/common (a format fixture: a change to the format must change this test).
#[test]
fn bytes_on_disk_match_the_documented_format() {
    let dir = tempfile::tempdir().unwrap();
    let recs = vec![Rec::txn(0x2a), Rec::meta(99), Rec::txn(0x2b)];
    write_log(dir.path(), 4096, &recs);
    let path = dir.path().join("log.000000000000002a");
    let on_disk = std::fs::read(&path).unwrap();
    let mut expected = segment_header_with(0x2a, TEST_IDENTITY, 4096);
    for r in &recs {
        expected.extend(encode(r.kind, r.zxid, &r.payload));
    }
    expected.resize(4096, 0);
    assert_eq!(on_disk, expected);
}

/// How: a Meta record opens a new segment (the previous one is full), then a txn too big for
/// what is left: a roll would name the new segment like the current one (both are named after
/// the next txn), so the segment grows instead.
#[test]
fn segment_opened_by_a_meta_grows_instead_of_rolling() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path(), 512).unwrap();
    let mut recs = Vec::new();
    // Fill the first segment exactly: 32 + 4 * 120 = 512.
    for z in 1..=4 {
        recs.push(Rec {
            kind: RecordKind::Txn,
            zxid: z,
            payload: vec![z as u8; 88],
        });
    }
    recs.push(Rec::meta(4));
    recs.push(Rec {
        kind: RecordKind::Txn,
        zxid: 5,
        payload: vec![5; 470],
    });
    recs.push(Rec::txn(6));
    append_all(&mut wal, &recs, 100);
    drop(wal);
    let segs = segments(dir.path());
    let names: Vec<_> = segs
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "log.0000000000000001",
            "log.0000000000000005",
            "log.0000000000000006"
        ]
    );
    let (_, log) = open(dir.path(), 512).unwrap();
    assert_eq!(read_all(&log), recs);
}
