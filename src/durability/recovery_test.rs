//! Recovery through the real files: a recorded workload written to the WAL (tiny segments) and
//! to snapshots, then damaged — torn at every byte of its last records, bit-flipped, its newest
//! snapshot broken, a digest record falsified — and recovered with `Wal::open` + `recover`, as
//! the server does at start.

use super::*;
use crate::durability::capture::Capture;
use crate::testkit::{assert_same_tree, Rng, Workload};
use palisade_snapshot::SnapshotWriter;
use palisade_wal::{Corruption, Options, Wal};
use std::path::Path;

fn opts(dir: &Path) -> Options {
    Options {
        dir: dir.join("log"),
        segment_bytes: 4096,
        sync: false,
        max_payload: 1 << 20,
        identity: Some(0x5a),
    }
}

/// Writes txns `from..` of the workload's log (and a digest record every 16 txns, computed
/// by replaying, as the core records them after applying).
fn write_log(dir: &Path, w: &Workload, from: usize) {
    let (mut wal, _) = Wal::open(opts(dir), Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
    let mut r = Replayer::new();
    for (i, txn) in w.log.iter().enumerate() {
        r.txn(txn).unwrap_or_else(|e| panic!("{e}"));
        if i < from {
            continue;
        }
        let z = txn.header.zxid;
        wal.append(RecordKind::Txn, z, &txn.encode())
            .unwrap_or_else(|e| panic!("{e}"));
        if z % 16 == 0 {
            let rec = crate::durability::digest_record::encode_record(z, r.tree().digest());
            wal.append(RecordKind::Meta, z, &rec)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        wal.sync().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The tree after replaying the first `n` txns of the log.
fn prefix_tree(w: &Workload, n: usize) -> Restored {
    let mut r = Replayer::new();
    for txn in w.log.iter().take(n) {
        r.txn(txn).unwrap_or_else(|e| panic!("{e}"));
    }
    r.finish().unwrap_or_else(|e| panic!("{e}"))
}

fn recover_dir(dir: &Path, on_corruption: Corruption) -> Result<Restored, String> {
    let (_wal, log) = Wal::open(opts(dir), on_corruption).map_err(|e| e.to_string())?;
    recover(&dir.join("snap"), &log).map_err(|e| e.to_string())
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{e}"));
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else if e.file_name() != "LOCK" {
            std::fs::copy(&p, to.join(e.file_name())).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut segs: Vec<_> = std::fs::read_dir(dir.join("log"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("log.") && !n.ends_with(".tmp"))
        })
        .collect();
    segs.sort();
    segs.pop().unwrap_or_default()
}

/// Zeroes a file from `at` on (what a crash leaves of a write torn at `at`, in a preallocated
/// file).
fn tear(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap_or_default();
    for x in b.iter_mut().skip(at as usize) {
        *x = 0;
    }
    std::fs::write(path, b).unwrap_or_else(|e| panic!("{e}"));
}

/// Record ends in a segment: (offset after the record, txns in the whole log up to it).
fn txn_ends(path: &Path, txns_before: usize) -> Vec<(u64, usize)> {
    let scan = palisade_wal::scan_segment(path, 1 << 20).unwrap_or_else(|e| panic!("{e}"));
    let mut n = txns_before;
    scan.records()
        .map(|r| {
            if r.kind == RecordKind::Txn {
                n += 1;
            }
            (r.offset + palisade_wal::record_bytes(r.payload.len()), n)
        })
        .collect()
}

fn workload(seed: u64, steps: u64) -> Workload {
    Workload::run(seed, steps)
}

/// A data dir `name` in a new temporary directory, holding the log of a workload.
fn logged(seed: u64, steps: u64, name: &str) -> (tempfile::TempDir, std::path::PathBuf, Workload) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join(name);
    let w = workload(seed, steps);
    write_log(&dir, &w, 0);
    (tmp, dir, w)
}

#[test]
fn a_torn_tail_at_any_byte_recovers_exactly_the_complete_prefix() {
    let (tmp, base, w) = logged(11, 150, "base");
    let seg = last_segment(&base);
    let name = seg.file_name().unwrap_or_default().to_owned();
    let first: i64 =
        i64::from_str_radix(name.to_str().unwrap_or("").trim_start_matches("log."), 16)
            .unwrap_or(1);
    let ends = txn_ends(&seg, (first - 1) as usize);
    let Some(&(data_end, _)) = ends.last() else {
        panic!("empty last segment")
    };
    // Every byte offset inside the last 5 records, and 40 random ones in the whole segment.
    let from = ends
        .len()
        .checked_sub(6)
        .and_then(|i| ends.get(i))
        .map_or(32, |e| e.0);
    let mut cuts: Vec<u64> = (from..data_end).collect();
    let mut rng = Rng::new(5);
    cuts.extend((0..40).map(|_| 32 + rng.below(data_end - 32)));
    let original = std::fs::read(&seg).unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("cut");
    for cut in cuts {
        copy_dir(&base, &dir);
        tear(&dir.join("log").join(&name), cut);
        let got =
            recover_dir(&dir, Corruption::Refuse).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        // A record the cut falls in survives if its bytes from the cut on were zeros anyway
        // (a txn may end in zero bytes): zeroing them leaves it whole and its crc valid.
        let survives = |end: u64| {
            end <= cut
                || original
                    .get(cut as usize..end as usize)
                    .is_some_and(|tail| tail.iter().all(|&b| b == 0))
        };
        let complete = ends
            .iter()
            .take_while(|(end, _)| survives(*end))
            .last()
            .map_or((first - 1) as usize, |e| e.1);
        let want = prefix_tree(&w, complete);
        assert_eq!(got.state.zxid(), want.state.zxid(), "cut at {cut}");
        assert_same_tree(&format!("cut at {cut}"), &got.state.tree, &want.state.tree);
        // The repaired log takes new txns, and the next start sees them.
        let (mut wal, _) =
            Wal::open(opts(&dir), Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
        if let Some(txn) = w.log.get(complete) {
            wal.append(RecordKind::Txn, txn.header.zxid, &txn.encode())
                .unwrap_or_else(|e| panic!("cut at {cut}: append after repair: {e}"));
            wal.sync().unwrap_or_else(|e| panic!("{e}"));
            drop(wal);
            let again = recover_dir(&dir, Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(again.state.zxid(), want.state.zxid() + 1, "cut at {cut}");
        }
    }
}

/// Writes a fuzzy capture of `w` taken while `during` more steps run, as a snapshot file.
fn snapshot_during(dir: &Path, w: &mut Workload, during: usize) -> (i64, i64) {
    let start = w.zxid();
    let mut buf = Vec::new();
    let sessions: Vec<(i64, i32)> = w.sessions().iter().map(|(k, v)| (*k, *v)).collect();
    let mut capture = Capture::begin(w.tree(), sessions.into_iter(), start, &mut buf);
    let mut left = during;
    while !capture.step(w.tree(), 2, &mut buf) {
        if left > 0 {
            w.step();
            left -= 1;
        }
    }
    let trailer = capture.trailer(w.zxid(), w.tree().digest());
    std::fs::create_dir_all(dir.join("snap")).unwrap_or_else(|e| panic!("{e}"));
    let mut sw =
        SnapshotWriter::create(&dir.join("snap"), start, 0x5a).unwrap_or_else(|e| panic!("{e}"));
    sw.write_block(&buf).unwrap_or_else(|e| panic!("{e}"));
    sw.finish(trailer).unwrap_or_else(|e| panic!("{e}"));
    (start, w.zxid())
}

#[test]
fn snapshot_plus_log_recovers_and_damaged_snapshots_fall_back() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("d");
    let mut w = workload(3, 80);
    let (s1, _) = snapshot_during(&dir, &mut w, 20);
    w.steps(60);
    let (s2, e2) = snapshot_during(&dir, &mut w, 30);
    w.steps(40);
    // The log is kept from the older snapshot's start on, as purge would leave it.
    write_log(&dir, &w, s1 as usize);
    let want = prefix_tree(&w, w.log.len());
    let got = recover_dir(&dir, Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
    // The snapshot's digest at its end, and every digest record from there on.
    let logged_after_end = (e2..=w.zxid()).filter(|z| z % 16 == 0).count() as u64;
    assert!(logged_after_end > 0);
    assert_eq!(got.digests_checked, 1 + logged_after_end);
    assert!(got
        .snapshot
        .as_ref()
        .is_some_and(|p| p.to_string_lossy().ends_with(&format!("{s2:016x}"))));
    assert_same_tree("newest snapshot + log", &got.state.tree, &want.state.tree);

    // A bit flip anywhere in the newest snapshot: recovery falls back to the older one.
    let newest = dir.join("snap").join(format!("snapshot.{s2:016x}"));
    let mut bytes = std::fs::read(&newest).unwrap_or_default();
    let at = bytes.len() / 2;
    if let Some(b) = bytes.get_mut(at) {
        *b ^= 0x10;
    }
    std::fs::write(&newest, bytes).unwrap_or_else(|e| panic!("{e}"));
    let got = recover_dir(&dir, Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
    assert!(got
        .snapshot
        .as_ref()
        .is_some_and(|p| p.to_string_lossy().ends_with(&format!("{s1:016x}"))));
    assert_same_tree("older snapshot + log", &got.state.tree, &want.state.tree);
}

#[test]
fn a_bit_flip_in_the_middle_of_the_log_stops_recovery() {
    let (_tmp, dir, w) = logged(5, 120, "d");
    let mut segs: Vec<_> = std::fs::read_dir(dir.join("log"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("log."))
        .collect();
    segs.sort();
    let Some(middle) = segs.get(segs.len() / 2).cloned() else {
        panic!("need several segments")
    };
    assert!(
        segs.len() >= 3,
        "need several segments, have {}",
        segs.len()
    );
    let mut bytes = std::fs::read(&middle).unwrap_or_default();
    if let Some(b) = bytes.get_mut(100) {
        *b ^= 1;
    }
    std::fs::write(&middle, bytes).unwrap_or_else(|e| panic!("{e}"));
    let e = recover_dir(&dir, Corruption::Refuse)
        .err()
        .unwrap_or_else(|| panic!("a corrupt log must stop recovery"));
    assert!(e.contains(&middle.display().to_string()), "{e}");
    // The operator's explicit choice: cut there and start with what came before.
    let got = recover_dir(&dir, Corruption::Truncate).unwrap_or_else(|e| panic!("{e}"));
    assert!(got.state.zxid() < w.zxid());
    assert_same_tree(
        "truncated",
        &got.state.tree,
        &prefix_tree(&w, got.state.zxid() as usize).state.tree,
    );
}

#[test]
fn a_digest_that_does_not_match_stops_recovery() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("d");
    let w = workload(9, 40);
    let (mut wal, _) = Wal::open(opts(&dir), Corruption::Refuse).unwrap_or_else(|e| panic!("{e}"));
    let mut r = Replayer::new();
    for txn in &w.log {
        r.txn(txn).unwrap_or_else(|e| panic!("{e}"));
        wal.append(RecordKind::Txn, txn.header.zxid, &txn.encode())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let z = w.zxid();
    let lie = crate::durability::digest_record::encode_record(z, r.tree().digest() ^ 1);
    wal.append(RecordKind::Meta, z, &lie)
        .unwrap_or_else(|e| panic!("{e}"));
    wal.sync().unwrap_or_else(|e| panic!("{e}"));
    drop(wal);
    let e = recover_dir(&dir, Corruption::Refuse)
        .err()
        .unwrap_or_else(|| panic!("a false digest must stop recovery"));
    assert!(e.contains("digest mismatch"), "{e}");
}
