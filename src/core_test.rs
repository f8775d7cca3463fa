//! The core driven message by message, with the log's durability in the test's hands: the
//! ordering guarantees (reads vs writes, events before replies), the reaper, shutdown.

use super::*;
use crate::tree;
use bytes::Buf;

struct Harness {
    core: Core,
    log: std_mpsc::Receiver<Batch>,
    next_conn: ConnId,
}

struct Client {
    conn: ConnId,
    rx: mpsc::UnboundedReceiver<Out>,
}

/// One decoded server message.
#[derive(Debug)]
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

fn cfg() -> CoreConfig {
    CoreConfig {
        tick_ms: 2000,
        min_session_timeout: 4000,
        max_session_timeout: 40000,
        max_buffer: DEFAULT_MAX_BUFFER,
        ttl_enabled: true,
        four_letter_words: vec!["*".into()],
        super_digest: None,
        secret: [1; 16],
        client_port: 2181,
        data_dir: "data".into(),
        data_log_dir: "data".into(),
        max_client_cnxns: 0,
        container_check_ms: 0,
    }
}

impl Harness {
    fn new() -> Self {
        let (tx, log) = std_mpsc::channel();
        Harness {
            core: Core::new(cfg(), tx),
            log,
            next_conn: 1,
        }
    }

    /// Hands the prepped txns to the "log" and reports them durable. Returns handle()'s stop flag.
    fn durable(&mut self) -> bool {
        self.core.flush_log();
        let last = self
            .log
            .try_iter()
            .flat_map(|b| b.txns)
            .map(|(z, _)| z)
            .max();
        last.is_some_and(|z| self.core.handle(CoreMsg::Durable(z)))
    }

    fn connect(&mut self) -> Client {
        let conn = self.next_conn;
        self.next_conn += 1;
        let (out, rx) = mpsc::unbounded_channel();
        let (ready, _ready_rx) = oneshot::channel();
        let req = ConnectRequest {
            time_out: 30000,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
            ..Default::default()
        };
        self.core.handle(CoreMsg::Connect {
            conn,
            req,
            out,
            peer: "127.0.0.1:1".parse().unwrap_or_else(|_| unreachable!()),
            ready,
        });
        self.durable();
        let mut c = Client { conn, rx };
        assert!(
            matches!(c.rx.try_recv(), Ok(Out::Bytes(_))),
            "ConnectResponse"
        );
        c
    }

    fn send(&mut self, c: &Client, xid: i32, req: Request) {
        self.core.handle(CoreMsg::Request {
            conn: c.conn,
            xid,
            req,
        });
    }
}

impl Client {
    fn drain(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Ok(o) = self.rx.try_recv() {
            let (Out::Bytes(mut b) | Out::Reply(mut b)) = o else {
                continue;
            };
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

fn create(path: &str, flags: i32) -> Request {
    let acl = vec![ACL {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }];
    Request::Create(CreateRequest {
        path: path.into(),
        data: Some(Bytes::from_static(b"d")),
        acl: Some(acl),
        flags,
    })
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
    // Bring /p's create counter to one below its end, as a replayed txn could.
    let p = h.core.tree.lookup("/p").unwrap_or(tree::ROOT);
    let new = tree::NewNode {
        data: None,
        acl: vec![],
        owner: 0,
        zxid: 99,
        time: 0,
    };
    h.core.tree.apply_create(p, "filler", i32::MAX - 1, new);
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
    std::thread::sleep(std::time::Duration::from_millis(5));
    h.core.handle(CoreMsg::Tick);
    h.durable();
    assert!(h.core.tree.lookup("/used").is_none());
    assert!(h.core.tree.lookup("/ttl").is_none());
    assert!(
        h.core.tree.lookup("/never").is_some(),
        "a container that never had a child stays"
    );
    assert!(
        matches!(a.drain().as_slice(), [Msg::Event { kind: 2, path }] if path == "/used"),
        "the reaper's delete fires watches"
    );
}

#[test]
fn shutdown_finishes_in_flight_writes_first() {
    let mut h = Harness::new();
    let mut a = h.connect();
    h.send(&a, 1, create("/x", 0));
    h.core.flush_log();
    assert!(!h.core.handle(CoreMsg::Shutdown), "a write is in flight");
    assert!(h.durable(), "stops once it is applied");
    assert_eq!(xids(&a.drain()), vec![1], "and it was answered");
}
