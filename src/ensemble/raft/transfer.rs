//! Moving leadership on purpose (ClickHouse Keeper's `ydld`/`rqld`, etcd's MoveLeader; the
//! Raft dissertation §3.10), so that a rolling restart stops its leader only once another
//! member leads, rather than leaving the ensemble to notice a silent leader.
//!
//! openraft 0.9 has no leadership transfer. It is built here from what it has:
//! 1. the leader stops ordering writes (the role task reports it not ready: its core preps
//!    nothing and its clients move to other members, as at any leader change);
//! 2. it waits until the successor — the voter asked for, or the one furthest along — has
//!    every entry of its log, so the successor's log is at least as long as any voter's;
//! 3. it stops its heartbeats and tells the successor to campaign (`PeerRequest::Elect`);
//! 4. the successor waits out the lease its peers granted the leader with its last
//!    heartbeat (openraft refuses a vote within it), a quarter heartbeat more, then asks for
//!    the next term: before any other follower (their election driver waits half a heartbeat
//!    or more past the lease, election.rs `stagger`), and with the longest log, so it wins.
//!
//! If no other member leads within three leases the leader resumes: its heartbeats go on and
//! it orders writes again. Writes pause for about a lease (300 ms at most): openraft's lease
//! cannot be cut short, and it is what keeps a partitioned member from unseating a leader.

use super::network::Network;
use super::rpc::PeerRequest;
use super::types::{NodeId, TypeConfig};
use crate::seam::LeadershipAsk as Ask;
use openraft::{Raft, ServerState};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Set while this leader hands over: it orders no writes (`roles.rs` `roles` watches it).
#[derive(Clone)]
pub struct Yielding(Arc<watch::Sender<bool>>);

impl Default for Yielding {
    fn default() -> Self {
        Yielding(Arc::new(watch::Sender::new(false)))
    }
}

impl Yielding {
    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    pub fn watch(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }

    fn set(&self, on: bool) {
        self.0.send_replace(on);
    }
}

/// Timing, from the Raft config.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub lease: Duration,
    pub heartbeat: Duration,
}

impl Timing {
    pub fn of(config: &openraft::Config) -> Timing {
        Timing {
            lease: Duration::from_millis(config.election_timeout_max),
            heartbeat: Duration::from_millis(config.heartbeat_interval),
        }
    }
}

/// The voter other than `me` whose copy of the log goes furthest (lowest id on a tie), if
/// this member leads.
pub fn successor(raft: &Raft<TypeConfig>, me: NodeId) -> Option<NodeId> {
    let m = raft.metrics();
    let m = m.borrow();
    let r = m.replication.as_ref()?;
    m.membership_config
        .membership()
        .voter_ids()
        .filter(|id| *id != me)
        .max_by_key(|id| {
            let matched = r.get(id).copied().flatten().map(|l| l.index);
            (matched, std::cmp::Reverse(*id))
        })
}

/// Where this member reaches member `id` of the membership.
fn member_addr(raft: &Raft<TypeConfig>, network: &Network, id: NodeId) -> Option<String> {
    let m = raft.metrics();
    let m = m.borrow();
    let addr = m
        .membership_config
        .nodes()
        .find(|(n, _)| **n == id)
        .map(|(n, node)| network.addr_of(*n, node));
    addr
}

/// Runs the asks of this member's core until it goes.
pub async fn run(
    raft: Raft<TypeConfig>,
    network: Network,
    me: NodeId,
    timing: Timing,
    yielding: Yielding,
    mut asks: mpsc::UnboundedReceiver<Ask>,
) {
    while let Some(ask) = asks.recv().await {
        let leader = raft.metrics().borrow().current_leader;
        match ask {
            Ask::Yield if leader == Some(me) => {
                match hand_over(&raft, &network, me, None, timing, &yielding).await {
                    Ok(to) => tracing::info!(to, "leadership handed over"),
                    Err(e) => tracing::warn!(error = %e, "leadership not handed over"),
                }
            }
            Ask::Yield => tracing::info!(?leader, "asked to yield leadership, but not leading"),
            Ask::Request => match leader {
                Some(l) if l == me => tracing::info!("asked to lead, and leading already"),
                Some(l) => ask_leader(&raft, &network, l, me, timing).await,
                None => tracing::warn!("asked to lead, but no leader is known to ask"),
            },
        }
    }
}

/// Asks leader `l` to hand over to `me`.
async fn ask_leader(raft: &Raft<TypeConfig>, network: &Network, l: NodeId, me: NodeId, t: Timing) {
    let Some(addr) = member_addr(raft, network, l) else {
        tracing::warn!(
            leader = l,
            "asked to lead, but the leader's address is unknown"
        );
        return;
    };
    let mut c = network.client(l, addr);
    match c
        .call_for(PeerRequest::Transfer { to: me }, t.lease * 4)
        .await
    {
        Ok(_) => tracing::info!(leader = l, "asked the leader to hand over to this member"),
        Err(e) => tracing::warn!(leader = l, error = %e, "could not ask the leader to hand over"),
    }
}

/// On the leader: hands over to `to` (or the member furthest along). Returns the member that
/// leads after.
pub async fn hand_over(
    raft: &Raft<TypeConfig>,
    network: &Network,
    me: NodeId,
    to: Option<NodeId>,
    t: Timing,
    yielding: &Yielding,
) -> Result<NodeId, String> {
    let target = match to {
        Some(id) if id == me => return Ok(me),
        Some(id) => id,
        None => successor(raft, me).ok_or("no other voter to hand over to")?,
    };
    let voter = raft
        .metrics()
        .borrow()
        .membership_config
        .membership()
        .voter_ids()
        .any(|v| v == target);
    if !voter {
        return Err(format!("member {target} is no voter"));
    }
    yielding.set(true);
    let r = hand_over_to(raft, network, me, target, t).await;
    // Whatever happened: heartbeats again (a follower sends none anyway), and writes again if
    // it still leads.
    raft.runtime_config().heartbeat(true);
    yielding.set(false);
    r.map(|()| target)
}

async fn hand_over_to(
    raft: &Raft<TypeConfig>,
    network: &Network,
    me: NodeId,
    target: NodeId,
    t: Timing,
) -> Result<(), String> {
    // 2. The successor holds every entry this leader has.
    tokio::time::timeout(t.lease * 4, async {
        let mut rx = raft.metrics();
        loop {
            {
                let m = rx.borrow_and_update();
                if m.state != ServerState::Leader {
                    return Err("no longer leading".to_string());
                }
                let last = m.last_log_index;
                let matched = m
                    .replication
                    .as_ref()
                    .and_then(|r| r.get(&target).copied().flatten())
                    .map(|l| l.index);
                if matched.is_some() && matched == last {
                    return Ok(());
                }
            }
            if rx.changed().await.is_err() {
                return Err("Raft stopped".to_string());
            }
        }
    })
    .await
    .map_err(|_| format!("member {target} did not catch up within {:?}", t.lease * 4))??;
    // 3. No more heartbeats; the successor campaigns once the lease they gave is over.
    raft.runtime_config().heartbeat(false);
    let term = raft.metrics().borrow().current_term;
    let addr = member_addr(raft, network, target)
        .ok_or_else(|| format!("member {target}'s address is unknown"))?;
    let mut c = network.client(target, addr);
    c.call_for(PeerRequest::Elect { term }, t.lease)
        .await
        .map_err(|e| format!("member {target} was not told to campaign: {e}"))?;
    // 4. Another member leads (the successor, unless something else happened).
    tokio::time::timeout(t.lease * 3, async {
        let mut rx = raft.metrics();
        loop {
            if rx
                .borrow_and_update()
                .current_leader
                .is_some_and(|l| l != me)
            {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    })
    .await
    .map_err(|_| format!("no other member leads within {:?}", t.lease * 3))
}

/// On the successor, told by leader `from` of `term` to campaign: waits out the lease the
/// leader's last heartbeat gave its peers, then asks for the next term (spawned: the call
/// that told it is answered at once).
pub fn campaign_when_told(raft: Raft<TypeConfig>, from: NodeId, term: u64, t: Timing) -> bool {
    let ok = {
        let m = raft.metrics();
        let m = m.borrow();
        m.current_leader == Some(from) && m.current_term == term
    };
    if ok {
        tokio::spawn(async move {
            tokio::time::sleep(t.lease + t.heartbeat / 4).await;
            let still = {
                let m = raft.metrics();
                let m = m.borrow();
                m.current_term == term && m.current_leader.is_none_or(|l| l == from)
            };
            if still {
                tracing::info!(from, term, "taking over leadership, as the leader asked");
                let _ = raft.trigger().elect().await;
            }
        });
    }
    ok
}
