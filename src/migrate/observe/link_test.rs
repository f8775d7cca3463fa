//! The link against a hostile leader on a loopback socket: each connection the observer makes
//! is met with one bad script (a snapshot claiming a huge count, a snapshot streaming past the
//! bound, a DIFF whose txns go backwards, a truncated packet, an unknown packet type, UPTODATE
//! before NEWLEADER). Each must end that connection only, applying nothing it should not;
//! then a good leader syncs the observer, and the data dir holds exactly what it sent.

use super::*;
use crate::migrate::observe::store::{Store, StoreConfig};
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{DataNode, JStr, Record, SnapSession};
use palisade_zab::{make_zxid, Body, Frame, Packet, SIGNATURE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::migrate::observe::store::tests::create;

fn packet(zxid: i64, body: Body) -> Vec<u8> {
    Packet::new(zxid, body).encode().to_vec()
}

/// The snapshot's start: one session, an empty ACL table, the root.
fn snapshot_head() -> BytesMut {
    let mut b = BytesMut::new();
    b.put_i32(1);
    SnapSession {
        id: 0x77,
        timeout: 30_000,
    }
    .write(&mut b);
    b.put_i32(0);
    node(&mut b, "");
    b
}

fn node(b: &mut BytesMut, path: &str) {
    JStr::from(path).write(b);
    DataNode {
        data: Some(Bytes::from_static(b"snap")),
        acl: -1,
        stat: Default::default(),
    }
    .write(b);
}

fn snapshot_end(b: &mut BytesMut) {
    JStr::from("/").write(b);
    JStr::from_bytes(Bytes::from_static(SIGNATURE)).write(b);
}

const Z: fn(i64) -> i64 = |n| make_zxid(1, n);

/// What the leader does after LEADERINFO / ACKEPOCH, one per connection.
enum Script {
    /// Writes these bytes, then waits for the observer to hang up.
    Send(Vec<u8>),
    /// Writes an endless (valid) snapshot until the observer hangs up.
    EndlessSnapshot,
}

async fn handshake(s: &mut TcpStream) -> std::io::Result<()> {
    // OBSERVERINFO then ACKEPOCH: walked with the codec, as the leader would.
    let mut d =
        palisade_zab::Decoder::new(palisade_zab::Direction::FromLearner, Default::default());
    let mut buf = vec![0u8; 4096];
    let mut got = 0;
    let mut sent_info = false;
    while got < 2 {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        d.push(&buf[..n]);
        while let Ok(Some(Frame::Packet(_))) = d.next_frame() {
            got += 1;
        }
        if got >= 1 && !sent_info {
            let li = packet(
                make_zxid(1, 0),
                Body::LeaderInfo {
                    protocol_version: palisade_zab::PROTOCOL_VERSION,
                },
            );
            s.write_all(&li).await?;
            sent_info = true;
        }
    }
    Ok(())
}

async fn serve(s: &mut TcpStream, script: Script) -> std::io::Result<()> {
    handshake(s).await?;
    match script {
        Script::Send(bytes) => {
            s.write_all(&bytes).await?;
        }
        Script::EndlessSnapshot => {
            let mut b = BytesMut::from(&packet(Z(5), Body::Snap)[..]);
            b.extend_from_slice(&snapshot_head());
            s.write_all(&b).await?;
            let mut n = 0u64;
            loop {
                let mut b = BytesMut::new();
                for _ in 0..1000 {
                    n += 1;
                    node(&mut b, &format!("/n{n}"));
                }
                // Ends when the observer hangs up (the write fails).
                s.write_all(&b).await?;
            }
        }
    }
    // Until the observer hangs up.
    let mut sink = [0u8; 1024];
    while s.read(&mut sink).await? > 0 {}
    Ok(())
}

fn scripts() -> Vec<(Script, &'static str)> {
    let snap = |body: &[u8]| {
        let mut b = packet(Z(5), Body::Snap);
        b.extend_from_slice(body);
        b
    };
    let mut backwards = packet(Z(5), Body::Diff);
    for n in [1, 2, 1] {
        backwards.extend(packet(Z(n), Body::Proposal(create(Z(n), "/back"))));
        backwards.extend(packet(Z(n), Body::Commit));
    }
    let mut truncated = packet(Z(5), Body::Diff);
    let p = packet(Z(1), Body::Proposal(create(Z(1), "/cut")));
    truncated.extend(&p[..p.len() / 2]);
    let mut unknown = packet(Z(5), Body::Diff);
    unknown.extend(99i32.to_be_bytes());
    unknown.extend(0i64.to_be_bytes());
    unknown.extend((-1i32).to_be_bytes());
    unknown.extend((-1i32).to_be_bytes());
    let mut early = packet(Z(5), Body::Diff);
    early.extend(packet(-1, Body::UpToDate));
    // (What each says: the Debug form of the learner's Resync.)
    vec![
        (
            Script::Send(snap(&i32::MAX.to_be_bytes())),
            "TooLarge { what: \"session count\"",
        ),
        (Script::EndlessSnapshot, "TooLarge { what: \"snapshot\""),
        (
            Script::Send(backwards),
            "PROPOSAL 0x100000001 after 0x100000002",
        ),
        // Half a packet, then silence: the learner's initLimit (1 s here) ends it.
        (Script::Send(truncated), "Timeout"),
        (Script::Send(unknown), "UnknownType(99)"),
        (Script::Send(early), "UPTODATE before NEWLEADER"),
    ]
}

/// The good leader: SNAP (the root, /a), NEWLEADER, UPTODATE, two INFORMs, then PINGs.
fn good() -> Vec<u8> {
    let mut b = packet(Z(5), Body::Snap);
    let mut s = snapshot_head();
    node(&mut s, "/a");
    snapshot_end(&mut s);
    b.extend_from_slice(&s);
    b.extend(packet(make_zxid(1, 0), Body::NewLeader { config: None }));
    b.extend(packet(-1, Body::UpToDate));
    b.extend(packet(Z(6), Body::Inform(create(Z(6), "/b"))));
    b.extend(packet(Z(7), Body::Inform(create(Z(7), "/c"))));
    b
}

#[tokio::test(flavor = "current_thread")]
async fn a_hostile_leader_ends_only_its_connection_and_a_good_one_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("obs");
    let opened = Store::open(&dir, StoreConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut mirror = Mirror::durable(opened.store, opened.state);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let expected = scripts();
    let n_bad = expected.len();
    let mut scripts: Vec<Script> = Vec::new();
    let mut reasons = Vec::new();
    for (s, why) in expected {
        scripts.push(s);
        reasons.push(why);
    }
    scripts.push(Script::Send(good()));
    let leader = tokio::spawn(async move {
        for script in scripts {
            let (mut s, _) = listener.accept().await.unwrap();
            let _ = serve(&mut s, script).await;
        }
    });
    let cfg = LinkConfig {
        server_id: 4,
        participants: vec![Participant {
            addr,
            host: "127.0.0.1".into(),
        }],
        security: Default::default(),
        tick_ms: 100,
        init_limit: 10,
        sync_limit: 5,
        limits: palisade_zab::Limits {
            max_snapshot: 256 << 10,
            snapshot_batch: 16 << 10,
            ..palisade_zab::Limits::default()
        },
        marker: None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (progress_tx, mut progress_rx) = tokio::sync::watch::channel(Progress::default());
    let watcher = async move {
        let done = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let p = progress_rx.borrow_and_update().clone();
                if p.synced_at.is_some() && p.last_zxid == Z(7) {
                    return;
                }
                if progress_rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        let _ = stop_tx.send(true);
        done.is_ok()
    };
    let ((), synced) = tokio::join!(run(cfg, &mut mirror, stop_rx, &progress_tx), watcher);
    leader.abort();
    let p = progress_tx.borrow().clone();
    assert!(synced, "never synced with the good leader: {:?}", p.resyncs);
    assert_eq!(p.resyncs.len(), n_bad, "{:?}", p.resyncs);
    for (got, want) in p.resyncs.iter().zip(&reasons) {
        assert!(got.contains(want), "{got:?} should say {want:?}");
    }
    assert_eq!(p.fatal, None);
    // Nothing of the bad leaders was kept (the two good txns of the backwards DIFF went with
    // the SNAP): the tree is the good leader's.
    let state = mirror.state().unwrap_or_else(|| panic!("no state"));
    assert_eq!(state.zxid(), Z(7));
    for path in ["/a", "/b", "/c"] {
        assert!(state.tree.lookup(path).is_some(), "{path}");
    }
    assert!(state.tree.lookup("/back").is_none());
    assert!(state.tree.lookup("/n1").is_none());
    let want = state.tree.digest();
    mirror.finish().unwrap_or_else(|e| panic!("{e}"));
    drop(mirror);
    let again = Store::open(&dir, StoreConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let s = again.state.unwrap_or_else(|| panic!("nothing recovered"));
    assert_eq!((s.zxid(), s.tree.digest()), (Z(7), want));
}
