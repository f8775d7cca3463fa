//! Two cores as ensemble members, with the test as their consensus: what the leader proposes
//! is committed to both in order, what the follower forwards reaches the leader. Checks the
//! member rules of member.rs: forwarded writes answered on the follower, zxids from the term,
//! the key before sessions, clients dropped on a leader change, syncs at the leader's point,
//! a diverged digest stopping the member.

use super::*;
pub(crate) use crate::core::testkit::create;
use crate::core::testkit::{self, handshake, TestWriter};
use crate::core::token::Token;
use crate::core::{Input, Out, OutBudget};
use bytes::{Buf, Bytes};
use palisade_proto::*;

/// A member stepped by the test: what it pushed to its outbox, taken at each look.
pub(crate) struct Node {
    pub(crate) core: Core,
    /// Taken from its outbox and not looked at yet.
    taken: crate::core::testkit::Taken,
}

impl Node {
    /// The next batch it proposed (ending its turn first, as the runtime would).
    pub(crate) fn next_proposal(&mut self) -> Option<Vec<Proposed>> {
        self.take();
        (!self.taken.proposals.is_empty()).then(|| self.taken.proposals.remove(0))
    }

    /// The next item it handed to its forwarder (ending its turn first).
    pub(crate) fn next_to_leader(&mut self) -> Option<ToLeader> {
        self.take();
        (!self.taken.to_leader.is_empty()).then(|| self.taken.to_leader.remove(0))
    }

    fn take(&mut self) {
        self.core.flush_turn();
        let work = self.core.outbox.take_work();
        self.taken.add(work);
    }
}

use crate::core::testkit::cfg;

/// The wall clock every test member joins at (see `node_with`).
const JOINED_AT_MS: i64 = 1_796_000_000_000;

fn node(myid: u64) -> Node {
    node_with(myid, cfg(), Vec::new())
}

/// A member with this core configuration and these zoo.cfg servers.
pub(crate) fn node_with(
    myid: u64,
    cfg: crate::core::CoreConfig,
    members: Vec<crate::membership::members::Member>,
) -> Node {
    let mut core = Core::new(cfg);
    // Every test member joins at the same wall-clock millisecond: the node each sets from
    // zoo.cfg (/zookeeper/config, its mtime local as in ZooKeeper) is then the same on all,
    // so trees compare equal whether or not a millisecond passed between two joins.
    core.now.wall_ms = JOINED_AT_MS;
    core.join(crate::core::testkit::links(myid, 100_000, members));
    Node {
        core,
        taken: Default::default(),
    }
}

pub(crate) fn role(leader: u64, term: u64, ready: bool) -> Input {
    Input::Role(RoleView {
        leader: Some(leader),
        term,
        ready,
        quorum: true,
        ..RoleView::default()
    })
}

/// Two members: 1 leads `term`, 2 follows.
pub(crate) struct Pair {
    pub(crate) nodes: [Node; 2],
    /// Committed so far, in order (what the test's "Raft log" holds).
    pub(crate) log: Vec<Committed>,
}

impl Pair {
    fn new(term: u64) -> Self {
        Pair::of(term, [node(1), node(2)])
    }

    /// These two members: the first leads `term`, the second follows.
    pub(crate) fn of(term: u64, nodes: [Node; 2]) -> Self {
        let mut p = Pair {
            nodes,
            log: Vec::new(),
        };
        p.nodes[0].core.handle(role(1, term, true));
        p.nodes[1].core.handle(role(1, term, false));
        p.settle();
        p
    }

    /// Moves messages until nothing is left: forwards to the leader, proposals committed to
    /// both members. Returns each member's handle() stop flags (true: it stopped).
    pub(crate) fn settle(&mut self) -> [bool; 2] {
        let mut stopped = [false; 2];
        loop {
            let mut moved = false;
            while let Some(m) = self.nodes[1].next_to_leader() {
                moved = true;
                match m {
                    ToLeader::Forward(ops) => {
                        self.nodes[0]
                            .core
                            .handle(Input::Forwarded(ops, Some(Token::detached(1))));
                        if let Some(Some(points)) =
                            self.nodes[0].core.answer_to::<Option<Vec<SyncPoint>>>(1)
                        {
                            self.nodes[1].core.handle(Input::SyncPoints(points));
                        }
                    }
                    ToLeader::Touch(ids) => {
                        self.nodes[0].core.handle(Input::Touched(ids));
                    }
                }
            }
            while let Some(batch) = self.nodes[0].next_proposal() {
                moved = true;
                for p in batch {
                    let c = match p {
                        Proposed::Txn(b) => {
                            Committed::Txn(Txn::decode(b, usize::MAX).expect("txn"))
                        }
                        Proposed::Key(k) => Committed::Key(k),
                        Proposed::Digest { zxid, digest } => Committed::Digest { zxid, digest },
                        Proposed::Restore(part) => Committed::Restore {
                            part,
                            term: self.nodes[0].core.role.member().view.term,
                        },
                    };
                    self.commit(c, &mut stopped);
                }
            }
            if !moved {
                return stopped;
            }
        }
    }

    /// Commits `txns` on both members, in order.
    fn commit_txns(&mut self, txns: Vec<Txn>) {
        let mut stopped = [false; 2];
        for t in txns {
            self.commit(Committed::Txn(t), &mut stopped);
        }
    }

    fn commit(&mut self, c: Committed, stopped: &mut [bool; 2]) {
        let copy = |c: &Committed| match c {
            Committed::Txn(t) => Committed::Txn(t.clone()),
            Committed::Key(k) => Committed::Key(*k),
            Committed::Digest { zxid, digest } => Committed::Digest {
                zxid: *zxid,
                digest: *digest,
            },
            Committed::Restore { part, term } => Committed::Restore {
                part: part.clone(),
                term: *term,
            },
        };
        for (i, n) in self.nodes.iter_mut().enumerate() {
            let ack = Token::detached(0);
            let items = vec![copy(&c)];
            stopped[i] |= n.core.handle(Input::Committed {
                items,
                at: None,
                log_bytes: 0,
                ack,
            });
        }
        self.log.push(c);
    }
}

pub(crate) struct Client {
    pub(crate) conn: ConnId,
    /// What the engine handed the connection's writer.
    out: std::sync::Arc<TestWriter>,
}

pub(crate) fn connect(n: &mut Node, conn: ConnId, session: i64, passwd: [u8; 16]) -> Client {
    let (input, out) = handshake(conn, session, passwd, None, OutBudget::unlimited());
    n.core.handle(input);
    Client { conn, out }
}

/// The replies and the ConnectResponse the client got: (xid, zxid, err, body); a
/// ConnectResponse is (i32::MIN, session, 0, passwd), a Close is (i32::MAX, 0, 0, empty).
pub(crate) fn replies(c: &mut Client) -> Vec<(i32, i64, i32, Bytes)> {
    let mut out = Vec::new();
    while let Some(o) = c.out.next() {
        match o {
            Out::Close => out.push((i32::MAX, 0, 0, Bytes::new())),
            Out::Bytes(mut b) if b.len() >= 40 => {
                b.advance(4);
                let r = ConnectResponse::decode(b, usize::MAX).expect("ConnectResponse");
                let pw = r.passwd.unwrap_or_default();
                out.push((i32::MIN, r.session_id, 0, pw));
            }
            Out::Reply(mut b) | Out::Bytes(mut b) | Out::Event(mut b) => {
                b.advance(4);
                let (xid, zxid, err) = (b.get_i32(), b.get_i64(), b.get_i32());
                out.push((xid, zxid, err, b));
            }
            Out::Batch { .. } => panic!("a test's connection has no direct writes"),
        }
    }
    out
}

pub(crate) fn request(n: &mut Node, c: &Client, xid: i32, req: Request) {
    n.core.handle(testkit::request(c.conn, xid, req));
}

/// A session made on the follower: returns its id and password.
pub(crate) fn session_on_follower(p: &mut Pair, conn: ConnId) -> (Client, i64, [u8; 16]) {
    let mut c = connect(&mut p.nodes[1], conn, 0, [0; 16]);
    p.settle();
    let r = replies(&mut c);
    let (id, pw) = session_of(&r);
    (c, id, pw)
}

/// The session id and password of the ConnectResponse a client got first.
fn session_of(replies: &[(i32, i64, i32, Bytes)]) -> (i64, [u8; 16]) {
    let (_, id, _, pw) = replies.first().cloned().expect("a ConnectResponse");
    (id, pw.as_ref().try_into().expect("16 bytes"))
}

/// The txns a member proposed since the last look, decoded, in order; not committed.
fn proposed_txns(n: &mut Node) -> Vec<Txn> {
    std::iter::from_fn(|| n.next_proposal())
        .flatten()
        .filter_map(|prop| match prop {
            Proposed::Txn(b) => Some(Txn::decode(b, usize::MAX).expect("txn")),
            _ => None,
        })
        .collect()
}

/// Commits `txns` on this member alone (the other has not applied them yet).
fn commit_to(n: &mut Node, txns: &[Txn]) {
    n.core.handle(Input::Committed {
        items: txns.iter().cloned().map(Committed::Txn).collect(),
        at: None,
        log_bytes: 0,
        ack: Token::detached(0),
    });
}

/// The follower's forwards handed to the leader, unanswered (the test moves the rest).
fn forward(p: &mut Pair) {
    p.nodes[1].core.flush_turn();
    while let Some(ToLeader::Forward(ops)) = p.nodes[1].next_to_leader() {
        p.nodes[0].core.handle(Input::Forwarded(ops, None));
    }
}

/// The follower's forwards handed to the leader, and the sync points it answers handed
/// back (nothing is committed).
fn forward_for_points(p: &mut Pair) {
    p.nodes[1].core.flush_turn();
    while let Some(ToLeader::Forward(ops)) = p.nodes[1].next_to_leader() {
        p.nodes[0]
            .core
            .handle(Input::Forwarded(ops, Some(Token::detached(1))));
        let points = p.nodes[0]
            .core
            .answer_to::<Option<Vec<SyncPoint>>>(1)
            .flatten()
            .expect("points");
        p.nodes[1].core.handle(Input::SyncPoints(points));
    }
}

#[test]
fn a_follower_forwards_and_answers_when_committed_with_zxids_from_the_term() {
    let mut p = Pair::new(3);
    assert!(
        matches!(p.log.first(), Some(Committed::Key(_))),
        "the key commits before anything else"
    );
    let (mut c, id, _) = session_on_follower(&mut p, 10);
    assert_eq!(id >> 56, 2, "the follower's id in the top byte");
    request(&mut p.nodes[1], &c, 1, create("/q", 0));
    request(&mut p.nodes[1], &c, 2, create("/q/s-", 2)); // sequential
    p.settle();
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(1, 0), (2, 0)]
    );
    // zxid = term << 32 | counter, counter from 1: createSession, then the two creates.
    assert_eq!(r[0].1, (3 << 32) | 2);
    assert_eq!(r[1].1, (3 << 32) | 3);
    let [a, b] = &p.nodes;
    crate::testkit::assert_same_tree("follower", &b.core.state.tree, &a.core.state.tree);
    assert_eq!(a.core.state.zxid(), b.core.state.zxid());
    assert!(a.core.state.sessions().contains_key(&id));
}

#[test]
fn a_follower_forwards_the_clients_own_bytes_and_the_leader_decodes_them_once() {
    let mut p = Pair::new(3);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    let req = create("/raw", 0);
    // A byte after the request: ZooKeeper's server ignores it, and so does our connection;
    // the leader must accept what the follower's connection accepted.
    let mut frame = req.encode(7).to_vec();
    frame.push(0);
    let frame = Bytes::from(frame);
    p.nodes[1].core.handle(Input::Request {
        conn: c.conn,
        xid: 7,
        req,
        frame: frame.clone(),
    });
    p.nodes[1].core.flush_turn();
    let mut forwarded = Vec::new();
    while let Some(m) = p.nodes[1].next_to_leader() {
        if let ToLeader::Forward(ops) = m {
            forwarded.extend(ops);
        }
    }
    assert_eq!(forwarded.len(), 1);
    assert!(
        matches!(&forwarded[0].what, Forwarded::Request(b) if *b == frame),
        "the forward carries the client's message as it came, not a re-encoding"
    );
    let tx = Token::detached(0);
    p.nodes[0]
        .core
        .handle(Input::Forwarded(forwarded, Some(tx)));
    p.settle();
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(7, 0)]
    );
    assert!(p.nodes[0].core.state.tree.lookup("/raw").is_some());
    assert!(p.nodes[1].core.state.tree.lookup("/raw").is_some());
}

#[test]
fn a_session_moves_to_the_leader_with_the_shared_key() {
    let mut p = Pair::new(1);
    let (_c, id, pw) = session_on_follower(&mut p, 10);
    let mut moved = connect(&mut p.nodes[0], 20, id, pw);
    let r = replies(&mut moved);
    assert_eq!(r.first().map(|x| (x.0, x.1)), Some((i32::MIN, id)), "{r:?}");
    let mut wrong = connect(&mut p.nodes[0], 21, id, [9; 16]);
    let r = replies(&mut wrong);
    assert_eq!(r.first().map(|x| x.1), Some(0), "refused: {r:?}");
}

#[test]
fn a_leader_change_drops_clients_and_their_pending_writes() {
    let mut p = Pair::new(1);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    request(&mut p.nodes[1], &c, 1, create("/lost", 0));
    p.nodes[1].core.flush_turn();
    // The leader goes before the forward is answered; member 2 now leads term 2.
    p.nodes[1].core.handle(role(2, 2, false));
    let r = replies(&mut c);
    assert_eq!(r.last().map(|x| x.0), Some(i32::MAX), "closed: {r:?}");
    assert!(p.nodes[1].core.pending.is_empty());
    assert!(p.nodes[1].core.conns.is_empty());
    // Not ready yet (applying its predecessor's entries): no clients taken.
    let mut late = connect(&mut p.nodes[1], 11, 0, [0; 16]);
    assert_eq!(replies(&mut late).last().map(|x| x.0), Some(i32::MAX));
}

#[test]
fn a_follower_sync_answers_only_after_the_leader_point_is_applied() {
    let mut p = Pair::new(1);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    let (mut other, _, _) = {
        let mut o = connect(&mut p.nodes[0], 30, 0, [0; 16]);
        p.settle();
        let _ = replies(&mut o);
        (o, 0, 0)
    };
    // A write on the leader, prepped but not yet committed, then the follower's sync.
    request(&mut p.nodes[0], &other, 1, create("/w", 0));
    let pending = proposed_txns(&mut p.nodes[0]);
    request(
        &mut p.nodes[1],
        &c,
        5,
        Request::Sync(SyncRequest { path: "/w".into() }),
    );
    forward_for_points(&mut p);
    assert!(replies(&mut c).is_empty(), "the sync waits for /w");
    p.commit_txns(pending);
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(5, 0)]
    );
    assert!(r[0].1 >= p.nodes[0].core.state.zxid());
    assert!(p.nodes[1].core.state.tree.lookup("/w").is_some());
    let _ = replies(&mut other);
}

#[test]
fn a_member_whose_digest_differs_from_the_leader_stops() {
    let mut p = Pair::new(1);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    let mut stopped = [false; 2];
    let zxid = p.nodes[1].core.state.zxid();
    // As if the follower had recorded its digest after `zxid`, and the leader's differs.
    let own = p.nodes[1].core.state.tree.digest();
    p.nodes[1].core.record_digest(zxid, own);
    p.commit(
        Committed::Digest {
            zxid,
            digest: own ^ 1,
        },
        &mut stopped,
    );
    assert!(stopped[1], "the follower stops");
    let _ = replies(&mut c);
}

#[test]
fn a_lagging_follower_revalidates_a_session_instead_of_calling_it_expired() {
    let mut p = Pair::new(1);
    // A session made on the leader, committed there only so far.
    let mut c = connect(&mut p.nodes[0], 30, 0, [0; 16]);
    let created = proposed_txns(&mut p.nodes[0]);
    commit_to(&mut p.nodes[0], &created);
    let r = replies(&mut c);
    let (id, pw) = session_of(&r);
    // The client moves to the follower before it applied the createSession: no answer yet.
    let mut moved = connect(&mut p.nodes[1], 31, id, pw);
    assert!(
        replies(&mut moved).is_empty(),
        "decided only at the leader's point"
    );
    forward_for_points(&mut p);
    assert!(replies(&mut moved).is_empty());
    commit_to(&mut p.nodes[1], &created);
    let r = replies(&mut moved);
    assert_eq!(r.first().map(|x| (x.0, x.1)), Some((i32::MIN, id)), "{r:?}");
    // A session nobody has: refused after the revalidation.
    let mut gone = connect(&mut p.nodes[1], 32, id + 1, pw);
    p.settle();
    let r = replies(&mut gone);
    assert_eq!(r.first().map(|x| x.1), Some(0), "expired: {r:?}");
}

#[test]
fn a_session_is_known_to_the_leader_from_its_prep() {
    let mut p = Pair::new(1);
    let mut c = connect(&mut p.nodes[1], 10, 0, [0; 16]);
    forward(&mut p);
    let created = proposed_txns(&mut p.nodes[0]);
    // The follower applies the createSession first and answers its client; the client's
    // first write reaches the leader before the leader's own apply.
    commit_to(&mut p.nodes[1], &created);
    let r = replies(&mut c);
    assert_eq!(r.first().map(|x| x.0), Some(i32::MIN), "{r:?}");
    request(&mut p.nodes[1], &c, 1, create("/early", 0));
    forward(&mut p);
    commit_to(&mut p.nodes[0], &created);
    p.settle();
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(1, 0)],
        "not SESSIONEXPIRED"
    );
}

/// A leader killed and back in the same term (its vote was committed) shows followers no
/// leader change: a write it took and lost is never committed. The client's next write must
/// not be answered in the lost one's place (kazoo: "xids do not match"): the client is dropped.
#[test]
fn a_write_lost_by_its_leader_drops_the_client_instead_of_answering_out_of_order() {
    let mut p = Pair::new(1);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    request(&mut p.nodes[1], &c, 1, create("/lost", 0));
    p.nodes[1].core.flush_turn();
    // The leader took the forward and went away before proposing it.
    while p.nodes[1].next_to_leader().is_some() {}
    request(&mut p.nodes[1], &c, 2, create("/next", 0));
    p.settle();
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| x.0).collect::<Vec<_>>(),
        [i32::MAX],
        "{r:?}"
    );
    assert!(p.nodes[1].core.state.tree.lookup("/next").is_some());
}

/// Commits whatever the leader proposed, on both members, without moving the follower's
/// forwards (they stay pending on it).
fn commit_proposed(p: &mut Pair) {
    let txns = proposed_txns(&mut p.nodes[0]);
    p.commit_txns(txns);
}

/// Found by the Jepsen harness (issue 15, session-expiry nemesis): a session is closed from
/// another connection (its id and password), and its owner reconnects to the member where that
/// close is in flight. ZooKeeper closes every connection of a closed session; Palisade's
/// follower closed only the connection that sent the close (already replaced by the owner's),
/// and went on serving the owner on a session that no longer existed.
#[test]
fn a_closed_session_loses_every_connection_even_one_that_took_it_over_meanwhile() {
    let mut p = Pair::new(1);
    let (_first, id, pw) = session_on_follower(&mut p, 10);
    // The "expirer" attaches to the session on the follower and asks to close it.
    let mut closer = connect(&mut p.nodes[1], 11, id, pw);
    p.settle(); // revalidated with the leader
    assert_eq!(replies(&mut closer).first().map(|x| x.1), Some(id));
    request(&mut p.nodes[1], &closer, 1, Request::CloseSession);
    // The owner comes back to that member before the close commits.
    let mut owner = connect(&mut p.nodes[1], 12, id, pw);
    p.settle();
    let r = replies(&mut owner);
    assert_eq!(
        r.last().map(|x| x.0),
        Some(i32::MAX),
        "the owner's connection is closed: {r:?}"
    );
    assert!(!p.nodes[1].core.conns.contains_key(&12));
    assert!(!p.nodes[1].core.state.sessions().contains_key(&id));
}

/// Found by the Jepsen harness too: a follower's pending sync is keyed by (session, cxid) like a
/// write, and a closeSession of the same session with the same cxid, sent from another member,
/// was taken for it: the client's sync was answered with the close's empty reply. A sync is
/// answered by its sync point only, and a txn only by a waiter of its kind.
#[test]
fn a_txn_from_another_connection_with_the_same_cxid_answers_nobody_elses_request() {
    let mut p = Pair::new(1);
    let (mut owner, id, pw) = session_on_follower(&mut p, 10);
    request(
        &mut p.nodes[1],
        &owner,
        1,
        Request::Sync(SyncRequest { path: "/".into() }),
    );
    request(&mut p.nodes[1], &owner, 2, create("/mine", 0));
    // Someone with the session's password closes it on the leader, with cxid 1.
    let mut closer = connect(&mut p.nodes[0], 20, id, pw);
    let _ = replies(&mut closer);
    request(&mut p.nodes[0], &closer, 1, Request::CloseSession);
    commit_proposed(&mut p);
    let r = replies(&mut owner);
    assert!(
        r.iter().all(|x| x.0 != 1 && x.0 != 2),
        "the owner's requests were answered by the close: {r:?}"
    );
    assert_eq!(r.last().map(|x| x.0), Some(i32::MAX), "closed: {r:?}");
    // The closer's own close is answered, then its connection closed.
    let r = replies(&mut closer);
    assert_eq!(
        r.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![1, i32::MAX],
        "{r:?}"
    );
}

/// Found by the Jepsen harness (a register read with sync + getData returned a value older than
/// a write acknowledged before the read began): a follower can apply a commit, and answer its
/// client, before the leader's own apply; a sync on the leader was answered at once, and the
/// read behind it saw the leader's older tree. A sync on the leader now waits, as a
/// follower's does, until every txn the leader has prepped is applied there (ZooKeeper's
/// Leader.processSync: at once, or once the outstanding proposals commit).
#[test]
fn a_sync_on_the_leader_waits_for_what_it_has_prepped() {
    let mut p = Pair::new(1);
    let (mut writer, _, _) = session_on_follower(&mut p, 10);
    let mut reader = connect(&mut p.nodes[0], 20, 0, [0; 16]);
    p.settle();
    let _ = replies(&mut reader);
    request(&mut p.nodes[1], &writer, 1, create("/x", 0));
    forward(&mut p);
    let txns = proposed_txns(&mut p.nodes[0]);
    let zxid = txns.last().map(|t| t.header.zxid).expect("the create");
    // The follower applies first and answers its client.
    commit_to(&mut p.nodes[1], &txns);
    assert_eq!(
        replies(&mut writer).first().map(|x| (x.0, x.2)),
        Some((1, 0))
    );
    // Now a sync and a read on the leader, which has not applied the create yet.
    request(
        &mut p.nodes[0],
        &reader,
        1,
        Request::Sync(SyncRequest { path: "/x".into() }),
    );
    request(
        &mut p.nodes[0],
        &reader,
        2,
        Request::Exists(ExistsRequest {
            path: "/x".into(),
            watch: false,
        }),
    );
    assert_eq!(
        replies(&mut reader),
        vec![],
        "answered before the leader applied /x"
    );
    commit_to(&mut p.nodes[0], &txns);
    let r = replies(&mut reader);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(1, 0), (2, 0)],
        "the sync, then exists finds /x"
    );
    assert!(r[0].1 >= zxid);
}

#[test]
fn a_sync_right_after_an_election_is_answered_without_waiting_for_a_write() {
    let mut p = Pair::new(1);
    let (_a, on_follower, pw_f) = session_on_follower(&mut p, 10);
    let mut b = connect(&mut p.nodes[0], 30, 0, [0; 16]);
    p.settle();
    let (on_leader, pw_l) = session_of(&replies(&mut b));
    // Member 1 wins the next term; nothing is written in it.
    p.nodes[0].core.handle(role(1, 2, true));
    p.nodes[1].core.handle(role(1, 2, false));
    p.settle();
    let applied = p.nodes[0].core.state.zxid();
    let mut a = connect(&mut p.nodes[1], 11, on_follower, pw_f);
    let mut b = connect(&mut p.nodes[0], 31, on_leader, pw_l);
    p.settle();
    let _ = (replies(&mut a), replies(&mut b));
    let sync = || Request::Sync(SyncRequest { path: "/".into() });
    request(&mut p.nodes[1], &a, 1, sync());
    request(&mut p.nodes[0], &b, 1, sync());
    p.settle();
    for (who, c) in [("follower", &mut a), ("leader", &mut b)] {
        let r = replies(c);
        assert_eq!(
            r.iter().map(|x| (x.0, x.1, x.2)).collect::<Vec<_>>(),
            vec![(1, applied, 0)],
            "the sync on the {who}"
        );
    }
}

/// The forwards a follower has sent, as the forwarder reports them when they fail.
fn sent_forwards(n: &mut Node) -> Vec<(i64, i32)> {
    n.core.flush_turn();
    let mut out = Vec::new();
    while let Some(m) = n.next_to_leader() {
        if let ToLeader::Forward(ops) = m {
            out.extend(ops.iter().map(|f| (f.session, f.cxid)));
        }
    }
    out
}

#[test]
fn a_handshake_whose_forward_failed_is_closed_not_left_waiting() {
    let mut p = Pair::new(1);
    // A new session: its createSession did not reach the leader.
    let mut c = connect(&mut p.nodes[1], 40, 0, [0; 16]);
    let failed = sent_forwards(&mut p.nodes[1]);
    assert_eq!(failed.len(), 1, "the createSession went to the leader");
    p.nodes[1].core.handle(Input::ForwardFailed(failed));
    let r = replies(&mut c);
    assert_eq!(r, vec![(i32::MAX, 0, 0, Bytes::new())], "closed at once");
    // A session the follower does not know yet: its revalidation did not reach the leader.
    let mut moved = connect(&mut p.nodes[1], 41, 0x0200_0000_0000_0042, [1; 16]);
    let failed = sent_forwards(&mut p.nodes[1]);
    assert_eq!(failed.len(), 1, "the revalidation went to the leader");
    p.nodes[1].core.handle(Input::ForwardFailed(failed));
    assert!(replies(&mut moved).is_empty());
    assert!(
        moved.out.next().is_none() && std::sync::Arc::strong_count(&moved.out) == 1,
        "the handshake was dropped: the engine let go of its connection, which closes"
    );
    // Both clients try again and get sessions once the leader is reachable.
    let (_, id, _) = session_on_follower(&mut p, 42);
    assert_eq!(id >> 56, 2);
}

/// A session the follower knows moves to it (its client lost its member, the leader say):
/// taken only once the leader answers the revalidation, as ZooKeeper's learners do. A
/// follower still naming a leader that is gone must not take the client, serve its reads and
/// then fail its next write: the second connection loss in a row after which Curator 5.4's
/// protected create returns a null path (tests/ensemble test_curator.py).
#[test]
fn a_known_session_moving_to_a_follower_is_taken_only_once_the_leader_answers() {
    let mut p = Pair::new(1);
    let (_c, id, pw) = session_on_follower(&mut p, 10);
    let mut moved = connect(&mut p.nodes[1], 11, id, pw);
    let failed = sent_forwards(&mut p.nodes[1]);
    assert_eq!(
        failed,
        vec![(id, crate::core::handshake::REVALIDATE_CXID)],
        "revalidated with the leader, though the follower knows the session"
    );
    assert!(
        replies(&mut moved).is_empty(),
        "not taken before the leader answers"
    );
    p.nodes[1].core.handle(Input::ForwardFailed(failed));
    assert!(
        moved.out.next().is_none() && std::sync::Arc::strong_count(&moved.out) == 1,
        "the leader could not be reached: the handshake was dropped"
    );
    let mut again = connect(&mut p.nodes[1], 12, id, pw);
    p.settle();
    let r = replies(&mut again);
    assert_eq!(r.first().map(|x| (x.0, x.1)), Some((i32::MIN, id)), "{r:?}");
    // A wrong password is refused here at once, as ZooKeeper checks it before revalidating:
    // the leader's answer would touch the session.
    let mut wrong = connect(&mut p.nodes[1], 13, id, [9; 16]);
    assert!(
        sent_forwards(&mut p.nodes[1]).is_empty(),
        "nothing asked of the leader"
    );
    let r = replies(&mut wrong);
    assert_eq!(r.first().map(|x| x.1), Some(0), "refused: {r:?}");
}

/// The forwarder's queue full (limits.rs `FORWARD_QUEUE`: calls to a leader that does not
/// answer): the follower keeps its forwards, in order, and sends them at a later turn; a
/// tick's touch is skipped rather than queued. The core thread waits for nothing.
#[test]
fn a_full_forward_queue_keeps_the_forwards_for_a_later_turn_and_skips_touches() {
    let mut p = Pair::new(3);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    let room = crate::core::testkit::TestRoom::new(0);
    p.nodes[1].core.role.member_mut().links.to_leader = Box::new(room.clone());
    request(&mut p.nodes[1], &c, 1, create("/a", 0));
    p.nodes[1].core.flush_turn();
    request(&mut p.nodes[1], &c, 2, create("/b", 0));
    p.nodes[1].core.flush_turn();
    p.nodes[1].core.report_sessions();
    let Seat::Follower(f) = &p.nodes[1].core.role.member().seat else {
        panic!("a follower");
    };
    let kept: Vec<i32> = f.queued.iter().map(|f| f.cxid).collect();
    assert_eq!(kept, [1, 2], "both forwards kept, in order");
    assert!(
        p.nodes[1].next_to_leader().is_none(),
        "nothing handed to the forwarder: the tick's touch was skipped"
    );
    room.set(crate::limits::FORWARD_QUEUE);
    p.settle();
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        vec![(1, 0), (2, 0)],
        "both answered once the queue had room"
    );
}
