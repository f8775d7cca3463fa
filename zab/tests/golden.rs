//! Golden streams: both directions of real quorum links between Apache ZooKeeper 3.8 members
//! (a leader and its observer or follower), recorded by testdata/capture.py. Every frame must
//! decode, fed as the proxy read it, all at once or byte by byte, and re-encode to the
//! identical bytes; the capture must cover every packet type an observer sees.

mod common;

use bytes::Bytes;
use common::*;
use palisade_proto::{OpCode, TxnBody, DEFAULT_MAX_BUFFER};
use palisade_zab::{Body, Direction, ForwardedBody, Frame, PacketType, TxnEntry};
use std::collections::BTreeMap;

#[derive(Default)]
struct Tally {
    /// (direction, packet type) -> count
    packets: BTreeMap<(String, i32), usize>,
    /// txn op code (inside PROPOSAL/INFORM, multi sub-ops too) -> count
    txns: BTreeMap<i32, usize>,
    /// forwarded request op code -> count
    requests: BTreeMap<i32, usize>,
    snapshots: usize,
    revalidations: BTreeMap<bool, usize>,
    /// A REQUEST carried the client's digest identity in its authinfo.
    digest_authinfo: bool,
}

fn count_txn(t: &mut Tally, e: &TxnEntry) {
    *t.txns.entry(e.txn.header.type_).or_default() += 1;
    if let TxnBody::Multi(subs) = &e.txn.body {
        for s in subs {
            *t.txns.entry(100 + s.op_code().code()).or_default() += 1;
        }
    }
    // 3.8 computes the tree digest after every txn that changes the tree; an error txn
    // (a failed write) carries none.
    let error = e.txn.header.type_ == OpCode::Error.code();
    assert_eq!(e.digest.is_some(), !error, "digest: {e:?}");
}

fn check_direction(s: &Stream, dir: Direction, tally: &mut Tally) {
    let at = format!("{} {dir:?}", s.name);
    let bytes = s.bytes(dir);
    // As the proxy read it.
    let pieces = s
        .chunks
        .iter()
        .filter(|(d, _)| *d == dir)
        .map(|(_, c)| c.clone());
    let (frames, left) = decode_all(dir, pieces);
    assert!(!frames.is_empty(), "{at}: no frames");
    if s.cut {
        assert!(left < 4096, "{at}: {left} bytes undecoded at the cut");
    } else {
        assert_eq!(left, 0, "{at}: bytes left undecoded");
    }
    let consumed = bytes.len() - left;
    assert_eq!(
        encode_all(&frames),
        bytes.slice(..consumed),
        "{at}: re-encoding differs"
    );
    // All at once, and byte by byte: the same frames.
    // (The snapshot's items come in batches wherever the bytes ran out: compared merged.)
    let frames = merge_items(frames);
    let (whole, _) = decode_all(dir, [bytes.clone()]);
    assert_eq!(
        merge_items(whole),
        frames,
        "{at}: decoding the whole stream at once differs"
    );
    let bytewise = bytes.iter().map(|b| Bytes::copy_from_slice(&[*b]));
    let (single, _) = decode_all(dir, bytewise);
    assert_eq!(
        merge_items(single),
        frames,
        "{at}: decoding byte by byte differs"
    );

    let d = format!("{dir:?}");
    let mut snapshot = Vec::new();
    for f in &frames {
        let p = match f {
            Frame::SnapshotItems(items) => {
                snapshot.extend(items.iter().cloned());
                continue;
            }
            Frame::SnapshotEnd(end) => {
                tally.snapshots += 1;
                let z = palisade_zab::assemble(std::mem::take(&mut snapshot));
                assert_eq!(z.nodes.len() as u64, end.nodes, "{at}");
                assert_eq!(z.sessions.len() as u64, end.sessions, "{at}");
                assert!(z.nodes.iter().any(|n| n.path.is_empty()), "{at}: no root");
                assert!(
                    z.nodes.iter().any(|n| n.path == "/zookeeper/config"),
                    "{at}"
                );
                continue;
            }
            Frame::Packet(p) => p,
        };
        *tally
            .packets
            .entry((d.clone(), p.kind().code()))
            .or_default() += 1;
        match &p.body {
            Body::Proposal(e) | Body::Inform(e) => {
                assert_eq!(e.zxid(), p.zxid, "{at}: txn zxid");
                count_txn(tally, e);
            }
            Body::InformAndActivate { entry, .. } => count_txn(tally, entry),
            Body::Request(r) => {
                *tally.requests.entry(r.op).or_default() += 1;
                let b = r
                    .decode_body(DEFAULT_MAX_BUFFER)
                    .unwrap_or_else(|e| panic!("{at}: REQUEST op {}: {e}", r.op));
                if let ForwardedBody::Client(req) = b {
                    assert_eq!(req.op_code().code(), r.op, "{at}");
                }
                assert!(
                    r.op == ForwardedRequest::CREATE_SESSION || p.authinfo.is_some(),
                    "{at}: a client request carries the connection's auth ids"
                );
                let digest = p.authinfo.iter().flatten().any(|id| {
                    id.scheme.as_bytes() == b"digest"
                        && id.id.as_bytes() == b"bob:fyVmFCwVbTJYrznoSu1koqYEYF0="
                });
                tally.digest_authinfo |= digest;
            }
            Body::RevalidateReply(r) => *tally.revalidations.entry(r.valid).or_default() += 1,
            _ => {}
        }
    }
}

use palisade_zab::ForwardedRequest;

#[test]
fn every_golden_frame_decodes_and_reencodes_identically() {
    let mut tally = Tally::default();
    for s in streams() {
        check_direction(&s, Direction::FromLeader, &mut tally);
        check_direction(&s, Direction::FromLearner, &mut tally);
    }
    println!("packets: {:?}", tally.packets);
    println!("txns (100+ = inside a multi): {:?}", tally.txns);
    println!("forwarded requests: {:?}", tally.requests);

    use PacketType as T;
    for t in [
        T::LeaderInfo,
        T::Diff,
        T::Trunc,
        T::Snap,
        T::Proposal,
        T::Commit,
        T::NewLeader,
        T::UpToDate,
        T::Inform,
        T::Ping,
        T::Revalidate,
        T::Sync,
    ] {
        assert!(
            tally.packets.contains_key(&("FromLeader".into(), t.code())),
            "no {t:?} from a leader in the captures"
        );
    }
    for t in [
        T::FollowerInfo,
        T::ObserverInfo,
        T::AckEpoch,
        T::Ack,
        T::Request,
        T::Revalidate,
        T::Ping,
    ] {
        assert!(
            tally
                .packets
                .contains_key(&("FromLearner".into(), t.code())),
            "no {t:?} from a learner in the captures"
        );
    }
    assert_eq!(tally.snapshots, 1);
    assert!(
        tally.digest_authinfo,
        "no REQUEST with a digest id (addauth) in its authinfo"
    );
    assert_eq!(
        tally.revalidations.keys().copied().collect::<Vec<_>>(),
        [false, true],
        "a valid and an invalid revalidation"
    );
    for op in [
        OpCode::Create,
        OpCode::Create2,
        OpCode::CreateContainer,
        OpCode::CreateTTL,
        OpCode::Delete,
        OpCode::SetData,
        OpCode::SetACL,
        OpCode::Multi,
        OpCode::Error,
        OpCode::CreateSession,
        OpCode::CloseSession,
    ] {
        assert!(
            tally.txns.contains_key(&op.code()),
            "no {op:?} txn in the captures"
        );
    }
    for sub in [
        OpCode::Create,
        OpCode::SetData,
        OpCode::Check,
        OpCode::Error,
    ] {
        assert!(
            tally.txns.contains_key(&(100 + sub.code())),
            "no {sub:?} inside a multi txn"
        );
    }
    for op in [-10, -11, 1, 2, 5, 9, 14] {
        assert!(
            tally.requests.contains_key(&op),
            "no forwarded request of op {op}"
        );
    }
}
