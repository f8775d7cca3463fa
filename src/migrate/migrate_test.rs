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

/// The create2 gap: ZooKeeper 3.8's own replay repairs the parent's counter of a create whose
/// node the fuzzy snapshot already holds (DataTree.processTxn: `header.getType() ==
/// OpCode.create && rc.err == NODEEXISTS` → setCversionPzxid) only for opcode create, not
/// create2, createContainer or createTTL, so after a restart its next sequential child can
/// reuse a suffix.
/// The import raises the counter for every create kind.
#[test]
fn a_create2_already_in_the_fuzzy_snapshot_still_raises_the_parents_counter() {
    use palisade_proto::{CreateTxn, Id, Txn, TxnBody, TxnHeader, ACL};
    let acl = Some(vec![ACL {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]);
    let txn = |zxid: i64, body: TxnBody| Txn {
        header: TxnHeader {
            client_id: 0,
            cxid: 1,
            zxid,
            time: 1_000 + zxid,
            type_: body.op_code().code(),
        },
        body,
    };
    let create = |path: &str, pcv: i32| CreateTxn {
        path: path.into(),
        data: None,
        acl: acl.clone(),
        ephemeral: false,
        parent_c_version: pcv,
    };
    let t1 = txn(1, TxnBody::Create(create("/app", 1)));
    let t2 = txn(2, TxnBody::Create2(create("/app/s-0000000000", 1)));
    let mut state = crate::state::State::new();
    state.apply(&t1);
    state.apply(&t2);
    // The capture began at zxid 1 and saw /app before the create2 (counter 0, pzxid 1) but
    // its child after it.
    let mut zk = export::to_zk(&state);
    let app = zk.nodes.iter_mut().find(|n| n.path == "/app").unwrap();
    app.node.stat.cversion = 0;
    app.node.stat.pzxid = 1;
    zk.digest = None;
    let tmp = tempfile::tempdir().unwrap();
    let v2 = tmp.path().join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(v2.join(dir::snapshot_name(1)), snap::encode_snapshot(&zk)).unwrap();
    let mut lb = BytesMut::new();
    zklog::encode_log_header(&mut lb);
    zklog::encode_entry(&mut lb, &t1, None);
    zklog::encode_entry(&mut lb, &t2, None);
    std::fs::write(v2.join(dir::log_name(1)), &lb).unwrap();
    let (_, imported) = import::read(tmp.path(), None).unwrap();
    let id = imported.tree.lookup("/app").unwrap();
    let n = imported.tree.node(id).unwrap();
    assert_eq!(
        (n.child_creates, n.pzxid),
        (1, 2),
        "the next suffix must be 1, not a reused 0"
    );
    assert_same_tree("create2 gap", &imported.tree, &state.tree);
}
