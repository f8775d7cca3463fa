//! Seeded fault schedules over 3 and 5 members in one process (issue 15), each a `Raft` on its
//! own WAL-backed log and `State`, linked by an in-memory router the test controls (openraft's
//! own tests route the same way): links cut both ways or one way (a request delivered, its
//! reply lost), members crashed (shut down) and restarted from their directories, while one
//! writer sends creates of `/w<n>` to whoever leads. Then everything heals and every member
//! must hold every acknowledged create and the same state (zxid, digest, every node).
//!
//! `JEPSEN_SCHEDULES` (default 25 over 3 members, 10 over 5) schedules per size, `JEPSEN_SEED` the first seed (default
//! random, printed): a failure names its seed, and `JEPSEN_SEED=<it> JEPSEN_SCHEDULES=1` replays
//! its fault schedule.

use super::state_machine::{proposal, StateApplier, StateMachine};
use super::storage;
use super::types::{NodeId, RpcResult, TypeConfig};
use crate::testkit::{assert_one_state, member_state, Workload};
use openraft::error::Unreachable;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use palisade_proto::{CreateRequest, Id, JStr, Request, ACL};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Net {
    rafts: Mutex<BTreeMap<NodeId, Raft<TypeConfig>>>,
    /// Directed pairs (from, to) whose messages are lost.
    cut: Mutex<BTreeSet<(NodeId, NodeId)>>,
}

#[derive(Clone)]
struct Router {
    me: NodeId,
    net: Arc<Net>,
}

struct Link {
    from: NodeId,
    to: NodeId,
    net: Arc<Net>,
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Link;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Link {
        Link {
            from: self.me,
            to: target,
            net: self.net.clone(),
        }
    }
}

impl Link {
    /// The target, if the request gets through.
    fn target(&self) -> Option<Raft<TypeConfig>> {
        if self.net.cut.lock().contains(&(self.from, self.to)) {
            return None;
        }
        self.net.rafts.lock().get(&self.to).cloned()
    }

    /// Whether the reply gets back (a one-way cut loses it after the request was handled).
    fn back(&self) -> bool {
        !self.net.cut.lock().contains(&(self.to, self.from))
    }
}

fn cut_off<E: std::error::Error>() -> RPCError<NodeId, BasicNode, E> {
    let e = io::Error::new(io::ErrorKind::ConnectionRefused, "cut or down");
    RPCError::Unreachable(Unreachable::new(&e))
}

fn reply_lost<E: std::error::Error>() -> RPCError<NodeId, BasicNode, E> {
    let e = io::Error::new(io::ErrorKind::TimedOut, "reply lost");
    RPCError::Network(NetworkError::new(&e))
}

impl Link {
    /// One call: `rpc` on the target's Raft if the request gets through, its answer if the
    /// reply gets back.
    async fn call<R, E, F>(&self, rpc: impl FnOnce(Raft<TypeConfig>) -> F) -> RpcResult<R, E>
    where
        F: std::future::Future<Output = Result<R, RaftError<NodeId, E>>>,
        E: std::error::Error,
    {
        let r = rpc(self.target().ok_or_else(cut_off)?).await;
        if !self.back() {
            return Err(reply_lost());
        }
        r.map_err(|e| RemoteError::new(self.to, e).into())
    }
}

impl RaftNetwork<TypeConfig> for Link {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        self.call(|r| async move { r.append_entries(rpc).await })
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call(|r| async move { r.install_snapshot(rpc).await })
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.call(|r| async move { r.vote(rpc).await }).await
    }
}

struct Member {
    raft: Raft<TypeConfig>,
    sm: StateMachine<StateApplier>,
}

struct Cluster {
    net: Arc<Net>,
    dirs: Vec<tempfile::TempDir>,
    members: BTreeMap<NodeId, Member>,
    config: Arc<Config>,
    faults: usize,
}

fn config() -> Arc<Config> {
    Arc::new(
        Config {
            cluster_name: "palisade-chaos".into(),
            heartbeat_interval: 20,
            election_timeout_min: 60,
            election_timeout_max: 120,
            // Snapshots and purges happen within a schedule, so a member back from a crash
            // may be sent one.
            snapshot_policy: SnapshotPolicy::LogsSinceLast(40),
            max_in_snapshot_log_to_keep: 10,
            purge_batch_size: 1,
            ..Default::default()
        }
        .validate()
        .unwrap(),
    )
}

impl Cluster {
    async fn form(n: u64) -> Cluster {
        let mut c = Cluster {
            net: Arc::new(Net::default()),
            dirs: (0..n).map(|_| tempfile::tempdir().unwrap()).collect(),
            members: BTreeMap::new(),
            config: config(),
            faults: 0,
        };
        for id in 1..=n {
            c.start(id).await;
        }
        let nodes: BTreeMap<NodeId, BasicNode> = (1..=n)
            .map(|id| (id, BasicNode::new(format!("m{id}"))))
            .collect();
        c.members[&1].raft.initialize(nodes).await.unwrap();
        c
    }

    async fn start(&mut self, id: NodeId) {
        let dir = self.dirs[id as usize - 1].path();
        let (log, sm) = storage::open(dir, 64 << 10, StateApplier::default())
            .await
            .unwrap();
        let router = Router {
            me: id,
            net: self.net.clone(),
        };
        let raft = Raft::new(id, self.config.clone(), router, log, sm.clone())
            .await
            .unwrap();
        self.net.rafts.lock().insert(id, raft.clone());
        self.members.insert(id, Member { raft, sm });
    }

    async fn crash(&mut self, id: NodeId) {
        self.net.rafts.lock().remove(&id);
        if let Some(m) = self.members.remove(&id) {
            m.raft.shutdown().await.unwrap();
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.members
            .values()
            .filter_map(|m| {
                let mt = m.raft.metrics().borrow().clone();
                (mt.current_leader == Some(mt.id)).then_some(mt.id)
            })
            .max_by_key(|id| self.members[id].raft.metrics().borrow().current_term)
    }

    /// One write through the leader: Some(index) when acknowledged (committed and applied).
    async fn write(&self, txn: &palisade_proto::Txn) -> Option<u64> {
        let l = self.leader()?;
        let raft = &self.members.get(&l)?.raft;
        match tokio::time::timeout(Duration::from_millis(100), raft.client_write(proposal(txn)))
            .await
        {
            Ok(Ok(r)) => Some(r.log_id.index),
            _ => None,
        }
    }
}

fn open_acl() -> Vec<ACL> {
    vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }]
}

/// A create of `path`, open to all, as the writer sends them.
fn create(path: &str) -> Request {
    Request::Create(CreateRequest {
        path: JStr::from(path),
        data: None,
        acl: Some(open_acl()),
        flags: 0,
    })
}

/// One fault drawn from `rng` (the member it hits by rule: the leader, or any); a member it
/// crashes joins `down`.
async fn fault(c: &mut Cluster, rng: &mut fastrand::Rng, n: u64, down: &mut Vec<NodeId>) {
    let ids: Vec<NodeId> = (1..=n).collect();
    match rng.u8(0..4) {
        0 => {
            // halves (a minority and a majority), both ways
            let mut s = ids.clone();
            rng.shuffle(&mut s);
            let k = rng.usize(1..=(n as usize - 1) / 2);
            let (a, b) = s.split_at(k);
            let mut cut = c.net.cut.lock();
            for x in a {
                for y in b {
                    cut.insert((*x, *y));
                    cut.insert((*y, *x));
                }
            }
        }
        1 => {
            // the leader hears nobody (its messages still go out), or is cut off whole
            if let Some(l) = c.leader() {
                let both = rng.bool();
                let mut cut = c.net.cut.lock();
                for y in ids.iter().filter(|y| **y != l) {
                    cut.insert((*y, l));
                    if both {
                        cut.insert((l, *y));
                    }
                }
            }
        }
        2 => {
            // crash the leader or any member (a majority stays up)
            let pick = if rng.bool() {
                c.leader()
            } else {
                Some(ids[rng.usize(..ids.len())])
            };
            if let Some(id) = pick {
                if !down.contains(&id) && down.len() < (n as usize - 1) / 2 {
                    c.crash(id).await;
                    down.push(id);
                }
            }
        }
        _ => heal(c, down).await,
    }
    c.faults += 1;
}

/// Heals the links and restarts the crashed.
async fn heal(c: &mut Cluster, down: &mut Vec<NodeId>) {
    c.net.cut.lock().clear();
    for id in down.drain(..) {
        c.start(id).await;
    }
}

/// Writes while a fault lasts (two failures in a row end them: no quorum now), each a create
/// of `/w<next>`; the acknowledged ones' paths go to `acked`.
async fn writes(
    c: &Cluster,
    w: &mut Workload,
    rng: &mut fastrand::Rng,
    next: &mut u64,
    acked: &mut Vec<String>,
) {
    let mut failed = 0;
    for _ in 0..rng.usize(2..9) {
        if failed == 2 {
            break;
        }
        *next += 1;
        let path = format!("/w{next}");
        w.write(0x100, create(&path));
        let txn = &w.log[w.log.len() - 1];
        if c.write(txn).await.is_some() {
            acked.push(path);
            failed = 0;
        } else {
            // No leader yet, or it lost its quorum: a moment for an election.
            failed += 1;
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }
}

/// After the heal: one last write acknowledged by the whole ensemble's leader, applied by
/// every member.
async fn last_write(c: &Cluster, w: &mut Workload, seed: u64) {
    let mut last = None;
    for i in 0..400 {
        w.write(0x100, create(&format!("/final{i}")));
        if let Some(ix) = c.write(&w.log[w.log.len() - 1]).await {
            last = Some(ix);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let last = last.unwrap_or_else(|| panic!("seed {seed}: no write after the heal"));
    for m in c.members.values() {
        m.raft
            .wait(Some(Duration::from_secs(20)))
            .applied_index_at_least(Some(last), "every member applied the last write")
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

/// One schedule: `steps` faults under a writer, then the heal and the checks. Returns the
/// number of acknowledged writes checked.
async fn schedule(n: u64, seed: u64, steps: usize) -> (usize, usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut c = Cluster::form(n).await;
    let mut w = Workload::new(seed);
    let mut sent = 0; // w.log entries sent so far
    let mut acked: Vec<String> = Vec::new();
    // The two createSession txns Workload starts with: through before any fault.
    for _ in 0..200 {
        if sent == w.log.len() {
            break;
        }
        if c.write(&w.log[sent]).await.is_some() {
            sent += 1;
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(sent, w.log.len(), "seed {seed}: no leader to start with");
    let mut next = 0u64;
    let mut down: Vec<NodeId> = Vec::new();
    for _ in 0..steps {
        fault(&mut c, &mut rng, n, &mut down).await;
        writes(&c, &mut w, &mut rng, &mut next, &mut acked).await;
    }
    heal(&mut c, &mut down).await;
    last_write(&c, &mut w, seed).await;
    // Every member: every acknowledged create, and one state.
    let mut states = Vec::new();
    for (id, m) in &c.members {
        states.push(member_state(*id, &m.sm, acked.clone()).await);
    }
    assert_one_state(&states, &format!("seed {seed}"));
    let ids: Vec<NodeId> = c.members.keys().copied().collect();
    for id in ids {
        c.crash(id).await;
    }
    (acked.len(), c.faults)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

async fn run(n: u64, default_schedules: u64) {
    let schedules = env_u64("JEPSEN_SCHEDULES").unwrap_or(default_schedules);
    let first = env_u64("JEPSEN_SEED").unwrap_or_else(|| fastrand::u64(..1 << 40));
    println!(
        "in-process schedules over {n} members: seeds {first}..{}",
        first + schedules
    );
    let t0 = std::time::Instant::now();
    let (mut writes, mut faults) = (0, 0);
    for s in 0..schedules {
        let (w, f) = schedule(n, first + s, 10).await;
        writes += w;
        faults += f;
    }
    println!(
        "{n} members: {schedules} schedules, {faults} faults, {writes} acknowledged writes \
         checked on every member, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_fault_schedules_over_three_members() {
    run(3, 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_fault_schedules_over_five_members() {
    run(5, 10).await;
}
