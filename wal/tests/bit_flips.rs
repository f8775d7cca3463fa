//! A flipped bit anywhere in a record (the last one included), or in a segment header, is
//! corruption: open refuses, naming the file and the offset. With Corruption::Truncate the
//! log is cut there, everything cut is kept in `detached/`, and appending continues.

mod common;

use common::*;
use palisade_wal::{Corruption, CutCause, Wal, WalError};
use std::fs;
use std::path::{Path, PathBuf};

const SEGMENT: u64 = 2048;

struct Template {
    dir: tempfile::TempDir,
    recs: Vec<Rec>,
    segs: Vec<PathBuf>,
}

fn template() -> Template {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(1, 60, 6);
    write_log(dir.path(), SEGMENT, &recs);
    let segs = segments(dir.path());
    assert!(segs.len() >= 3);
    Template { dir, recs, segs }
}

fn flip(path: &Path, bit: u64) {
    let mut b = fs::read(path).unwrap();
    b[(bit / 8) as usize] ^= 1 << (bit % 8);
    fs::write(path, b).unwrap();
}

/// Index (in `recs`) of the first record of segment `seg`.
fn first_index(t: &Template, seg: usize) -> usize {
    t.segs[..seg].iter().map(|p| record_spans(p).len()).sum()
}

fn expect_corrupt(dir: &Path, file: &Path, offset: u64, ctx: &str) {
    match open(dir, SEGMENT) {
        Err(WalError::Corrupt {
            file: f, offset: o, ..
        }) => assert_eq!((f.as_path(), o), (file, offset), "{ctx}"),
        other => panic!("{ctx}: {:?}", other.map(|(_, l)| l.report().clone())),
    }
}

/// Opens with Truncate and checks: the records before the damage survive, the rest is in
/// `detached/`, and the log accepts appends and reopens cleanly.
fn expect_truncated(t: &Template, dir: &Path, seg: usize, offset: u64, kept: usize, ctx: &str) {
    let (mut wal, log) = Wal::open(opts(dir, SEGMENT), Corruption::Truncate).unwrap();
    assert_eq!(read_all(&log), t.recs[..kept], "{ctx}");
    let cut = log.report().cut.clone().unwrap();
    assert_eq!(
        (cut.cause, cut.offset),
        (CutCause::Truncated, offset),
        "{ctx}"
    );
    assert_eq!(
        cut.file,
        dir.join(t.segs[seg].file_name().unwrap()),
        "{ctx}"
    );
    let later = t.segs.len() - seg - 1;
    // The cut part of the segment (or the whole segment, for a header), then each later one.
    assert_eq!(cut.evidence.len(), 1 + later, "{ctx}");
    for e in &cut.evidence {
        assert!(
            e.starts_with(dir.join("detached")) && e.exists(),
            "{ctx}: {e:?}"
        );
    }
    assert_eq!(detached(dir).len(), cut.evidence.len(), "{ctx}");

    let next = t.recs[..kept]
        .iter()
        .rev()
        .find_map(|r| (r.kind == palisade_wal::RecordKind::Txn).then_some(r.zxid + 1));
    let more = records(next.unwrap_or(1), 10, 3);
    append_all(&mut wal, &more, 3);
    drop((wal, log));
    let (_, log) = open(dir, SEGMENT).unwrap();
    let mut expected = t.recs[..kept].to_vec();
    expected.extend(more);
    assert_eq!(read_all(&log), expected, "{ctx}: after appending");
}

/// How: every bit of a record in the middle of a middle segment, one at a time.
#[test]
fn flip_in_a_middle_record_is_corruption() {
    let t = template();
    let seg = 1;
    let spans = record_spans(&t.segs[seg]);
    let victim = spans.len() / 2;
    let (start, end) = spans[victim];
    for bit in start * 8..end * 8 {
        let copy = copy_dir(t.dir.path());
        let file = copy.path().join(t.segs[seg].file_name().unwrap());
        flip(&file, bit);
        let ctx = format!("bit {bit}");
        expect_corrupt(copy.path(), &file, start, &ctx);
        expect_truncated(
            &t,
            copy.path(),
            seg,
            start,
            first_index(&t, seg) + victim,
            &ctx,
        );
    }
}

/// How: every bit of a record in the last segment that still has records after it.
#[test]
fn flip_in_the_last_segment_before_valid_records_is_corruption() {
    let t = template();
    let seg = t.segs.len() - 1;
    let spans = record_spans(&t.segs[seg]);
    assert!(spans.len() >= 2);
    let (start, end) = spans[0];
    for bit in (start * 8..end * 8).step_by(3) {
        let copy = copy_dir(t.dir.path());
        let file = copy.path().join(t.segs[seg].file_name().unwrap());
        flip(&file, bit);
        expect_corrupt(copy.path(), &file, start, &format!("bit {bit}"));
    }
}

/// How: every bit of the 32-byte header of a middle segment, and of the last segment (which
/// holds valid records, so it is not a "headerless" leftover).
#[test]
fn flip_in_a_segment_header_is_detected() {
    let t = template();
    for seg in [1, t.segs.len() - 1] {
        for bit in 0..32 * 8 {
            let copy = copy_dir(t.dir.path());
            let file = copy.path().join(t.segs[seg].file_name().unwrap());
            flip(&file, bit);
            let ctx = format!("segment {seg} bit {bit}");
            expect_corrupt(copy.path(), &file, 0, &ctx);
            if bit % 16 == 0 {
                expect_truncated(&t, copy.path(), seg, 0, first_index(&t, seg), &ctx);
            }
        }
    }
}

/// How: a flipped bit in the zero region after the data of a middle segment: the data end is
/// followed by something non-zero where only zeros may be.
#[test]
fn flip_after_the_data_of_a_middle_segment_is_corruption() {
    let t = template();
    // A middle segment whose zero region is longer than a record header, so the flip lands
    // past the zero header that ends the data.
    let (seg, data_end) = (1..t.segs.len() - 1)
        .map(|i| (i, record_spans(&t.segs[i]).last().unwrap().1))
        .find(|&(_, end)| end + 24 < SEGMENT)
        .expect("a middle segment with room after its data");
    let copy = copy_dir(t.dir.path());
    let file = copy.path().join(t.segs[seg].file_name().unwrap());
    flip(&file, (SEGMENT - 1) * 8 + 3);
    expect_corrupt(copy.path(), &file, data_end, "zero region");
}

/// How: every bit of the very last record (nothing valid follows it, last segment) is
/// flipped in turn. A torn write leaves a prefix then zeros, so a record whose extent and end
/// mark are present was written whole: each flip is corruption, refused naming the file and
/// the record's offset, never cut as a torn tail (issue 12 item 12). Under Truncate it is cut
/// loudly.
#[test]
fn flip_in_the_final_record_is_corruption_not_a_tear() {
    let t = template();
    let seg = t.segs.len() - 1;
    let (start, end) = *record_spans(&t.segs[seg]).last().unwrap();
    for bit in start * 8..end * 8 {
        let copy = copy_dir(t.dir.path());
        let file = copy.path().join(t.segs[seg].file_name().unwrap());
        flip(&file, bit);
        let ctx = format!("bit {bit} (record at {start})");
        expect_corrupt(copy.path(), &file, start, &ctx);
        if bit.is_multiple_of(61) {
            expect_truncated(&t, copy.path(), seg, start, t.recs.len() - 1, &ctx);
        }
    }
}
