//! The lock recipes against the real server, in both namings: mutual exclusion under
//! contention with strictly increasing tokens, readers sharing and writers excluding, timeouts
//! cleaning up, the loss signal (network silence, session expiry, node deleted), fenced writes
//! in Palisade, release on drop, and tokens increasing across a server kill -9.

mod support;

use palisade_client::lock::{LockOptions, LostReason, Mutex, Naming, ReadWriteLock};
use palisade_client::{Client, CreateMode, Error, ErrorCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Proxy, Server};
use tokio::time::timeout;

const LONG: Duration = Duration::from_secs(5);
const NAMINGS: [Naming; 2] = [Naming::Curator, Naming::Kazoo];

fn opts(naming: Naming) -> LockOptions {
    LockOptions {
        naming,
        ..Default::default()
    }
}

#[tokio::test]
async fn mutex_excludes_under_contention_and_tokens_strictly_increase() {
    let srv = Server::start("mutex");
    for naming in NAMINGS {
        let path = format!("/locks/m-{}", naming.name());
        let inside = Arc::new(AtomicUsize::new(0));
        let grants = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let c = Client::connect(&srv.addr(), LONG).await.unwrap();
            let m = Mutex::with_options(&c, &path, opts(naming)).unwrap();
            let (inside, grants) = (inside.clone(), grants.clone());
            tasks.spawn(async move {
                for _ in 0..8 {
                    let g = m.acquire(Some(LONG)).await.unwrap();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    grants.lock().unwrap().push(g.token());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.unwrap();
                }
                c.close().await.unwrap();
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
        let grants = grants.lock().unwrap().clone();
        assert_eq!(grants.len(), 32);
        assert!(
            grants.windows(2).all(|w| w[0] < w[1]),
            "{naming:?}: {grants:?}"
        );
        let c = Client::connect(&srv.addr(), LONG).await.unwrap();
        assert_eq!(c.get_children(&path).await.unwrap(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn readers_share_writers_exclude_and_readers_queue_behind_a_writer() {
    let srv = Server::start("rwlock");
    for naming in NAMINGS {
        let path = format!("/locks/rw-{}", naming.name());
        let c = Client::connect(&srv.addr(), LONG).await.unwrap();
        let lock = |c: &Client| ReadWriteLock::with_options(c, &path, opts(naming)).unwrap();
        let clients: Vec<Client> = futures_join(3, &srv).await;
        let mut readers = Vec::new();
        for rc in &clients {
            readers.push(lock(rc).acquire_read(Some(LONG)).await.unwrap());
        }
        // Three readers at once; a writer cannot get in, and its attempt leaves no node.
        let w = lock(&c)
            .acquire_write(Some(Duration::from_millis(300)))
            .await;
        assert!(matches!(w, Err(Error::Timeout)), "{naming:?}: {w:?}");
        assert_eq!(c.get_children(&path).await.unwrap().len(), 3);

        // A writer queued, then a reader behind it: the reader waits for the writer.
        let wc = c.clone();
        let wlock = lock(&wc);
        let writer = tokio::spawn(async move { wlock.acquire_write(Some(LONG)).await });
        while c.get_children(&path).await.unwrap().len() < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let late = Client::connect(&srv.addr(), LONG).await.unwrap();
        let r = lock(&late)
            .acquire_read(Some(Duration::from_millis(300)))
            .await;
        assert!(
            matches!(r, Err(Error::Timeout)),
            "{naming:?}: reader overtook a queued writer"
        );
        let first_reader_token = readers[0].token();
        for g in readers {
            g.release().await.unwrap();
        }
        let wg = timeout(LONG, writer).await.unwrap().unwrap().unwrap();
        assert!(wg.token() > first_reader_token);
        let r = lock(&late)
            .acquire_read(Some(Duration::from_millis(300)))
            .await;
        assert!(
            matches!(r, Err(Error::Timeout)),
            "{naming:?}: reader shared with a writer"
        );
        wg.release().await.unwrap();
        lock(&late)
            .acquire_read(Some(LONG))
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
}

async fn futures_join(n: usize, srv: &Server) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(Client::connect(&srv.addr(), LONG).await.unwrap());
    }
    v
}

#[tokio::test]
async fn lost_fires_at_once_on_network_silence_and_the_next_holder_gets_a_higher_token() {
    let srv = Server::start("lost");
    let proxy = Proxy::start(srv.addr()).await;
    let t = Duration::from_millis(1500);
    let holder = Client::connect(&proxy.addr(), t).await.unwrap();
    let g = Mutex::new(&holder, "/locks/lost")
        .unwrap()
        .acquire(Some(LONG))
        .await
        .unwrap();
    assert!(!g.is_lost());
    let t0 = Instant::now();
    proxy.silence(true);
    let reason = timeout(LONG, g.lost()).await.unwrap();
    let after = t0.elapsed();
    assert_eq!(reason, LostReason::Suspended);
    // Told by 2/3 of the session timeout after the last answer, before the server can expire
    // the session (at the timeout at the earliest).
    assert!(after < t * 2 / 3 + Duration::from_millis(300), "{after:?}");
    assert!(g.is_lost());

    let other = Client::connect(&srv.addr(), LONG).await.unwrap();
    let g2 = Mutex::new(&other, "/locks/lost")
        .unwrap()
        .acquire(Some(LONG))
        .await
        .unwrap();
    // (The holder's last request went out just before the silence began.)
    assert!(
        t0.elapsed() >= t - Duration::from_millis(200),
        "granted {:?} after the silence began, before the holder's session could expire",
        t0.elapsed()
    );
    assert!(g2.token() > g.token());
    // The stale holder cannot write state kept in Palisade, whatever it believes.
    other
        .create("/state", b"v2", CreateMode::Persistent)
        .await
        .unwrap();
    proxy.silence(false);
    proxy.cut();
    let r = g.fenced_set_data("/state", b"stale", None).await;
    assert!(r.is_err(), "{r:?}");
    assert_eq!(&other.get_data("/state").await.unwrap().0[..], b"v2");
    g2.fenced_set_data("/state", b"v3", None).await.unwrap();
    assert_eq!(&other.get_data("/state").await.unwrap().0[..], b"v3");
}

#[tokio::test]
async fn lost_fires_when_the_node_is_deleted_and_fenced_writes_stop() {
    let srv = Server::start("nodedel");
    let c = Client::connect(&srv.addr(), LONG).await.unwrap();
    let admin = Client::connect(&srv.addr(), LONG).await.unwrap();
    admin
        .create("/data", b"0", CreateMode::Persistent)
        .await
        .unwrap();
    let g = Mutex::new(&c, "/locks/del")
        .unwrap()
        .acquire(None)
        .await
        .unwrap();
    g.fenced_set_data("/data", b"1", None).await.unwrap();
    admin.delete(g.node(), None).await.unwrap();
    assert_eq!(
        timeout(LONG, g.lost()).await.unwrap(),
        LostReason::NodeDeleted
    );
    let err = g.fenced_set_data("/data", b"2", None).await.unwrap_err();
    assert!(err.is(ErrorCode::NoNode), "{err}");
    assert_eq!(&admin.get_data("/data").await.unwrap().0[..], b"1");
    // Releasing a lock whose node is gone is fine.
    g.release().await.unwrap();
}

#[tokio::test]
async fn lost_fires_on_close_and_drop_releases() {
    let srv = Server::start("drop");
    let a = Client::connect(&srv.addr(), LONG).await.unwrap();
    let b = Client::connect(&srv.addr(), LONG).await.unwrap();
    // A zero timeout is a try-lock: it gets a free lock.
    let ga = Mutex::new(&a, "/locks/drop")
        .unwrap()
        .acquire(Some(Duration::ZERO))
        .await
        .unwrap();
    let mb = Mutex::new(&b, "/locks/drop").unwrap();
    assert!(matches!(
        mb.acquire(Some(Duration::ZERO)).await,
        Err(Error::Timeout)
    ));
    drop(ga);
    let gb = mb.acquire(Some(LONG)).await.unwrap();
    let lost = gb.lost_receiver();
    b.close().await.unwrap();
    let mut lost = lost;
    timeout(LONG, lost.wait_for(|r| r.is_some()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*lost.borrow(), Some(LostReason::Closed));
    assert!(gb.is_lost());
}

#[tokio::test]
async fn tokens_increase_across_a_server_kill9_and_restart() {
    let mut srv = Server::start("tokens");
    let c = Client::connect(&srv.addr(), LONG).await.unwrap();
    let t1 = Mutex::new(&c, "/locks/t")
        .unwrap()
        .acquire(None)
        .await
        .unwrap();
    let t1 = {
        let t = t1.token();
        t1.release().await.unwrap();
        t
    };
    c.close().await.unwrap();
    srv.kill9();
    srv.restart();
    let c = Client::connect(&srv.addr(), LONG).await.unwrap();
    let g = Mutex::new(&c, "/locks/t")
        .unwrap()
        .acquire(None)
        .await
        .unwrap();
    assert!(g.token() > t1, "{} then {t1}", g.token());
}

#[tokio::test]
async fn bad_paths_and_fractions_are_refused() {
    let srv = Server::start("args");
    let c = Client::connect(&srv.addr(), LONG).await.unwrap();
    assert!(matches!(
        Mutex::new(&c, "locks"),
        Err(Error::BadArgument(_))
    ));
    assert!(matches!(Mutex::new(&c, "/"), Err(Error::BadArgument(_))));
    let o = LockOptions {
        lost_after: 1.0,
        ..Default::default()
    };
    assert!(matches!(
        ReadWriteLock::with_options(&c, "/l", o),
        Err(Error::BadArgument(_))
    ));
    // A trailing slash is the same lock.
    let g = Mutex::new(&c, "/l/").unwrap().acquire(None).await.unwrap();
    assert!(g.node().starts_with("/l/_c_"), "{}", g.node());
}
