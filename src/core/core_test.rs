//! The core driven message by message, with the log's durability in the test's hands: the
//! ordering guarantees (reads vs writes, events before replies), the reaper, shutdown.

use super::testkit::{self, cfg, create, handshake, TestWriter};
use super::*;
use crate::core::token::Token;
use bytes::{Buf, Bytes};
use palisade_proto::*;
use palisade_wal::RecordKind;
use std::sync::mpsc as std_mpsc;

struct Harness {
    core: Core,
    next_conn: ConnId,
}

struct Client {
    conn: ConnId,
    /// What the engine handed the connection's writer.
    out: std::sync::Arc<TestWriter>,
    budget: std::sync::Arc<OutBudget>,
}

/// One decoded server message.
#[derive(Debug, PartialEq)]
enum Msg {
    Reply {
        xid: i32,
        zxid: i64,
        err: i32,
        body: Bytes,
    },
    Event {
        kind: i32,
        path: String,
    },
}

impl Harness {
    fn new() -> Self {
        Harness {
            core: Core::new(cfg()),
            next_conn: 1,
        }
    }

    /// Hands the prepped txns to the "log" and reports them durable. Returns handle()'s stop flag.
    fn durable(&mut self) -> bool {
        let last = self
            .core
            .take_turn()
            .log
            .into_iter()
            .filter(|r| r.kind == RecordKind::Txn)
            .map(|r| r.zxid)
            .max();
        last.is_some_and(|z| self.core.handle(Input::Durable(z)))
    }

    fn connect(&mut self) -> Client {
        self.connect_with(OutBudget::unlimited())
    }

    /// A client whose output is charged to `budget` (released by `Client::write_out`).
    fn connect_with(&mut self, budget: std::sync::Arc<OutBudget>) -> Client {
        let conn = self.next_conn;
        self.next_conn += 1;
        let (input, writer) = handshake(conn, 0, [0; 16], Some(false), budget.clone());
        self.core.handle(input);
        self.durable();
        let c = Client {
            conn,
            out: writer,
            budget,
        };
        assert!(
            matches!(c.out.next(), Some(Out::Bytes(_))),
            "ConnectResponse"
        );
        c
    }

    fn send(&mut self, c: &Client, xid: i32, req: Request) {
        self.core.handle(testkit::request(c.conn, xid, req));
    }
}

impl Client {
    /// What the core queued, as the writer task would see it: written, so released.
    fn write_out(&mut self) -> Vec<Msg> {
        let msgs = self.drain();
        self.budget
            .wrote((self.budget.queued(), self.budget.queued_events()));
        msgs
    }

    /// The frames queued, as the client would read them off the socket (a large reply comes
    /// in parts: `Core::send_reply`).
    fn drain(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        let mut stream = bytes::BytesMut::new();
        while let Some(o) = self.out.next() {
            if let Out::Bytes(b) | Out::Event(b) | Out::Reply(b) = o {
                stream.extend_from_slice(&b);
            }
        }
        while stream.len() >= 4 {
            let len = (&stream[..4]).get_i32() as usize;
            let mut b = stream.split_to(4 + len).freeze();
            b.advance(4);
            let (xid, zxid, err) = (b.get_i32(), b.get_i64(), b.get_i32());
            if xid == -1 {
                let ev = WatcherEvent::decode(b, DEFAULT_MAX_BUFFER).unwrap_or_default();
                out.push(Msg::Event {
                    kind: ev.type_,
                    path: ev.path.as_str().unwrap_or("").into(),
                });
            } else {
                out.push(Msg::Reply {
                    xid,
                    zxid,
                    err,
                    body: b,
                });
            }
        }
        out
    }
}

fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(GetDataRequest {
        path: path.into(),
        watch,
    })
}

fn xids(msgs: &[Msg]) -> Vec<i32> {
    msgs.iter()
        .filter_map(|m| {
            if let Msg::Reply { xid, .. } = m {
                Some(*xid)
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn reads_do_not_wait_behind_other_sessions_writes() {
    let mut h = Harness::new();
    let (mut a, mut b) = (h.connect(), h.connect());
    h.send(&a, 1, create("/x", 0));
    h.send(&b, 1, get_data("/", false));
    assert_eq!(
        xids(&b.drain()),
        vec![1],
        "b's read is answered while a's write is not yet durable"
    );
    assert!(a.drain().is_empty(), "no reply before the write is durable");
    h.durable();
    assert_eq!(xids(&a.drain()), vec![1]);
}

#[test]
fn a_read_behind_its_own_write_waits_and_sees_it() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/x", 0));
    h.send(&a, 2, get_data("/x", false));
    h.send(&a, 3, create("/y", 0));
    h.send(&a, 4, get_data("/y", false));
    assert!(a.drain().is_empty());
    h.durable();
    let msgs = a.drain();
    assert_eq!(xids(&msgs), vec![1, 2, 3, 4], "replies in request order");
    for m in &msgs {
        assert!(
            matches!(m, Msg::Reply { err: 0, .. }),
            "{m:?}: each read sees the write before it"
        );
    }
}

#[test]
fn events_precede_the_reply_of_the_write_that_caused_them() {
    let mut h = Harness::new();
    let mut a = h.connect();
    let mut b = h.connect();
    h.send(
        &a,
        1,
        Request::Exists(ExistsRequest {
            path: "/w".into(),
            watch: true,
        }),
    );
    h.send(
        &b,
        1,
        Request::Exists(ExistsRequest {
            path: "/w".into(),
            watch: true,
        }),
    );
    assert!(
        matches!(a.drain().as_slice(), [Msg::Reply { err: -101, .. }]),
        "exists on a missing node: NONODE, watch set"
    );
    b.drain();
    h.send(&a, 2, create("/w", 0));
    h.durable();
    let msgs = a.drain();
    assert!(
        matches!(msgs.as_slice(), [Msg::Event { kind: 1, path }, Msg::Reply { xid: 2, err: 0, .. }] if path == "/w"),
        "{msgs:?}"
    );
    assert!(
        matches!(b.drain().as_slice(), [Msg::Event { kind: 1, .. }]),
        "the other watcher is told too"
    );
    // One-shot: a second change fires nothing.
    h.send(
        &a,
        3,
        Request::SetData(SetDataRequest {
            path: "/w".into(),
            data: None,
            version: -1,
        }),
    );
    h.durable();
    assert_eq!(a.drain().len(), 1);
}

#[test]
fn failed_writes_consume_a_zxid() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/x", 0));
    h.send(&a, 2, create("/x", 0));
    h.send(&a, 3, create("/x/y", 0));
    h.durable();
    let zs: Vec<(i32, i64)> = a
        .drain()
        .into_iter()
        .filter_map(|m| {
            if let Msg::Reply { err, zxid, .. } = m {
                Some((err, zxid))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(zs.iter().map(|z| z.0).collect::<Vec<_>>(), vec![0, -110, 0]);
    assert_eq!(zs[1].1, zs[0].1 + 1);
    assert_eq!(zs[2].1, zs[1].1 + 1);
}

#[test]
fn sequential_suffix_is_never_reused_at_the_end_of_the_counter() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/p", 0));
    h.durable();
    a.drain();
    // Bring /p's create counter to one below its end, as a replayed txn could: the next txn
    // creates a child carrying that parentCVersion (applied through the state, the one way in).
    let filler = h.core.prep.seal_built(|zxid| Txn {
        header: TxnHeader {
            client_id: 0,
            cxid: 0,
            zxid,
            time: 0,
            type_: OpCode::Create.code(),
        },
        body: TxnBody::Create(CreateTxn {
            path: "/p/filler".into(),
            data: None,
            acl: Some(vec![]),
            ephemeral: false,
            parent_c_version: i32::MAX - 1,
        }),
    });
    h.core.state.apply(&filler);
    h.send(&a, 2, create("/p/s-", 2));
    h.send(&a, 3, create("/p/s-", 2));
    h.send(&a, 4, create("/p/plain", 0));
    h.durable();
    let msgs = a.drain();
    let Some(Msg::Reply { err: 0, body, .. }) = msgs.first() else {
        panic!("{msgs:?}")
    };
    let path = CreateResponse::decode(body.clone(), DEFAULT_MAX_BUFFER)
        .unwrap_or_default()
        .path;
    assert_eq!(path.as_str(), Some("/p/s-2147483646"));
    assert!(
        matches!(msgs.get(1), Some(Msg::Reply { err: -125, .. })),
        "refused, not suffix 2147483647 reused later: {msgs:?}"
    );
    assert!(
        matches!(msgs.get(2), Some(Msg::Reply { err: 0, .. })),
        "non-sequential creates still work"
    );
}

#[test]
fn reaper_removes_used_empty_containers_and_expired_ttl_nodes() {
    let mut h = Harness::new();
    let mut a = h.connect();
    let acl = || {
        Some(vec![ACL {
            perms: 31,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }])
    };
    let container = |p: &str| {
        Request::CreateContainer(CreateRequest {
            path: p.into(),
            data: None,
            acl: acl(),
            flags: 4,
        })
    };
    h.send(&a, 1, container("/used"));
    h.send(&a, 2, create("/used/child", 0));
    h.send(
        &a,
        3,
        Request::Delete(DeleteRequest {
            path: "/used/child".into(),
            version: -1,
        }),
    );
    h.send(&a, 4, container("/never"));
    h.send(
        &a,
        5,
        Request::CreateTtl(CreateTTLRequest {
            path: "/ttl".into(),
            data: None,
            acl: acl(),
            flags: 5,
            ttl: 1,
        }),
    );
    h.send(
        &a,
        6,
        Request::GetData(GetDataRequest {
            path: "/used".into(),
            watch: true,
        }),
    );
    h.durable();
    assert!(a
        .drain()
        .iter()
        .all(|m| matches!(m, Msg::Reply { err: 0, .. })));
    // The TTL (1 ms) has passed: the engine is stepped at a time chosen, with no sleep.
    let later = h.core.now.plus_ms(5);
    h.core.step(later, Input::Tick);
    h.durable();
    assert!(h.core.state.tree.lookup("/used").is_none());
    assert!(h.core.state.tree.lookup("/ttl").is_none());
    assert!(
        h.core.state.tree.lookup("/never").is_some(),
        "a container that never had a child stays"
    );
    assert_eq!(
        a.drain(),
        [Msg::Event {
            kind: 2,
            path: "/used".into()
        }],
        "the reaper's delete fires watches"
    );
}

/// The engine steps on the time it is handed (issue 36): a silent session expires on the
/// first tick at its deadline, not on the tick before, and its ephemeral goes with it — with
/// no sleep and no thread.
#[test]
fn a_silent_session_expires_on_the_first_tick_at_its_deadline() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/e", 1));
    h.durable();
    assert!(matches!(a.drain().as_slice(), [Msg::Reply { err: 0, .. }]));
    let session = h.core.conns[&a.conn].session;
    let start = h.core.now;
    let deadline = h.core.liveness.get(session).map(|s| s.deadline_ms);
    let left = deadline.expect("a live session") - h.core.now_ms();
    h.core.step(start.plus_ms(left - 1), Input::Tick);
    h.durable();
    assert!(
        h.core.state.sessions().contains_key(&session),
        "not due yet"
    );
    assert!(h.core.state.tree.lookup("/e").is_some());
    h.core.step(start.plus_ms(left), Input::Tick);
    h.durable();
    assert!(!h.core.state.sessions().contains_key(&session), "expired");
    assert!(
        h.core.state.tree.lookup("/e").is_none(),
        "its ephemeral is gone"
    );
}

#[test]
fn shutdown_finishes_in_flight_writes_first() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/x", 0));
    h.core.flush_turn();
    assert!(!h.core.handle(Input::Shutdown), "a write is in flight");
    assert!(h.durable(), "stops once it is applied");
    assert_eq!(xids(&a.drain()), vec![1], "and it was answered");
}

/// Random operation sequences from two sessions against a plain reference model of
/// ZooKeeper's semantics: error codes (in ZooKeeper's check order), zxid use, sequential names,
/// and every stat field of every node at the end.
mod model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Debug)]
    struct MNode {
        data: Option<u8>,
        version: i32,
        c: i32,
        czxid: i64,
        mzxid: i64,
        pzxid: i64,
        owner: i64,
    }

    struct Model {
        nodes: BTreeMap<String, MNode>,
        zxid: i64,
    }

    #[derive(Clone, Debug)]
    enum Op {
        Create {
            at: usize,
            seq: bool,
            eph: bool,
            data: Option<u8>,
        },
        Delete {
            at: usize,
            version: Option<i32>,
        },
        SetData {
            at: usize,
            version: Option<i32>,
        },
        Check {
            at: usize,
            version: Option<i32>,
        },
    }

    #[derive(Clone, Debug)]
    enum Step {
        One(usize, Op),
        Multi(usize, Vec<Op>),
        CloseSession(usize),
    }

    const UNIVERSE: &[&str] = &["/a", "/a/b", "/b", "/a/b/c", "/a/s-", "/b/s-"];

    fn op() -> impl Strategy<Value = Op> {
        let at = 0..32usize;
        let ver = proptest::option::weighted(0.3, 0..3i32);
        prop_oneof![
            3 => (at.clone(), any::<bool>(), proptest::bool::weighted(0.3), proptest::option::of(any::<u8>()))
                .prop_map(|(at, seq, eph, data)| Op::Create { at, seq, eph, data }),
            2 => (at.clone(), ver.clone()).prop_map(|(at, version)| Op::Delete { at, version }),
            2 => (at.clone(), ver.clone()).prop_map(|(at, version)| Op::SetData { at, version }),
            1 => (at, ver).prop_map(|(at, version)| Op::Check { at, version }),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            8 => (0..2usize, op()).prop_map(|(s, o)| Step::One(s, o)),
            2 => (0..2usize, proptest::collection::vec(op(), 1..4)).prop_map(|(s, o)| Step::Multi(s, o)),
            1 => (0..2usize).prop_map(Step::CloseSession),
        ]
    }

    impl Model {
        /// The path an op targets: a fixed name, or (half the time) a node that exists now.
        fn target(&self, at: usize) -> String {
            let existing: Vec<&String> = self.nodes.keys().filter(|k| k.as_str() != "/").collect();
            if at % 2 == 1 && !existing.is_empty() {
                existing[at / 2 % existing.len()].clone()
            } else {
                UNIVERSE[at / 2 % UNIVERSE.len()].to_string()
            }
        }

        fn parent(p: &str) -> String {
            crate::path::parent(p).unwrap_or("/").to_string()
        }

        /// Applies one op at `zxid` to `nodes`; Ok(created name) or the error code.
        fn op(
            nodes: &mut BTreeMap<String, MNode>,
            zxid: i64,
            session: i64,
            path: &str,
            op: &Op,
        ) -> Result<String, i32> {
            let parent = Self::parent(path);
            match op {
                Op::Create { seq, eph, data, .. } => {
                    let pc = nodes.get(&parent).ok_or(-101)?.c;
                    let name = if *seq {
                        format!("{path}{pc:010}")
                    } else {
                        path.to_string()
                    };
                    if nodes.contains_key(&name) {
                        return Err(-110);
                    }
                    if nodes.get(&parent).is_some_and(|n| n.owner != 0) {
                        return Err(-108);
                    }
                    if let Some(p) = nodes.get_mut(&parent) {
                        p.c += 1;
                        p.pzxid = zxid;
                    }
                    let owner = if *eph { session } else { 0 };
                    nodes.insert(
                        name.clone(),
                        MNode {
                            data: *data,
                            version: 0,
                            c: 0,
                            czxid: zxid,
                            mzxid: zxid,
                            pzxid: zxid,
                            owner,
                        },
                    );
                    Ok(name)
                }
                Op::Delete { version, .. } => {
                    nodes.get(&parent).ok_or(-101)?;
                    let n = nodes.get(path).ok_or(-101)?;
                    if version.is_some_and(|v| v != n.version) {
                        return Err(-103);
                    }
                    let prefix = format!("{path}/");
                    if nodes.keys().any(|k| k.starts_with(&prefix)) {
                        return Err(-111);
                    }
                    nodes.remove(path);
                    if let Some(p) = nodes.get_mut(&parent) {
                        p.pzxid = zxid;
                    }
                    Ok(path.to_string())
                }
                Op::SetData { version, .. } => {
                    let n = nodes.get_mut(path).ok_or(-101)?;
                    if version.is_some_and(|v| v != n.version) {
                        return Err(-103);
                    }
                    n.version += 1;
                    n.mzxid = zxid;
                    n.data = Some(7);
                    Ok(path.to_string())
                }
                Op::Check { version, .. } => {
                    let n = nodes.get(path).ok_or(-101)?;
                    if version.is_some_and(|v| v != n.version) {
                        return Err(-103);
                    }
                    Ok(path.to_string())
                }
            }
        }

        fn close(&mut self, session: i64) {
            self.zxid += 1;
            let doomed: Vec<String> = self
                .nodes
                .iter()
                .filter(|(_, n)| n.owner == session)
                .map(|(k, _)| k.clone())
                .collect();
            for p in doomed {
                self.nodes.remove(&p);
                if let Some(parent) = self.nodes.get_mut(&Self::parent(&p)) {
                    parent.pzxid = self.zxid;
                }
            }
        }
    }

    fn request(path: &str, op: &Op) -> Request {
        let v = |v: &Option<i32>| v.unwrap_or(-1);
        match op {
            Op::Create { seq, eph, data, .. } => {
                let flags = i32::from(*eph) | (i32::from(*seq) << 1);
                let acl = Some(vec![ACL {
                    perms: 31,
                    id: Id {
                        scheme: "world".into(),
                        id: "anyone".into(),
                    },
                }]);
                Request::Create(CreateRequest {
                    path: path.into(),
                    data: data.map(|d| Bytes::from(vec![d])),
                    acl,
                    flags,
                })
            }
            Op::Delete { version, .. } => Request::Delete(DeleteRequest {
                path: path.into(),
                version: v(version),
            }),
            Op::SetData { version, .. } => Request::SetData(SetDataRequest {
                path: path.into(),
                data: Some(Bytes::from_static(&[7])),
                version: v(version),
            }),
            Op::Check { version, .. } => Request::Check(CheckVersionRequest {
                path: path.into(),
                version: v(version),
            }),
        }
    }

    fn at_of(op: &Op) -> usize {
        match op {
            Op::Create { at, .. }
            | Op::Delete { at, .. }
            | Op::SetData { at, .. }
            | Op::Check { at, .. } => *at,
        }
    }

    fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
        let mut h = Harness::new();
        let mut clients = vec![h.connect(), h.connect()];
        let mut sessions: Vec<i64> = Vec::new();
        for c in &clients {
            sessions.push(h.core.conns.get(&c.conn).map_or(0, |x| x.session));
        }
        let root = MNode {
            data: None,
            version: 0,
            c: 0,
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            owner: 0,
        };
        let mut m = Model {
            nodes: BTreeMap::from([("/".to_string(), root)]),
            zxid: h.core.state.zxid(),
        };
        let mut xid = 0;
        for step in steps {
            xid += 1;
            match step {
                Step::One(s, op) => {
                    let path = m.target(at_of(&op));
                    m.zxid += 1;
                    let want = Model::op(&mut m.nodes, m.zxid, sessions[s], &path, &op);
                    h.send(&clients[s], xid, request(&path, &op));
                    h.durable();
                    let msgs = clients[s].drain();
                    let Some(Msg::Reply {
                        zxid, err, body, ..
                    }) = msgs.into_iter().find(|x| matches!(x, Msg::Reply { .. }))
                    else {
                        return Err(TestCaseError::fail("no reply"));
                    };
                    prop_assert_eq!(
                        zxid,
                        m.zxid,
                        "every write consumes one zxid: {:?} {}",
                        op,
                        path
                    );
                    prop_assert_eq!(
                        err,
                        want.as_ref().err().copied().unwrap_or(0),
                        "{:?} on {}",
                        op,
                        path
                    );
                    if let (Op::Create { .. }, Ok(name)) = (&op, &want) {
                        let got =
                            CreateResponse::decode(body, DEFAULT_MAX_BUFFER).unwrap_or_default();
                        prop_assert_eq!(got.path.as_str(), Some(name.as_str()));
                    }
                }
                Step::Multi(s, ops) => {
                    m.zxid += 1;
                    let mut scratch = m.nodes.clone();
                    let mut results = Vec::new();
                    let mut reqs = Vec::new();
                    for op in &ops {
                        // Targets are chosen against the state before the multi.
                        let path = m.target(at_of(op));
                        reqs.push(request(&path, op));
                        results.push(Model::op(&mut scratch, m.zxid, sessions[s], &path, op));
                        if results.last().is_some_and(|r| r.is_err()) {
                            break;
                        }
                    }
                    let failed = results.iter().position(|r| r.is_err());
                    if failed.is_none() {
                        m.nodes = scratch;
                    }
                    // Requests after a failing op still go on the wire (with their targets).
                    for op in ops.iter().skip(reqs.len()) {
                        reqs.push(request(&m.target(at_of(op)), op));
                    }
                    h.send(&clients[s], xid, Request::Multi(MultiRequest::new(reqs)));
                    h.durable();
                    let Some(Msg::Reply {
                        zxid, err, body, ..
                    }) = clients[s]
                        .drain()
                        .into_iter()
                        .find(|x| matches!(x, Msg::Reply { .. }))
                    else {
                        return Err(TestCaseError::fail("no multi reply"));
                    };
                    prop_assert_eq!((zxid, err), (m.zxid, 0));
                    let Ok(Response::Multi(resp)) =
                        Response::decode(OpCode::Multi, body, DEFAULT_MAX_BUFFER)
                    else {
                        return Err(TestCaseError::fail("multi reply did not decode"));
                    };
                    let errs: Vec<i32> = resp.results.iter().map(|(h, _)| h.err).collect();
                    let want: Vec<i32> = (0..ops.len())
                        .map(|i| match failed {
                            None => 0,
                            Some(f) if i < f => 0,
                            Some(f) if i == f => results[f].as_ref().err().copied().unwrap_or(0),
                            Some(_) => -2,
                        })
                        .collect();
                    prop_assert_eq!(errs, want, "{:?}", ops);
                }
                Step::CloseSession(s) => {
                    m.close(sessions[s]);
                    h.send(&clients[s], xid, Request::CloseSession);
                    h.durable();
                    clients[s] = h.connect();
                    m.zxid += 1; // the new session's createSession
                    sessions[s] = h.core.conns.get(&clients[s].conn).map_or(0, |x| x.session);
                }
            }
        }
        // Every node, every stat field; no node the model does not have.
        let t = &h.core.state.tree;
        for (p, n) in &m.nodes {
            let id = t
                .lookup(p)
                .ok_or_else(|| TestCaseError::fail(format!("{p} missing")))?;
            let kids = m
                .nodes
                .keys()
                .filter(|k| k.as_str() != "/" && Model::parent(k) == *p)
                .count() as i32;
            let kids = if p == "/" { kids + 1 } else { kids }; // plus /zookeeper
            let st = t.stat(id);
            prop_assert_eq!(
                (
                    st.czxid,
                    st.mzxid,
                    st.pzxid,
                    st.version,
                    st.cversion,
                    st.num_children,
                    st.ephemeral_owner,
                    st.data_length
                ),
                (
                    n.czxid,
                    n.mzxid,
                    n.pzxid,
                    n.version,
                    2 * n.c - kids,
                    kids,
                    n.owner,
                    i32::from(n.data.is_some())
                ),
                "stat of {}",
                p
            );
        }
        prop_assert_eq!(
            t.znode_count(),
            m.nodes.len() + 4,
            "tree has nodes the model lacks"
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn random_operation_sequences_match_the_model(steps in proptest::collection::vec(step(), 1..40)) {
            run(steps)?;
        }
    }
}

fn create_with(path: &str, data: &[u8]) -> Request {
    let Request::Create(mut c) = create(path, 0) else {
        unreachable!()
    };
    c.data = Some(Bytes::copy_from_slice(data));
    Request::Create(c)
}

fn errs(msgs: &[Msg]) -> Vec<(i32, i32)> {
    msgs.iter()
        .filter_map(|m| match m {
            Msg::Reply { xid, err, .. } => Some((*xid, *err)),
            _ => None,
        })
        .collect()
}

#[test]
fn over_its_output_budget_a_connections_reads_are_held_and_replies_stay_in_order() {
    let mut h = Harness::new();
    let budget = OutBudget::new(100, GlobalBudget::new(usize::MAX));
    let mut a = h.connect_with(budget.clone());
    a.write_out();
    h.send(&a, 1, create_with("/big", &[7; 1000]));
    h.durable();
    assert_eq!(xids(&a.write_out()), vec![1]);
    // The first read's reply (1,088 bytes) is queued and not written: over the budget.
    h.send(&a, 2, get_data("/big", false));
    h.send(&a, 3, get_data("/big", false));
    h.send(&a, 4, create("/after", 0));
    h.durable();
    assert_eq!(
        xids(&a.drain()),
        vec![2],
        "read 3 is held, write 4 waits behind it"
    );
    assert!(budget.over());
    // The writer writes reply 2 and reports the connection drained.
    budget.wrote((budget.queued(), 0));
    h.core.handle(Input::Drained(Some(a.conn)));
    assert_eq!(
        xids(&a.drain()),
        vec![3, 4],
        "the held read, then the write's reply, in request order"
    );
}

#[test]
fn a_connection_whose_notifications_exceed_its_budget_is_closed_and_its_session_kept() {
    let mut h = Harness::new();
    let budget = OutBudget::new(200, GlobalBudget::new(usize::MAX));
    let mut w = h.connect_with(budget.clone());
    w.write_out();
    let session = h.core.conns.get(&w.conn).map(|c| c.session);
    h.send(
        &w,
        1,
        Request::AddWatch(AddWatchRequest {
            path: "/".into(),
            mode: 1,
        }),
    );
    assert_eq!(xids(&w.write_out()), vec![1]);
    let writer = h.connect();
    for i in 0..20 {
        h.send(&writer, i + 1, create(&format!("/node{i:04}"), 0));
        h.durable();
    }
    assert!(!h.core.conns.contains_key(&w.conn), "closed");
    assert!(w.out.cancelled(), "its tasks told to stop at once");
    assert_eq!(h.core.stats.closed_output_budget, 1);
    let events = w
        .drain()
        .into_iter()
        .filter(|m| matches!(m, Msg::Event { .. }))
        .count();
    assert!(
        (1..20).contains(&events),
        "{events} events queued before it was closed"
    );
    let session = session.unwrap_or_default();
    assert!(h.core.liveness.get(session).is_some(), "the session stays");
}

#[test]
fn a_reply_over_max_reply_is_refused_before_it_is_built() {
    let mut h = Harness::new();
    h.core.cfg.max_reply = 300;
    let mut a = h.connect();
    h.send(&a, 1, create("/p", 0));
    for i in 0..10 {
        h.send(&a, i + 2, create(&format!("/p/{:030}", i), 0));
    }
    h.durable();
    a.drain();
    let children = |watch| {
        Request::GetChildren(GetChildrenRequest {
            path: "/p".into(),
            watch,
        })
    };
    let multi = |n: usize| {
        Request::MultiRead(MultiRequest::new(
            (0..n).map(|_| get_data("/p", false)).collect(),
        ))
    };
    // 10 names of 30 bytes: a 344-byte vector; 4 getData of 72 bytes each: 350 bytes.
    h.send(&a, 20, children(false));
    h.send(&a, 21, get_data("/p", false));
    h.send(&a, 22, multi(4));
    h.send(&a, 23, multi(2));
    assert_eq!(
        errs(&a.drain()),
        vec![
            (20, ErrorCode::MarshallingError.code()),
            (21, 0),
            (22, ErrorCode::MarshallingError.code()),
            (23, 0)
        ]
    );
}

#[test]
fn a_reply_waits_for_room_in_the_server_wide_budget_and_one_larger_than_it_is_refused() {
    let mut h = Harness::new();
    let global = GlobalBudget::new(1500);
    let (ba, bb) = (
        OutBudget::new(usize::MAX, global.clone()),
        OutBudget::new(usize::MAX, global.clone()),
    );
    let (mut a, mut b) = (h.connect_with(ba.clone()), h.connect_with(bb.clone()));
    a.write_out();
    b.write_out();
    h.send(&a, 1, create_with("/big", &[7; 1000]));
    h.send(&a, 2, create_with("/huge", &[7; 1600]));
    h.durable();
    assert_eq!(xids(&a.write_out()), vec![1, 2]);
    // A 1,092-byte reply: room for one in a budget of 1,500, not for two.
    h.send(&a, 3, get_data("/big", false));
    h.send(&b, 1, get_data("/big", false));
    h.send(&b, 2, create("/after", 0));
    h.durable();
    assert_eq!(xids(&a.drain()), vec![3]);
    assert!(
        xids(&b.drain()).is_empty(),
        "b's read waits for room, its write's reply behind it"
    );
    assert!(!global.over(), "held before the budget is spent, not after");
    // One larger than the whole budget could never be queued: refused, at once.
    h.send(&a, 4, get_data("/huge", false));
    assert_eq!(
        errs(&a.drain()),
        vec![(4, ErrorCode::MarshallingError.code())]
    );
    ba.wrote((ba.queued(), 0));
    h.core.handle(Input::Drained(None));
    assert_eq!(xids(&b.drain()), vec![1, 2], "in request order");
}

#[test]
fn a_read_waiting_for_room_sets_its_watch_only_when_answered() {
    let mut h = Harness::new();
    let budget = OutBudget::new(1500, GlobalBudget::new(usize::MAX));
    let mut a = h.connect_with(budget.clone());
    let w = h.connect();
    a.write_out();
    h.send(&w, 1, create_with("/big", &[7; 1000]));
    h.durable();
    // The first reply (1,092 bytes) leaves the connection under its budget of 1,500 but with
    // no room for a second: that one, with a watch, waits.
    h.send(&a, 1, get_data("/big", false));
    h.send(&a, 2, get_data("/big", true));
    assert_eq!(xids(&a.drain()), vec![1]);
    h.send(
        &w,
        2,
        Request::SetData(SetDataRequest {
            path: "/big".into(),
            data: Some(Bytes::from_static(b"changed")),
            version: -1,
        }),
    );
    h.durable();
    assert!(a.drain().is_empty(), "no event for a watch not set yet");
    budget.wrote((budget.queued(), 0));
    h.core.handle(Input::Drained(Some(a.conn)));
    match &a.drain()[..] {
        [Msg::Reply {
            xid: 2,
            err: 0,
            body,
            ..
        }] => assert_eq!(&body[..11], b"\0\0\0\x07changed"),
        other => panic!("{other:?}"),
    }
    h.send(
        &w,
        3,
        Request::SetData(SetDataRequest {
            path: "/big".into(),
            data: Some(Bytes::from_static(b"again")),
            version: -1,
        }),
    );
    h.durable();
    assert_eq!(
        a.drain(),
        [Msg::Event {
            kind: 3,
            path: "/big".into()
        }],
        "the watch set with the reply fires"
    );
}

#[test]
fn large_replies_leave_a_quarter_of_the_server_budget_to_the_others() {
    let mut h = Harness::new();
    let global = GlobalBudget::new(4000);
    let budgets: Vec<_> = (0..4)
        .map(|_| OutBudget::new(1000, global.clone()))
        .collect();
    let mut c: Vec<_> = budgets.iter().map(|b| h.connect_with(b.clone())).collect();
    for x in c.iter_mut() {
        x.write_out();
    }
    h.send(&c[0], 1, create_with("/big", &[7; 1000]));
    h.send(&c[0], 2, create("/small", 0));
    h.durable();
    c[0].write_out();
    // 1,092-byte replies, over a connection's budget of 1,000: large. Two fit in three
    // quarters of 4,000; a third waits, while a small reply still has the last quarter.
    for (i, x) in c.iter().take(3).enumerate() {
        h.send(x, 10 + i as i32, get_data("/big", false));
    }
    h.send(&c[3], 20, get_data("/small", false));
    let got: Vec<Vec<i32>> = c.iter_mut().map(|x| xids(&x.drain())).collect();
    assert_eq!(got, vec![vec![10], vec![11], vec![], vec![20]]);
    budgets[0].wrote((budgets[0].queued(), 0));
    h.core.handle(Input::Drained(None));
    assert_eq!(xids(&c[2].drain()), vec![12]);
}

#[test]
fn a_reply_larger_than_the_connections_budget_goes_alone() {
    let mut h = Harness::new();
    let budget = OutBudget::new(500, GlobalBudget::new(usize::MAX));
    let mut a = h.connect_with(budget.clone());
    a.write_out();
    h.send(&a, 1, create("/p", 0));
    for i in 0..40 {
        h.send(&a, i + 2, create(&format!("/p/{i:030}"), 0));
    }
    h.durable();
    a.write_out();
    let children = Request::GetChildren(GetChildrenRequest {
        path: "/p".into(),
        watch: false,
    });
    // 40 names of 30 bytes: a 1,364-byte reply, over the 500-byte budget. Nothing else is
    // queued: it goes. A small read behind it waits until it is written, then the next large one.
    h.send(&a, 50, children.clone());
    h.send(&a, 51, get_data("/p", false));
    h.send(&a, 52, children);
    let got = a.drain();
    assert_eq!(xids(&got), vec![50]);
    match &got[..] {
        [Msg::Reply { err: 0, body, .. }] => assert_eq!(body.len(), 4 + 40 * 34),
        other => panic!("{other:?}"),
    }
    budget.wrote((budget.queued(), 0));
    h.core.handle(Input::Drained(Some(a.conn)));
    assert_eq!(
        xids(&a.drain()),
        vec![51],
        "the large one waits behind the small"
    );
    budget.wrote((budget.queued(), 0));
    h.core.handle(Input::Drained(Some(a.conn)));
    assert_eq!(xids(&a.drain()), vec![52]);
}

#[test]
fn a_reply_larger_than_a_write_batch_is_sent_in_parts_and_read_whole() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/p", 0));
    // 1,200 names of 1,000 bytes: a 1.2 MB reply, over jute.maxbuffer and the old default
    // maxReplySize; ZooKeeper sends it.
    for i in 0..1200 {
        h.send(&a, i + 2, create(&format!("/p/{i:01000}"), 0));
    }
    h.durable();
    a.drain();
    h.send(
        &a,
        9000,
        Request::GetChildren(GetChildrenRequest {
            path: "/p".into(),
            watch: false,
        }),
    );
    let mut parts = Vec::new();
    while let Some(o) = a.out.next() {
        parts.push(match o {
            Out::Bytes(b) => ("part", b.len()),
            Out::Reply(b) => ("reply", b.len()),
            _ => ("other", 0),
        });
    }
    let frame = 20 + 4 + 1200 * 1004;
    assert_eq!(
        parts,
        vec![
            ("part", crate::limits::WRITE_BATCH),
            ("reply", frame - crate::limits::WRITE_BATCH)
        ]
    );
}

#[path = "sasl_test.rs"]
mod sasl;

/// A standalone server cannot reconfigure: RECONFIGDISABLED, and UNIMPLEMENTED with
/// reconfigEnabled=true — what ZooKeeper 3.8's standalone server answers (kazoo against
/// both, docs/design/ENSEMBLE.md "Dynamic reconfiguration"). Each is a failed write taking a zxid.
#[test]
fn a_standalone_server_refuses_reconfig_as_zookeepers_does() {
    let reconfig = || {
        Request::Reconfig(ReconfigRequest {
            joining_servers: JStr::null(),
            leaving_servers: JStr::from("3"),
            new_members: JStr::null(),
            cur_config_id: -1,
        })
    };
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, reconfig());
    h.durable();
    h.core.cfg.reconfig_enabled = true;
    h.send(&a, 2, reconfig());
    h.durable();
    assert_eq!(
        errs(&a.drain()),
        vec![
            (1, ErrorCode::ReconfigDisabled.code()),
            (2, ErrorCode::Unimplemented.code())
        ]
    );
}

/// A snapshot writer that takes nothing (its disk stalled): the capture fills the writer's
/// queue and then waits, while the core goes on answering requests; no second snapshot
/// starts until the writer says the first one's file is finished.
#[test]
fn a_stalled_snapshot_writer_never_blocks_the_core() {
    use crate::durability::snapshotter::{SnapLink, SnapMsg};
    use crate::limits::SNAPSHOT_QUEUE as QUEUE;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut h = Harness::new();
    let mut a = h.connect();
    // A block is cut after each capture step of SNAPSHOT_STEP nodes once it holds
    // SNAPSHOT_BLOCK bytes: this tree makes about 2 × QUEUE blocks, more than the writer's
    // queue holds.
    let per_node = crate::limits::SNAPSHOT_BLOCK / crate::limits::SNAPSHOT_STEP + 64;
    let data = vec![7u8; per_node];
    let nodes = (2 * QUEUE * crate::limits::SNAPSHOT_STEP) as i32;
    for i in 0..nodes {
        h.send(&a, i, create_with(&format!("/n{i}"), &data));
        if i % 1024 == 1023 {
            h.durable();
            a.write_out();
        }
    }
    h.durable();
    a.write_out();

    let (tx, writer) = std_mpsc::sync_channel::<SnapMsg>(QUEUE);
    let writing = Arc::new(AtomicBool::new(false));
    let (_spare_tx, spare) = std_mpsc::channel();
    h.core.enable_snapshots(
        SnapLink {
            tx,
            writing: writing.clone(),
            written: Default::default(),
        },
        spare,
        1_000_000,
    );
    assert!(h.core.start_snapshot().is_some());
    // On a thread, so that a core blocking on the full queue fails the test instead of
    // hanging it.
    let (done_tx, done) = std_mpsc::channel();
    let worker = std::thread::spawn(move || {
        for turn in 0..1_000 {
            h.core.snapshot_step();
            h.send(&a, 10_000 + turn, get_data("/n0", false));
        }
        let _ = done_tx.send(());
        (h, a)
    });
    assert!(
        done.recv_timeout(std::time::Duration::from_secs(30))
            .is_ok(),
        "the core blocked on the snapshot writer's queue"
    );
    let Ok((mut h, mut a)) = worker.join() else {
        panic!("core thread panicked")
    };
    let replies = a.write_out();
    assert_eq!(xids(&replies).len(), 1_000, "every read was answered");
    assert!(
        h.core.snapshot_waiting(),
        "the capture waits for the writer"
    );
    assert!(h.core.capturing());
    assert!(h.core.start_snapshot().is_none(), "one capture at a time");

    // The writer catches up: the capture goes on to its end, in order.
    let mut kinds = Vec::new();
    for _ in 0..10_000 {
        h.core.snapshot_step();
        while let Ok(m) = writer.try_recv() {
            kinds.push(match m {
                SnapMsg::Begin { .. } => 'B',
                SnapMsg::Block(_) => 'b',
                SnapMsg::Finish(_) => 'F',
            });
        }
        if kinds.last() == Some(&'F') {
            break;
        }
    }
    let kinds: String = kinds.into_iter().collect();
    assert!(kinds.starts_with("Bbbbbbbbbbbbbbbbb"), "{kinds}");
    assert!(kinds.len() > QUEUE + 2, "{kinds}");
    assert!(
        kinds.ends_with("bF") && kinds.matches('B').count() == 1,
        "{kinds}"
    );
    assert!(!h.core.capturing() && !h.core.snapshot_waiting());
    // Captured, but the file not yet finished: the next snapshot waits for it, and one
    // asked for (csnp) starts once the writer is done.
    assert!(h.core.start_snapshot().is_none());
    let zxid = h.core.state.zxid();
    assert_eq!(h.core.request_snapshot(), Some(zxid));
    assert!(h.core.snapshot_waiting() && h.core.capturing());
    h.core.snapshot_step();
    assert!(
        writer.try_recv().is_err(),
        "nothing starts while the file is written"
    );
    writing.store(false, Ordering::Release);
    h.core.snapshot_step();
    assert!(matches!(
        writer.try_recv(),
        Ok(SnapMsg::Begin { start_zxid }) if start_zxid == zxid
    ));
    assert!(!h.core.snapshot_waiting());
}

/// A backup (the admin `snapshot`, backup.rs) captured over many turns while writes of every
/// kind commit between its steps is the state the core has when it ends: the txns applied
/// meanwhile are replayed over the capture, every node, stat and ACL the same.
#[test]
fn a_backup_captured_under_writes_is_the_state_at_its_end() {
    let mut h = Harness::new();
    let c = h.connect();
    let mut xid = 1;
    for i in 0..6000 {
        h.send(&c, xid, create(&format!("/n{i:05}"), 0));
        xid += 1;
        if i % 500 == 0 {
            h.durable();
        }
    }
    h.durable();
    h.core.admin(admin::Query::Backup {
        reply: Token::detached(7),
    });
    let mut steps = 0;
    let image = loop {
        // Between two steps: creates, changes and deletes on both sides of the walk.
        h.send(&c, xid, create(&format!("/m{steps:05}"), 0));
        h.send(
            &c,
            xid + 1,
            Request::SetData(SetDataRequest {
                path: format!("/n{:05}", (steps * 37) % 6000).into(),
                data: Some(Bytes::from(format!("v{steps}"))),
                version: -1,
            }),
        );
        h.send(
            &c,
            xid + 2,
            Request::Delete(DeleteRequest {
                path: format!("/n{:05}", 5999 - steps).into(),
                version: -1,
            }),
        );
        xid += 3;
        h.durable();
        h.core.backup_step();
        steps += 1;
        if let Some(image) = h.core.answer_to::<Vec<u8>>(7) {
            break image;
        }
        assert!(steps < 1000, "the backup never finished");
    };
    assert!(steps > 2, "captured in {steps} steps: not across writes");
    let state = crate::durability::image::decode_fuzzy(&image).unwrap();
    assert_eq!(state.zxid(), h.core.state.zxid());
    crate::testkit::assert_same_tree("backup", &state.tree, &h.core.state.tree);
    assert_eq!(state.sessions(), h.core.state.sessions());
}
