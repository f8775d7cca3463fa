//! Damage mode and `recover-report`, on copies of a real data dir (4 KiB segments, so the log
//! spans several files, and several snapshots): a tear inside the last txn record is cut by
//! the server's recovery (reported with file, offset and byte count, the bytes kept in
//! detached/); a flipped bit in an earlier record is refused with file and offset; a damaged
//! or deleted newest snapshot makes recovery fall back to an older one and still reach the
//! same state; and nothing is damaged in a directory `--prepare` did not make.

mod support;

use palisade_inspect::damage::{self, Damage, MARKER};
use palisade_inspect::recover_report::LogOutcome;
use palisade_inspect::{recover_readonly, recover_report, DataDir};
use palisade_wal::{scan_segment, CutCause, RecordKind, RECORD_HEADER_BYTES};
use std::path::{Path, PathBuf};
use support::*;

fn segments(data: &Path) -> Vec<PathBuf> {
    palisade_inspect::datadir::list_segments(&data.join("log"))
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// (offset, length, zxid) of the last txn record of a segment.
fn last_txn_record(seg: &Path) -> (u64, u64, i64) {
    let scan = scan_segment(seg, palisade_inspect::datadir::MAX_PAYLOAD).unwrap();
    scan.records()
        .filter(|r| r.kind == RecordKind::Txn)
        .map(|r| {
            (
                r.offset,
                palisade_wal::record_bytes(r.payload.len()),
                r.zxid,
            )
        })
        .last()
        .unwrap()
}

#[test]
fn recover_report_tells_what_the_server_did_with_each_damage() {
    let tmp = temp_dir("damage");
    let mut server = Server::start_small(tmp.path(), "");
    workload(server.port, 31, 250);
    server.kill9();
    let data = server.data();
    assert!(
        segments(&data).len() >= 3,
        "the log should span several segments"
    );
    let intact = recover_readonly(&DataDir::new(&data)).unwrap();

    // A tear in the middle of the last txn record: a torn tail, cut and kept as evidence.
    let torn = tmp.path().join("torn");
    let (text, code) = inspect(&[
        "damage",
        "--prepare",
        data.to_str().unwrap(),
        torn.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let last_seg = segments(&torn).pop().unwrap();
    let (at, len, zxid) = last_txn_record(&last_seg);
    let tear = at + len / 2;
    let (text, code) = inspect(&[
        "damage",
        torn.to_str().unwrap(),
        "--tear-log-at",
        &tear.to_string(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("record at offset {at} (zxid {zxid:#x}) cut after")),
        "{text}"
    );
    let r = recover_report(&torn).unwrap();
    let LogOutcome::Opened(log) = &r.log else {
        panic!("{}", r.text())
    };
    let cut = log.cut.as_ref().unwrap_or_else(|| panic!("{}", r.text()));
    assert_eq!(
        (cut.cause, cut.file.as_path(), cut.offset),
        (CutCause::TornTail, last_seg.as_path(), at)
    );
    assert!(cut.bytes > 0 && cut.bytes <= tear - at, "{}", r.text());
    assert!(cut
        .evidence
        .iter()
        .all(|e| e.exists() && e.starts_with(torn.join("log/detached"))));
    let rebuilt = r.rebuilt.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(rebuilt.zxid, zxid - 1, "{}", r.text());
    let line = format!(
        "log: cut {} bytes at {}:{at} (torn tail: ",
        cut.bytes,
        last_seg.display()
    );
    assert!(r.text().contains(&line), "{}", r.text());
    let (text, code) = inspect(&["recover-report", torn.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("verdict: the server would start"), "{text}");
    let journal = std::fs::read_to_string(torn.join(MARKER)).unwrap();
    assert!(
        journal.contains(&format!(
            "damage: tore {} at offset {tear}",
            last_seg.display()
        )),
        "{journal}"
    );

    // A seeded random tear lands inside one of the last records: also a torn tail.
    let random = tmp.path().join("random");
    damage::prepare(&data, &random).unwrap();
    damage::damage(&random, &Damage::TearLogRandom(42)).unwrap();
    let r = recover_report(&random).unwrap();
    let LogOutcome::Opened(log) = &r.log else {
        panic!("{}", r.text())
    };
    assert_eq!(
        log.cut.as_ref().map(|c| c.cause),
        Some(CutCause::TornTail),
        "{}",
        r.text()
    );
    // Unless the tear cut txns a snapshot already holds (the server snapshots at random
    // points): then the start is refused, since no crash can leave a snapshot ahead of the
    // log (issue 12 item 11).
    assert!(
        r.recovered() || r.text().contains("newer than the log's end"),
        "{}",
        r.text()
    );

    // A flipped bit in the first record of the first segment: valid records follow, so the
    // server refuses to start and names the file and the record's offset.
    let flipped = tmp.path().join("flipped");
    damage::prepare(&data, &flipped).unwrap();
    let first_seg = segments(&flipped).remove(0);
    let rel = first_seg.strip_prefix(&flipped).unwrap();
    let arg = format!("{}:{}:5", rel.display(), 32 + RECORD_HEADER_BYTES + 3);
    let (text, code) = inspect(&["damage", flipped.to_str().unwrap(), "--flip-bit", &arg]);
    assert_eq!(code, 0, "{text}");
    let r = recover_report(&flipped).unwrap();
    match &r.log {
        LogOutcome::Refused {
            file,
            offset,
            error,
        } => {
            assert_eq!(
                (file.as_deref(), *offset),
                (Some(first_seg.as_path()), Some(32)),
                "{error}"
            );
        }
        LogOutcome::Opened(_) => panic!("{}", r.text()),
    }
    assert!(r.rebuilt.is_none() && !r.recovered());
    let (text, code) = inspect(&["recover-report", flipped.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "REFUSED to start: corrupt log at {}:32",
            first_seg.display()
        )),
        "{text}"
    );

    // The newest snapshot damaged, or deleted: recovery falls back and reaches the same state.
    for (name, how) in [
        ("badsnap", None),
        ("nosnap", Some(Damage::DropNewestSnapshot)),
    ] {
        let copy = tmp.path().join(name);
        damage::prepare(&data, &copy).unwrap();
        let snaps = palisade_snapshot::list(&copy.join("snapshots")).unwrap();
        let (newest, older) = (snaps[0].1.clone(), snaps[1].1.clone());
        let what = how.unwrap_or_else(|| Damage::FlipBit {
            file: newest.strip_prefix(&copy).unwrap().to_path_buf(),
            offset: 50,
            bit: 1,
        });
        damage::damage(&copy, &what).unwrap();
        let r = recover_report(&copy).unwrap();
        let rebuilt = r
            .rebuilt
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rebuilt.snapshot.as_deref(),
            Some(older.as_path()),
            "{}",
            r.text()
        );
        assert_eq!(
            (rebuilt.zxid, rebuilt.digest),
            (intact.zxid, intact.tree.digest())
        );
        if name == "badsnap" {
            assert_eq!(r.fell_back_past(), vec![newest.as_path()]);
            assert!(
                r.text()
                    .contains("(fell back past 1 damaged newer snapshot(s))"),
                "{}",
                r.text()
            );
        }
    }

    // The original has no marker: nothing is damaged, and recover-report will not touch it.
    let before = palisade_snapshot::list(&data.join("snapshots")).unwrap();
    let (text, code) = inspect(&["damage", data.to_str().unwrap(), "--drop-newest-snapshot"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("refusing"), "{text}");
    assert_eq!(
        palisade_snapshot::list(&data.join("snapshots")).unwrap(),
        before
    );
    let (text, code) = inspect(&["recover-report", data.to_str().unwrap()]);
    assert_eq!(code, 2, "{text}");
}
