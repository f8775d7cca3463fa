//! Hostile input on the quorum link: arbitrary bytes never panic the decoder or the
//! learner, every length over its limit is refused as soon as it is read (never allocated),
//! typed packets round-trip, and a learner fed any sequence of inputs keeps its invariants.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use palisade_proto::*;
use palisade_zab::{
    make_zxid, Body, CodecError, Decoder, Direction, ForwardedRequest, Frame, Input, Learner,
    LearnerConfig, Limits, Output, Packet, TxnEntry,
};
use palisade_zkdisk::Quirk;
use proptest::prelude::*;

fn small() -> Limits {
    Limits {
        max_buffer: 100,
        max_packet: 300,
        max_snapshot: 1000,
        snapshot_batch: 64,
    }
}

/// Decodes `bytes` in one push: the frames, and the error if one came.
fn decode(dir: Direction, limits: Limits, bytes: &[u8]) -> (Vec<Frame>, Option<CodecError>) {
    let mut d = Decoder::new(dir, limits);
    d.push(bytes);
    let mut frames = Vec::new();
    loop {
        match d.next_frame() {
            Ok(Some(f)) => frames.push(f),
            Ok(None) => return (frames, None),
            Err(e) => {
                // Final: the same error again, and nothing kept.
                assert_eq!(d.next_frame(), Err(e.clone()));
                d.push(b"more");
                assert_eq!(d.buffered(), 0);
                return (frames, Some(e));
            }
        }
    }
}

fn header(t: i32, zxid: i64, data_len: i32) -> Vec<u8> {
    let mut b = t.to_be_bytes().to_vec();
    b.extend(zxid.to_be_bytes());
    b.extend(data_len.to_be_bytes());
    b
}

#[test]
fn an_announced_length_over_the_limit_is_refused_before_its_bytes_arrive() {
    // 16 bytes in, announcing 2 GiB: refused at once with the default limits.
    let (_, e) = decode(
        Direction::FromLeader,
        Limits::default(),
        &header(8, 1, i32::MAX),
    );
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "packet data",
                ..
            })
        ),
        "{e:?}"
    );
    let (_, e) = decode(Direction::FromLeader, small(), &header(8, 1, -5));
    assert!(
        matches!(e, Some(CodecError::NegativeLength { len: -5, .. })),
        "{e:?}"
    );
    // Exactly at the limit is fine (then incomplete), one over is not.
    let (f, e) = decode(Direction::FromLeader, small(), &header(10, 1, 100));
    assert!(f.is_empty() && e.is_none());
    let (_, e) = decode(Direction::FromLeader, small(), &header(10, 1, 101));
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                len: 101,
                max: 100,
                ..
            })
        ),
        "{e:?}"
    );
    // An authinfo count the packet cannot hold.
    let mut b = header(1, -1, -1);
    b.extend(i32::MAX.to_be_bytes());
    let (_, e) = decode(Direction::FromLearner, Limits::default(), &b);
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "authinfo",
                ..
            })
        ),
        "{e:?}"
    );
    // Ids each under the buffer limit, adding up over the packet limit.
    let mut b = header(1, -1, -1);
    b.extend(10i32.to_be_bytes());
    for _ in 0..10 {
        for s in [&b"digest"[..], &[b'x'; 40][..]] {
            b.extend((s.len() as i32).to_be_bytes());
            b.extend(s);
        }
    }
    let (_, e) = decode(Direction::FromLearner, small(), &b);
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "packet",
                max: 300,
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn packets_that_are_not_what_zookeeper_sends_are_refused() {
    let pkt = |t: i32, data: Option<&[u8]>| {
        QuorumPacket {
            type_: t,
            zxid: 5,
            data: data.map(Bytes::copy_from_slice),
            authinfo: None,
        }
        .encode()
    };
    let leader = |b: &[u8]| decode(Direction::FromLeader, Limits::default(), b).1;
    assert_eq!(leader(&pkt(99, None)), Some(CodecError::UnknownType(99)));
    assert!(matches!(
        leader(&pkt(3, None)),
        Some(CodecError::WrongDirection { .. })
    ));
    assert!(matches!(
        leader(&pkt(13, Some(b"x"))),
        Some(CodecError::Malformed { .. })
    ));
    assert!(matches!(
        leader(&pkt(8, Some(b"\0\0\0\x01"))),
        Some(CodecError::Malformed { .. })
    ));
    assert!(matches!(
        leader(&pkt(8, None)),
        Some(CodecError::Malformed { .. })
    ));
    assert!(matches!(
        leader(&pkt(17, Some(b"\0\0\x01\0\0"))),
        Some(CodecError::Malformed { .. })
    ));
    let learner = |b: &[u8]| decode(Direction::FromLearner, Limits::default(), b).1;
    assert!(matches!(
        learner(&pkt(5, Some(&[0; 13]))),
        Some(CodecError::Malformed { .. })
    ));
    assert!(matches!(
        learner(&pkt(16, Some(&[0; 8]))),
        Some(CodecError::Malformed { .. })
    ));
    assert!(matches!(
        learner(&pkt(1, Some(&[0; 15]))),
        Some(CodecError::Malformed { .. })
    ));
}

/// SNAP, then `snapshot` (body and signature as given).
fn snap_then(snapshot: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    Packet::new(make_zxid(1, 3), Body::Snap).write(&mut b);
    b.extend_from_slice(snapshot);
    b.to_vec()
}

fn ustr(b: &mut Vec<u8>, s: &[u8]) {
    b.extend((s.len() as i32).to_be_bytes());
    b.extend(s);
}

#[test]
fn the_snapshot_after_snap_is_bounded_and_checked() {
    let dec = |b: &[u8], l: Limits| decode(Direction::FromLeader, l, &snap_then(b));
    // A session count the snapshot limit cannot hold: refused with 4 bytes of it.
    let (f, e) = dec(&i32::MAX.to_be_bytes(), Limits::default());
    assert_eq!(f.len(), 1, "the SNAP packet itself");
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "session count",
                ..
            })
        ),
        "{e:?}"
    );
    let (_, e) = dec(&(-2i32).to_be_bytes(), Limits::default());
    assert!(
        matches!(e, Some(CodecError::NegativeLength { .. })),
        "{e:?}"
    );
    // An ACL table entry without a list (ZooKeeper: "missing acls").
    let mut b = vec![0, 0, 0, 0, 0, 0, 0, 1];
    b.extend(7i64.to_be_bytes());
    b.extend((-1i32).to_be_bytes());
    assert!(matches!(
        dec(&b, Limits::default()).1,
        Some(CodecError::Snapshot { .. })
    ));
    // A node whose data is over the buffer limit.
    let mut b = vec![0; 8];
    ustr(&mut b, b"/a");
    b.extend(101i32.to_be_bytes());
    let (_, e) = dec(&b, small());
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "node data",
                ..
            })
        ),
        "{e:?}"
    );
    // Many small nodes adding up over the snapshot limit, refused before the end arrives.
    let mut b = vec![0; 8];
    for _ in 0..20 {
        ustr(&mut b, b"/n");
        ustr(&mut b, b"data");
        b.extend([0; 68]);
    }
    let (_, e) = dec(&b, small());
    assert!(
        matches!(
            e,
            Some(CodecError::TooLarge {
                what: "snapshot",
                max: 1000,
                ..
            })
        ),
        "{e:?}"
    );
    // A null path; a wrong signature.
    let mut b = vec![0; 8];
    b.extend((-1i32).to_be_bytes());
    assert!(matches!(
        dec(&b, small()).1,
        Some(CodecError::Snapshot { .. })
    ));
    let mut b = vec![0; 8];
    ustr(&mut b, b"/");
    ustr(&mut b, b"BenWasNotHere");
    let (_, e) = dec(&b, small());
    assert!(matches!(e, Some(CodecError::Snapshot { reason, .. }) if reason.contains("signature")));
    // The smallest good one: no sessions, no ACLs, no nodes.
    let mut b = vec![0; 8];
    ustr(&mut b, b"/");
    ustr(&mut b, b"BenWasHere");
    let (f, e) = dec(&b, small());
    assert_eq!((f.len(), e), (3, None), "SNAP, the two counts, the end");
}

fn id() -> impl Strategy<Value = Id> {
    ("[a-z]{0,8}", "[a-z0-9.:]{0,16}").prop_map(|(s, i)| Id {
        scheme: JStr::from(s),
        id: JStr::from(i),
    })
}

fn jstr() -> impl Strategy<Value = JStr> {
    "/[a-z/]{0,20}".prop_map(JStr::from)
}

fn buf() -> impl Strategy<Value = Option<Bytes>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from))
}

fn acl() -> impl Strategy<Value = Option<Vec<ACL>>> {
    proptest::option::of(proptest::collection::vec(
        (any::<i32>(), id()).prop_map(|(perms, id)| ACL { perms, id }),
        0..3,
    ))
}

/// Sub-txns a multi may hold.
fn simple_body() -> impl Strategy<Value = TxnBody> {
    prop_oneof![
        (jstr(), buf(), acl(), any::<bool>(), any::<i32>()).prop_map(|(path, data, acl, e, p)| {
            TxnBody::Create(CreateTxn {
                path,
                data,
                acl,
                ephemeral: e,
                parent_c_version: p,
            })
        }),
        jstr().prop_map(|path| TxnBody::Delete(DeleteTxn { path })),
        (jstr(), buf(), any::<i32>()).prop_map(|(path, data, version)| TxnBody::SetData(
            SetDataTxn {
                path,
                data,
                version
            }
        )),
        (jstr(), any::<i32>())
            .prop_map(|(path, version)| TxnBody::Check(CheckVersionTxn { path, version })),
        any::<i32>().prop_map(|err| TxnBody::Error(ErrorTxn { err })),
    ]
}

fn txn_body() -> impl Strategy<Value = TxnBody> {
    prop_oneof![
        4 => simple_body(),
        1 => any::<i32>().prop_map(|t| TxnBody::CreateSession(CreateSessionTxn { time_out: t })),
        1 => proptest::option::of(proptest::collection::vec(jstr(), 0..3))
            .prop_map(|p| TxnBody::CloseSession(CloseSessionTxn { paths2_delete: p })),
        1 => proptest::collection::vec(simple_body(), 0..4).prop_map(TxnBody::Multi),
    ]
}

fn txn_entry() -> impl Strategy<Value = TxnEntry> {
    (
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        any::<i64>(),
        txn_body(),
        proptest::option::of((any::<i32>(), any::<i64>())),
    )
        .prop_map(|(client_id, cxid, zxid, time, body, digest)| TxnEntry {
            txn: Txn {
                header: TxnHeader {
                    client_id,
                    cxid,
                    zxid,
                    time,
                    type_: body.op_code().code(),
                },
                body,
            },
            digest: digest.map(|(version, tree_digest)| TxnDigest {
                version,
                tree_digest,
            }),
            quirk: Quirk::None,
        })
}

fn touch() -> impl Strategy<Value = SessionTouch> {
    (any::<i64>(), any::<i32>()).prop_map(|(session_id, timeout)| SessionTouch {
        session_id,
        timeout,
    })
}

fn body() -> impl Strategy<Value = Body> {
    let info = (any::<i64>(), any::<i32>(), any::<i64>()).prop_map(|(s, p, c)| LearnerInfo {
        serverid: s,
        protocol_version: p,
        config_version: c,
    });
    prop_oneof![
        info.clone().prop_map(Body::FollowerInfo),
        info.prop_map(Body::ObserverInfo),
        any::<i32>().prop_map(|e| Body::AckEpoch { current_epoch: e }),
        Just(Body::Ack),
        (
            any::<i64>(),
            any::<i32>(),
            any::<i32>(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(session_id, cxid, op, b)| Body::Request(ForwardedRequest {
                session_id,
                cxid,
                op,
                body: Bytes::from(b),
            })),
        touch().prop_map(Body::Revalidate),
        proptest::collection::vec(touch(), 0..5).prop_map(Body::PingReply),
        any::<i32>().prop_map(|v| Body::LeaderInfo {
            protocol_version: v
        }),
        Just(Body::Diff),
        Just(Body::Trunc),
        Just(Body::Snap),
        txn_entry().prop_map(Body::Proposal),
        Just(Body::Commit),
        any::<i64>().prop_map(|l| Body::CommitAndActivate { leader_id: l }),
        buf().prop_map(|config| Body::NewLeader { config }),
        Just(Body::UpToDate),
        txn_entry().prop_map(Body::Inform),
        (any::<i64>(), txn_entry())
            .prop_map(|(leader_id, entry)| Body::InformAndActivate { leader_id, entry }),
        Just(Body::Ping),
        (any::<i64>(), any::<bool>()).prop_map(|(session_id, valid)| Body::RevalidateReply(
            RevalidateReply { session_id, valid }
        )),
        Just(Body::Sync),
    ]
}

fn packet() -> impl Strategy<Value = Packet> {
    (
        any::<i64>(),
        body(),
        proptest::option::of(proptest::collection::vec(id(), 0..3)),
    )
        .prop_map(|(zxid, body, authinfo)| Packet {
            zxid,
            body,
            authinfo,
        })
}

/// The leader's bytes of the golden SNAP capture: a base to mutate.
fn golden_leader_bytes() -> Bytes {
    stream("observer-snap-1").bytes(Direction::FromLeader)
}

fn learner() -> Learner {
    Learner::new(LearnerConfig {
        server_id: 4,
        config_version: 0,
        accepted_epoch: 0,
        current_epoch: 0,
        last_zxid: 0,
        tick_ms: 2000,
        init_limit: 10,
        sync_limit: 5,
    })
}

/// Feeds a leader's bytes, cut in `cut`-byte pieces, through a decoder into a learner.
fn drive(bytes: &[u8], cut: usize) -> Vec<Output> {
    let mut l = learner();
    let mut out = l.step(Input::Connected);
    let mut d = Decoder::new(Direction::FromLeader, Limits::default());
    for piece in bytes.chunks(cut.max(1)) {
        d.push(piece);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => out.extend(l.step(Input::Frame(f))),
                Ok(None) => break,
                Err(e) => {
                    out.extend(l.step(Input::BadStream(e)));
                    return out;
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cut in 1usize..64,
        leader in any::<bool>(),
    ) {
        let dir = if leader { Direction::FromLeader } else { Direction::FromLearner };
        let mut d = Decoder::new(dir, small());
        for piece in bytes.chunks(cut) {
            d.push(piece);
            while let Ok(Some(_)) = d.next_frame() {}
            prop_assert!(d.buffered() <= bytes.len());
        }
        drive(&bytes, cut);
    }

    /// Quorum SASL's packets from a hostile leader: whatever follows the magic (a status,
    /// a length, a token of any size), the decoder never panics, never takes more packets
    /// than allowed, and holds no more than one bounded record's bytes.
    #[test]
    fn arbitrary_auth_bytes_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..300),
        status in -2i32..3,
        len in -3i32..120,
        cut in 1usize..32,
    ) {
        let mut bytes = palisade_zab::QUORUM_AUTH_MAGIC.to_be_bytes().to_vec();
        bytes.extend(status.to_be_bytes());
        bytes.extend(len.to_be_bytes());
        bytes.extend(&tail);
        let mut d = palisade_zab::AuthDecoder::new(64, 2);
        let mut taken = 0;
        for piece in bytes.chunks(cut) {
            d.push(piece);
            loop {
                match d.next_packet() {
                    Ok(Some(p)) => {
                        taken += 1;
                        prop_assert!(p.token_bytes().len() <= 64);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        prop_assert_eq!(d.buffered(), 0);
                        break;
                    }
                }
            }
            prop_assert!(taken <= 2);
            prop_assert!(d.buffered() <= bytes.len());
        }
    }

    #[test]
    fn typed_packets_round_trip(p in packet()) {
        let bytes = p.encode();
        prop_assert_eq!(bytes.len(), p.to_quorum_packet().wire_len());
        let mut d = Decoder::new(p.direction(), Limits::default());
        d.push(&bytes);
        let f = d.next_frame();
        prop_assert_eq!(f, Ok(Some(Frame::Packet(p.clone()))));
        prop_assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn a_mutated_golden_stream_never_panics_the_decoder_or_the_learner(
        at in 0usize..46_000,
        value in any::<u8>(),
        how in 0u8..3,
        cut in 1usize..4096,
    ) {
        let mut b = golden_leader_bytes().to_vec();
        let at = at % b.len();
        match how {
            0 => b[at] = value,
            1 => b.truncate(at),
            _ => b.insert(at, value),
        }
        drive(&b, cut);
    }

    /// Whatever a leader sends, applied txns only go forward, except through a snapshot or
    /// a truncation, and packets are only sent while connected.
    #[test]
    fn the_learner_keeps_its_invariants_on_any_input_sequence(
        inputs in proptest::collection::vec(input(packet()), 0..40),
    ) {
        check_invariants(learner(), false, inputs)?;
    }

    /// The same from a synced learner, with packets a confused leader might plausibly send:
    /// small zxids around the learner's, txns whose zxid mostly matches their packet's.
    #[test]
    fn a_synced_learner_keeps_its_invariants_on_plausible_packets(
        inputs in proptest::collection::vec(input(plausible_packet()), 0..60),
    ) {
        let mut l = learner();
        l.step(Input::Connected);
        for (zxid, body) in [
            (make_zxid(1, 0), Body::LeaderInfo { protocol_version: 0x10000 }),
            (0, Body::Diff),
            (make_zxid(1, 0), Body::NewLeader { config: None }),
            (-1, Body::UpToDate),
        ] {
            l.step(Input::Frame(Frame::Packet(Packet::new(zxid, body))));
        }
        prop_assert!(l.is_synced());
        check_invariants(l, true, inputs)?;
    }
}

fn input(packets: impl Strategy<Value = Packet>) -> impl Strategy<Value = Input> {
    prop_oneof![
        6 => packets.prop_map(|p| Input::Frame(Frame::Packet(p))),
        1 => Just(Input::Connected),
        1 => Just(Input::Closed),
        1 => (0u64..100_000).prop_map(|now_ms| Input::Tick { now_ms }),
        1 => (any::<i64>(), any::<i32>())
            .prop_map(|(session_id, timeout)| Input::Touch { session_id, timeout }),
        1 => (0i64..3, 0i32..3).prop_map(|(session_id, cxid)| Input::Forward {
            request: ForwardedRequest { session_id, cxid, op: 1, body: Bytes::new() },
            authinfo: None,
        }),
    ]
}

fn plausible_packet() -> impl Strategy<Value = Packet> {
    (1i64..3, 0i64..8, body(), 0u8..5).prop_map(|(epoch, n, mut body, skew)| {
        let zxid = make_zxid(epoch, n);
        if let Body::Proposal(e) | Body::Inform(e) | Body::InformAndActivate { entry: e, .. } =
            &mut body
        {
            e.txn.header.zxid = if skew == 0 { zxid + 1 } else { zxid };
            e.txn.header.client_id %= 3;
            e.txn.header.cxid %= 3;
        }
        Packet::new(zxid, body)
    })
}

fn check_invariants(
    mut l: Learner,
    mut connected: bool,
    inputs: Vec<Input>,
) -> Result<(), TestCaseError> {
    let mut last = l.last_zxid();
    for i in inputs {
        let reconnect = matches!(i, Input::Connected);
        match &i {
            Input::Connected => connected = true,
            Input::Closed => connected = false,
            _ => {}
        }
        let out = l.step(i);
        let mut floor = last;
        for o in &out {
            match o {
                Output::Apply { entry } => {
                    prop_assert!(entry.zxid() > floor, "{out:?}");
                    floor = entry.zxid();
                }
                Output::SnapshotEnd { zxid, .. } | Output::Truncate { zxid } => floor = *zxid,
                Output::Send(_) => prop_assert!(connected, "{out:?}"),
                // A new connection replaces the old one: it resyncs, then handshakes.
                Output::Resync(_) if !reconnect => connected = false,
                _ => {}
            }
        }
        last = l.last_zxid();
        prop_assert_eq!(last, floor);
    }
    Ok(())
}

#[test]
fn the_golden_stream_cut_anywhere_ends_cleanly() {
    let b = golden_leader_bytes();
    for at in (0..b.len()).step_by(97) {
        let out = drive(&b[..at], 512);
        assert!(
            !out.iter().any(|o| matches!(o, Output::Resync(_))),
            "a clean prefix is never an error: cut at {at}: {out:?}"
        );
    }
}

#[test]
fn a_large_snapshot_streams_through_a_bounded_buffer() {
    // 40,000 nodes of 100 bytes (about 7 MB), read in 64 KiB pieces: the decoder hands the
    // items on in batches and never holds more than a batch, a piece and one item.
    let mut body = vec![0u8; 8]; // no sessions, no ACLs
    ustr(&mut body, b"");
    ustr(&mut body, &[7; 100]);
    body.extend([0; 68]);
    for i in 0..40_000 {
        ustr(&mut body, format!("/n{i}").as_bytes());
        ustr(&mut body, &[7; 100]);
        body.extend([0; 68]);
    }
    ustr(&mut body, b"/");
    ustr(&mut body, b"BenWasHere");
    let wire = snap_then(&body);
    let limits = Limits {
        snapshot_batch: 256 << 10,
        ..Limits::default()
    };
    let mut d = Decoder::new(Direction::FromLeader, limits);
    let (mut nodes, mut most, mut end) = (0u64, 0usize, None);
    for piece in wire.chunks(64 << 10) {
        d.push(piece);
        most = most.max(d.buffered());
        while let Some(f) = d.next_frame().unwrap() {
            match f {
                Frame::SnapshotItems(items) => {
                    nodes += items
                        .iter()
                        .filter(|i| matches!(i, palisade_zab::SnapItem::Node(_)))
                        .count() as u64;
                }
                Frame::SnapshotEnd(e) => end = Some(e),
                Frame::Packet(_) => {}
            }
        }
    }
    assert_eq!(nodes, 40_001);
    let end = end.expect("the snapshot's end");
    assert_eq!((end.nodes, end.bytes), (40_001, body.len() as u64));
    assert!(
        most <= (256 << 10) + (64 << 10) + 200,
        "the decoder held {most} bytes of a {} byte snapshot",
        body.len()
    );
    assert!(body.len() > 20 * most);
}
