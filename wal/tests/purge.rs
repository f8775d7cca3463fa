//! `Wal::purge` deletes exactly the segments whose txns are all below `keep_from`, never the
//! last (active) segment, and the log stays readable from `keep_from`.

mod common;

use common::*;
use palisade_wal::Wal;

const SEGMENT: u64 = 2048;

fn first_zxids(dir: &std::path::Path) -> Vec<i64> {
    segments(dir)
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            i64::from_str_radix(&name[4..], 16).unwrap()
        })
        .collect()
}

/// How: for every keep_from across the log, purge a copy and compare with the rule "segment i
/// goes iff some later segment's first zxid <= keep_from"; then replay from keep_from.
#[test]
fn purge_deletes_exactly_the_segments_below_keep_from() {
    let template = tempfile::tempdir().unwrap();
    let recs = records(1, 200, 6);
    write_log(template.path(), SEGMENT, &recs);
    let firsts = first_zxids(template.path());
    assert!(firsts.len() > 5);

    for keep_from in -1..=205 {
        let dir = copy_dir(template.path());
        let expected: Vec<i64> = (0..firsts.len() - 1)
            .filter(|&i| firsts[i + 1..].iter().any(|&f| f <= keep_from))
            .map(|i| firsts[i])
            .collect();
        let deleted = Wal::purge(dir.path(), keep_from).unwrap();
        let mut deleted_firsts: Vec<i64> = deleted
            .iter()
            .map(|p| {
                i64::from_str_radix(&p.file_name().unwrap().to_str().unwrap()[4..], 16).unwrap()
            })
            .collect();
        deleted_firsts.sort();
        assert_eq!(deleted_firsts, expected, "keep_from {keep_from}");
        assert_eq!(
            first_zxids(dir.path()).last(),
            firsts.last(),
            "the last segment always stays"
        );

        let (_, log) = open(dir.path(), SEGMENT).unwrap();
        let from = keep_from.clamp(1, 200);
        let replay: Vec<i64> = log.records(from).map(|r| r.zxid).take(1).collect();
        assert_eq!(
            replay,
            [from],
            "keep_from {keep_from}: replay from {from} still possible"
        );
    }
}

/// How: purge runs on another thread while the writer owns the log; the writer keeps
/// appending and the active segment survives.
#[test]
fn purge_from_another_thread_never_takes_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (mut wal, _) = open(dir.path(), SEGMENT).unwrap();
    append_all(&mut wal, &records(1, 100, 0), 10);
    let path = dir.path().to_path_buf();
    let deleted = std::thread::spawn(move || Wal::purge(&path, i64::MAX).unwrap())
        .join()
        .unwrap();
    assert!(!deleted.is_empty());
    assert_eq!(segments(dir.path()).len(), 1);
    append_all(&mut wal, &records(101, 100, 0), 10);
    drop(wal);
    let (_, log) = open(dir.path(), SEGMENT).unwrap();
    let zxids: Vec<i64> = log.all_records().map(|r| r.zxid).collect();
    assert_eq!(*zxids.last().unwrap(), 200);
    assert!(zxids.windows(2).all(|w| w[1] == w[0] + 1));
}
