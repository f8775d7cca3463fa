//! A write cut short by a crash, at any byte, leaves a torn tail in the last segment: a prefix
//! of what was written, then the zeros of the preallocation. Recovery keeps exactly the
//! records that were complete before the cut, saves the cut bytes in `detached/`, zeroes
//! them, reports how many, and appending then continues the log. Anything a tear cannot
//! leave (garbage after the cut, a file shorter than it was created, a damaged segment
//! header) is refused as corruption, and cut only under `Corruption::Truncate`.

mod common;

use common::*;
use palisade_wal::{Corruption, CutCause, Wal, WalError};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::fs;
use std::path::Path;

const SEGMENT: u64 = 3000;

/// How the crash left the bytes from the cut point on.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Never written: zeros (the preallocation).
    Zero,
    /// Every byte from the cut on differs from what was there: not a tear (a write cut short
    /// leaves zeros after what it wrote).
    Garbage,
    /// The file itself ends at the cut: segments are preallocated before they are named, so
    /// not a tear either, except where the header's created size (KiB, rounded down) cannot
    /// tell.
    Shrink,
}

struct Template {
    dir: tempfile::TempDir,
    recs: Vec<Rec>,
    /// Records in segments before the last one.
    before_last: usize,
    last: String,
    spans: Vec<(u64, u64)>,
}

/// 40 txns with a Meta after every 8th, over 3000-byte segments: the last segment holds more
/// than 5 records.
fn template() -> Template {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 40, 8);
    write_log(dir.path(), SEGMENT, &recs);
    let segs = segments(dir.path());
    let last = segs.last().unwrap().clone();
    let spans = record_spans(&last);
    assert!(
        segs.len() >= 2 && spans.len() >= 6,
        "layout changed: adjust the template"
    );
    Template {
        before_last: recs.len() - spans.len(),
        last: last.file_name().unwrap().to_str().unwrap().to_owned(),
        dir,
        recs,
        spans,
    }
}

fn damage(path: &Path, cut: u64, how: Damage, seed: u64) -> Vec<u8> {
    let mut bytes = fs::read(path).unwrap();
    let cut = cut as usize;
    match how {
        Damage::Zero => bytes[cut..].fill(0),
        Damage::Shrink => bytes.truncate(cut),
        Damage::Garbage => {
            let mut x = seed | 1;
            for b in &mut bytes[cut..] {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b ^= (x % 255) as u8 + 1;
            }
        }
    }
    fs::write(path, &bytes).unwrap();
    bytes
}

fn nonzero_end(b: &[u8]) -> u64 {
    b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1) as u64
}

/// Damages a copy of the template at `cut` in the last segment, recovers, and checks the
/// outcome against the rule; then appends and reopens.
fn check_cut(t: &Template, cut: u64, how: Damage, seed: u64) {
    let copy = copy_dir(t.dir.path());
    let dir = copy.path();
    let path = dir.join(&t.last);
    let original = fs::read(&path).unwrap();
    let damaged = damage(&path, cut, how, seed);
    let ctx = format!("cut {cut} {how:?}");

    let header_intact = damaged.len() >= 32 && damaged[..32] == original[..32];
    let complete = t.spans.iter().filter(|s| s.1 <= cut).count();
    let survivors = if header_intact {
        t.before_last + complete
    } else {
        t.before_last
    };
    let inside_record = t.spans.iter().any(|s| s.0 < cut && cut < s.1);
    let changed = damaged != original;
    let torn_possible = match how {
        Damage::Zero => header_intact,
        Damage::Garbage => !changed,
        // The header says the file was created with (3000 / 1024) KiB: shorter is refused.
        Damage::Shrink => header_intact && cut >= 2048 && !inside_record,
    };
    if !torn_possible {
        match open(dir, SEGMENT) {
            Err(WalError::Corrupt { file, .. }) => assert_eq!(file, path, "{ctx}"),
            other => panic!(
                "{ctx}: must refuse, got {:?}",
                other.map(|(_, l)| l.report().clone())
            ),
        }
        // Cutting under Truncate is checked for one refusal in five (it is the slow part).
        if !seed.is_multiple_of(5) {
            return;
        }
        let (wal, log) = Wal::open(opts(dir, SEGMENT), Corruption::Truncate)
            .unwrap_or_else(|e| panic!("{ctx}: truncate: {e}"));
        assert_eq!(read_all(&log), t.recs[..survivors], "{ctx}");
        let c = log
            .report()
            .cut
            .clone()
            .unwrap_or_else(|| panic!("{ctx}: no cut"));
        assert_eq!(
            (c.cause, c.file.as_path()),
            (CutCause::Truncated, path.as_path()),
            "{ctx}"
        );
        continue_log(t, dir, wal, log, survivors, &ctx);
        return;
    }
    let (wal, log) = open(dir, SEGMENT).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(read_all(&log), t.recs[..survivors], "{ctx}");

    let report = log.report();
    {
        let x = t
            .spans
            .get(complete)
            .map_or(t.spans.last().unwrap().1, |s| s.0);
        let nz = nonzero_end(&damaged);
        match &report.cut {
            None => assert!(nz <= x, "{ctx}: {nz} non-zero bytes past {x} not cut"),
            Some(c) => {
                assert_eq!(c.cause, CutCause::TornTail, "{ctx}");
                assert_eq!(
                    (c.file.as_path(), c.offset, c.bytes),
                    (path.as_path(), x, nz - x),
                    "{ctx}"
                );
                let name = format!("{}.{x}.torn", t.last);
                assert_eq!(c.evidence, [dir.join("detached").join(name)], "{ctx}");
                let evidence = fs::read(&c.evidence[0]).unwrap();
                assert_eq!(
                    evidence,
                    damaged[x as usize..nz as usize],
                    "{ctx}: evidence"
                );
                assert!(report
                    .to_string()
                    .contains(&format!("cut {} bytes at", nz - x)));
            }
        }
        let repaired = fs::read(&path).unwrap();
        assert_eq!(repaired.len(), damaged.len(), "{ctx}: never shrunk");
        assert_eq!(repaired[..x as usize], damaged[..x as usize], "{ctx}");
        assert!(
            repaired[x as usize..].iter().all(|&b| b == 0),
            "{ctx}: zeroed from {x}"
        );
    }
    continue_log(t, dir, wal, log, survivors, &ctx);
}

/// The writer continues the log where the valid data ends, and the next open is clean.
fn continue_log(
    t: &Template,
    dir: &Path,
    mut wal: Wal,
    log: palisade_wal::Recovered,
    survivors: usize,
    ctx: &str,
) {
    let next = wal.last_txn_zxid().unwrap() + 1;
    let more = records(next, 12, 5);
    append_all(&mut wal, &more, 4);
    drop(wal);
    drop(log);
    let (_, log) = open(dir, SEGMENT).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    assert_eq!(log.report().cut, None, "{ctx}: second open is clean");
    let mut expected = t.recs[..survivors].to_vec();
    expected.extend(more);
    assert_eq!(read_all(&log), expected, "{ctx}: after appending");
}

/// How: every byte offset from the start of the 5th-last record of the last segment to the
/// end of its data, each with zeros, garbage and a shortened file after the cut.
#[test]
fn torn_at_every_byte_of_the_last_five_records() {
    let t = template();
    let from = t.spans[t.spans.len() - 5].0;
    let to = t.spans.last().unwrap().1;
    for cut in from..=to {
        for how in [Damage::Zero, Damage::Garbage, Damage::Shrink] {
            check_cut(&t, cut, how, cut);
        }
    }
}

/// How: random cut points anywhere in the last segment, header and zero region included.
#[test]
fn torn_at_random_points_of_the_last_segment() {
    let t = template();
    let config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(300)
    };
    let strategy = (0u64..SEGMENT, 0..3usize, any::<u64>());
    TestRunner::new(config)
        .run(&strategy, |(cut, how, seed)| {
            let how = [Damage::Zero, Damage::Garbage, Damage::Shrink][how];
            check_cut(&t, cut, how, seed);
            Ok(())
        })
        .unwrap();
}

/// How: zero all records of the last segment (a crash right after a roll): the log ends at
/// the previous segment, and the writer resumes in the empty segment, whose name is the next
/// txn's zxid. Garbage there instead is refused, and cut back to the same place under
/// Truncate.
#[test]
fn cut_back_to_a_segment_boundary() {
    let t = template();
    for how in [Damage::Zero, Damage::Garbage] {
        check_cut(&t, 32, how, 10);
    }
}

/// How: a torn write in a segment that is not the last one cannot come from a crash (the
/// writer fdatasyncs a segment before creating the next), so it is corruption, not a cut.
#[test]
fn torn_tail_before_a_later_segment_is_corruption() {
    let t = template();
    let copy = copy_dir(t.dir.path());
    let segs = segments(copy.path());
    let victim = &segs[segs.len() - 2];
    let spans = record_spans(victim);
    let (start, end) = *spans.last().unwrap();
    damage(victim, (start + end) / 2, Damage::Zero, 0);
    match open(copy.path(), SEGMENT) {
        Err(WalError::Corrupt {
            file,
            offset,
            reason,
        }) => {
            assert_eq!((&file, offset), (victim, start));
            assert!(reason.contains("not the last segment"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }

    let (_, log) = Wal::open(opts(copy.path(), SEGMENT), Corruption::Truncate).unwrap();
    let kept = t.before_last - 1;
    assert_eq!(read_all(&log), t.recs[..kept]);
    let cut = log.report().cut.clone().unwrap();
    assert_eq!(cut.cause, CutCause::Truncated);
    assert_eq!(cut.evidence.len(), 2, "the cut bytes and the later segment");
    assert!(cut.evidence[1].ends_with(format!("detached/{}", t.last)));
}

/// How: a leftover `.tmp` (a roll interrupted before its rename) is removed and ignored.
#[test]
fn leftover_tmp_segment_is_removed() {
    let t = template();
    let copy = copy_dir(t.dir.path());
    let tmp = copy.path().join("log.00000000000000ff.tmp");
    fs::write(&tmp, segment_header(0xff)).unwrap();
    let (_, log) = open(copy.path(), SEGMENT).unwrap();
    assert!(!tmp.exists());
    assert_eq!(log.report().removed, [tmp]);
    assert_eq!(read_all(&log), t.recs);
    assert!(log.report().cut.is_none());
}
