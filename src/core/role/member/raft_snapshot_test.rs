//! The core's Raft snapshot is fuzzy: asking for one returns at once, the capture advances a
//! bounded step per turn while committed txns keep applying, and the image it answers with
//! (capture + the txns applied meanwhile) installs on another member as exactly the state the
//! first one had when the capture ended — across an epoch change, with deletes and sets of
//! nodes already captured and creates of nodes not yet reached.

use super::*;
use crate::core::member::{Committed, LogPos};
use crate::core::token::Token;
use crate::core::Input;
use crate::limits::SNAPSHOT_STEP;
use palisade_proto::*;

fn member(myid: u64) -> Core {
    member_asking(myid, 100_000)
}

/// A member with this snapCount (what it asks Raft for is in its outbox: `asks`).
fn member_asking(myid: u64, snap_count: u64) -> Core {
    let mut core = Core::new(crate::core::testkit::cfg());
    core.join(crate::core::testkit::links(myid, snap_count, Vec::new()));
    core
}

/// How many snapshots the member asked Raft for since the last look.
fn asks(core: &mut Core) -> usize {
    core.take_work().snapshot_asks
}

fn txn(zxid: i64, op: OpCode, body: TxnBody) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: 0,
            cxid: 1,
            zxid,
            time: 1_000,
            type_: op.code(),
        },
        body,
    }
}

fn create(zxid: i64, path: &str, pcv: i32) -> Txn {
    let body = TxnBody::Create(CreateTxn {
        path: JStr::from(path),
        data: Some(bytes::Bytes::from_static(b"d")),
        acl: Some(vec![ACL {
            perms: 31,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }]),
        ephemeral: false,
        parent_c_version: pcv,
    });
    txn(zxid, OpCode::Create, body)
}

fn commit(core: &mut Core, txns: Vec<Txn>, index: u64) {
    commit_sized(core, txns, index, 0);
}

/// `commit`, with the entries' size in the log.
fn commit_sized(core: &mut Core, txns: Vec<Txn>, index: u64, log_bytes: u64) {
    let ack = Token::detached(0);
    let items = txns.into_iter().map(Committed::Txn).collect();
    let at = Some(LogPos {
        term: 1,
        node: 1,
        index,
    });
    assert!(!core.handle(Input::Committed {
        items,
        at,
        log_bytes,
        ack,
    }));
}

#[test]
fn a_raft_snapshot_is_captured_between_batches_and_installs_as_the_state_it_ends_at() {
    let mut a = member(1);
    let n = (3 * SNAPSHOT_STEP) as i64;
    let epoch1 = 1i64 << 32;
    let mut z = epoch1;
    let mut batch = vec![create(z + 1, "/t", 1)];
    z += 1;
    for i in 0..n {
        z += 1;
        batch.push(create(z, &format!("/t/c{i:05}"), i as i32 + 1));
    }
    commit(&mut a, batch, 10);

    assert!(!a.handle(Input::Image(Token::detached(9))));
    assert!(
        a.capturing(),
        "the capture is in progress, not done in one go"
    );
    a.raft_snapshot_step();
    assert!(
        a.answer_to::<crate::seam::Image>(9).is_none(),
        "a tree of {n} nodes takes more than one step"
    );

    // Writes go on meanwhile, in a new epoch: a delete and a set of captured nodes, creates
    // past the walk's position.
    let epoch2 = 2i64 << 32;
    let during = vec![
        txn(
            epoch2 + 1,
            OpCode::Delete,
            TxnBody::Delete(DeleteTxn {
                path: JStr::from("/t/c00000"),
            }),
        ),
        txn(
            epoch2 + 2,
            OpCode::SetData,
            TxnBody::SetData(SetDataTxn {
                path: JStr::from("/t/c00001"),
                data: Some(bytes::Bytes::from_static(b"new")),
                version: 1,
            }),
        ),
        create(epoch2 + 3, "/t/zz", n as i32 + 2),
    ];
    commit(&mut a, during, 20);
    let (image, at) = a
        .raft_snapshot_within(9, 1000)
        .expect("the capture never finished");
    assert!(!a.capturing());
    assert_eq!(
        at.map(|p| p.index),
        Some(20),
        "the image stands after the last batch"
    );

    let mut b = member(2);
    b.install(&image, at).expect("the image installs");
    assert_eq!(b.state.zxid(), epoch2 + 3);
    assert_eq!(b.state.tree.digest(), a.state.tree.digest());
    assert_eq!(b.state.tree.znode_count(), a.state.tree.znode_count());
    let t = &b.state.tree;
    let c1 = t
        .lookup("/t/c00001")
        .and_then(|id| t.node(id))
        .expect("a set node");
    assert_eq!(c1.data(), Some(&b"new"[..]));
    assert!(t.lookup("/t/c00000").is_none());
    assert!(t.lookup("/t/zz").is_some());
}

#[test]
fn a_damaged_image_is_refused_and_the_state_is_kept() {
    let mut a = member(1);
    commit(&mut a, vec![create((1 << 32) + 1, "/x", 1)], 3);
    a.handle(Input::Image(Token::detached(9)));
    let (mut image, at) = a.raft_snapshot_within(9, 1000).expect("the image");
    let mut b = member(2);
    commit(&mut b, vec![create((1 << 32) + 1, "/mine", 1)], 3);
    let len = image.len();
    image.truncate(len - 3);
    assert!(b.install(&image, at).is_err());
    image.clear();
    assert!(b.install(&image, at).is_err());
    assert!(b.install(&[9, 1, 2], at).is_err());
    assert!(
        b.state.tree.lookup("/mine").is_some(),
        "a refused image changes nothing"
    );
}

#[test]
fn a_member_asks_raft_for_a_snapshot_by_txns_applied_and_on_csnp() {
    let mut a = member_asking(1, 10);
    let mut z = 1i64 << 32;
    let mut count = 0;
    let mut pcv = 0;
    // snapCount 10: one request within every 5..10 txns
    for batch in 0..6 {
        let txns = (0..5)
            .map(|_| {
                z += 1;
                pcv += 1;
                create(z, &format!("/n{pcv}"), pcv)
            })
            .collect();
        commit(&mut a, txns, batch);
        count += asks(&mut a);
    }
    assert!(
        (3..=6).contains(&count),
        "30 txns, snapCount 10: {count} requests"
    );
    assert_eq!(a.ask_raft_snapshot(), Some(z), "csnp asks at once");
    assert_eq!(
        a.ask_raft_snapshot(),
        Some(z),
        "a csnp while an ask waits joins it (RAFT_SNAPSHOT_ASKS)"
    );
    assert_eq!(asks(&mut a), 1, "one ask waits at most");
}

#[test]
fn after_a_snapshot_the_next_waits_for_a_log_as_large_as_its_image() {
    let mut a = member_asking(1, 10);
    let mut z = 1i64 << 32;
    let mut creates = |n: usize| -> Vec<Txn> {
        (0..n)
            .map(|_| {
                z += 1;
                let k = (z - (1i64 << 32)) as i32;
                create(z, &format!("/n{k}"), k)
            })
            .collect()
    };
    // No image yet: snapCount alone decides, whatever the log's size.
    commit_sized(&mut a, creates(10), 1, 0);
    assert!(asks(&mut a) > 0, "10 txns, snapCount 10");

    a.handle(Input::Image(Token::detached(9)));
    let (image, _) = a.raft_snapshot_within(9, 1000).expect("the image");
    let image_bytes = image.len() as u64;
    assert!(
        image_bytes > 100,
        "an image of 10 nodes: {image_bytes} bytes"
    );

    // Three snapCounts' worth of txns whose log is smaller than the image: no snapshot.
    for i in 0..3 {
        commit_sized(&mut a, creates(10), 2 + i, image_bytes / 4);
        assert!(
            asks(&mut a) == 0,
            "{} txns, {} of {image_bytes} log bytes",
            10 * (i + 1),
            (i + 1) * (image_bytes / 4)
        );
    }
    // The log reaches the image's size: the next is asked for.
    commit_sized(&mut a, creates(1), 5, image_bytes - 3 * (image_bytes / 4));
    assert_eq!(asks(&mut a), 1, "a log as large as the image");
    // And the count starts again from there, bytes and txns both.
    commit_sized(&mut a, creates(10), 6, 1);
    assert_eq!(asks(&mut a), 0, "the bytes start again from zero");
    assert_eq!(
        a.ask_raft_snapshot(),
        Some(z),
        "csnp asks at once, floor or not"
    );
}
