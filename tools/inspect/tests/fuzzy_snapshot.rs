//! Fuzzy snapshots as starting points. A capture started at S walks the tree a node or two at
//! a time while creates and deletes go on, and ends at E > S; its tree is exact only once the
//! log from S+1 has been replayed up to E. So `replay --to Z` must pass it over for Z < E (and
//! take the older exact snapshot instead) and may use it for Z ≥ E; every rebuilt state must
//! have the digest the tree had at Z. `validate` replays over the capture and checks the
//! trailer's digest at E, and fails when that digest is false.

mod support;

use palisade::durability::capture::Capture;
use palisade_inspect::snapdump::{DigestCheck, SnapshotFile};
use palisade_inspect::{replay, validate, Base, DataDir};
use palisade_snapshot::SnapshotWriter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::*;

/// Writes a snapshot of the builder's tree now (S = E): an exact one.
fn exact_snapshot(log: &LogBuilder, dir: &Path) -> PathBuf {
    let tree = log.replayer.tree();
    let z = log.replayer.zxid();
    let mut out = Vec::new();
    let mut cap = Capture::begin(tree, std::iter::empty(), z, &mut out);
    while !cap.step(tree, 1000, &mut out) {}
    let mut w = SnapshotWriter::create(dir, z, 0x5a).unwrap();
    w.write_block(&out).unwrap();
    w.finish(cap.trailer(z, tree.digest())).unwrap()
}

struct Built {
    data: PathBuf,
    /// The digest after every zxid.
    digests: BTreeMap<i64, u64>,
    start: i64,
    end: i64,
    fuzzy: PathBuf,
}

fn build(root: &Path, false_digest: bool) -> Built {
    let data = root.join("data");
    let snaps = data.join("snapshots");
    std::fs::create_dir_all(&snaps).unwrap();
    let mut log = LogBuilder::new(&data);
    let mut digests = BTreeMap::new();
    let mut next = 0i32;
    let mut create = |log: &mut LogBuilder, digests: &mut BTreeMap<i64, u64>| {
        let z = log.txn(create_body(&format!("/p/s-{next:010}"), next + 1));
        next += 1;
        digests.insert(z, log.replayer.tree().digest());
    };
    let z = log.txn(create_body("/p", 1));
    digests.insert(z, log.replayer.tree().digest());
    for _ in 0..8 {
        create(&mut log, &mut digests);
    }
    exact_snapshot(&log, &snaps);
    for _ in 0..10 {
        create(&mut log, &mut digests);
    }
    // The fuzzy capture: one node per step, a create (and now and then a delete) between steps.
    let start = log.replayer.zxid();
    let mut out = Vec::new();
    let mut cap = Capture::begin(log.replayer.tree(), std::iter::empty(), start, &mut out);
    let mut deleted = 0;
    let mut steps = 0;
    while !cap.step(log.replayer.tree(), 1, &mut out) {
        create(&mut log, &mut digests);
        steps += 1;
        if steps % 3 == 0 {
            let z = log.txn(delete_body(&format!("/p/s-{deleted:010}")));
            deleted += 1;
            digests.insert(z, log.replayer.tree().digest());
        }
    }
    let end = log.replayer.zxid();
    assert!(end > start + 5, "the capture should span several txns");
    let digest = if false_digest {
        0xbad
    } else {
        log.replayer.tree().digest()
    };
    let mut w = SnapshotWriter::create(&snaps, start, 0x5a).unwrap();
    w.write_block(&out).unwrap();
    let fuzzy = w.finish(cap.trailer(end, digest)).unwrap();
    for _ in 0..10 {
        create(&mut log, &mut digests);
    }
    log.digest(None);
    log.sync();
    Built {
        data,
        digests,
        start,
        end,
        fuzzy,
    }
}

#[test]
fn a_fuzzy_capture_serves_only_zxids_from_its_end_on() {
    let tmp = temp_dir("fuzzy");
    let b = build(tmp.path(), false);
    let dir = DataDir::new(&b.data);
    for z in [b.start, b.start + 1, b.end - 1, b.end, b.end + 3] {
        let r = replay(&dir, Some(z)).unwrap();
        assert_eq!(r.zxid, z);
        assert_eq!(
            r.tree.digest(),
            b.digests[&z],
            "state at {z:#x} from {}",
            r.base.text()
        );
        let uses_fuzzy = matches!(&r.base, Base::Snapshot { path, .. } if *path == b.fuzzy);
        assert_eq!(uses_fuzzy, z >= b.end, "at {z:#x}: {}", r.base.text());
        if z < b.end {
            assert!(
                matches!(r.base, Base::Snapshot { end: 9, .. }),
                "{}",
                r.base.text()
            );
            let why = &r.passed_over.iter().find(|(p, _)| *p == b.fuzzy).unwrap().1;
            assert!(why.contains(&format!("ends at {:#x}", b.end)), "{why}");
        }
    }
    let snap = SnapshotFile::open(&b.fuzzy).unwrap();
    assert_eq!(snap.summary().digest, DigestCheck::Fuzzy);
    let v = validate(&dir).unwrap();
    assert!(v.ok(), "{}", v.text());
    let from_fuzzy = v
        .verdicts
        .iter()
        .find(|x| x.kind == "replay" && x.subject.contains(&b.fuzzy.display().to_string()))
        .unwrap();
    assert!(
        from_fuzzy.detail.contains("2 digests checked"),
        "{}",
        from_fuzzy.detail
    );
}

#[test]
fn a_false_digest_in_a_fuzzy_capture_fails_validation() {
    let tmp = temp_dir("fuzzy-false");
    let b = build(tmp.path(), true);
    let v = validate(&DataDir::new(&b.data)).unwrap();
    assert!(!v.ok(), "{}", v.text());
    assert!(
        v.text()
            .contains(&format!("digest mismatch after zxid {:#x}", b.end)),
        "{}",
        v.text()
    );
}
