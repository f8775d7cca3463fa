//! Joins from an outsider: Join frames for ids no configuration names, giving an address
//! the outsider listens at. The listener plays the joiner: it vouches for its own dials (a
//! member's connect-back), welcomes a member's link, acknowledges every append and counts
//! what the leader streams to it, looking for a marker the ensemble's protected data holds.

use crate::dial::{open, Creds, Target};
use crate::raft_rpcs::{first_words, short};
use crate::Attempts;
use openraft::raft::{AppendEntriesResponse, InstallSnapshotResponse, VoteResponse};
use palisade::ensemble::link::{write_frame, Answer, Greeting, MAGIC};
use palisade::ensemble::raft::rpc::{PeerRequest, PeerResponse};
use palisade::limits::PEER_FRAME;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Seen {
    links: AtomicU64,
    proofs: AtomicU64,
    appends: AtomicU64,
    entries: AtomicU64,
    snapshots: AtomicU64,
    bytes: AtomicU64,
    marker: AtomicBool,
}

/// What to join as: `count` ids from `id_base`, listening at `listen`, then held `hold`
/// while the listener counts what it is sent.
pub struct Plan {
    pub id_base: u64,
    pub count: u64,
    pub listen: String,
    pub marker: String,
    pub hold: Duration,
}

pub async fn join(target: &Target, at: &Attempts, creds: &Creds, plan: Plan) -> Value {
    let Plan {
        id_base,
        count,
        ref listen,
        ref marker,
        hold,
    } = plan;
    let listen = listen.as_str();
    let seen = Arc::new(Seen::default());
    let listener = match TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => return json!({"error": format!("listen {listen}: {e}")}),
    };
    let accept = tokio::spawn(serve(listener, seen.clone(), marker.as_bytes().to_vec()));
    let mut out = Vec::new();
    for (w, way) in at.ways.iter().copied().enumerate() {
        let mut replies = std::collections::BTreeMap::<String, u64>::new();
        for i in 0..count {
            // Ids of their own for each way: a second way's joins are not "already a member".
            let id = id_base + (w as u64) * count + i;
            let reply = match open(way, target, id, Some(listen.to_string()), creds).await {
                Err(e) => first_words(&e),
                Ok(mut peer) => {
                    let req = PeerRequest::Join {
                        id,
                        addr: listen.to_string(),
                    };
                    match peer.call(&req).await {
                        Ok(PeerResponse::Join(r)) => format!("{r:?}"),
                        Ok(r) => short(&r),
                        Err(e) => first_words(&e),
                    }
                }
            };
            *replies.entry(reply).or_default() += 1;
        }
        out.push(json!({"way": way.name(), "joins": count, "replies": replies}));
    }
    tokio::time::sleep(hold).await;
    accept.abort();
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    json!({"attempts": out, "streamed_to_outsider": {
        "links": n(&seen.links), "proofs_answered": n(&seen.proofs), "appends": n(&seen.appends),
        "entries": n(&seen.entries), "snapshot_chunks": n(&seen.snapshots), "bytes": n(&seen.bytes),
        "marker_seen": seen.marker.load(Ordering::Relaxed)}})
}

async fn serve(listener: TcpListener, seen: Arc<Seen>, marker: Vec<u8>) {
    let marker = Arc::new(marker);
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(conn(tcp, seen.clone(), marker.clone()));
    }
}

async fn read_body(tcp: &mut TcpStream) -> Option<Vec<u8>> {
    let len = tcp.read_u32().await.ok()?;
    if len > PEER_FRAME {
        return None;
    }
    let mut body = vec![0u8; len as usize];
    tcp.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// One connection from a member: a proof question, a link (new protocol), or requests
/// straight away (the old one).
async fn conn(mut tcp: TcpStream, seen: Arc<Seen>, marker: Arc<Vec<u8>>) {
    let Some(first) = read_body(&mut tcp).await else {
        return;
    };
    let mut pending = None;
    match postcard::from_bytes::<Greeting>(&first) {
        Ok(Greeting::Prove { magic, .. }) if magic == MAGIC => {
            seen.proofs.fetch_add(1, Ordering::Relaxed);
            let _ = write_frame(&mut tcp, &Answer::Proven(true), PEER_FRAME).await;
            return;
        }
        Ok(Greeting::Link(h)) if h.magic == MAGIC => {
            if write_frame(&mut tcp, &Answer::Welcome, PEER_FRAME)
                .await
                .is_err()
            {
                return;
            }
        }
        _ => pending = Some(first),
    }
    seen.links.fetch_add(1, Ordering::Relaxed);
    // What this joiner holds, as an empty server would: an append that does not follow on
    // from it conflicts, so the leader walks back and streams the log from its start.
    let mut last: Option<openraft::LogId<u64>> = None;
    loop {
        let body = match pending.take() {
            Some(b) => b,
            None => match read_body(&mut tcp).await {
                Some(b) => b,
                None => return,
            },
        };
        seen.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
        if !marker.is_empty() && body.windows(marker.len()).any(|w| w == marker.as_slice()) {
            seen.marker.store(true, Ordering::Relaxed);
        }
        let resp = match postcard::from_bytes::<PeerRequest>(&body) {
            Ok(PeerRequest::Append(r)) => {
                seen.appends.fetch_add(1, Ordering::Relaxed);
                if r.prev_log_id.is_none() || r.prev_log_id <= last {
                    seen.entries
                        .fetch_add(r.entries.len() as u64, Ordering::Relaxed);
                    last = r
                        .entries
                        .last()
                        .map(|e| e.log_id)
                        .or(r.prev_log_id)
                        .max(last);
                    PeerResponse::Append(Ok(AppendEntriesResponse::Success))
                } else {
                    PeerResponse::Append(Ok(AppendEntriesResponse::Conflict))
                }
            }
            Ok(PeerRequest::Snapshot(r)) => {
                seen.snapshots.fetch_add(1, Ordering::Relaxed);
                if r.done {
                    last = r.meta.last_log_id.max(last);
                }
                PeerResponse::Snapshot(Ok(InstallSnapshotResponse { vote: r.vote }))
            }
            Ok(PeerRequest::Vote(r)) => PeerResponse::Vote(Ok(VoteResponse {
                vote: r.vote,
                vote_granted: false,
                last_log_id: None,
            })),
            Ok(PeerRequest::Touch(_)) => PeerResponse::Touch,
            Ok(PeerRequest::Forward(_)) => PeerResponse::Forward(None),
            Ok(PeerRequest::Elect { .. }) => PeerResponse::Elect(false),
            Ok(PeerRequest::Transfer { .. }) => PeerResponse::Transfer(false),
            Ok(PeerRequest::Join { .. }) | Err(_) => return,
        };
        if write_frame(&mut tcp, &resp, PEER_FRAME).await.is_err() {
            return;
        }
        let _ = tcp.flush().await;
    }
}
