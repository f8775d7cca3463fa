//! The apply side of an online ensemble restore, on two cores as members with the test as
//! their consensus (member_test.rs `Pair`): a restore posted to the follower goes to the
//! leader, whose chunk and commit entries both members apply into the same state; chunks
//! then an abort leave the live state; a Raft snapshot asked for while a restore is
//! half-spooled waits for the outcome and then holds it; a new leader aborts a restore its
//! predecessor left half-spooled.

use crate::core::admin::Query;
use crate::core::member::tests::{node_with, role, Pair};
use crate::core::member::{Committed, Proposed};
use crate::core::token::Token;
use crate::core::Input;
use crate::seam::RestorePart;
use crate::testkit::Workload;

/// Two members whose live state is a workload's 600 txns; the backup is its state after 200.
fn live_pair_and_backup() -> (Pair, bytes::Bytes, i64) {
    let mut p = Pair::of(
        1,
        [
            node_with(1, crate::core::testkit::cfg(), Vec::new()),
            node_with(2, crate::core::testkit::cfg(), Vec::new()),
        ],
    );
    let mut w = Workload::new(11);
    for _ in 0..200 {
        w.step();
    }
    let stream = crate::backup::stream::encode(&w.state);
    let backup_zxid = w.zxid();
    for _ in 0..400 {
        w.step();
    }
    for n in p.nodes.iter_mut() {
        let ack = Token::detached(0);
        let items = w.log.iter().cloned().map(Committed::Txn).collect();
        assert!(!n.core.handle(Input::Committed {
            items,
            at: None,
            log_bytes: 0,
            ack,
        }));
    }
    assert_eq!(p.nodes[0].core.state.zxid(), w.zxid());
    // The workload wrote its own data to /zookeeper/config; the members show theirs.
    for n in p.nodes.iter_mut() {
        n.core.reload_config();
    }
    (p, stream, backup_zxid)
}

fn post(p: &mut Pair, on: usize, stream: &bytes::Bytes, zxid: i64) {
    let state = crate::migrate::import::from_stream(stream.clone(), zxid).expect("stream");
    p.nodes[on].core.handle(Input::Admin(Query::Restore {
        state: Box::new(state),
        stream: (stream.clone(), zxid),
        reply: Token::detached(RESTORE),
    }));
}

/// The token of a posted restore (`post`).
const RESTORE: u64 = 3;

/// Applies `part` on member `i` as the entry of term 1.
fn apply(p: &mut Pair, i: usize, part: RestorePart) {
    let ack = Token::detached(0);
    assert!(!p.nodes[i].core.handle(Input::Committed {
        items: vec![Committed::Restore { part, term: 1 }],
        at: None,
        log_bytes: 0,
        ack,
    }));
}

#[test]
fn a_restore_posted_to_a_follower_gives_both_members_the_backups_state() {
    let (mut p, stream, backup_zxid) = live_pair_and_backup();
    let live_zxid = p.nodes[0].core.state.zxid();
    let live_config =
        crate::testkit::dump(&p.nodes[0].core.state.tree)[crate::state::CONFIG_NODE].clone();
    let live_creates: Vec<(String, i32)> = {
        let t = &p.nodes[0].core.state.tree;
        crate::testkit::dump(t)
            .into_iter()
            .map(|(path, n)| (path, n.c))
            .collect()
    };
    post(&mut p, 1, &stream, backup_zxid);
    p.settle();
    let zxid = p.nodes[1]
        .core
        .answer_to::<Result<i64, String>>(RESTORE)
        .expect("answered")
        .expect("restored");
    assert!(zxid > live_zxid && zxid > backup_zxid, "{zxid:#x}");
    assert_eq!(zxid >> 32, 1, "the restored zxid is in the term's epoch");
    let want = crate::migrate::import::from_stream(stream, backup_zxid).unwrap();
    for n in &p.nodes {
        let s = &n.core.state;
        assert_eq!(s.zxid(), zxid);
        assert!(!n.core.restoring(), "the member serves again");
        assert_eq!(s.sessions(), want.sessions());
        // Every node is the backup's, with the larger count of child creations.
        let got = crate::testkit::dump(&s.tree);
        let backup = crate::testkit::dump(&want.tree);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            backup.keys().collect::<Vec<_>>()
        );
        // The configuration node is the ensemble's, not the backup's.
        assert_eq!(got[crate::state::CONFIG_NODE].data, live_config.data);
        assert_ne!(
            got[crate::state::CONFIG_NODE].data,
            backup[crate::state::CONFIG_NODE].data
        );
        for (path, b) in &backup {
            if path == crate::state::CONFIG_NODE {
                continue;
            }
            let g = &got[path];
            assert_eq!((&g.data, g.stat.mzxid), (&b.data, b.stat.mzxid), "{path}");
            let live = live_creates.iter().find(|(p, _)| p == path).map(|x| x.1);
            assert_eq!(g.c, live.map_or(b.c, |l| l.max(b.c)), "{path}");
        }
    }
    assert_eq!(
        p.nodes[0].core.state.tree.digest(),
        p.nodes[1].core.state.tree.digest()
    );
    // The leader writes on past the restored zxid (a new session), and both members apply it.
    let _c = crate::core::member::tests::connect(&mut p.nodes[0], 77, 0, [0; 16]);
    let stopped = p.settle();
    assert_eq!(stopped, [false, false]);
    for n in &p.nodes {
        assert_eq!(n.core.state.zxid(), zxid + 1);
    }
}

#[test]
fn chunks_then_an_abort_leave_the_live_state_and_a_snapshot_waits_for_the_outcome() {
    let (mut p, stream, backup_zxid) = live_pair_and_backup();
    let live = p.nodes[1].core.state.tree.digest();
    let live_zxid = p.nodes[1].core.state.zxid();
    let half = stream.len() / 2;
    apply(
        &mut p,
        1,
        RestorePart::Chunk {
            id: 5,
            seq: 0,
            bytes: stream.slice(..half),
        },
    );
    assert!(p.nodes[1].core.restoring(), "no client is served meanwhile");
    p.nodes[1].core.handle(Input::Image(Token::detached(9)));
    assert!(
        p.nodes[1].core.raft_snapshot_within(9, 10).is_none(),
        "a snapshot was taken while a restore was half-spooled"
    );
    apply(
        &mut p,
        1,
        RestorePart::Abort {
            id: 5,
            why: "test".into(),
        },
    );
    assert!(!p.nodes[1].core.restoring());
    assert_eq!(p.nodes[1].core.state.tree.digest(), live);
    assert_eq!(p.nodes[1].core.state.zxid(), live_zxid);
    // The snapshot is taken now, of the live state.
    let got = p.nodes[1].core.raft_snapshot_within(9, 1000);
    let (bytes, _) = got.expect("the snapshot is taken once the restore is aborted");
    let (_, state) = super::super::raft_snapshot::decode(&bytes).unwrap();
    assert_eq!(state.tree.digest(), live);
    // A stale commit of the aborted restore does nothing.
    apply(
        &mut p,
        1,
        RestorePart::Commit {
            id: 5,
            chunks: 1,
            len: half as u64,
            crc: crc32fast::hash(&stream[..half]),
            zxid: backup_zxid,
        },
    );
    assert_eq!(p.nodes[1].core.state.zxid(), live_zxid);
}

#[test]
fn a_snapshot_asked_for_mid_restore_holds_the_restored_state() {
    let (mut p, stream, backup_zxid) = live_pair_and_backup();
    let (a, b) = stream.split_at(stream.len() / 2);
    let chunk = |seq, bytes: &[u8]| RestorePart::Chunk {
        id: 9,
        seq,
        bytes: bytes::Bytes::copy_from_slice(bytes),
    };
    apply(&mut p, 1, chunk(0, a));
    // A capture already in progress when a restore starts is dropped and taken after it.
    p.nodes[1].core.handle(Input::Image(Token::detached(9)));
    apply(&mut p, 1, chunk(1, b));
    p.nodes[1].core.raft_snapshot_step();
    assert!(p.nodes[1].core.answer_to::<crate::seam::Image>(9).is_none());
    apply(
        &mut p,
        1,
        RestorePart::Commit {
            id: 9,
            chunks: 2,
            len: stream.len() as u64,
            crc: crc32fast::hash(&stream),
            zxid: backup_zxid,
        },
    );
    let restored = p.nodes[1].core.state.tree.digest();
    assert!(p.nodes[1].core.state.zxid() > backup_zxid);
    let got = p.nodes[1].core.raft_snapshot_within(9, 1000);
    let (bytes, _) = got.expect("the snapshot is taken once the restore is done");
    let (_, state) = super::super::raft_snapshot::decode(&bytes).unwrap();
    assert_eq!(state.tree.digest(), restored);
    assert_eq!(state.zxid(), p.nodes[1].core.state.zxid());
}

#[test]
fn a_new_leader_aborts_a_restore_left_half_spooled() {
    let (mut p, stream, _) = live_pair_and_backup();
    apply(
        &mut p,
        1,
        RestorePart::Chunk {
            id: 3,
            seq: 0,
            bytes: stream.slice(..10),
        },
    );
    p.nodes[1].core.handle(role(2, 2, true));
    let mut aborted = false;
    while let Some(batch) = p.nodes[1].next_proposal() {
        aborted |= batch
            .iter()
            .any(|x| matches!(x, Proposed::Restore(RestorePart::Abort { id: 3, .. })));
    }
    assert!(
        aborted,
        "the new leader did not abort the half-spooled restore"
    );
}

#[test]
fn the_leader_aborts_a_second_restore_and_one_whose_chunks_come_out_of_order() {
    let (mut p, stream, _) = live_pair_and_backup();
    let chunk = |id, seq| RestorePart::Chunk {
        id,
        seq,
        bytes: stream.slice(..10),
    };
    let leader = &mut p.nodes[0];
    leader.core.lead_restore_part(chunk(1, 0));
    assert!(
        leader.core.restoring(),
        "the leader serves no client meanwhile"
    );
    leader.core.lead_restore_part(chunk(2, 0));
    leader.core.lead_restore_part(chunk(1, 2));
    let mut proposed = Vec::new();
    while let Some(batch) = leader.next_proposal() {
        for x in batch {
            if let Proposed::Restore(r) = x {
                proposed.push(r);
            }
        }
    }
    let shape: Vec<(u64, &str)> = proposed
        .iter()
        .map(|r| match r {
            RestorePart::Chunk { id, .. } => (*id, "chunk"),
            RestorePart::Commit { id, .. } => (*id, "commit"),
            RestorePart::Abort { id, .. } => (*id, "abort"),
        })
        .collect();
    assert_eq!(shape, [(1, "chunk"), (2, "abort"), (1, "abort")]);
    // Committed, they leave both members serving their live state.
    let live = p.nodes[1].core.state.tree.digest();
    for r in proposed {
        apply(&mut p, 0, r.clone());
        apply(&mut p, 1, r);
    }
    for n in &p.nodes {
        assert!(!n.core.restoring());
    }
    assert_eq!(p.nodes[1].core.state.tree.digest(), live);
}
