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
        let w = Workload::run(seed, 1500);
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
        let mut w = Workload::run(seed, 800);
        let m = w.zxid();
        let zk = export::to_zk(&w.state);
        w.steps(800);
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
        let (s, state) = import::read(tmp.path(), None, None).unwrap();
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
        let e = import::read(tmp.path(), None, None).err().unwrap();
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
    use palisade_proto::{CreateTxn, Txn, TxnBody, TxnHeader};
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
        acl: crate::testkit::open_acl(),
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
    let (tmp, v2) = snapshot_dir(&zk);
    let mut lb = BytesMut::new();
    zklog::encode_log_header(&mut lb);
    zklog::encode_entry(&mut lb, &t1, None);
    zklog::encode_entry(&mut lb, &t2, None);
    std::fs::write(v2.join(dir::log_name(1)), &lb).unwrap();
    let (_, imported) = import::read(tmp.path(), None, None).unwrap();
    let id = imported.tree.lookup("/app").unwrap();
    let n = imported.tree.node(id).unwrap();
    assert_eq!(
        (n.child_creates, n.pzxid),
        (1, 2),
        "the next suffix must be 1, not a reused 0"
    );
    assert_same_tree("create2 gap", &imported.tree, &state.tree);
}

/// A ZooKeeper data dir holding `zk` as its snapshot at zxid 1; its version-2 folder.
fn snapshot_dir(zk: &palisade_zkdisk::ZkSnapshot) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let v2 = tmp.path().join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(v2.join(dir::snapshot_name(1)), snap::encode_snapshot(zk)).unwrap();
    (tmp, v2)
}

// --- a hostile or damaged ZooKeeper data dir: the server's own rules (issue 37) -------------

mod hostile {
    use super::super::{export, import};
    use bytes::BytesMut;
    use palisade_proto::{CreateSessionTxn, DeleteTxn, SetDataTxn, Txn, TxnBody, TxnHeader};
    use palisade_zkdisk::{dir, log as zklog, ZkNode, ZkSnapshot};

    const SESSION: i64 = 0x100_0000_0000_0001;

    fn txn(zxid: i64, body: TxnBody) -> Txn {
        Txn {
            header: TxnHeader {
                client_id: SESSION,
                cxid: 1,
                zxid,
                time: 1_000 + zxid,
                type_: body.op_code().code(),
            },
            body,
        }
    }

    fn create(path: &str, ephemeral: bool) -> TxnBody {
        crate::testkit::create_txn(path, ephemeral, 1)
    }

    fn delete(path: &str) -> TxnBody {
        TxnBody::Delete(DeleteTxn { path: path.into() })
    }

    /// A data dir with a snapshot at zxid 1 (after a createSession; optionally edited) and a
    /// log of `bodies` from zxid 2. Returns it and the log's entry offsets.
    fn data_dir(
        edit: impl FnOnce(&mut ZkSnapshot),
        bodies: Vec<TxnBody>,
    ) -> (tempfile::TempDir, Vec<u64>) {
        let mut state = crate::state::State::new();
        state.apply(&txn(
            1,
            TxnBody::CreateSession(CreateSessionTxn { time_out: 30_000 }),
        ));
        let mut zk = export::to_zk(&state);
        zk.digest = None;
        edit(&mut zk);
        let (tmp, v2) = super::snapshot_dir(&zk);
        let mut lb = BytesMut::new();
        zklog::encode_log_header(&mut lb);
        let mut offsets = Vec::new();
        for (i, b) in bodies.into_iter().enumerate() {
            offsets.push(lb.len() as u64);
            zklog::encode_entry(&mut lb, &txn(i as i64 + 2, b), None);
        }
        zklog::pad(&mut lb, 100);
        std::fs::write(v2.join(dir::log_name(2)), &lb).unwrap();
        (tmp, offsets)
    }

    /// The import of `dir` is refused with a message holding each of `wants`.
    fn assert_refused(dir: &tempfile::TempDir, wants: &[&str]) {
        match import::read(dir.path(), None, None) {
            Ok(_) => panic!("imported"),
            Err(e) => assert!(wants.iter().all(|w| e.contains(w)), "{e}: wanted {wants:?}"),
        }
    }

    /// A data dir whose snapshot holds these nodes too, each (path, ephemeral owner), made
    /// like the root, and an empty log.
    fn snapshot_with(nodes: &[(&str, i64)]) -> tempfile::TempDir {
        let (d, _) = data_dir(
            |zk| {
                for (path, owner) in nodes {
                    let n = node(path, *owner, &zk.nodes[0]);
                    zk.nodes.push(n);
                }
            },
            vec![],
        );
        d
    }

    fn node(path: &str, owner: i64, like: &ZkNode) -> ZkNode {
        let mut n = like.clone();
        n.path = path.into();
        n.node.stat.ephemeral_owner = owner;
        n
    }

    #[test]
    fn a_logged_create_of_a_path_ending_in_a_slash_is_refused_with_file_and_offset() {
        // Before: imported (exit 0) as a node named "", on which the server refused to start.
        let (d, at) = data_dir(|_| {}, vec![create("/a", false), create("/a/", false)]);
        let want = format!("log.2: at byte {}: zxid 0x3: create of \"/a/\"", at[1]);
        assert_refused(&d, &[&want]);
    }

    #[test]
    fn a_logged_delete_of_the_root_is_refused_not_a_panic() {
        // Before: state/tree's apply_delete asserted (a panic, exit 101).
        for root in ["/", "/zookeeper", "/zookeeper/quota"] {
            let (d, at) = data_dir(|zk| zk.nodes.truncate(1), vec![delete(root)]);
            let want = format!("at byte {}: zxid 0x2: delete of \"{root}\"", at[0]);
            assert_refused(&d, &[&want]);
        }
    }

    #[test]
    fn nodes_named_dot_and_dot_dot_are_refused_in_the_log_and_in_the_snapshot() {
        for bad in ["/.", "/..", "/a/./b", "/x\u{1}"] {
            let (d, _) = data_dir(|_| {}, vec![create("/a", false), create(bad, false)]);
            assert_refused(&d, &["not a valid path"]);
            let set = TxnBody::SetData(SetDataTxn {
                path: bad.into(),
                data: None,
                version: 0,
            });
            let (d, _) = data_dir(|_| {}, vec![set]);
            assert_refused(&d, &["setData of"]);
        }
        for bad in ["/.", "/.."] {
            let want = format!("{bad:?}: not a valid path");
            assert_refused(&snapshot_with(&[(bad, 0)]), &["snapshot.1: at byte", &want]);
        }
    }

    #[test]
    fn an_ephemeral_with_a_child_is_refused_from_the_log_and_from_the_snapshot() {
        let (d, at) = data_dir(|_| {}, vec![create("/e", true), create("/e/c", false)]);
        let want = format!(
            "log.2: at byte {}: zxid 0x3: \"/e/c\" is a child of the ephemeral node \"/e\"",
            at[1]
        );
        assert_refused(&d, &[&want]);
        let d = snapshot_with(&[("/e", SESSION), ("/e/c", 0)]);
        let child = "\"/e/c\": a child of an ephemeral node";
        assert_refused(&d, &["snapshot.1: at byte", child]);
        // Passing through such a state and out of it, as a replay over a fuzzy snapshot may,
        // is not refused: only the tree the replay ends with must keep the rule.
        let (d, _) = data_dir(
            |_| {},
            vec![create("/e", true), create("/e/c", false), delete("/e/c")],
        );
        let (_, state) = import::read(d.path(), None, None).unwrap();
        assert!(state.tree.lookup("/e").is_some() && state.tree.lookup("/e/c").is_none());
    }

    /// Hostile txns of every kind, each alone in a log: refused or imported, never a panic; and
    /// what is imported, the server starts on (its snapshot loads through recovery's loader).
    #[test]
    fn every_hostile_txn_is_refused_or_imports_to_a_data_dir_the_server_loads() {
        let paths = [
            "",
            "/",
            "//",
            "/a/",
            "/a//b",
            "/.",
            "/..",
            "/zookeeper",
            "/zookeeper/config",
            "/zookeeper/quota",
            "/a",
            "/a/b",
            "/\u{0}",
            "/\u{fff0}",
        ];
        let mut cases = Vec::new();
        for p in paths {
            cases.push(vec![create(p, false)]);
            cases.push(vec![create(p, true)]);
            cases.push(vec![create("/a", false), delete(p)]);
            cases.push(vec![create("/a", true), create(p, false)]);
            cases.push(vec![TxnBody::Multi(vec![create("/m", false), delete(p)])]);
        }
        for (i, bodies) in cases.into_iter().enumerate() {
            let (d, _) = data_dir(|_| {}, bodies.clone());
            let Ok((_, state)) = import::read(d.path(), None, None) else {
                continue;
            };
            let out = tempfile::tempdir().unwrap();
            let data = out.path().join("data");
            import::write_palisade(&state, &data).unwrap();
            let snaps = data.join("snapshots");
            let file = std::fs::read_dir(&snaps)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            let s = palisade_snapshot::Snapshot::open(&file).unwrap();
            crate::durability::recovery::Replayer::from_snapshot(&s)
                .unwrap_or_else(|e| panic!("case {i} {bodies:?}: the server would refuse: {e}"));
        }
    }
}
