//! Raft's own RPCs from an outsider: forged and replayed appends, a vote of the largest
//! term, snapshot chunks far past the end, and a stream of votes for a higher term.

use crate::dial::{open, Creds, Peer, Target, Way};
use crate::forge;
use crate::Attempts;
use openraft::raft::InstallSnapshotRequest;
use openraft::{LogId, SnapshotMeta, Vote};
use palisade::ensemble::raft::rpc::{PeerRequest, PeerResponse};
use palisade::ensemble::raft::types::NodeId;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// What a member told: its vote and last log id (the answer to a vote of term 0).
pub type Learned = (Vote<NodeId>, Option<LogId<NodeId>>);

pub async fn learn(peer: &mut Peer, as_id: NodeId) -> Result<Learned, String> {
    match peer.call(&forge::vote(0, as_id, None)).await? {
        PeerResponse::Vote(Ok(r)) => Ok((r.vote, r.last_log_id)),
        other => Err(format!("answered {}", short(&other))),
    }
}

/// A reply, in a line.
pub fn short(r: &PeerResponse) -> String {
    let s = format!("{r:?}");
    if s.len() > 300 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(300).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

fn learned_json(l: &Learned) -> Value {
    json!({"vote": l.0.to_string(), "term": l.0.leader_id().term,
           "last_log_id": l.1.map(|x| x.to_string())})
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AppendKind {
    /// A leader of term+1 (a made-up or a real member's id) appends a create and a setACL.
    Forged,
    /// The member's current leader's vote replayed, with a txn of an unknown type.
    UnknownTxn,
    /// The current leader's vote replayed, with a valid create far ahead of the applied zxid.
    FarZxid,
}

/// One append per (way, identity): learn the vote and last log id, then append.
pub async fn append(
    target: &Target,
    at: &Attempts,
    creds: &Creds,
    kind: AppendKind,
    secret: &str,
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
        let learned = learn(&mut peer, as_id).await;
        let (vote, last) = match learned {
            Ok(l) => {
                a["learned"] = learned_json(&l);
                l
            }
            Err(e) => {
                a["learned"] = json!(e);
                out.push(a);
                continue;
            }
        };
        let term = vote.leader_id().term;
        let req = match kind {
            AppendKind::Forged => {
                let t = term.saturating_add(1);
                forge::append(
                    Vote::new_committed(t, as_id),
                    last,
                    vec![
                        forge::create_txn(forge::zxid(t, 1), "/forged", marker.as_bytes()),
                        forge::set_acl_txn(forge::zxid(t, 2), secret),
                    ],
                )
            }
            AppendKind::UnknownTxn => forge::append(
                vote,
                last,
                vec![forge::unknown_txn(forge::zxid(term, 1 << 20))],
            ),
            AppendKind::FarZxid => forge::append(
                vote,
                last,
                vec![forge::create_txn(
                    forge::zxid(term, 0x00ff_ff00),
                    "/forged-far",
                    marker.as_bytes(),
                )],
            ),
        };
        a["append"] = match peer.call(&req).await {
            Ok(r) => json!({"answer": short(&r)}),
            Err(e) => json!({"error": e}),
        };
        out.push(a);
    }
    json!({"attempts": out})
}

/// A vote of term 2^64-1 and the largest log id, to each target, every 250 ms until one
/// is granted or `duration` is over (a member refuses any vote within its leader's lease).
pub async fn overflow(
    targets: &[Target],
    at: &Attempts,
    creds: &Creds,
    duration: Duration,
) -> Value {
    let start = Instant::now();
    let pairs = at.pairs();
    let mut slots: Vec<(Target, Way, NodeId, Option<Peer>, Value)> = Vec::new();
    for t in targets {
        for (way, as_id) in &pairs {
            let a =
                json!({"target": t.id, "way": way.name(), "as": as_id, "votes": 0, "granted": 0});
            slots.push((t.clone(), *way, *as_id, None, a));
        }
    }
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut any_granted = false;
    while start.elapsed() < duration && !any_granted {
        tick.tick().await;
        for (t, way, as_id, link, a) in slots.iter_mut() {
            if link.is_none() {
                match open(*way, t, *as_id, None, creds).await {
                    Ok(p) => {
                        *link = Some(p);
                        a["link"] = json!("open");
                    }
                    Err(e) => {
                        a["link"] = json!(e);
                        continue;
                    }
                }
            }
            let Some(peer) = link.as_mut() else { continue };
            let req = forge::vote(
                u64::MAX,
                *as_id,
                Some(forge::log_id(u64::MAX, *as_id, u64::MAX)),
            );
            a["votes"] = json!(a["votes"].as_u64().unwrap_or(0) + 1);
            match peer.call(&req).await {
                Ok(r) => {
                    if granted(&r) {
                        a["granted"] = json!(a["granted"].as_u64().unwrap_or(0) + 1);
                        any_granted = true;
                    }
                    a["answer"] = json!(short(&r));
                }
                Err(e) => {
                    a["error"] = json!(e);
                    *link = None;
                }
            }
        }
    }
    json!({"attempts": slots.into_iter().map(|s| s.4).collect::<Vec<_>>()})
}

fn granted(r: &PeerResponse) -> bool {
    matches!(r, PeerResponse::Vote(Ok(v)) if v.vote_granted)
}

/// Replays the member's own vote on a snapshot: a first chunk at 0, then one at `offset`;
/// the link is held `hold` after.
pub async fn snapshot(
    target: &Target,
    at: &Attempts,
    creds: &Creds,
    offset: u64,
    hold: Duration,
) -> Value {
    let mut out = Vec::new();
    let mut held = Vec::new();
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
        let (vote, last) = match learn(&mut peer, as_id).await {
            Ok(l) => {
                a["learned"] = learned_json(&l);
                l
            }
            Err(e) => {
                a["learned"] = json!(e);
                out.push(a);
                continue;
            }
        };
        let chunk = |offset: u64, len: usize| {
            PeerRequest::Snapshot(InstallSnapshotRequest {
                vote,
                meta: SnapshotMeta {
                    last_log_id: last,
                    last_membership: Default::default(),
                    snapshot_id: "outsider-snapshot".into(),
                },
                offset,
                data: vec![0x5a; len],
                done: false,
            })
        };
        let mut calls = Vec::new();
        for (off, len) in [(0u64, 1024usize), (offset, 64 << 10)] {
            calls.push(match peer.call(&chunk(off, len)).await {
                Ok(r) => json!({"offset": off, "answer": short(&r)}),
                Err(e) => json!({"offset": off, "error": e}),
            });
        }
        a["chunks"] = json!(calls);
        out.push(a);
        held.push(peer);
    }
    tokio::time::sleep(hold).await;
    drop(held);
    json!({"attempts": out})
}

/// Every `every`, to every target, each way: learn its term, then ask for its vote at
/// term+1 with a log 1000 entries longer than its own.
pub async fn vote_spam(
    targets: &[Target],
    at: &Attempts,
    creds: &Creds,
    duration: Duration,
    every: Duration,
) -> Value {
    let start = Instant::now();
    let mut out = Vec::new();
    let pairs = at.pairs();
    let mut stats: Vec<Spam> = pairs.iter().map(|_| Spam::default()).collect();
    let mut links: Vec<Vec<Option<Peer>>> = pairs
        .iter()
        .map(|_| targets.iter().map(|_| None).collect())
        .collect();
    let mut tick = tokio::time::interval(every);
    while start.elapsed() < duration {
        tick.tick().await;
        for (((way, as_id), st), row) in pairs.iter().zip(stats.iter_mut()).zip(links.iter_mut()) {
            for (t, slot) in targets.iter().zip(row.iter_mut()) {
                st.round(*way, *as_id, t, slot, creds).await;
            }
        }
    }
    for ((way, as_id), st) in pairs.iter().zip(stats) {
        out.push(
            json!({"way": way.name(), "as": as_id, "votes_sent": st.sent,
            "answered": st.answered, "granted": st.granted, "links_refused": st.refused,
            "max_term_seen": st.max_term, "failures": st.why}),
        );
    }
    json!({"attempts": out})
}

#[derive(Default)]
struct Spam {
    sent: u64,
    answered: u64,
    granted: u64,
    refused: u64,
    max_term: u64,
    why: std::collections::BTreeMap<String, u64>,
}

impl Spam {
    async fn round(
        &mut self,
        way: Way,
        as_id: NodeId,
        t: &Target,
        slot: &mut Option<Peer>,
        creds: &Creds,
    ) {
        if slot.is_none() {
            match open(way, t, as_id, None, creds).await {
                Ok(p) => *slot = Some(p),
                Err(e) => {
                    self.refused += 1;
                    *self.why.entry(first_words(&e)).or_default() += 1;
                    return;
                }
            }
        }
        let Some(peer) = slot.as_mut() else { return };
        let (vote, last) = match learn(peer, as_id).await {
            Ok(l) => l,
            Err(e) => {
                *self.why.entry(first_words(&e)).or_default() += 1;
                *slot = None;
                return;
            }
        };
        let term = vote.leader_id().term;
        self.max_term = self.max_term.max(term);
        let longer = last.map_or(forge::log_id(term, as_id, 1000), |l| {
            forge::log_id(
                l.leader_id.term,
                l.leader_id.node_id,
                l.index.saturating_add(1000),
            )
        });
        let req = forge::vote(term.saturating_add(1), as_id, Some(longer));
        self.sent += 1;
        match peer.call(&req).await {
            Ok(r) => {
                self.answered += 1;
                if granted(&r) {
                    self.granted += 1;
                }
                if let PeerResponse::Vote(Ok(v)) = &r {
                    self.max_term = self.max_term.max(v.vote.leader_id().term);
                }
            }
            Err(e) => {
                *self.why.entry(first_words(&e)).or_default() += 1;
                *slot = None;
            }
        }
    }
}

/// The first words of an error, to count alike ones together.
pub fn first_words(e: &str) -> String {
    e.split(':')
        .take(2)
        .collect::<Vec<_>>()
        .join(":")
        .chars()
        .take(80)
        .collect()
}
