//! Reconfig on two cores with the test as their consensus (member_test's `Pair`): the first
//! leader's configuration txn, ZooKeeper's checks in its order, the reply held until Raft
//! has the new membership in force, and a super user's plain setData changing data only.

use crate::acl::AuthId;
use crate::core::member::tests::*;
use crate::core::member::RoleView;
use crate::core::Input;
use crate::membership::dynamic::DynConfig;
use crate::membership::members::{parse_member, Member};
use bytes::Bytes;
use palisade_proto::*;

fn members() -> Vec<Member> {
    (1..=3)
        .map(|i| {
            let key = format!("server.{i}");
            parse_member(&key, &format!("127.0.0.1:{i}1:{i}2")).expect("line")
        })
        .collect()
}

fn pair(term: u64, reconfig: bool) -> Pair {
    let mut cfg = crate::core::testkit::cfg();
    cfg.reconfig_enabled = reconfig;
    Pair::of(
        term,
        [
            node_with(1, cfg.clone(), members()),
            node_with(2, cfg, members()),
        ],
    )
}

/// The leader's Raft reports `ids` synced (answered within the lease).
fn synced(p: &mut Pair, ids: &[u64]) {
    let m = p.nodes[0].core.role.member();
    m.links.info.lock().synced = ids.to_vec();
}

/// Raft's membership of configuration `version` is in force on both members.
fn in_force(p: &mut Pair, term: u64, version: i64) {
    for (i, n) in p.nodes.iter_mut().enumerate() {
        n.core.handle(Input::Role(RoleView {
            leader: Some(1),
            term,
            ready: i == 0,
            quorum: true,
            config_version: version,
            ..RoleView::default()
        }));
    }
}

fn config_of(n: &Node) -> (String, Stat) {
    let t = &n.core.state.tree;
    let id = t.lookup("/zookeeper/config").expect("the node");
    let data = t.node(id).and_then(|n| n.data()).unwrap_or(&[]);
    (String::from_utf8_lossy(data).into_owned(), t.stat(id))
}

fn reconfig(
    joining: Option<&str>,
    leaving: Option<&str>,
    members: Option<&str>,
    id: i64,
) -> Request {
    let s = |x: Option<&str>| x.map_or_else(JStr::null, JStr::from);
    Request::Reconfig(ReconfigRequest {
        joining_servers: s(joining),
        leaving_servers: s(leaving),
        new_members: s(members),
        cur_config_id: id,
    })
}

#[test]
fn without_reconfig_enabled_the_node_is_each_members_zoo_cfg_and_reconfig_is_disabled() {
    let mut p = pair(3, false);
    let want = DynConfig::from_static(&members()).text();
    for n in &p.nodes {
        let (text, st) = config_of(n);
        assert_eq!(text, want);
        assert!(text.ends_with("\nversion=0"));
        assert_eq!((st.mzxid, st.version), (0, -1), "set locally, as ZooKeeper");
    }
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    request(&mut p.nodes[1], &c, 1, reconfig(None, Some("3"), None, -1));
    p.settle();
    let r = replies(&mut c);
    assert_eq!(r[0].2, ErrorCode::ReconfigDisabled.code(), "{r:?}");
}

#[test]
fn a_reconfig_is_checked_in_zookeepers_order_and_answered_once_in_force() {
    let mut p = pair(5, true);
    let epoch = 5i64 << 32;
    // The first leader committed zoo.cfg's configuration at its epoch's zxid.
    for n in &p.nodes {
        let (text, st) = config_of(n);
        assert!(text.ends_with("\nversion=500000000"), "{text}");
        assert_eq!((st.mzxid, st.version), (epoch, -1));
    }
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    assert_eq!(
        p.nodes[0].core.state.zxid(),
        epoch | 1,
        "sessions keep their zxids"
    );
    let send = |p: &mut Pair, c: &Client, xid: i32, r: Request| {
        request(&mut p.nodes[1], c, xid, r);
        p.settle();
    };
    // Raft has not applied the configuration's membership yet.
    send(&mut p, &c, 1, reconfig(None, Some("3"), None, -1));
    in_force(&mut p, 5, epoch);
    send(&mut p, &c, 2, reconfig(None, Some("3"), None, 12345));
    // No synced quorum of the new voters (the leader alone of {1, 2}).
    send(&mut p, &c, 3, reconfig(None, Some("3"), None, -1));
    synced(&mut p, &[1, 2]);
    send(
        &mut p,
        &c,
        4,
        reconfig(None, None, Some("server.1=127.0.0.1:11:12"), -1),
    );
    send(&mut p, &c, 5, reconfig(None, Some("x"), None, -1));
    send(&mut p, &c, 6, reconfig(None, Some("3"), None, epoch));
    let got: Vec<(i32, i32)> = replies(&mut c).iter().map(|r| (r.0, r.2)).collect();
    assert_eq!(
        got,
        vec![
            (1, ErrorCode::ReconfigInProgress.code()),
            (2, ErrorCode::BadVersion.code()),
            (3, ErrorCode::NewConfigNoQuorum.code()),
            (4, ErrorCode::BadArguments.code()),
            (5, ErrorCode::MarshallingError.code()),
            (6, ErrorCode::NoAuth.code()),
        ]
    );
    // A super user: committed, but answered (and the read behind it) only once in force.
    if let Some(conn) = p.nodes[1].core.conns.get_mut(&c.conn) {
        conn.auth.push(AuthId {
            scheme: "super".into(),
            id: "".into(),
        });
    }
    request(
        &mut p.nodes[1],
        &c,
        7,
        reconfig(None, Some("3"), None, epoch),
    );
    let get = Request::GetData(GetDataRequest {
        path: "/zookeeper".into(),
        watch: false,
    });
    request(&mut p.nodes[1], &c, 8, get);
    p.settle();
    assert!(
        replies(&mut c).is_empty(),
        "held until Raft has it in force"
    );
    let zxid = p.nodes[1].core.state.zxid();
    let (text, st) = config_of(&p.nodes[1]);
    assert_eq!(config_of(&p.nodes[0]).0, text);
    assert_eq!(
        text,
        format!(
            "server.1=127.0.0.1:11:12:participant\nserver.2=127.0.0.1:21:22:participant\nversion={zxid:x}"
        )
    );
    assert_eq!((st.mzxid, st.version), (zxid, -1));
    assert_eq!(
        p.nodes[1].core.quorum_size(),
        Some(2),
        "voters, as ZooKeeper counts"
    );
    // A reconfig now is in progress until then.
    synced(&mut p, &[1, 2]);
    in_force(&mut p, 5, zxid);
    let r = replies(&mut c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
        [(7, 0), (8, 0)]
    );
    let body = GetDataResponse::decode(r[0].3.clone(), usize::MAX).expect("data and stat");
    assert_eq!(body.data, Some(Bytes::from(text.into_bytes())));
    assert_eq!(body.stat, st);
}

#[test]
fn a_plain_set_data_of_the_node_changes_its_data_not_the_configuration() {
    let mut p = pair(2, true);
    in_force(&mut p, 2, 2 << 32);
    let (mut c, _, _) = session_on_follower(&mut p, 10);
    if let Some(conn) = p.nodes[1].core.conns.get_mut(&c.conn) {
        conn.auth.push(AuthId {
            scheme: "super".into(),
            id: "".into(),
        });
    }
    let set = Request::SetData(SetDataRequest {
        path: "/zookeeper/config".into(),
        data: Some(Bytes::from_static(b"server.1=127.0.0.1:11:12\nversion=1")),
        version: -1,
    });
    request(&mut p.nodes[1], &c, 1, set);
    p.settle();
    assert_eq!(replies(&mut c)[0].2, 0);
    assert_eq!(p.nodes[1].core.quorum_size(), Some(3), "still 3 voters");
    assert!(p.nodes[1]
        .core
        .config_text()
        .expect("a member")
        .ends_with("\nversion=200000000"));
}
