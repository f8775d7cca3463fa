//! The AdminServer's routes against a stand-in core.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

async fn admin(slot: CoreSlot) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    serve_admin(
        l,
        slot,
        Info::default(),
        "/commands",
        AdminOpts::default(),
        Security::Plain,
    );
    addr
}

/// Before the core runs (recovery) and after it stopped: not ready, commands say so.
#[tokio::test]
async fn not_ready_without_a_core() {
    let slot = CoreSlot::default();
    let addr = admin(slot.clone()).await;
    let r = get(addr, "/ready").await;
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    let r = get(addr, "/commands/monitor").await;
    assert!(
        r.starts_with("HTTP/1.1 200") && r.contains(NOT_SERVING),
        "{r}"
    );
    // A core that has stopped: its inbox is closed.
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let _ = slot.set(tx);
    let r = get(addr, "/ready").await;
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
}

/// A core that answers: ready as it says, in the role it says.
#[tokio::test]
async fn ready_follows_the_cores_serving_state_and_role() {
    for (serving, role, has_leader, want) in [
        (true, "leader", true, "HTTP/1.1 200"),
        (true, "standalone", true, "HTTP/1.1 200"),
        (false, "follower", false, "HTTP/1.1 503"),
        (false, "read-only", false, "HTTP/1.1 503"),
    ] {
        let slot = CoreSlot::default();
        let (tx, mut rx) = mpsc::channel::<CoreMsg>(4);
        let _ = slot.set(tx);
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if let CoreMsg::Admin(Query::Ready { reply }) = m {
                    let _ = reply.send(super::super::Readiness {
                        serving,
                        role,
                        has_leader,
                    });
                }
            }
        });
        let addr = admin(slot).await;
        let r = get(addr, "/ready").await;
        let status = if serving { "ok" } else { "fail" };
        assert!(r.starts_with(want), "{r}");
        let body = r.split("\r\n\r\n").nth(1).unwrap_or("");
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            v,
            json!({"status": status, "details": {"role": role, "hasLeader": has_leader}}),
            "{r}"
        );
    }
}
