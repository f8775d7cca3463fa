//! Read-only mode on one core: entered after the grace without a quorum, only read-only
//! clients with local sessions, writes and syncs NOTREADONLY, reads served, every client
//! dropped and the local sessions forgotten once the member serves again.

use super::*;
use crate::core::member::{Committed, RoleView};
use crate::core::testkit::{handshake, TestWriter};
use crate::core::token::Token;
use crate::core::{Input, Out, OutBudget};
use bytes::{Buf, Bytes};
use palisade_proto::*;
use std::time::Duration;

fn member(grace: Option<Duration>) -> Core {
    let mut core = Core::new(crate::core::testkit::cfg());
    let mut links = crate::core::testkit::links(3, 100_000, Vec::new());
    links.read_only = grace;
    core.join(links);
    core
}

fn follower_of(leader: Option<u64>) -> Input {
    in_term(leader, 7)
}

fn in_term(leader: Option<u64>, term: u64) -> Input {
    Input::Role(RoleView {
        leader,
        term,
        quorum: true,
        ..RoleView::default()
    })
}

/// A member that followed leader 1 in term 7 (the key and one session of the ensemble
/// applied), then lost it.
fn cut_off(grace: Option<Duration>) -> (Core, i64) {
    let mut core = member(grace);
    core.handle(follower_of(Some(1)));
    let mut p = crate::prep::Prepper::new(7 << 32, false);
    let global = (1 << 56) | 5;
    let items = vec![
        Committed::Key([4; 16]),
        Committed::Txn(p.create_session(global, 10_000, 0)),
    ];
    let ack = Token::detached(0);
    core.handle(Input::Committed {
        items,
        at: None,
        log_bytes: 0,
        ack,
    });
    core.handle(follower_of(None));
    (core, global)
}

struct Client {
    conn: ConnId,
    /// What the engine handed the connection's writer.
    out: std::sync::Arc<TestWriter>,
}

fn connect(core: &mut Core, conn: ConnId, session: i64, pw: [u8; 16], ro: Option<bool>) -> Client {
    let (input, out) = handshake(conn, session, pw, ro, OutBudget::unlimited());
    core.handle(input);
    Client { conn, out }
}

#[derive(Debug, PartialEq)]
enum Got {
    Connected {
        session: i64,
        read_only: Option<bool>,
        pw: Bytes,
    },
    Reply {
        xid: i32,
        zxid: i64,
        err: i32,
    },
    Closed,
}

fn got(c: &mut Client) -> Vec<Got> {
    let mut out = Vec::new();
    while let Some(o) = c.out.next() {
        out.push(match o {
            Out::Close => Got::Closed,
            Out::Batch { .. } => panic!("a test's connection has no direct writes"),
            Out::Bytes(mut b) if b.len() >= 40 => {
                b.advance(4);
                let r = ConnectResponse::decode(b, usize::MAX).expect("ConnectResponse");
                Got::Connected {
                    session: r.session_id,
                    read_only: r.read_only,
                    pw: r.passwd.unwrap_or_default(),
                }
            }
            Out::Reply(mut b) | Out::Bytes(mut b) | Out::Event(mut b) => {
                b.advance(4);
                Got::Reply {
                    xid: b.get_i32(),
                    zxid: b.get_i64(),
                    err: b.get_i32(),
                }
            }
        });
    }
    out
}

fn request(core: &mut Core, c: &Client, xid: i32, req: Request) {
    core.handle(crate::core::testkit::request(c.conn, xid, req));
}

#[test]
fn without_a_quorum_a_member_serves_read_only_clients_until_it_serves_again() {
    let (mut core, global) = cut_off(Some(Duration::ZERO));
    let applied = core.state.zxid();
    // Before the grace has been seen to pass (at the next tick), clients are refused.
    let mut early = connect(&mut core, 1, 0, [0; 16], Some(true));
    assert_eq!(got(&mut early), vec![Got::Closed]);
    assert_eq!(core.mode(), "follower");
    core.handle(Input::Tick);
    core.handle(Input::Tick);
    assert_eq!(core.mode(), "read-only");
    let isro = core.four_letter(FourLetterWord::Isro, "127.0.0.1:2".parse().expect("addr"));
    assert_eq!(isro, "ro");
    let srvr = core.four_letter(FourLetterWord::Srvr, "127.0.0.1:2".parse().expect("addr"));
    assert!(
        srvr.contains("READ-ONLY mode; serving only read-only clients\n"),
        "{srvr}"
    );
    assert!(srvr.contains("Mode: read-only\n"), "{srvr}");

    // A client that does not ask read-only (old or new format) is refused.
    for ro in [None, Some(false)] {
        let mut rw = connect(&mut core, 2, 0, [0; 16], ro);
        assert_eq!(got(&mut rw), vec![Got::Closed], "readOnly {ro:?}");
    }
    // A session of the ensemble may not come back here.
    let pw = core.liveness.password(global);
    let mut old = connect(&mut core, 3, global, pw, Some(true));
    assert_eq!(got(&mut old), vec![Got::Closed]);

    // A read-only client gets a local session, flagged read-only; no txn is made for it.
    let mut c = connect(&mut core, 4, 0, [0; 16], Some(true));
    let r = got(&mut c);
    let Some(Got::Connected {
        session,
        read_only,
        pw,
    }) = r.first()
    else {
        panic!("{r:?}");
    };
    let (session, pw) = (*session, pw.clone());
    assert_eq!(*read_only, Some(true));
    assert_eq!(session >> 56, 3, "this member's id in the top byte");
    assert!(!core.state.sessions().contains_key(&session));
    assert_eq!(core.state.zxid(), applied);

    // Reads work; writes and syncs are NOTREADONLY with the applied zxid, in order.
    let get = |p: &str| {
        Request::GetData(GetDataRequest {
            path: p.into(),
            watch: false,
        })
    };
    request(&mut core, &c, 1, get("/zookeeper"));
    let create = Request::Create(CreateRequest {
        path: "/x".into(),
        data: None,
        acl: Some(vec![]),
        flags: 0,
    });
    request(&mut core, &c, 2, create);
    request(
        &mut core,
        &c,
        3,
        Request::Sync(SyncRequest { path: "/".into() }),
    );
    request(&mut core, &c, 4, get("/missing"));
    let nro = ErrorCode::NotReadOnly.code();
    assert_eq!(
        got(&mut c),
        vec![
            Got::Reply {
                xid: 1,
                zxid: applied,
                err: 0
            },
            Got::Reply {
                xid: 2,
                zxid: applied,
                err: nro
            },
            Got::Reply {
                xid: 3,
                zxid: applied,
                err: nro
            },
            Got::Reply {
                xid: 4,
                zxid: applied,
                err: ErrorCode::NoNode.code()
            },
        ]
    );
    assert_eq!(core.state.zxid(), applied, "nothing was prepped");

    // Alone, the member campaigns again and again (its term rises): its clients stay.
    core.handle(in_term(None, 8));
    core.handle(in_term(None, 9));
    assert!(got(&mut c).is_empty());
    assert!(core.read_only());

    // The local session moves to another connection of this member.
    let pw: [u8; 16] = pw.as_ref().try_into().expect("16 bytes");
    let mut again = connect(&mut core, 5, session, pw, Some(true));
    assert!(
        matches!(got(&mut again).first(), Some(Got::Connected { session: s, .. }) if *s == session)
    );
    assert_eq!(got(&mut c), vec![Got::Closed], "the old connection goes");

    // The member serves again: its read-only clients are dropped and the local session is
    // no more (a client coming back with it is told it expired).
    core.handle(follower_of(Some(2)));
    assert_eq!(core.mode(), "follower");
    assert_eq!(got(&mut again), vec![Got::Closed]);
    assert!(core.liveness.get(session).is_none());
    assert!(!core.read_only());
}

#[test]
fn a_local_session_expires_and_close_session_ends_it() {
    let (mut core, _) = cut_off(Some(Duration::ZERO));
    core.handle(Input::Tick);
    assert!(core.read_only());
    let mut c = connect(&mut core, 1, 0, [0; 16], Some(true));
    let Some(Got::Connected { session, .. }) = got(&mut c).into_iter().next() else {
        panic!("no session");
    };
    request(&mut core, &c, 9, Request::CloseSession);
    assert_eq!(
        got(&mut c),
        vec![
            Got::Reply {
                xid: 9,
                zxid: core.state.zxid(),
                err: 0
            },
            Got::Closed
        ]
    );
    assert!(core.liveness.get(session).is_none());
    // A silent client's local session expires on the member (no leader expires it).
    let mut d = connect(&mut core, 2, 0, [0; 16], Some(true));
    let Some(Got::Connected { session, .. }) = got(&mut d).into_iter().next() else {
        panic!("no session");
    };
    if let Some(s) = core.liveness.get_mut(session) {
        s.deadline_ms = 0;
    }
    core.handle(Input::Tick);
    assert_eq!(got(&mut d), vec![Got::Closed]);
    assert!(core.liveness.get(session).is_none());
}

#[test]
fn off_or_within_the_grace_a_member_without_a_quorum_serves_nobody() {
    for grace in [None, Some(Duration::from_secs(3600))] {
        let (mut core, _) = cut_off(grace);
        core.handle(Input::Tick);
        core.handle(Input::Tick);
        assert!(!core.read_only());
        let isro = core.four_letter(FourLetterWord::Isro, "127.0.0.1:2".parse().expect("addr"));
        assert_eq!(isro, "null", "as ZooKeeper when no server runs");
        let mut c = connect(&mut core, 1, 0, [0; 16], Some(true));
        assert_eq!(got(&mut c), vec![Got::Closed]);
    }
}

/// /ready's answer (core/admin.rs) follows srvr: serving while the member follows a leader,
/// not once it is cut off (hasLeader false, still a follower), nor in read-only mode (its
/// role then "read-only"); a leader serves only with a quorum behind it. Standalone: serving,
/// its own leader.
#[test]
fn readiness_follows_the_serving_state_and_the_role() {
    use crate::core::admin::Readiness;
    let ready = |serving, role, has_leader| Readiness {
        serving,
        role,
        has_leader,
    };
    let leading = |quorum| {
        Input::Role(RoleView {
            leader: Some(3),
            term: 8,
            ready: true,
            quorum,
            ..RoleView::default()
        })
    };
    for grace in [None, Some(Duration::ZERO)] {
        let mut core = member(grace);
        core.handle(follower_of(Some(1)));
        let ack = Token::detached(0);
        core.handle(Input::Committed {
            items: vec![Committed::Key([4; 16])],
            at: None,
            log_bytes: 0,
            ack,
        });
        assert_eq!(core.readiness(), ready(true, "follower", true));
        core.handle(follower_of(None));
        assert_eq!(core.readiness(), ready(false, "follower", false));
        core.handle(Input::Tick);
        core.handle(Input::Tick);
        if grace.is_some() {
            assert_eq!(core.readiness(), ready(false, "read-only", false));
        } else {
            assert_eq!(core.readiness(), ready(false, "follower", false));
            core.handle(leading(false));
            assert_eq!(core.readiness(), ready(false, "leader", true));
        }
        core.handle(leading(true));
        assert_eq!(core.readiness(), ready(true, "leader", true));
    }
    let standalone = Core::new(crate::core::testkit::cfg());
    assert_eq!(standalone.readiness(), ready(true, "standalone", true));
}
