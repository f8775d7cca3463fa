//! The observer's data dir through the mirror, as the link drives it: what was applied and
//! synced survives a drop without `finish` (a kill -9), across an epoch change, snapshots and
//! purges; TRUNC cuts back to the exact tree the mirror had at that zxid, or empties the data
//! dir when it cannot.

use super::*;
use crate::migrate::observe::mirror::{Failure, Mirror};
use bytes::Bytes;
use palisade_proto::{CreateTxn, JStr, Txn, TxnBody, TxnHeader};
use palisade_zab::TxnEntry;
use palisade_zkdisk::Quirk;
use std::collections::BTreeMap;

fn z(epoch: i64, n: i64) -> i64 {
    (epoch << 32) | n
}

/// A create of `path` at `zxid`, its data the path (also link_test's).
pub(in crate::migrate::observe) fn create(zxid: i64, path: &str) -> TxnEntry {
    TxnEntry {
        txn: Txn {
            header: TxnHeader {
                client_id: 0,
                cxid: 0,
                zxid,
                time: 1_700_000_000_000,
                type_: 1,
            },
            body: TxnBody::Create(CreateTxn {
                path: JStr::from(path),
                data: Some(Bytes::from(path.to_string())),
                acl: crate::testkit::open_acl(),
                ephemeral: false,
                parent_c_version: 1,
            }),
        },
        digest: None,
        quirk: Quirk::None,
    }
}

/// Small segments so purges happen; a snapshot every `every` txns.
fn open(dir: &Path, every: u64) -> Mirror {
    let o = Store::open(
        dir,
        StoreConfig {
            snapshot_every: every,
            segment_bytes: 4096,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Mirror::durable(o.store, o.state)
}

/// A mirror opened (as `open`) in a data dir `obs` inside a fresh temporary directory.
fn fresh(every: u64) -> (tempfile::TempDir, std::path::PathBuf, Mirror) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("obs");
    let m = open(&dir, every);
    (tmp, dir, m)
}

/// The log's segment files in the data dir `dir`.
fn log_segments(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("log"))
        .unwrap()
        .flatten()
        .filter(|e| palisade_wal::is_segment_file_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect()
}

fn at(m: &Mirror) -> (i64, u64) {
    let s = m.state().unwrap_or_else(|| panic!("no state"));
    (s.zxid(), s.tree.digest())
}

/// Applies `n` creates of epoch `epoch` from counter `from`, syncing after each (as the link
/// does after each batch); the (zxid, digest) after each.
fn apply(m: &mut Mirror, epoch: i64, from: i64, n: i64, tag: &str) -> BTreeMap<i64, u64> {
    let mut seen = BTreeMap::new();
    for c in from..from + n {
        m.apply(create(z(epoch, c), &format!("/{tag}{c}")))
            .unwrap_or_else(|e| panic!("{e}"));
        m.sync((epoch, epoch)).unwrap_or_else(|e| panic!("{e}"));
        let (zx, d) = at(m);
        seen.insert(zx, d);
    }
    seen
}

fn snapshots(dir: &Path) -> Vec<i64> {
    palisade_snapshot::list(&dir.join("snapshots"))
        .unwrap_or_default()
        .into_iter()
        .map(|(z, _)| z)
        .collect()
}

#[test]
fn what_was_applied_survives_a_kill_across_an_epoch_change_snapshots_and_purges() {
    let (_tmp, dir, mut m) = fresh(5);
    assert!(m.state().is_none());
    apply(&mut m, 1, 1, 40, "a");
    // A new epoch: the zxids jump, which a standalone log cannot take; the store starts over
    // from a snapshot there.
    apply(&mut m, 2, 1, 12, "b");
    let want = at(&m);
    drop(m); // no finish: as a kill -9 after the last batch's sync
    let o = Store::open(&dir, StoreConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.store.epochs(), (2, 2));
    let m = Mirror::durable(o.store, o.state);
    assert_eq!(at(&m), want);
    let kept = snapshots(&dir);
    assert!(
        !kept.is_empty() && kept.len() <= OBSERVER_SNAPSHOTS_KEPT,
        "{kept:?}"
    );
    // The log before the older kept snapshot was purged (4 KiB segments).
    let segments = log_segments(&dir).len();
    assert!(segments < 10, "{segments} segments kept");
}

#[test]
fn trunc_rebuilds_the_tree_the_mirror_had_at_that_zxid() {
    let (_tmp, dir, mut m) = fresh(4);
    // Snapshots at 1 (the first txn), 5, 9, 13; the two newest kept.
    let seen = apply(&mut m, 1, 1, 15, "a");
    assert_eq!(snapshots(&dir), [z(1, 13), z(1, 9)]);
    // Into the log after the newest snapshot, then before it (that snapshot goes too).
    for cut in [z(1, 14), z(1, 11)] {
        m.truncate(cut).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(at(&m), (cut, seen[&cut]), "TRUNC to {cut:#x}");
    }
    assert_eq!(snapshots(&dir), [z(1, 9)]);
    // The log goes on from the cut, other txns than before, and survives a reopen.
    apply(&mut m, 1, 12, 3, "other");
    let want = at(&m);
    assert_ne!(want.1, seen[&z(1, 14)]);
    drop(m);
    let m = open(&dir, 4);
    assert_eq!(at(&m), want);
    assert_eq!(want.0, z(1, 14));
}

#[test]
fn trunc_before_everything_kept_empties_the_data_dir_for_a_snap() {
    let (_tmp, dir, mut m) = fresh(3);
    apply(&mut m, 1, 1, 30, "a");
    let r = m.truncate(z(1, 2));
    assert!(matches!(r, Err(Failure::Diverged(_))), "{r:?}");
    assert!(m.state().is_none());
    drop(m);
    let m = open(&dir, 3);
    assert!(
        m.state().is_none(),
        "nothing to recover: the next sync is a SNAP"
    );
}

#[test]
fn a_data_dir_that_does_not_recover_is_emptied_and_a_foreign_one_refused() {
    let (tmp, dir, mut m) = fresh(1000);
    apply(&mut m, 1, 1, 5, "a");
    drop(m);
    // The log lost: the snapshot of the first txn cannot be brought to where the log was.
    for segment in log_segments(&dir) {
        std::fs::remove_file(segment).unwrap();
    }
    let m = open(&dir, 1000);
    assert!(m.state().is_none());
    assert!(snapshots(&dir).is_empty());

    let other = tmp.path().join("server");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("identity"), b"x").unwrap();
    let err = Store::open(&other, StoreConfig::default())
        .err()
        .unwrap_or_default();
    assert!(err.contains("not an observer's data dir"), "{err}");
}
