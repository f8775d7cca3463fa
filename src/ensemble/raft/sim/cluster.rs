//! Members of one deterministic-time schedule: each a `Raft` on a [`MemLog`] and a [`MemSm`]
//! over its own [`Disk`], on the in-memory [`Net`], with the election driver the server runs
//! (`election::run`; openraft's own timer is off in `election::raft_config`).

use super::ledger::Ledger;
use super::mem_log::{Disk, MemLog, SharedDisk};
use super::mem_sm::MemSm;
use super::net::{Net, Router};
use crate::ensemble::raft::types::{NodeId, TypeConfig};
use crate::ensemble::raft::{election, step_down};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Entries between snapshots: small, so that snapshots, purges and a lagging member sent one
/// all happen within a schedule of a few hundred writes.
pub const SNAPSHOT_EVERY: u64 = 30;

/// The server's timing for tickTime 500, syncLimit 4 (the Jepsen runs'): a 300 ms lease,
/// heartbeats of 50 ms; snapshots every [`SNAPSHOT_EVERY`] entries, 10 kept behind one.
pub fn config() -> Arc<Config> {
    let mut c = election::raft_config(500, 10, 4, 10).unwrap_or_else(|e| panic!("{e}"));
    c.cluster_name = "palisade-sim".into();
    c.snapshot_policy = SnapshotPolicy::LogsSinceLast(SNAPSHOT_EVERY);
    c.purge_batch_size = 1;
    Arc::new(c.validate().unwrap_or_else(|e| panic!("{e}")))
}

pub struct Member {
    pub raft: Raft<TypeConfig>,
    pub sm: MemSm,
}

pub struct Cluster {
    pub n: u64,
    pub net: Arc<Net>,
    pub disks: BTreeMap<NodeId, SharedDisk>,
    /// The members up.
    pub members: BTreeMap<NodeId, Member>,
    pub ledger: Arc<Ledger>,
    config: Arc<Config>,
    /// The longest a log flush waits, in ms.
    flush_ms: u64,
    resume_leader: bool,
}

impl Cluster {
    /// Forms `n` members. `resume_leader`: the negative control, a restart without
    /// `step_down::step_down_on_restart` (a crashed leader resumes its term).
    pub async fn form(n: u64, flush_ms: u64, resume_leader: bool) -> Cluster {
        let mut c = Cluster {
            n,
            net: Arc::new(Net::default()),
            disks: (1..=n).map(|id| (id, SharedDisk::default())).collect(),
            resume_leader,
            members: BTreeMap::new(),
            ledger: Arc::new(Ledger::default()),
            config: config(),
            flush_ms,
        };
        for id in 1..=n {
            c.start(id).await;
        }
        let nodes: BTreeMap<NodeId, BasicNode> = (1..=n)
            .map(|id| (id, BasicNode::new(format!("m{id}"))))
            .collect();
        if let Some(m) = c.members.get(&1) {
            m.raft
                .initialize(nodes)
                .await
                .unwrap_or_else(|e| panic!("initialize: {e}"));
        }
        c
    }

    /// Starts member `id` from its disk (a restart after a crash).
    pub async fn start(&mut self, id: NodeId) {
        let Some(disk) = self.disks.get(&id).cloned() else {
            return;
        };
        let life = disk.lock().life;
        let ledger = Some(self.ledger.clone());
        let mut log = MemLog::open(id, disk.clone(), self.flush_ms, ledger.clone());
        // As the server's member does before its Raft starts (unless this is the control).
        if !self.resume_leader {
            step_down::step_down_on_restart(&mut log, id)
                .await
                .unwrap_or_else(|e| panic!("member {id}: vote: {e}"));
        }
        let sm = MemSm::open(id, disk, ledger)
            .await
            .unwrap_or_else(|e| panic!("member {id}: state machine: {e}"));
        let router = Router {
            me: id,
            life,
            net: self.net.clone(),
        };
        let raft = Raft::new(id, self.config.clone(), router, log, sm.clone())
            .await
            .unwrap_or_else(|e| panic!("member {id}: Raft: {e}"));
        self.net.up(id, raft.clone(), life);
        tokio::spawn(election::run(raft.clone(), id));
        self.members.insert(id, Member { raft, sm });
    }

    /// Kills member `id`: off the network, what it had not flushed lost, its Raft stopped.
    pub async fn crash(&mut self, id: NodeId) {
        self.net.down(id);
        if let Some(d) = self.disks.get(&id) {
            Disk::crash(d);
        }
        if let Some(m) = self.members.remove(&id) {
            // A core that stopped on its own (its log's flush never came) is already down.
            let _ = m.raft.shutdown().await;
        }
    }

    /// The members down.
    pub fn down(&self) -> Vec<NodeId> {
        (1..=self.n)
            .filter(|id| !self.members.contains_key(id))
            .collect()
    }

    /// Entries that crashes found appended but not flushed.
    pub fn lost_unflushed(&self) -> u64 {
        self.disks.values().map(|d| d.lock().lost_unflushed).sum()
    }

    pub async fn stop(&mut self) {
        for id in 1..=self.n {
            self.crash(id).await;
        }
    }
}
