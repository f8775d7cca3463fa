//! The session across failures: a server killed with -9 and restarted (same session, ephemerals
//! kept, watches re-registered), a silent network (in-flight calls get ConnectionLoss, events
//! missed meanwhile arrive after the reconnect), a network gone for a whole session timeout
//! (Expired), a session the server expired (every waiter told), and resume by id + password.

mod support;

use palisade_client::{Client, CreateMode, Error, EventType, SessionState};
use std::time::{Duration, Instant};
use support::{Proxy, Server};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn reconnects_to_the_same_session_across_a_server_kill9_and_restart() {
    let mut srv = Server::start("restart");
    let c = Client::connect(&srv.addr(), Duration::from_secs(5))
        .await
        .unwrap();
    let id = c.session_id();
    c.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    let (_, created) = c.exists_watch("/later").await.unwrap();
    let zxid = c.last_zxid();
    let mut state = c.state();

    srv.kill9();
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .unwrap()
        .unwrap();
    // Issued while disconnected: waits, then goes out on the new connection.
    let c2 = c.clone();
    let pending = tokio::spawn(async move {
        c2.create("/made-while-down", b"", CreateMode::Persistent)
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    srv.restart();
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Connected))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.session_id(), id);
    assert_eq!(
        timeout(LIMIT, pending).await.unwrap().unwrap().unwrap(),
        "/made-while-down"
    );
    assert!(
        c.exists("/e").await.unwrap().is_some(),
        "the ephemeral survived"
    );
    assert!(c.last_zxid() > zxid);

    // The exists watch was re-registered with setWatches.
    let other = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    other
        .create("/later", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let ev = timeout(LIMIT, created).await.unwrap().unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeCreated, "/later")
    );
}

#[tokio::test]
async fn silent_network_fails_calls_in_flight_and_delivers_missed_events_after_reconnect() {
    let srv = Server::start("silent");
    let proxy = Proxy::start(srv.addr()).await;
    let t = Duration::from_millis(3000);
    let c = Client::connect(&proxy.addr(), t).await.unwrap();
    let direct = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    direct
        .create("/x", b"0", CreateMode::Persistent)
        .await
        .unwrap();
    let (_, _, changed) = c.get_data_watch("/x").await.unwrap();
    let mut state = c.state();

    proxy.silence(true);
    let t0 = Instant::now();
    let in_flight = c.get_data("/x").await;
    assert!(
        matches!(in_flight, Err(Error::ConnectionLoss)),
        "{in_flight:?}"
    );
    // Dead after 2/3 of the timeout without a byte, not before.
    let waited = t0.elapsed();
    assert!(
        waited >= t * 2 / 3 - Duration::from_millis(400),
        "{waited:?}"
    );
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .unwrap()
        .unwrap();

    // Changed while the client cannot hear it; delivered on reconnect (setWatches).
    direct.set_data("/x", b"1", None).await.unwrap();
    proxy.cut();
    proxy.silence(false);
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Connected))
        .await
        .unwrap()
        .unwrap();
    let ev = timeout(LIMIT, changed).await.unwrap().unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDataChanged, "/x")
    );
    assert_eq!(&c.get_data("/x").await.unwrap().0[..], b"1");
}

#[tokio::test]
async fn unreachable_for_a_whole_session_timeout_means_expired() {
    let srv = Server::start("unreachable");
    let proxy = Proxy::start(srv.addr()).await;
    let t = Duration::from_millis(1500);
    let c = Client::connect(&proxy.addr(), t).await.unwrap();
    let (_, watch) = c.exists_watch("/never").await.unwrap();
    let mut state = c.state();
    proxy.silence(true);
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .unwrap()
        .unwrap();
    let t0 = Instant::now();
    // Made while disconnected: waits for a reconnect that never comes.
    let r = c.get_children("/").await;
    assert!(matches!(r, Err(Error::SessionExpired)), "{r:?}");
    // Given up once the session could have expired (plus the last attempt), not later.
    assert!(
        t0.elapsed() < t + Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(*state.borrow_and_update(), SessionState::Expired);
    assert!(matches!(
        timeout(LIMIT, watch).await.unwrap(),
        Err(Error::SessionExpired)
    ));
    assert!(matches!(c.exists("/").await, Err(Error::SessionExpired)));
}

#[tokio::test]
async fn a_session_the_server_expired_fails_every_waiter() {
    let srv = Server::start("expired");
    let proxy = Proxy::start(srv.addr()).await;
    let t = Duration::from_millis(5000);
    let a = Client::connect(&proxy.addr(), t).await.unwrap();
    a.create("/mine", b"", CreateMode::Ephemeral).await.unwrap();
    let (_, watch) = a.exists_watch("/other").await.unwrap();
    let mut state = a.state();
    proxy.silence(true);
    // Another process takes the session over by id and password, and closes it.
    let b = Client::resume(&srv.addr(), a.session_id(), a.password(), t)
        .await
        .unwrap();
    assert_eq!(b.session_id(), a.session_id());
    b.close().await.unwrap();
    assert!(matches!(
        Client::resume(&srv.addr(), a.session_id(), a.password(), t).await,
        Err(Error::SessionExpired)
    ));
    // A hears of it on its next (re)connect, well before its own deadline.
    proxy.silence(false);
    proxy.cut();
    let t0 = Instant::now();
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Expired))
        .await
        .unwrap()
        .unwrap();
    assert!(t0.elapsed() < t / 2, "{:?}", t0.elapsed());
    assert!(matches!(
        timeout(LIMIT, watch).await.unwrap(),
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        a.get_data("/mine").await,
        Err(Error::SessionExpired)
    ));
    let direct = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    assert_eq!(direct.exists("/mine").await.unwrap(), None);
}

#[tokio::test]
async fn resume_needs_the_right_password_and_drop_connection_reconnects() {
    let srv = Server::start("resume");
    let a = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    let mut wrong = a.password().to_vec();
    wrong[0] ^= 1;
    assert!(matches!(
        Client::resume(&srv.addr(), a.session_id(), wrong.into(), LIMIT).await,
        Err(Error::SessionExpired)
    ));
    let mut state = a.state();
    a.drop_connection().await;
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .unwrap()
        .unwrap();
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Connected))
        .await
        .unwrap()
        .unwrap();
    a.create("/after", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    // Abandoned: the session (and its ephemeral) outlives the client until its timeout.
    let short = Client::connect(&srv.addr(), Duration::from_millis(1000))
        .await
        .unwrap();
    short
        .create("/short", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    short.abandon().await;
    assert!(a.exists("/short").await.unwrap().is_some());
    let t0 = Instant::now();
    while a.exists("/short").await.unwrap().is_some() {
        assert!(t0.elapsed() < LIMIT, "abandoned session never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn connect_to_nothing_fails_fast() {
    let port = support::free_port();
    let r = Client::connect(&format!("127.0.0.1:{port}"), LIMIT).await;
    assert!(matches!(r, Err(Error::Io(_))), "{r:?}");
}

#[tokio::test]
async fn a_host_list_skips_a_dead_member_and_reconnects_to_the_next() {
    let dead = format!("127.0.0.1:{}", support::free_port());
    let mut srv = Server::start("hostlist");
    let hosts = format!("{dead},{}", srv.addr());
    let c = Client::connect(&hosts, Duration::from_secs(5))
        .await
        .unwrap();
    let id = c.session_id();
    c.create("/h", b"", CreateMode::Ephemeral).await.unwrap();
    let mut state = c.state();
    srv.kill9();
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .unwrap()
        .unwrap();
    srv.restart();
    // Attempts alternate between the dead address and the live one.
    timeout(LIMIT, state.wait_for(|s| *s == SessionState::Connected))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.session_id(), id);
    assert!(c.exists("/h").await.unwrap().is_some());
}
