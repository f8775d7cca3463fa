//! The migration's two halves against each other, on seeded workloads of every txn kind
//! (testkit::Workload). Real ZooKeeper files: tests/migration/roundtrip.py.

use super::{export, import, zktree};
use crate::testkit::{assert_same_tree, Workload};
use bytes::BytesMut;
use palisade_proto::TxnDigest;
use palisade_zkdisk::{dir, log as zklog, snap};
use std::path::Path;

#[test]
fn a_tree_exported_and_read_back_is_the_same_tree_with_the_same_digest() {
    for seed in 1..=5 {
        let mut w = Workload::new(seed);
        for _ in 0..1500 {
            w.step();
        }
        let zk = export::to_zk(&w.state);
        let bytes = snap::encode_snapshot(&zk);
        let back = snap::decode_snapshot(bytes, Path::new("snapshot")).unwrap();
        assert_eq!(back, zk);
        let tree = zktree::load(&back).unwrap();
        assert_same_tree(&format!("seed {seed}"), &tree, w.tree());
        let sessions: Vec<(i64, i32)> = back.sessions.iter().map(|s| (s.id, s.timeout)).collect();
        let want: Vec<(i64, i32)> = w.sessions().iter().map(|(&i, &t)| (i, t)).collect();
        assert_eq!(sessions, want);
        assert_eq!(back.digest.unwrap().digest, zktree::zk_digest(&tree));
    }
}

/// ZooKeeper's snapshots are fuzzy: the file named for zxid K holds effects of txns after K.
/// A snapshot of the state at M, named K < M, plus the log from K+1 must import as the state
/// at the log's end (raise-only replay), with the snapshot's digest (recorded at M) and the
/// last txn's checked.
#[test]
fn import_replays_the_log_over_a_fuzzy_snapshot() {
    for seed in 1..=5 {
        let mut w = Workload::new(seed);
        for _ in 0..800 {
            w.step();
        }
        let m = w.zxid();
        let zk = export::to_zk(&w.state);
        for _ in 0..800 {
            w.step();
        }
        let k = m - 40;
        let tmp = tempfile::tempdir().unwrap();
        let v2 = tmp.path().join("version-2");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(v2.join(dir::snapshot_name(k)), snap::encode_snapshot(&zk)).unwrap();
        let mut lb = BytesMut::new();
        zklog::encode_log_header(&mut lb);
        let txns: Vec<_> = w.log.iter().filter(|t| t.header.zxid > k).collect();
        let last = w.zxid();
        for t in &txns {
            let d = (t.header.zxid == last).then(|| TxnDigest {
                version: 2,
                tree_digest: zktree::zk_digest(w.tree()),
            });
            zklog::encode_entry(&mut lb, t, d.as_ref());
        }
        zklog::pad(&mut lb, 1000);
        std::fs::write(v2.join(dir::log_name(k + 1)), &lb).unwrap();
        let (s, state) = import::read(tmp.path(), None).unwrap();
        assert_eq!(state.zxid(), last, "seed {seed}");
        assert_same_tree(&format!("seed {seed}"), &state.tree, w.tree());
        assert_eq!(state.sessions(), w.sessions());
        assert!(
            s.digests_checked >= 2,
            "seed {seed}: {} digests checked",
            s.digests_checked
        );

        // The same files with one txn of the log missing: refused, naming the file.
        let mut gap = BytesMut::new();
        zklog::encode_log_header(&mut gap);
        for t in txns.iter().filter(|t| t.header.zxid != m + 5) {
            zklog::encode_entry(&mut gap, t, None);
        }
        std::fs::write(v2.join(dir::log_name(k + 1)), &gap).unwrap();
        let e = import::read(tmp.path(), None).err().unwrap();
        assert!(e.contains("missing") && e.contains("log."), "{e}");
    }
}
