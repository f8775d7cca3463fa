//! Session clocks across a quorum outage (issue 34): a session expires only after its client
//! was silent for its whole timeout while a quorum served. A leader left alone expires none;
//! once a quorum acknowledges it again, or another member leads, every session has a full
//! timeout from then. Two members as in `member_test.rs`; the core's clock is moved on by
//! hand (`advance`), so the timeouts are short and nothing sleeps.

use super::tests::{connect, node_with, replies, role, session_on_follower, Node, Pair};
use super::*;
use crate::core::Input;
use palisade_proto::Txn;

/// Ticks of 10 ms, sessions of 100 ms (what a client asking 30 s is given here).
const TICK_MS: u64 = 10;
const TIMEOUT_MS: u64 = 100;

fn short_sessions(myid: u64) -> Node {
    let mut cfg = crate::core::testkit::cfg();
    cfg.tick_ms = TICK_MS;
    cfg.min_session_timeout = 2 * TICK_MS as i32;
    cfg.max_session_timeout = TIMEOUT_MS as i32;
    node_with(myid, cfg, Vec::new())
}

/// Moves the core's clock `ms` on: the inputs that follow are handled that much later.
fn advance(core: &mut Core, ms: u64) {
    core.now = core.now.plus_ms(ms);
}

fn leader_view(quorum: bool) -> Input {
    Input::Role(RoleView {
        leader: Some(1),
        term: 1,
        ready: true,
        quorum,
        ..RoleView::default()
    })
}

/// A session made on the leader (committed on both): its id.
fn session_on_leader(p: &mut Pair, conn: ConnId) -> i64 {
    let mut c = connect(&mut p.nodes[0], conn, 0, [0; 16]);
    p.settle();
    replies(&mut c)
        .first()
        .map(|r| r.1)
        .expect("a ConnectResponse")
}

/// The sessions the member proposed to close since the last look (an expiry is one).
fn closed(n: &mut Node) -> Vec<i64> {
    let mut out = Vec::new();
    while let Some(batch) = n.next_proposal() {
        for p in batch {
            if let Proposed::Txn(b) = p {
                let t = Txn::decode(b, usize::MAX).expect("txn");
                if matches!(t.body, palisade_proto::TxnBody::CloseSession(_)) {
                    out.push(t.header.client_id);
                }
            }
        }
    }
    out
}

fn deadline_left(n: &Node, id: i64) -> u64 {
    let now = n.core.now_ms();
    let d = n.core.liveness.get(id).map_or(0, |s| s.deadline_ms);
    d.saturating_sub(now)
}

#[test]
fn a_leader_without_a_quorum_expires_nothing_and_rearms_every_session_when_it_is_back() {
    let mut p = Pair::of(1, [short_sessions(1), short_sessions(2)]);
    let on_leader = session_on_leader(&mut p, 30);
    let (_c, on_follower, _) = session_on_follower(&mut p, 10);
    assert!(closed(&mut p.nodes[0]).is_empty());

    // The followers go: the leader keeps its term but no quorum acknowledges it.
    p.nodes[0].core.handle(leader_view(false));
    advance(&mut p.nodes[0].core, 20 * TIMEOUT_MS);
    p.nodes[0].core.handle(Input::Tick);
    assert_eq!(
        closed(&mut p.nodes[0]),
        Vec::<i64>::new(),
        "a leader without a quorum prepped an expiry"
    );
    for id in [on_leader, on_follower] {
        assert!(p.nodes[0].core.state.sessions().contains_key(&id));
        assert!(p.nodes[0].core.liveness.get(id).is_some_and(|s| !s.closing));
    }

    // A quorum again, with no election: every session has its whole timeout from now.
    p.nodes[0].core.handle(leader_view(true));
    for id in [on_leader, on_follower] {
        assert!(
            deadline_left(&p.nodes[0], id) >= TIMEOUT_MS,
            "session {id:#x} not re-armed: {} ms left",
            deadline_left(&p.nodes[0], id)
        );
    }
    advance(&mut p.nodes[0].core, TIMEOUT_MS - TICK_MS);
    p.nodes[0].core.handle(Input::Tick);
    assert_eq!(
        closed(&mut p.nodes[0]),
        Vec::<i64>::new(),
        "expired before its timeout"
    );

    // Silent for a whole timeout with the quorum serving: now they expire, on every member.
    advance(&mut p.nodes[0].core, 2 * TICK_MS + 1);
    p.nodes[0].core.handle(Input::Tick);
    p.settle();
    for n in &p.nodes {
        for id in [on_leader, on_follower] {
            assert!(
                !n.core.state.sessions().contains_key(&id),
                "session {id:#x} outlived its timeout with a quorum serving"
            );
        }
    }
}

#[test]
fn a_leader_losing_its_quorum_stops_the_clocks_of_sessions_already_due() {
    let mut p = Pair::of(1, [short_sessions(1), short_sessions(2)]);
    let id = session_on_leader(&mut p, 30);
    // Due, but the quorum went before the tick that would expire it.
    advance(&mut p.nodes[0].core, 2 * TIMEOUT_MS);
    p.nodes[0].core.handle(leader_view(false));
    p.nodes[0].core.handle(Input::Tick);
    assert_eq!(closed(&mut p.nodes[0]), Vec::<i64>::new());
    // Back: the due bucket was not consumed, but the session was re-armed past it.
    p.nodes[0].core.handle(leader_view(true));
    p.nodes[0].core.handle(Input::Tick);
    assert_eq!(closed(&mut p.nodes[0]), Vec::<i64>::new());
    assert!(p.nodes[0].core.state.sessions().contains_key(&id));
}

#[test]
fn a_new_leader_rearms_every_session() {
    // The claim in member.rs's doc, checked: a follower elected after the old leader went
    // (its own deadlines long past) gives each session a whole timeout from its election.
    let mut p = Pair::of(1, [short_sessions(1), short_sessions(2)]);
    let on_leader = session_on_leader(&mut p, 30);
    let (_c, on_follower, _) = session_on_follower(&mut p, 10);
    let n = &mut p.nodes[1];
    n.core.handle(Input::Role(RoleView {
        leader: None,
        term: 2,
        quorum: true,
        ..RoleView::default()
    }));
    advance(&mut n.core, 20 * TIMEOUT_MS);
    n.core.handle(Input::Tick);
    n.core.handle(role(2, 2, true));
    for id in [on_leader, on_follower] {
        assert!(
            deadline_left(n, id) >= TIMEOUT_MS,
            "session {id:#x} not re-armed"
        );
    }
    n.core.handle(Input::Tick);
    assert_eq!(
        closed(n),
        Vec::<i64>::new(),
        "the new leader expired sessions at once"
    );
    // It expires them once they are silent for a whole timeout under it.
    advance(&mut n.core, TIMEOUT_MS + 2 * TICK_MS + 1);
    n.core.handle(Input::Tick);
    let mut gone = closed(n);
    gone.sort_unstable();
    let mut want = vec![on_leader, on_follower];
    want.sort_unstable();
    assert_eq!(gone, want);
}
