//! Three members in one process, each a `Raft` on its own WAL-backed log and `State`, linked
//! by the loopback TCP transport: they elect a leader, replicate Palisade txns, and every
//! member's State ends equal (digest, stats, every node); a follower restarted from its log
//! alone catches up. The server does not run this yet: the core integration is the next step.

use super::network::{serve, Network};
use super::state_machine::{proposal, StateApplier, StateMachine};
use super::storage;
use super::types::{NodeId, TypeConfig};
use crate::state::State;
use crate::testkit::{assert_same_tree, Workload};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const WAIT: Option<Duration> = Some(Duration::from_secs(20));

struct Member {
    raft: Raft<TypeConfig>,
    sm: StateMachine<StateApplier>,
    stop: CancellationToken,
}

/// Member `id`, reaching the others at `nodes`' addresses as a zoo.cfg would name them (its
/// peer links accept only members it knows).
async fn start(
    id: NodeId,
    dir: &Path,
    listener: TcpListener,
    config: Arc<Config>,
    nodes: &BTreeMap<NodeId, BasicNode>,
) -> Member {
    let (mut log, sm) = storage::open(dir, 64 << 10, StateApplier::default())
        .await
        .unwrap();
    // As a server runs it: the leader's own sync alongside replication (durable.rs).
    log.lead_as(id);
    let addrs = nodes.iter().map(|(i, n)| (*i, n.addr.clone())).collect();
    let net = Network::new(id, Duration::from_millis(50))
        .with_durable(log.durable())
        .with_addrs(addrs);
    let raft = Raft::new(id, config, net.clone(), log, sm.clone())
        .await
        .unwrap();
    net.watch_membership(&raft);
    let stop = CancellationToken::new();
    let (r, s) = (raft.clone(), stop.clone());
    tokio::spawn(async move { serve(listener, Arc::new(r), &net, s).await });
    Member { raft, sm, stop }
}

fn config() -> Arc<Config> {
    with_snapshots(SnapshotPolicy::Never)
}

fn with_snapshots(snapshot_policy: SnapshotPolicy) -> Arc<Config> {
    Arc::new(
        Config {
            cluster_name: "palisade-test".into(),
            heartbeat_interval: 50,
            election_timeout_min: 300,
            election_timeout_max: 600,
            snapshot_policy,
            max_in_snapshot_log_to_keep: 0,
            purge_batch_size: 1,
            ..Default::default()
        }
        .validate()
        .unwrap(),
    )
}

/// Binds the address a stopped member listened on (its socket may linger a moment).
async fn rebind(addr: &str) -> TcpListener {
    for _ in 0..50 {
        if let Ok(l) = TcpListener::bind(addr).await {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("cannot bind {addr} again");
}

async fn write(members: &[Member], leader: NodeId, txns: &[palisade_proto::Txn]) -> u64 {
    let raft = &members
        .iter()
        .find(|m| m.raft.metrics().borrow().id == leader)
        .unwrap()
        .raft;
    let mut last = 0;
    for t in txns {
        last = raft.client_write(proposal(t)).await.unwrap().log_id.index;
    }
    last
}

/// What a test's three members start from: their directories, their addresses and their
/// configuration.
struct Ensemble {
    dirs: Vec<tempfile::TempDir>,
    nodes: BTreeMap<NodeId, BasicNode>,
    config: Arc<Config>,
}

impl Ensemble {
    /// Member `id` started again from its directory, at its address.
    async fn restart(&self, id: NodeId) -> Member {
        let l = rebind(&self.nodes[&id].addr).await;
        let dir = self.dirs[id as usize - 1].path();
        start(id, dir, l, self.config.clone(), &self.nodes).await
    }
}

/// Three members formed in fresh directories with `config`, and the leader they elected.
async fn form(config: Arc<Config>) -> (Ensemble, Vec<Member>, NodeId) {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut listeners = Vec::new();
    let mut nodes = BTreeMap::new();
    for id in 1..=3u64 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        nodes.insert(id, BasicNode::new(l.local_addr().unwrap().to_string()));
        listeners.push(l);
    }
    let mut members = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        members.push(start(i as u64 + 1, dirs[i].path(), l, config.clone(), &nodes).await);
    }
    members[0].raft.initialize(nodes.clone()).await.unwrap();
    let leader = leader_seen_by(&members[0], "a leader").await;
    (
        Ensemble {
            dirs,
            nodes,
            config,
        },
        members,
        leader,
    )
}

/// The leader `m` knows of, once it knows one.
async fn leader_seen_by(m: &Member, what: &str) -> NodeId {
    let m = m
        .raft
        .wait(WAIT)
        .metrics(|m| m.current_leader.is_some(), what)
        .await
        .unwrap();
    m.current_leader.unwrap()
}

/// The first `n` txns of a workload.
fn txns(seed: u64, n: usize) -> Vec<palisade_proto::Txn> {
    let mut w = Workload::new(seed);
    while w.log.len() < n {
        w.step();
    }
    w.log
}

/// The state these txns make, applied directly.
fn applied(txns: &[palisade_proto::Txn]) -> State {
    let mut s = State::new();
    for t in txns {
        s.apply(t);
    }
    s
}

/// Stops member `id` and takes it out of `members`; where its log ended.
async fn stop_one(members: &mut Vec<Member>, id: NodeId) -> Option<u64> {
    let pos = members
        .iter()
        .position(|m| m.raft.metrics().borrow().id == id)
        .unwrap();
    let gone = members.remove(pos);
    let stopped_at = gone.raft.metrics().borrow().last_log_index;
    gone.raft.shutdown().await.unwrap();
    gone.stop.cancel();
    stopped_at
}

async fn stop_all(members: Vec<Member>) {
    for m in members {
        m.raft.shutdown().await.unwrap();
        m.stop.cancel();
    }
}

async fn all_agree(members: &[Member], last: u64, direct: &State) {
    for m in members {
        m.raft
            .wait(WAIT)
            .applied_index_at_least(Some(last), "applied")
            .await
            .unwrap();
        let id = m.raft.metrics().borrow().id;
        m.sm.with_applier(|a| assert_same_state(&format!("member {id}"), &a.state, direct))
            .await;
    }
}

/// How: snapshots every 25 entries with nothing kept behind them, so the leader purges its
/// log while a follower is stopped; the follower restarts from its own snapshot file and log
/// and must be sent the leader's snapshot (install-snapshot over the TCP link) to catch up.
/// Then every member restarts at once, from snapshot file plus log alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_behind_a_purge_catches_up_by_snapshot_and_all_restart() {
    let (e, mut members, leader) = form(with_snapshots(SnapshotPolicy::LogsSinceLast(25))).await;
    let log = txns(5, 200);
    let last = write(&members, leader, &log[..40]).await;
    all_agree(&members, last, &applied(&log[..40])).await;

    let f = if leader == 3 { 1 } else { 3 };
    let stopped_at = stop_one(&mut members, f).await.unwrap();
    let mut last = write(&members, leader, &log[40..160]).await;
    let lm = members
        .iter()
        .find(|m| m.raft.metrics().borrow().id == leader)
        .unwrap()
        .raft
        .wait(WAIT)
        .metrics(
            |m| m.purged.is_some_and(|p| p.index > stopped_at),
            "the leader purged past the stopped follower",
        )
        .await
        .unwrap();
    assert!(lm.snapshot.is_some());
    members.push(e.restart(f).await);
    all_agree(&members, last, &applied(&log[..160])).await;
    let fm = members.last().unwrap().raft.metrics().borrow().clone();
    assert!(
        fm.snapshot.is_some_and(|s| s.index > stopped_at),
        "the follower holds a snapshot past where it stopped: {:?}",
        fm.snapshot
    );

    // Everyone stops; everyone restarts from its snapshot file and log.
    stop_all(std::mem::take(&mut members)).await;
    for id in 1..=3u64 {
        members.push(e.restart(id).await);
    }
    for m in &members {
        m.sm.with_applier(|a| assert!(a.state.zxid() > 0, "restored from its snapshot"))
            .await;
    }
    let leader = leader_seen_by(&members[0], "a leader after the restart").await;
    last = write(&members, leader, &log[160..]).await;
    all_agree(&members, last, &applied(&log)).await;
    stop_all(members).await;
}

fn assert_same_state(what: &str, got: &State, want: &State) {
    assert_eq!(got.zxid(), want.zxid(), "{what}: zxid");
    assert_eq!(got.tree.digest(), want.tree.digest(), "{what}: digest");
    assert_eq!(got.sessions(), want.sessions(), "{what}: sessions");
    assert_eq!(got.tree.znode_count(), want.tree.znode_count(), "{what}");
    assert_same_tree(what, &got.tree, &want.tree);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_elect_replicate_and_agree() {
    let (e, mut members, leader) = form(config()).await;

    let log = txns(11, 120);
    let last = write(&members, leader, &log[..80]).await;
    all_agree(&members, last, &applied(&log[..80])).await;

    // A follower stops; it restarts from its log alone (a fresh State, no snapshot) and the
    // entries written while it was away reach it too.
    let f = if leader == 3 { 1 } else { 3 };
    stop_one(&mut members, f).await;
    let last = write(&members, leader, &log[80..]).await;
    members.push(e.restart(f).await);
    all_agree(&members, last, &applied(&log)).await;
    stop_all(members).await;
}

/// How: the leader stops after acknowledged writes; the two others elect a new leader (the
/// time is printed: `--nocapture`), take more writes, and the old leader restarts from its
/// log and snapshot file as a follower. Every acknowledged write is in every State.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_stops_and_no_acknowledged_write_is_lost() {
    let (e, mut members, leader) = form(with_snapshots(SnapshotPolicy::LogsSinceLast(40))).await;
    let log = txns(9, 100);
    write(&members, leader, &log[..50]).await;
    stop_one(&mut members, leader).await;
    let stopped = std::time::Instant::now();
    let m = members[0]
        .raft
        .wait(WAIT)
        .metrics(
            |m| m.current_leader.is_some_and(|l| l != leader),
            "a new leader",
        )
        .await
        .unwrap();
    let elected = stopped.elapsed();
    let new_leader = m.current_leader.unwrap();
    let last = write(&members, new_leader, &log[50..]).await;
    println!(
        "leader {leader} stopped; {new_leader} elected after {} ms",
        elected.as_millis()
    );
    members.push(e.restart(leader).await);
    all_agree(&members, last, &applied(&log)).await;
    stop_all(members).await;
}
