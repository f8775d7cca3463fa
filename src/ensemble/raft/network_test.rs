//! The transport against a stand-in handler: each RPC's request and reply cross a real
//! loopback socket intact; an unreachable peer, a slow peer and a hostile peer frame each end
//! the way openraft needs them to.

use super::*;
use crate::ensemble::raft::rpc::too_many;
use crate::ensemble::raft::types::{Proposal, RpcResult};
use openraft::error::RPCError;
use openraft::network::{RPCOption, RaftNetwork};
use openraft::raft::InstallSnapshotResponse;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Grants votes for even terms, reports the number of entries it got as a conflict index
/// (so the test sees that the entries crossed), and sleeps on append when `slow` is set.
#[derive(Default)]
struct Stand {
    slow_ms: AtomicU64,
}

impl PeerHandler for Stand {
    async fn append(
        &self,
        _from: NodeId,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        let ms = self.slow_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(match r.entries.len() {
            0 => AppendEntriesResponse::Success,
            n => AppendEntriesResponse::PartialSuccess(Some(LogId::new(
                CommittedLeaderId::new(r.vote.leader_id().term, 1),
                n as u64,
            ))),
        })
    }
    async fn vote(
        &self,
        _from: NodeId,
        r: VoteRequest<NodeId>,
    ) -> Result<VoteResponse<NodeId>, RaftError<NodeId>> {
        let granted = r.vote.leader_id().term.is_multiple_of(2);
        Ok(VoteResponse::new(r.vote, r.last_log_id, granted))
    }
    async fn snapshot(
        &self,
        _from: NodeId,
        r: InstallSnapshotRequest<TypeConfig>,
    ) -> SnapshotResult {
        Ok(InstallSnapshotResponse { vote: r.vote })
    }
}

/// Member 2, answered by `stand`, and member 1, whose listener answers member 2's proofs
/// (its links carry no credential): member 2's address, what stops both, member 1's network
/// and address.
async fn start(stand: Arc<Stand>) -> (String, CancellationToken, Network, String) {
    let l1 = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a1 = l1.local_addr().unwrap().to_string();
    let l2 = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a2 = l2.local_addr().unwrap().to_string();
    let net1 = Network::new(1, Duration::from_millis(50)).with_addrs([(2, a2.clone())].into());
    let net2 = Network::new(2, Duration::from_millis(50)).with_addrs([(1, a1.clone())].into());
    let cancel = CancellationToken::new();
    // Member 1 listens for the whole test: member 2 asks it to vouch for its links.
    let n1 = net1.clone();
    tokio::spawn(async move {
        serve(
            l1,
            Arc::new(Stand::default()),
            &n1,
            CancellationToken::new(),
        )
        .await
    });
    let c2 = cancel.clone();
    tokio::spawn(async move { serve(l2, stand, &net2, c2).await });
    (a2, cancel, net1, a1)
}

async fn client(net: &Network, addr: &str) -> PeerClient {
    net.clone().new_client(2, &BasicNode::new(addr)).await
}

fn entry(index: u64, bytes: &'static [u8]) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(3, 1), index),
        payload: EntryPayload::Normal(Proposal::Txn(bytes::Bytes::from_static(bytes))),
    }
}

fn opt() -> RPCOption {
    RPCOption::new(Duration::from_secs(5))
}

/// Asks `c`'s peer to vote for `node` in `term` (a candidate with an empty log).
async fn ask_vote(c: &mut PeerClient, term: u64, node: NodeId) -> RpcResult<VoteResponse<NodeId>> {
    c.vote(VoteRequest::new(Vote::new(term, node), None), opt())
        .await
}

#[tokio::test]
async fn every_rpc_crosses_the_link_intact() {
    let (addr, cancel, net, _) = start(Arc::default()).await;
    let mut c = client(&net, &addr).await;

    for term in [2u64, 3] {
        let r = ask_vote(&mut c, term, 1).await.unwrap();
        assert_eq!(r.vote_granted, term.is_multiple_of(2));
        assert_eq!(r.vote, Vote::new(term, 1));
    }

    let req = AppendEntriesRequest {
        vote: Vote::new_committed(3, 1),
        prev_log_id: None,
        entries: vec![entry(1, b"txn one"), entry(2, b"")],
        leader_commit: None,
    };
    match c.append_entries(req, opt()).await.unwrap() {
        AppendEntriesResponse::PartialSuccess(Some(l)) => assert_eq!(l.index, 2),
        other => panic!("{other:?}"),
    }

    let snap = InstallSnapshotRequest {
        vote: Vote::new_committed(3, 1),
        meta: Default::default(),
        offset: 0,
        data: vec![7; 100_000],
        done: true,
    };
    let r = c.install_snapshot(snap, opt()).await.unwrap();
    assert_eq!(r.vote, Vote::new_committed(3, 1));
    cancel.cancel();
}

/// A link speaks only as the member it proved: member 1's link asking a vote for member 3,
/// or appending as leader 3, is closed before the handler sees the call; member 1 speaking
/// as itself is answered on a new link.
#[tokio::test]
async fn a_link_speaks_only_as_the_member_it_proved() {
    let (addr, cancel, net, _) = start(Arc::default()).await;
    let mut c = client(&net, &addr).await;
    assert!(ask_vote(&mut c, 2, 3).await.is_err());
    let forged = AppendEntriesRequest {
        vote: Vote::new_committed(3, 3),
        prev_log_id: None,
        entries: vec![],
        leader_commit: None,
    };
    assert!(c.append_entries(forged, opt()).await.is_err());
    let r = ask_vote(&mut c, 2, 1).await.unwrap();
    assert!(r.vote_granted);
    cancel.cancel();
}

#[tokio::test]
async fn an_unreachable_peer_is_reported_unreachable() {
    // A port that was just free: nothing listens there.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let mut c = client(&Network::new(1, Duration::from_millis(50)), &addr).await;
    let e = ask_vote(&mut c, 2, 1).await.unwrap_err();
    assert!(matches!(e, RPCError::Unreachable(_)), "{e:?}");
}

#[tokio::test]
async fn a_slow_peer_times_out_and_the_next_call_reconnects() {
    let stand = Arc::new(Stand::default());
    let (addr, cancel, net, _) = start(stand.clone()).await;
    let mut c = client(&net, &addr).await;
    stand.slow_ms.store(2_000, Ordering::Relaxed);
    let req = || AppendEntriesRequest {
        vote: Vote::new_committed(3, 1),
        prev_log_id: None,
        entries: vec![],
        leader_commit: None,
    };
    let e = c
        .append_entries(req(), RPCOption::new(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert!(matches!(e, RPCError::Timeout(_)), "{e:?}");
    stand.slow_ms.store(0, Ordering::Relaxed);
    // The timed-out link may still deliver the old reply: a fresh link must be used.
    let r = c.append_entries(req(), opt()).await.unwrap();
    assert!(matches!(r, AppendEntriesResponse::Success));
    cancel.cancel();
}

#[tokio::test]
async fn a_hostile_frame_closes_only_its_link() {
    let (addr, cancel, net, _) = start(Arc::default()).await;
    let mut c = client(&net, &addr).await;
    ask_vote(&mut c, 2, 1).await.unwrap();

    // An oversized announcement, and a well-sized frame of garbage: both links are closed.
    for bytes in [
        vec![0xff, 0xff, 0xff, 0xff],
        vec![0, 0, 0, 3, 0xff, 0xff, 0xff],
    ] {
        let mut raw = TcpStream::connect(&addr).await.unwrap();
        raw.write_all(&bytes).await.unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut buf))
            .await
            .expect("the server must close a hostile link")
            .unwrap_or(0);
        assert_eq!(n, 0, "no reply to a hostile frame");
    }

    // The well-behaved link still works.
    let r = ask_vote(&mut c, 4, 1).await.unwrap();
    assert!(r.vote_granted);
    cancel.cancel();
}

#[test]
fn an_append_call_carries_at_most_its_byte_budget_but_always_one_entry() {
    let big = |index| Entry {
        log_id: LogId::new(CommittedLeaderId::new(3, 1), index),
        payload: EntryPayload::Normal(Proposal::Txns(vec![
            bytes::Bytes::from(vec![0u8; crate::limits::PEER_APPEND_BYTES / 2]),
            bytes::Bytes::from(vec![1u8; crate::limits::PEER_APPEND_BYTES / 4]),
        ])),
    };
    assert_eq!(too_many(&[entry(1, b"a"), entry(2, b"b")]), None);
    assert_eq!(
        too_many(&[big(1)]),
        None,
        "one entry goes whatever its size"
    );
    assert_eq!(too_many(&[big(1), big(2)]), Some(1));
    assert_eq!(too_many(&[entry(1, b"a"), big(2), big(3), big(4)]), Some(2));
}

/// Member 1's network, its zoo.cfg naming members 2 and 3 at 127.0.0.1:7002 and :7003.
fn member_1_with_zoo_cfg_addrs() -> Network {
    Network::new(1, Duration::from_millis(50)).with_addrs(
        [
            (2, "127.0.0.1:7002".to_string()),
            (3, "127.0.0.1:7003".to_string()),
        ]
        .into(),
    )
}

/// A member reaches the others where its own zoo.cfg says (the Jepsen harness puts a proxy
/// there): the membership's addresses — the forming member's, or a snapshot sender's — only
/// for members its configuration does not name.
#[test]
fn members_are_reached_at_the_local_configurations_addresses() {
    let n = member_1_with_zoo_cfg_addrs();
    let from_membership = BasicNode::new("10.0.0.2:2888");
    assert_eq!(n.addr_of(2, &from_membership), "127.0.0.1:7002");
    assert_eq!(n.addr_of(4, &from_membership), "10.0.0.2:2888");
}

/// With reconfigEnabled a committed configuration's addresses replace zoo.cfg's for the
/// members it names (a member a reconfig moved, or added and no zoo.cfg names), in every
/// clone of the network (openraft's factory, the forwarder).
#[test]
fn a_committed_configuration_moves_members_for_every_clone() {
    let n = member_1_with_zoo_cfg_addrs();
    let clone = n.clone();
    n.follow([
        (3, "127.0.0.1:8003".to_string()),
        (4, "127.0.0.1:8004".to_string()),
    ]);
    let from_membership = BasicNode::new("10.0.0.9:2888");
    assert_eq!(clone.addr_of(2, &from_membership), "127.0.0.1:7002");
    assert_eq!(clone.addr_of(3, &from_membership), "127.0.0.1:8003");
    assert_eq!(clone.addr_of(4, &from_membership), "127.0.0.1:8004");
}

/// The leader follows a move as soon as the reconfig commits, but the moved member listens
/// at its new address only once it has applied it (and it hears of the commit from the
/// leader): until then it is reached at its previous address; once the new one has
/// answered, the old one is never tried again.
#[tokio::test]
async fn a_moved_member_is_reached_at_its_previous_address_until_it_listens_at_the_new() {
    let (_old, cancel_old, mut n, a1) = start(Arc::new(Stand::default())).await;
    let new = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    n.follow([(2, new.clone())]);
    let mut c = n.new_client(2, &BasicNode::new(&new)).await;
    ask_vote(&mut c, 2, 1).await.unwrap();
    // The member moves: listens at the new address, closes the old one and its links.
    let listener = TcpListener::bind(&new).await.unwrap();
    let cancel_new = CancellationToken::new();
    let me2 = Network::new(2, Duration::from_millis(50)).with_addrs([(1, a1)].into());
    let stop = cancel_new.clone();
    tokio::spawn(async move { serve(listener, Arc::new(Stand::default()), &me2, stop).await });
    cancel_old.cancel();
    let mut answered = false;
    for _ in 0..50 {
        if ask_vote(&mut c, 2, 1).await.is_ok() {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answered, "not reached at its new address");
    assert!(c.moved_from.is_none(), "the old address is still kept");
    cancel_new.cancel();
}

/// How: the stand-in acknowledges at once (up to index = the number of entries sent), but this
/// member's log is on disk only up to entry 1: an acknowledgement up to 2 is held until the
/// mark reaches 2 (openraft would
/// otherwise count a follower's copy toward a commit while the leader's own sync still runs),
/// and one the mark never reaches ends as a timeout, not a success.
#[tokio::test]
async fn a_followers_acknowledgement_waits_for_the_leaders_own_copy_on_disk() {
    let (addr, cancel, net, _) = start(Arc::default()).await;
    let durable = crate::ensemble::raft::durable::Durable::new(Some(entry(1, b"a").log_id));
    let mut c = net
        .with_durable(durable.clone())
        .new_client(2, &BasicNode::new(&addr))
        .await;
    let heartbeat = AppendEntriesRequest {
        vote: Vote::new_committed(3, 1),
        prev_log_id: Some(entry(1, b"a").log_id),
        leader_commit: None,
        entries: vec![],
    };
    // Covered already: answered at once.
    let r = tokio::time::timeout(Duration::from_secs(5), c.append_entries(heartbeat, opt()))
        .await
        .expect("a covered acknowledgement was held");
    assert!(matches!(r, Ok(AppendEntriesResponse::Success)));

    let two = AppendEntriesRequest {
        vote: Vote::new_committed(3, 1),
        prev_log_id: Some(entry(1, b"a").log_id),
        leader_commit: None,
        entries: vec![entry(2, b"b"), entry(3, b"c")],
    };
    let call = tokio::spawn(async move {
        let r = c.append_entries(two.clone(), opt()).await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !call.is_finished(),
        "acknowledged before the leader's copy was on disk"
    );
    durable.advance(entry(2, b"b").log_id);
    let (mut c, r) = call.await.unwrap();
    assert!(
        matches!(r, Ok(AppendEntriesResponse::PartialSuccess(Some(_)))),
        "{r:?}"
    );

    let three = AppendEntriesRequest {
        vote: Vote::new_committed(3, 1),
        prev_log_id: Some(entry(1, b"a").log_id),
        leader_commit: None,
        entries: vec![entry(2, b"b"), entry(3, b"c"), entry(4, b"d")],
    };
    let r = c
        .append_entries(three, RPCOption::new(Duration::from_millis(200)))
        .await;
    assert!(matches!(r, Err(RPCError::Timeout(_))), "{r:?}");
    cancel.cancel();
}

/// How: two calls' frames arrive in one write and a third byte by byte; the link is read
/// through a buffer now, so the bytes of the second frame that came with the first must be
/// kept for it: three replies, in order, each the one its request asked for.
#[tokio::test]
async fn frames_that_arrive_together_or_in_pieces_are_each_answered() {
    let (addr, cancel, net, _) = start(Arc::default()).await;
    let mut rd = link::dial(&addr, 2, &net.security).await.unwrap();
    let raw = rd.get_mut();
    let frame = |term: u64| {
        let body = postcard::to_stdvec(&PeerRequest::Vote(VoteRequest::new(
            Vote::new(term, 1),
            None,
        )))
        .unwrap();
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(&body);
        f
    };
    let mut two = frame(2);
    two.extend(frame(3));
    raw.write_all(&two).await.unwrap();
    for b in frame(4) {
        raw.write_all(&[b]).await.unwrap();
        raw.flush().await.unwrap();
    }
    let budget = link::FrameBudget::default();
    for term in [2u64, 3, 4] {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            read_frame::<_, PeerResponse>(&mut rd, PEER_FRAME, &budget),
        )
        .await
        .expect("a reply")
        .unwrap()
        .expect("a frame");
        let PeerResponse::Vote(Ok(v)) = r else {
            panic!("not a vote reply")
        };
        assert_eq!(v.vote.leader_id().term, term);
        assert_eq!(v.vote_granted, term % 2 == 0);
    }
    cancel.cancel();
}
