//! Offline reads of a Raft log (segment format 3): `segment_format` tells it from a
//! standalone log, `scan_segment_as` walks its entries and metadata records as written by
//! `Wal::open_raft` + `append_at`, and reports a torn last record as torn and a flipped byte
//! in a record written whole as corruption, as recovery would; `scan_segment` (format 2)
//! refuses it.

use palisade_wal::{
    record_bytes, scan_segment, scan_segment_as, segment_format, Corruption, End, LogFormat,
    Options, RecordKind, RecordPos, Wal,
};
use std::path::{Path, PathBuf};

fn committed(index: u64, term: u64, node: u64) -> Vec<u8> {
    let mut b = vec![1u8];
    for w in [index, term, node] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b
}

fn entry(i: i64) -> Vec<u8> {
    vec![i as u8; 20 + (i as usize % 7)]
}

/// A Raft log of entries 1..=8 with a committed-id record after entry 4, in one segment.
/// Returns the segment and each record's (kind, index, position, payload length).
fn write_log(dir: &Path) -> (PathBuf, Vec<(RecordKind, i64, RecordPos, usize)>) {
    let opts = Options {
        segment_bytes: 64 * 1024,
        ..Options::new(dir)
    };
    let (mut wal, _) = Wal::open_raft(opts, Corruption::Refuse).unwrap();
    let mut written = Vec::new();
    for i in 1..=8 {
        let p = entry(i);
        let pos = wal.append_at(RecordKind::Txn, i, &p).unwrap();
        written.push((RecordKind::Txn, i, pos, p.len()));
        if i == 4 {
            let m = committed(4, 2, 3);
            let pos = wal.append_at(RecordKind::Meta, 4, &m).unwrap();
            written.push((RecordKind::Meta, 4, pos, m.len()));
        }
    }
    wal.sync().unwrap();
    drop(wal);
    let seg = dir.join("log.0000000000000001");
    assert!(written.iter().all(|w| w.2.segment_first_zxid == 1));
    (seg, written)
}

fn records(path: &Path) -> (Vec<(RecordKind, i64, u64, usize)>, End) {
    let scan = scan_segment_as(path, 1 << 20, LogFormat::Raft).unwrap();
    assert_eq!(scan.format, LogFormat::Raft);
    let recs = scan
        .records()
        .map(|r| (r.kind, r.zxid, r.offset, r.payload.len()))
        .collect();
    (recs, scan.end)
}

#[test]
fn a_raft_segment_reads_back_record_by_record() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, written) = write_log(dir.path());
    assert_eq!(segment_format(&seg).unwrap(), Some(LogFormat::Raft));
    let (recs, end) = records(&seg);
    let want: Vec<_> = written
        .iter()
        .map(|&(k, i, pos, len)| (k, i, pos.offset, len))
        .collect();
    assert_eq!(recs, want);
    let (_, _, last, len) = *written.last().unwrap();
    assert_eq!(
        end,
        End::Clean {
            offset: last.offset + record_bytes(len)
        }
    );
    let scan = scan_segment_as(&seg, 1 << 20, LogFormat::Raft).unwrap();
    let meta = scan.records().find(|r| r.kind == RecordKind::Meta).unwrap();
    assert_eq!(meta.payload, &committed(4, 2, 3)[..]);

    // The format-2 reader refuses it at the header, and reads no record as a txn.
    let plain = scan_segment(&seg, 1 << 20).unwrap();
    assert_eq!(plain.format, LogFormat::Standalone);
    assert_eq!(plain.record_count(), 0);
    match plain.end {
        End::Corrupt { offset: 0, reason } => {
            assert!(reason.contains("unsupported format version 3"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // And the Raft reader a standalone segment the same way.
    let sdir = tempfile::tempdir().unwrap();
    let (mut wal, _) = Wal::open(Options::new(sdir.path()), Corruption::Refuse).unwrap();
    wal.append(RecordKind::Txn, 1, b"txn").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let sseg = sdir.path().join("log.0000000000000001");
    assert_eq!(segment_format(&sseg).unwrap(), Some(LogFormat::Standalone));
    let (recs, end) = records(&sseg);
    assert!(recs.is_empty());
    assert!(
        matches!(&end, End::Corrupt { offset: 0, reason } if reason.contains("version 2")),
        "{end:?}"
    );
}

/// How: the last record cut at every byte of its length (a prefix kept, zeros after): torn
/// at its offset, every earlier record kept; a flipped byte in any record written whole
/// (the last one included) is corruption at that record's offset.
#[test]
fn a_torn_last_record_is_torn_and_a_flipped_byte_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, written) = write_log(dir.path());
    let clean = std::fs::read(&seg).unwrap();
    let (_, _, last, last_len) = *written.last().unwrap();
    let last_at = last.offset as usize;
    let last_end = last_at + record_bytes(last_len) as usize;
    for cut in last_at + 1..last_end {
        let mut d = clean.clone();
        d[cut..last_end].fill(0);
        std::fs::write(&seg, &d).unwrap();
        let (recs, end) = records(&seg);
        assert_eq!(recs.len(), written.len() - 1, "cut at {cut}");
        match end {
            End::Torn { offset, bytes, .. } => {
                assert_eq!(offset, last.offset, "cut at {cut}");
                let nonzero_end = d.iter().rposition(|&b| b != 0).unwrap() + 1;
                assert_eq!(bytes, (nonzero_end - last_at) as u64, "cut at {cut}");
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    for (n, &(_, index, pos, len)) in written.iter().enumerate() {
        // A byte of the payload, then a byte of the header's index field.
        for at in [pos.offset as usize + 24 + len / 2, pos.offset as usize + 13] {
            let mut d = clean.clone();
            d[at] ^= 0x40;
            std::fs::write(&seg, &d).unwrap();
            let (recs, end) = records(&seg);
            assert_eq!(recs.len(), n, "index {index}, byte {at}");
            match end {
                End::Corrupt { offset, reason } => {
                    assert_eq!(offset, pos.offset, "index {index}, byte {at}: {reason}")
                }
                other => panic!("index {index}, byte {at}: {other:?}"),
            }
        }
    }
}
