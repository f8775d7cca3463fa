use super::join;
use crate::ensemble::members::{parse_member, Member};
use crate::ensemble::raft::network::{serve, Network, PeerHandler};
use crate::ensemble::raft::rpc::JoinReply;
use crate::ensemble::raft::state_machine::StateApplier;
use crate::ensemble::raft::storage;
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{Config, Raft};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

async fn addrs(n: usize) -> Vec<(TcpListener, u16)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let p = l.local_addr().expect("addr").port();
        out.push((l, p));
    }
    out
}

fn members(ports: &[u16]) -> Vec<Member> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let k = format!("server.{}", i + 1);
            parse_member(&k, &format!("127.0.0.1:{p}:{}", p + 1)).expect("line")
        })
        .collect()
}

/// Raft's RPCs, and joins answered as a member's peer port answers them.
struct Joinable(Raft<crate::ensemble::raft::types::TypeConfig>);

impl PeerHandler for Joinable {
    async fn append(
        &self,
        _from: u64,
        r: AppendEntriesRequest<crate::ensemble::raft::types::TypeConfig>,
    ) -> Result<AppendEntriesResponse<u64>, RaftError<u64>> {
        self.0.append_entries(r).await
    }
    async fn vote(
        &self,
        _from: u64,
        r: VoteRequest<u64>,
    ) -> Result<VoteResponse<u64>, RaftError<u64>> {
        self.0.vote(r).await
    }
    async fn snapshot(
        &self,
        _from: u64,
        r: InstallSnapshotRequest<crate::ensemble::raft::types::TypeConfig>,
    ) -> Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>> {
        self.0.install_snapshot(r).await
    }
    async fn join(&self, id: u64, addr: String) -> JoinReply {
        let me = self.0.metrics().borrow().id;
        super::answer_join(&self.0, me, true, id, addr).await
    }
}

async fn raft(
    id: u64,
    dir: &std::path::Path,
    l: TcpListener,
    m: &[Member],
) -> (
    Raft<crate::ensemble::raft::types::TypeConfig>,
    Network,
    CancellationToken,
) {
    let cfg = Arc::new(
        Config {
            heartbeat_interval: 30,
            election_timeout_min: 150,
            election_timeout_max: 300,
            ..Default::default()
        }
        .validate()
        .expect("config"),
    );
    let (log, sm) = storage::open(dir, 64 << 10, StateApplier::default())
        .await
        .expect("storage");
    let addrs = m
        .iter()
        .filter_map(|m| Some((m.id, super::peer_addr(m)?)))
        .collect();
    let net = Network::new(id, Duration::from_millis(30))
        .with_addrs(addrs)
        .with_joiners(true);
    let r = Raft::new(id, cfg, net.clone(), log, sm)
        .await
        .expect("raft");
    net.watch_membership(&r);
    let stop = CancellationToken::new();
    let (h, n, s) = (Arc::new(Joinable(r.clone())), net.clone(), stop.clone());
    tokio::spawn(async move { serve(l, h, &n, s).await });
    (r, net, stop)
}

/// A server whose zoo.cfg lists others it cannot reach never forms an ensemble of its
/// own (it may be joining one that runs without it); with a majority of zoo.cfg's voters
/// answering that none is formed, they form one together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_forms_an_ensemble_only_with_a_majority_that_has_none() {
    let mut ls = addrs(3).await;
    let ports: Vec<u16> = ls.iter().map(|(_, p)| *p).collect();
    let m = members(&ports);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    let (l1, _) = ls.remove(0);
    let (r1, n1, s1) = raft(1, dirs[0].path(), l1, &m).await;
    tokio::spawn(join(r1.clone(), n1, m.clone(), Duration::from_millis(20)));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!r1.is_initialized().await.expect("raft"), "formed alone");
    let (l2, _) = ls.remove(0);
    let (r2, n2, s2) = raft(2, dirs[1].path(), l2, &m).await;
    tokio::spawn(join(r2.clone(), n2, m.clone(), Duration::from_millis(20)));
    let formed = r1
        .wait(Some(Duration::from_secs(10)))
        .metrics(|x| x.current_leader.is_some(), "a leader")
        .await
        .expect("1 and 2 form the ensemble");
    let voters: Vec<u64> = formed.membership_config.membership().voter_ids().collect();
    assert_eq!(voters, [1, 2, 3]);
    // The third comes late: it is told it is a member, and the leader's log reaches it.
    let (l3, _) = ls.remove(0);
    let (r3, n3, s3) = raft(3, dirs[2].path(), l3, &m).await;
    tokio::spawn(join(r3.clone(), n3, m.clone(), Duration::from_millis(20)));
    r3.wait(Some(Duration::from_secs(10)))
        .metrics(|x| x.current_leader.is_some(), "the leader's log")
        .await
        .expect("3 follows");
    for (r, s) in [(r1, s1), (r2, s2), (r3, s3)] {
        s.cancel();
        let _ = r.shutdown().await;
    }
}
