//! The Raft flavour of the log (segment format 3): its records come back as appended, it is
//! told apart from a standalone log both ways, a truncation is a durable cut that a reopen
//! honours (across segment boundaries too), a reset empties it, and every `sync` is one
//! fdatasync however many records it covers.

use palisade_wal::{Corruption, Options, RecordKind, Recovered, Wal, WalError};
use std::path::Path;

fn opts(dir: &Path) -> Options {
    Options {
        segment_bytes: 2048,
        ..Options::new(dir)
    }
}

fn open(dir: &Path) -> (Wal, Recovered) {
    Wal::open_raft(opts(dir), Corruption::Refuse).unwrap()
}

fn body(i: i64, gen: u8) -> Vec<u8> {
    let mut b = vec![gen; 60 + (i % 50) as usize];
    b[..8].copy_from_slice(&i.to_le_bytes());
    b
}

fn entries(log: &Recovered) -> Vec<(i64, Vec<u8>)> {
    log.all_records()
        .filter(|r| r.kind == RecordKind::Txn)
        .map(|r| (r.zxid, r.payload.to_vec()))
        .collect()
}

fn append(wal: &mut Wal, from: i64, to: i64, gen: u8) {
    for i in from..=to {
        wal.append(RecordKind::Txn, i, &body(i, gen)).unwrap();
    }
    wal.sync().unwrap();
}

#[test]
fn raft_and_standalone_logs_refuse_each_other() {
    let raft = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(raft.path());
    append(&mut wal, 0, 3, 1);
    drop(wal);
    let e = Wal::open(opts(raft.path()), Corruption::Truncate)
        .err()
        .unwrap();
    assert!(
        matches!(e, WalError::UnsupportedVersion { version: 3, .. }),
        "{e}"
    );

    let plain = tempfile::tempdir().unwrap();
    let (mut wal, _) = Wal::open(opts(plain.path()), Corruption::Refuse).unwrap();
    wal.append(RecordKind::Txn, 1, b"txn").unwrap();
    wal.sync().unwrap();
    drop(wal);
    let e = Wal::open_raft(opts(plain.path()), Corruption::Truncate)
        .err()
        .unwrap();
    assert!(
        matches!(e, WalError::UnsupportedVersion { version: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("opened as the other"), "{e}");
    // Neither open touched the other's files.
    let (_, log) = Wal::open(opts(plain.path()), Corruption::Refuse).unwrap();
    assert_eq!(log.report().txns, 1);
}

/// How: 120 entries over 2 KiB segments (many rolls), truncated in the middle of a segment
/// and then at a segment's first entry; new entries of another generation are appended after
/// each cut; every reopen sees exactly the kept prefix plus the new entries.
#[test]
fn truncation_is_a_durable_cut_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path());
    append(&mut wal, 0, 119, 1);
    let before = std::fs::read_dir(dir.path()).unwrap().count();
    assert!(before > 5, "the test must cross many rolls");

    wal.truncate_from(70).unwrap();
    assert_eq!(wal.last_txn_zxid(), Some(69));
    append(&mut wal, 70, 90, 2);
    drop(wal);
    let (mut wal, log) = open(dir.path());
    assert_eq!(log.report().cut, None);
    let want: Vec<_> = (0..70)
        .map(|i| (i, body(i, 1)))
        .chain((70..=90).map(|i| (i, body(i, 2))))
        .collect();
    assert_eq!(entries(&log), want);

    // A cut at the first entry of a segment deletes that segment whole.
    let first_of_last = log.segments().map(|(_, z)| z).last().unwrap();
    drop(log);
    wal.truncate_from(first_of_last).unwrap();
    assert_eq!(wal.last_txn_zxid(), Some(first_of_last - 1));
    append(&mut wal, first_of_last, first_of_last + 2, 3);
    drop(wal);
    let (mut wal, log) = open(dir.path());
    let got = entries(&log);
    assert_eq!(got.len() as i64, first_of_last + 3);
    assert_eq!(
        got.last().unwrap(),
        &(first_of_last + 2, body(first_of_last + 2, 3))
    );
    drop(log);

    // A cut before everything empties the log; it then takes any first entry.
    wal.truncate_from(0).unwrap();
    assert_eq!(wal.last_txn_zxid(), None);
    append(&mut wal, 5, 6, 4);
    drop(wal);
    let (_, log) = open(dir.path());
    assert_eq!(entries(&log), vec![(5, body(5, 4)), (6, body(6, 4))]);
    assert!(!dir.path().join("log.0000000000000005.tmp").exists());
}

#[test]
fn truncation_keeps_meta_records_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path());
    wal.append(RecordKind::Txn, 1, b"one").unwrap();
    wal.append(RecordKind::Meta, 0, b"kept").unwrap();
    wal.append(RecordKind::Txn, 2, b"two").unwrap();
    wal.append(RecordKind::Meta, 0, b"cut").unwrap();
    wal.sync().unwrap();
    wal.truncate_from(2).unwrap();
    drop(wal);
    let (_, log) = open(dir.path());
    let got: Vec<_> = log.all_records().map(|r| r.payload.to_vec()).collect();
    assert_eq!(got, vec![b"one".to_vec(), b"kept".to_vec()]);
}

#[test]
fn reset_empties_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path());
    append(&mut wal, 0, 60, 1);
    wal.reset().unwrap();
    append(&mut wal, 500, 501, 2);
    drop(wal);
    let (_, log) = open(dir.path());
    assert_eq!(
        entries(&log),
        vec![(500, body(500, 2)), (501, body(501, 2))]
    );
}

/// How: the writer's own counter of fdatasyncs, read around each sync.
#[test]
fn a_sync_is_one_fdatasync_however_many_records() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = Wal::open_raft(
        Options {
            segment_bytes: 1 << 20,
            ..Options::new(dir.path())
        },
        Corruption::Refuse,
    )
    .unwrap();
    assert_eq!(wal.fsyncs(), 0);
    for batch in 0..5i64 {
        let before = wal.fsyncs();
        for i in 0..50 {
            wal.append(RecordKind::Txn, batch * 50 + i, b"entry")
                .unwrap();
        }
        wal.sync().unwrap();
        assert_eq!(wal.fsyncs(), before + 1);
    }
    wal.sync().unwrap();
    assert_eq!(wal.fsyncs(), 5, "a sync with nothing buffered issues none");
}

/// How: a log reopened with records in its last segment syncs that segment once at open,
/// before its writer answers for them (a kill -9 may have left them in the page cache only);
/// one opened empty, or with `sync` off, issues none.
#[test]
fn an_open_syncs_the_last_segment_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let opts = |sync: bool| Options {
        segment_bytes: 4096,
        sync,
        ..Options::new(dir.path())
    };
    let (mut wal, _) = Wal::open_raft(opts(true), Corruption::Refuse).unwrap();
    assert_eq!(wal.fsyncs(), 0);
    for i in 1..=200 {
        wal.append(RecordKind::Txn, i, b"an entry of some length")
            .unwrap();
    }
    wal.sync().unwrap();
    drop(wal);
    let (wal, recovered) = Wal::open_raft(opts(true), Corruption::Refuse).unwrap();
    assert!(
        recovered.segments().count() > 1,
        "the test needs several segments"
    );
    assert_eq!(wal.fsyncs(), 1);
    drop(wal);
    let (wal, _) = Wal::open_raft(opts(false), Corruption::Refuse).unwrap();
    assert_eq!(wal.fsyncs(), 0);
}

/// How: every record's position from `append_at`, read back after a sync across many rolls;
/// after a truncation the kept ones still read the same and a cut one no longer does.
#[test]
fn records_read_back_where_append_at_put_them() {
    use palisade_wal::{read_raft_record, DEFAULT_MAX_PAYLOAD};
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path());
    let mut pos = Vec::new();
    for i in 0..80 {
        pos.push(wal.append_at(RecordKind::Txn, i, &body(i, 1)).unwrap());
    }
    wal.sync().unwrap();
    for (i, p) in pos.iter().enumerate() {
        let i = i as i64;
        let got = read_raft_record(dir.path(), *p, DEFAULT_MAX_PAYLOAD).unwrap();
        assert_eq!(got, (RecordKind::Txn, i, body(i, 1)));
    }
    wal.truncate_from(50).unwrap();
    for (i, p) in pos.iter().enumerate().take(50) {
        let i = i as i64;
        let got = read_raft_record(dir.path(), *p, DEFAULT_MAX_PAYLOAD).unwrap();
        assert_eq!(got.1, i);
    }
    assert!(read_raft_record(dir.path(), pos[60], DEFAULT_MAX_PAYLOAD).is_err());
}

/// How: the two states a crash inside `truncate_from` can leave, made by hand: the newest
/// segments already deleted (a prefix of the log), and the rewritten segment still under its
/// `.tmp` name beside the old one. Both open clean, with the old records up to where they
/// end; the `.tmp` is removed.
#[test]
fn a_crash_inside_a_truncation_leaves_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, log) = open(dir.path());
    drop(log);
    append(&mut wal, 0, 99, 1);
    drop(wal);
    let mut segs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| palisade_wal::is_segment_file_name(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    segs.sort();
    assert!(segs.len() > 3);
    std::fs::remove_file(segs.pop().unwrap()).unwrap();
    let last = segs.last().unwrap().clone();
    let mut tmp = last.clone().into_os_string();
    tmp.push(".tmp");
    std::fs::copy(&last, &tmp).unwrap();
    let (wal, log) = open(dir.path());
    assert_eq!(log.report().cut, None);
    assert_eq!(log.report().removed, vec![std::path::PathBuf::from(&tmp)]);
    let got = entries(&log);
    let n = got.len() as i64;
    assert_eq!(got, (0..n).map(|i| (i, body(i, 1))).collect::<Vec<_>>());
    assert_eq!(wal.last_txn_zxid(), Some(n - 1));
    assert!(n < 100);
}
