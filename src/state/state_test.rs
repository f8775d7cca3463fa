//! The state machine on its own: applying is a pure function of (state, txn) — the same log on
//! two fresh states gives equal states, node for node and in child order — and each txn kind
//! reports the outcome and changes the core turns into replies and watch events.

use super::*;
use crate::testkit::{assert_same_tree, create_txn, dump, Workload};
use palisade_proto::*;

fn txn(zxid: i64, client_id: i64, op: OpCode, body: TxnBody) -> Txn {
    Txn {
        header: TxnHeader {
            client_id,
            cxid: 1,
            zxid,
            time: 1_000 + zxid,
            type_: op.code(),
        },
        body,
    }
}

/// A state that applied a create (without ephemeral owner) for each (zxid, path, parent
/// cversion), in order.
fn state_with(creates: &[(i64, &str, i32)]) -> State {
    let mut s = State::new();
    for (zxid, path, pcv) in creates {
        s.apply(&create(*zxid, path, *pcv, None));
    }
    s
}

fn create(zxid: i64, path: &str, pcv: i32, ephemeral_of: Option<i64>) -> Txn {
    let body = create_txn(path, ephemeral_of.is_some(), pcv);
    txn(zxid, ephemeral_of.unwrap_or(0), OpCode::Create, body)
}

fn delete(zxid: i64, path: &str) -> Txn {
    let body = TxnBody::Delete(DeleteTxn {
        path: JStr::from(path),
    });
    txn(zxid, 0, OpCode::Delete, body)
}

/// (event, path) of each change.
fn changes(e: &Effects<'_>) -> Vec<(EventType, String)> {
    e.changes
        .iter()
        .map(|c| (c.event, c.path.to_string()))
        .collect()
}

#[test]
fn the_same_log_gives_the_same_state_in_every_replica() {
    for seed in 0..50 {
        let w = Workload::run(seed, 300);
        let mut a = State::new();
        let mut b = State::new();
        for t in &w.log {
            a.apply(t);
        }
        // A replica that applies later, on another thread: nothing in apply may depend on
        // when or where it runs.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let log = w.log.clone();
        let b = std::thread::spawn(move || {
            for t in &log {
                b.apply(t);
            }
            b
        })
        .join()
        .unwrap_or_else(|_| panic!("replica thread panicked"));
        assert_same_tree(&format!("seed {seed}"), &a.tree, &b.tree);
        assert_same_tree(&format!("seed {seed} vs live"), &a.tree, w.tree());
        assert_eq!(a.sessions(), b.sessions());
        assert_eq!(a.zxid(), b.zxid());
        // Same history, same child order (what getChildren and the capture walk).
        for path in dump(&a.tree).keys() {
            let kids = |s: &State| -> Vec<String> {
                let id = s.tree.lookup(path).unwrap_or(tree::ROOT);
                s.tree
                    .children(id)
                    .filter_map(|c| s.tree.node(c).map(|n| n.name().to_string()))
                    .collect()
            };
            assert_eq!(kids(&a), kids(&b), "seed {seed}: children of {path}");
        }
    }
}

#[test]
fn create_reports_its_path_stat_and_two_changes() {
    let mut s = State::new();
    let t = create(1, "/a", 1, None);
    let t = t;
    let e = s.apply(&t);
    let o = e.single().cloned();
    assert_eq!(o.as_ref().map(|o| (o.err, o.path)), Some((0, "/a")));
    assert_eq!(o.and_then(|o| o.stat).map(|st| st.czxid), Some(1));
    assert_eq!(
        changes(&e),
        vec![
            (EventType::NodeCreated, "/a".into()),
            (EventType::NodeChildrenChanged, "/".into())
        ]
    );
    assert_eq!(e.session, SessionEffect::None);
    assert_eq!(s.zxid(), 1);
}

#[test]
fn a_replayed_create_only_raises_the_counter_and_changes_nothing_visible() {
    let mut s = state_with(&[(1, "/p", 1), (2, "/p/c", 1)]);
    // The same create again (a replay over a fuzzy snapshot), carrying a higher counter.
    let t = create(3, "/p/c", 5, None);
    let e = s.apply(&t);
    assert_eq!(
        e.single().map(|o| o.err),
        Some(ErrorCode::NodeExists.code())
    );
    assert!(e.changes.is_empty());
    let p = s.tree.lookup("/p").and_then(|id| s.tree.node(id));
    assert_eq!(p.map(|n| (n.child_creates, n.pzxid)), Some((5, 3)));
}

#[test]
fn delete_reports_the_deleted_nodes_acl_then_the_parents_change() {
    let mut s = state_with(&[(1, "/a", 1)]);
    let t = delete(2, "/a");
    let e = s.apply(&t);
    assert_eq!(
        changes(&e),
        vec![
            (EventType::NodeDeleted, "/a".into()),
            (EventType::NodeChildrenChanged, "/".into())
        ]
    );
    assert_eq!(e.changes.first().map(|c| c.acl.len()), Some(1));
    // A delete of a missing node (a replay): NONODE, only the parent's pzxid rises.
    let t = delete(3, "/a");
    let e = s.apply(&t);
    assert_eq!(e.single().map(|o| o.err), Some(ErrorCode::NoNode.code()));
    assert!(e.changes.is_empty());
    assert_eq!(s.tree.stat(tree::ROOT).pzxid, 3);
}

#[test]
fn sessions_open_and_close_with_their_ephemerals() {
    let mut s = State::new();
    let open = TxnBody::CreateSession(CreateSessionTxn { time_out: 5000 });
    let t = txn(1, 7, OpCode::CreateSession, open);
    let e = s.apply(&t);
    assert_eq!(e.session, SessionEffect::Created { timeout: 5000 });
    s.apply(&create(2, "/e", 1, Some(7)));
    assert_eq!(s.tree.ephemerals_of(7).count(), 1);
    let close = TxnBody::CloseSession(CloseSessionTxn {
        paths2_delete: Some(vec![JStr::from("/e")]),
    });
    let t = txn(3, 7, OpCode::CloseSession, close);
    let e = s.apply(&t);
    assert_eq!(e.session, SessionEffect::Closed);
    assert_eq!(
        changes(&e).first(),
        Some(&(EventType::NodeDeleted, "/e".to_string()))
    );
    assert!(s.sessions().is_empty());
    assert_eq!(s.tree.ephemerals_of(7).count(), 0);
}

#[test]
fn a_multi_reports_one_outcome_per_op() {
    let mut s = State::new();
    let ok = TxnBody::Multi(vec![
        create(1, "/m", 1, None).body,
        TxnBody::SetData(SetDataTxn {
            path: JStr::from("/m"),
            data: None,
            version: 1,
        }),
    ]);
    let t = txn(1, 0, OpCode::Multi, ok);
    let e = s.apply(&t);
    let got: Vec<(i32, &str)> = e.outcomes.iter().map(|o| (o.err, o.path)).collect();
    assert_eq!(got, vec![(0, "/m"), (0, "/m")]);
    assert_eq!(
        e.outcomes
            .get(1)
            .and_then(|o| o.stat.clone())
            .map(|s| s.version),
        Some(1)
    );
    // A failed multi is logged as errors: nothing changes.
    let failed = TxnBody::Multi(vec![
        TxnBody::Error(ErrorTxn { err: 0 }),
        TxnBody::Error(ErrorTxn {
            err: ErrorCode::NoNode.code(),
        }),
    ]);
    let before = s.tree.digest();
    let t = txn(2, 0, OpCode::Multi, failed);
    let e = s.apply(&t);
    let errs: Vec<i32> = e.outcomes.iter().map(|o| o.err).collect();
    assert_eq!(errs, vec![0, ErrorCode::NoNode.code()]);
    assert!(e.changes.is_empty());
    assert_eq!(s.tree.digest(), before);
    assert_eq!(s.zxid(), 2, "an error txn still consumes its zxid");
}

#[test]
#[should_panic(expected = "applied after")]
fn applying_out_of_order_stops_the_process() {
    state_with(&[(5, "/a", 1), (5, "/b", 2)]);
}

#[test]
fn a_digest_is_recorded_against_the_zxid_the_state_stands_at() {
    let s = state_with(&[(1, "/a", 1)]);
    assert_eq!(s.digest_after(1), s.tree.digest());
}

#[test]
#[should_panic(expected = "the state stands at")]
fn a_digest_recorded_against_another_zxid_stops_the_process() {
    let s = state_with(&[(1, "/a", 1), (2, "/b", 2)]);
    s.digest_after(1);
}

/// The local configuration write keeps ZooKeeper's values (version -1, the zxid and time
/// given: 0 and the caller's clock today) and leaves the digest alone (`/zookeeper/`).
#[test]
fn the_ensemble_configuration_is_shown_with_the_given_zxid_and_time() {
    let mut s = state_with(&[(1, "/a", 1)]);
    let digest = s.tree.digest();
    s.set_ensemble_config(b"server.1=a:1:2:participant\nversion=0", 0, 1234);
    let id = s.tree.lookup(CONFIG_NODE).unwrap();
    let st = s.tree.stat(id);
    assert_eq!((st.version, st.mzxid, st.mtime), (-1, 0, 1234));
    assert_eq!(st.aversion, -1, "the ACL is left alone");
    let data = s.tree.node(id).and_then(|n| n.data());
    assert_eq!(data, Some(&b"server.1=a:1:2:participant\nversion=0"[..]));
    assert_eq!(s.tree.digest(), digest);
    assert_eq!(s.tree.digest(), s.tree.full_digest());
    // A committed configuration (a txn) may follow it.
    let set = TxnBody::SetData(SetDataTxn {
        path: JStr::from(CONFIG_NODE),
        data: Some(bytes::Bytes::from_static(b"version=200000000")),
        version: -1,
    });
    s.apply(&txn(2, 0, OpCode::SetData, set));
    assert_eq!(s.tree.stat(id).mzxid, 2);
}

#[test]
#[should_panic(expected = "past the state's")]
fn an_ensemble_configuration_from_the_future_stops_the_process() {
    let mut s = state_with(&[(1, "/a", 1)]);
    s.set_ensemble_config(b"version=0", 2, 0);
}
