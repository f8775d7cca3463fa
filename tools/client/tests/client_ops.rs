//! The client's operations against the real server: results, stats and error codes as
//! ZooKeeper defines them, multi's all-or-nothing with the failing op's code, pipelining, and
//! close. Each test starts its own server.

mod support;

use palisade_client::{op, Client, CreateMode, Error, ErrorCode, OpResult, SessionState};
use std::time::Duration;
use support::Server;

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn crud_with_stats_versions_and_error_codes() {
    let srv = Server::start("crud");
    let c = Client::connect(&srv.addr(), T).await.unwrap();
    // Asked 10 s; the server clamps to maxSessionTimeout = 20 ticks of 250 ms.
    assert_eq!(c.session_timeout(), Duration::from_secs(5));
    assert!(c.session_id() != 0 && c.password().len() == 16);

    assert_eq!(
        c.create("/a", b"one", CreateMode::Persistent)
            .await
            .unwrap(),
        "/a"
    );
    let (p, st) = c
        .create2("/a/b", b"", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(p, "/a/b");
    assert_eq!((st.czxid, st.version, st.ephemeral_owner), (st.mzxid, 0, 0));
    assert!(c.last_zxid() >= st.czxid);

    let err = c
        .create("/a", b"", CreateMode::Persistent)
        .await
        .unwrap_err();
    assert!(err.is(ErrorCode::NodeExists), "{err}");
    let err = c
        .create("/none/x", b"", CreateMode::Persistent)
        .await
        .unwrap_err();
    assert!(err.is(ErrorCode::NoNode), "{err}");

    let (data, st) = c.get_data("/a").await.unwrap();
    assert_eq!((&data[..], st.num_children), (&b"one"[..], 1));
    let st2 = c.set_data("/a", b"two", Some(st.version)).await.unwrap();
    assert_eq!(st2.version, st.version + 1);
    let err = c.set_data("/a", b"x", Some(st.version)).await.unwrap_err();
    assert!(err.is(ErrorCode::BadVersion), "{err}");
    assert_eq!(c.exists("/a").await.unwrap().map(|s| s.version), Some(1));
    assert_eq!(c.exists("/nope").await.unwrap(), None);

    let s1 = c
        .create("/a/s-", b"", CreateMode::EphemeralSequential)
        .await
        .unwrap();
    let s2 = c
        .create("/a/s-", b"", CreateMode::PersistentSequential)
        .await
        .unwrap();
    assert_eq!(s1.len(), "/a/s-".len() + 10, "{s1}");
    assert!(s2 > s1);
    let mut kids = c.get_children("/a").await.unwrap();
    kids.sort();
    assert_eq!(kids.len(), 3);
    let (kids2, st) = c.get_children2("/a").await.unwrap();
    assert_eq!((kids2.len(), st.num_children), (3, 3));
    assert_eq!(
        st.pzxid,
        c.exists("/a/s-0000000002").await.unwrap().unwrap().czxid
    );
    assert_eq!(kids[0], "b");

    let err = c.delete("/a", None).await.unwrap_err();
    assert!(err.is(ErrorCode::NotEmpty), "{err}");
    let err = c.delete("/a/b", Some(5)).await.unwrap_err();
    assert!(err.is(ErrorCode::BadVersion), "{err}");
    c.delete("/a/b", Some(0)).await.unwrap();
    assert!(c
        .delete("/a/b", None)
        .await
        .unwrap_err()
        .is(ErrorCode::NoNode));

    // A container is created with createContainer; TTL modes need a TTL.
    c.create("/ctr", b"", CreateMode::Container).await.unwrap();
    assert!(matches!(
        c.create("/ttl", b"", CreateMode::PersistentWithTtl).await,
        Err(Error::BadArgument(_))
    ));
    c.close().await.unwrap();
}

#[tokio::test]
async fn multi_applies_all_or_nothing_and_reports_the_failing_code() {
    let srv = Server::start("multi");
    let c = Client::connect(&srv.addr(), T).await.unwrap();
    let ok = c
        .multi(vec![
            op::create("/m", b"", CreateMode::Persistent).unwrap(),
            op::create("/m/x", b"1", CreateMode::Persistent).unwrap(),
            op::set_data("/m/x", b"2", Some(0)),
            op::check("/m", None),
        ])
        .await
        .unwrap();
    assert!(
        matches!(&ok[..], [OpResult::Create(_), OpResult::Create(_), OpResult::SetData(s), OpResult::Check] if s.version == 1)
    );

    let failing = vec![
        op::create("/m/y", b"", CreateMode::Persistent).unwrap(),
        op::check("/m/x", Some(0)),
        op::delete("/m/x", None),
    ];
    let err = c.multi(failing.clone()).await.unwrap_err();
    assert!(err.is(ErrorCode::BadVersion), "{err}");
    assert_eq!(c.exists("/m/y").await.unwrap(), None, "nothing applied");
    let codes: Vec<i32> = c
        .multi_results(failing)
        .await
        .unwrap()
        .iter()
        .map(|r| match r {
            OpResult::Error(e) => e.err,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(codes, vec![0, -103, -2]);

    // The fenced-write shape: a check of a missing node stops the write.
    let err = c
        .multi(vec![
            op::check("/m/gone", None),
            op::set_data("/m/x", b"3", None),
        ])
        .await
        .unwrap_err();
    assert!(err.is(ErrorCode::NoNode), "{err}");
    assert_eq!(&c.get_data("/m/x").await.unwrap().0[..], b"2");
}

#[tokio::test]
async fn pipelined_requests_from_many_tasks_are_matched_to_their_replies() {
    let srv = Server::start("pipeline");
    let c = Client::connect(&srv.addr(), T).await.unwrap();
    c.create("/p", b"", CreateMode::Persistent).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..200 {
        let c = c.clone();
        tasks.spawn(async move {
            let path = format!("/p/n{i}");
            c.create(&path, i.to_string().as_bytes(), CreateMode::Persistent)
                .await
                .unwrap();
            for round in 0..5 {
                let v = format!("{i}-{round}");
                c.set_data(&path, v.as_bytes(), None).await.unwrap();
                // Read-your-writes on one connection, whatever else is in flight.
                assert_eq!(&c.get_data(&path).await.unwrap().0[..], v.as_bytes());
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    assert_eq!(c.get_children("/p").await.unwrap().len(), 200);
}

#[tokio::test]
async fn close_deletes_ephemerals_and_ends_the_handle() {
    let srv = Server::start("close");
    let a = Client::connect(&srv.addr(), T).await.unwrap();
    let b = Client::connect(&srv.addr(), T).await.unwrap();
    a.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
    let (st, watch) = b.exists_watch("/eph").await.unwrap();
    assert!(st.is_some());
    let mut state = a.state();
    a.close().await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), watch)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.path, "/eph");
    assert_eq!(ev.event_type, palisade_client::EventType::NodeDeleted);
    state
        .wait_for(|s| *s == SessionState::Closed)
        .await
        .unwrap();
    assert!(matches!(a.exists("/").await, Err(Error::Closed)));
    assert!(matches!(a.close().await, Ok(())));

    // Dropping every handle closes the session too.
    let d = Client::connect(&srv.addr(), T).await.unwrap();
    d.create("/eph2", b"", CreateMode::Ephemeral).await.unwrap();
    let (_, watch) = b.exists_watch("/eph2").await.unwrap();
    drop(d);
    let ev = tokio::time::timeout(Duration::from_secs(5), watch)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.event_type, palisade_client::EventType::NodeDeleted);
}

#[tokio::test]
async fn watches_fire_once_for_the_events_zookeeper_defines() {
    let srv = Server::start("watch");
    let a = Client::connect(&srv.addr(), T).await.unwrap();
    let b = Client::connect(&srv.addr(), T).await.unwrap();
    let (none, created) = a.exists_watch("/w").await.unwrap();
    assert!(none.is_none());
    let (_, kids_changed) = a.get_children_watch("/").await.unwrap();
    b.create("/w", b"", CreateMode::Persistent).await.unwrap();
    let ev = created.await.unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (palisade_client::EventType::NodeCreated, "/w")
    );
    let ev = kids_changed.await.unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (palisade_client::EventType::NodeChildrenChanged, "/")
    );
    let (_, _, changed) = a.get_data_watch("/w").await.unwrap();
    b.set_data("/w", b"x", None).await.unwrap();
    assert_eq!(
        changed.await.unwrap().event_type,
        palisade_client::EventType::NodeDataChanged
    );
    // One-shot: a second change fires nothing already consumed; a new watch sees the next.
    let (_, _, next) = a.get_data_watch("/w").await.unwrap();
    b.delete("/w", None).await.unwrap();
    assert_eq!(
        next.await.unwrap().event_type,
        palisade_client::EventType::NodeDeleted
    );
}
