//! Files are untrusted: every inspector, given truncated, bit-flipped or garbage log segments
//! and snapshots, and records whose crc is valid but whose payload is not a txn, reports
//! damage and never panics (a panic fails the test; the binary's exit code is never 101).

mod support;

use palisade::durability::capture::Capture;
use palisade_inspect::logdump::{read_log, ZxidRange};
use palisade_inspect::snapdump::SnapshotFile;
use palisade_inspect::{invariants, recover_readonly, replay, validate, DataDir};
use palisade_snapshot::SnapshotWriter;
use std::path::Path;
use support::*;

/// A small data dir: a log from zxid 1 and a snapshot at its end.
fn build(data: &Path) -> (Vec<u8>, Vec<u8>, String, String) {
    let mut log = LogBuilder::new(data);
    log.txn(create_body("/p", 1));
    for i in 0..12 {
        log.txn(create_body(&format!("/p/s-{i:010}"), i + 1));
    }
    log.digest(None);
    log.txn(delete_body("/p/s-0000000003"));
    log.sync();
    let snap_dir = data.join("snapshots");
    std::fs::create_dir_all(&snap_dir).unwrap();
    let tree = log.replayer.tree();
    let z = log.replayer.zxid();
    let mut out = Vec::new();
    let mut cap = Capture::begin(tree, std::iter::once((0x55, 30_000)), z, &mut out);
    while !cap.step(tree, 1000, &mut out) {}
    let mut w = SnapshotWriter::create(&snap_dir, z, 0x5a).unwrap();
    w.write_block(&out).unwrap();
    let snap = w.finish(cap.trailer(z, tree.digest())).unwrap();
    let seg = data.join("log/log.0000000000000001");
    let seg_bytes = std::fs::read(&seg).unwrap();
    let used = seg_bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    (
        seg_bytes[..used].to_vec(),
        std::fs::read(&snap).unwrap(),
        seg.file_name().unwrap().to_str().unwrap().to_string(),
        snap.file_name().unwrap().to_str().unwrap().to_string(),
    )
}

/// Every library entry point on `data`; results are ignored, panics are not.
fn run_all(data: &Path, seg: &Path, snap: &Path) {
    let dir = DataDir::new(data);
    let _ = read_log(seg, ZxidRange::default(), |l| {
        let _ = (l.text(), l.json());
    });
    let _ = validate(&dir).map(|r| r.text());
    let _ = invariants(&dir).map(|r| r.text());
    let _ = replay(&dir, None).map(|r| r.summary_text());
    let _ = replay(&dir, Some(5));
    let _ = recover_readonly(&dir);
    if let Ok(s) = SnapshotFile::open(snap) {
        let _ = s.summary().text();
        let _ = s.walk_nodes("/", |n| {
            let _ = (n.text(), n.json());
        });
    }
}

#[test]
fn damaged_files_are_reported_never_panicked_on() {
    let tmp = temp_dir("hostile");
    let (seg_bytes, snap_bytes, seg_name, snap_name) = build(&tmp.path().join("orig"));
    let data = tmp.path().join("data");
    let seg = data.join("log").join(&seg_name);
    let snap = data.join("snapshots").join(&snap_name);
    std::fs::create_dir_all(seg.parent().unwrap()).unwrap();
    std::fs::create_dir_all(snap.parent().unwrap()).unwrap();
    let mut rng = Rng::with_seed(77);
    let put = |s: &[u8], n: &[u8]| {
        std::fs::write(&seg, s).unwrap();
        std::fs::write(&snap, n).unwrap();
    };
    // Truncations at a spread of lengths, both files at once.
    for i in 0..120usize {
        let s = &seg_bytes[..seg_bytes.len() * i / 120];
        let n = &snap_bytes[..snap_bytes.len() * i / 120];
        put(s, n);
        run_all(&data, &seg, &snap);
    }
    // Random byte changes, a few at a time.
    for _ in 0..200 {
        let (mut s, mut n) = (seg_bytes.clone(), snap_bytes.clone());
        for _ in 0..=rng.u64(..3) {
            let at = rng.u64(..s.len() as u64) as usize;
            s[at] = rng.u64(..256) as u8;
            let at = rng.u64(..n.len() as u64) as usize;
            n[at] = rng.u64(..256) as u8;
        }
        put(&s, &n);
        run_all(&data, &seg, &snap);
    }
    // Pure garbage through the binary (a garbage segment reads as a headerless last
    // segment, which recovery would move aside: not damage on its own).
    let garbage: Vec<u8> = (0..5000).map(|_| rng.u64(..256) as u8).collect();
    put(&garbage, &garbage);
    for args in [
        vec!["log", seg.to_str().unwrap()],
        vec!["snapshot", snap.to_str().unwrap()],
        vec!["validate", data.to_str().unwrap()],
        vec!["invariants", data.to_str().unwrap()],
        vec!["replay", data.to_str().unwrap()],
    ] {
        let (text, code) = inspect(&args);
        assert!((0..=2).contains(&code), "{args:?}: exit {code}\n{text}");
        if matches!(args[0], "snapshot" | "validate") {
            assert_eq!(code, 1, "{args:?}: {text}");
        }
    }
}

/// Records with a valid crc whose payload is not a txn: shown as undecodable, and every
/// replay stops there with the zxid.
#[test]
fn undecodable_txns_are_named_not_panicked_on() {
    let tmp = temp_dir("undecodable");
    let data = tmp.path().join("data");
    {
        let mut log = LogBuilder::new(&data);
        log.txn(create_body("/p", 1));
        log.sync();
    }
    let opts = palisade_wal::Options {
        segment_bytes: 4096,
        ..palisade_wal::Options::new(data.join("log"))
    };
    let (mut wal, _) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse).unwrap();
    wal.append(palisade_wal::RecordKind::Txn, 2, b"\x00\x01not a txn")
        .unwrap();
    wal.append(palisade_wal::RecordKind::Meta, 2, b"\x07odd meta")
        .unwrap();
    wal.sync().unwrap();
    drop(wal);
    let (text, code) = inspect(&["log", data.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("0x2 UNDECODABLE txn at"), "{text}");
    assert!(
        text.contains("meta record (9 bytes, unknown kind)"),
        "{text}"
    );
    let r = invariants(&DataDir::new(&data)).unwrap();
    assert!(!r.ok() && r.violations[0].zxid == 2, "{}", r.text());
    let v = validate(&DataDir::new(&data)).unwrap();
    assert!(
        v.text().contains("log record at zxid 0x2 does not decode"),
        "{}",
        v.text()
    );
    assert!(!v.ok());
}
