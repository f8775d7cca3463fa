//! The learner state machine driven packet by packet: each sync mode, steady state, a leader
//! change in the middle of a sync, a torn link, timeouts, and packets that have no place
//! where they arrive (each a clean resync, never a panic).

use bytes::{Bytes, BytesMut};
use palisade_proto::{
    CreateTxn, DataNode, Id, JStr, Record, SessionTouch, SetDataTxn, SnapSession, Txn, TxnBody,
    TxnDigest, TxnHeader,
};
use palisade_zab::{
    make_zxid, Body, Decoder, Direction, ForwardedRequest, Frame, Input, Learner, LearnerConfig,
    Limits, Output, Packet, PacketType, Pending, Resync, SyncMode, TxnEntry, PROTOCOL_VERSION,
    SIGNATURE,
};
use palisade_zkdisk::Quirk;

const ME: i64 = 4;

fn z(epoch: i64, n: i64) -> i64 {
    make_zxid(epoch, n)
}

fn cfg(last_zxid: i64) -> LearnerConfig {
    LearnerConfig {
        server_id: ME,
        config_version: 0,
        accepted_epoch: 1,
        current_epoch: 1,
        last_zxid,
        tick_ms: 2000,
        init_limit: 10,
        sync_limit: 5,
    }
}

fn create(zxid: i64, session: i64, cxid: i32, path: &str) -> TxnEntry {
    TxnEntry {
        txn: Txn {
            header: TxnHeader {
                client_id: session,
                cxid,
                zxid,
                time: 1_700_000_000_000,
                type_: 1,
            },
            body: TxnBody::Create(CreateTxn {
                path: JStr::from(path),
                data: Some(Bytes::from_static(b"x")),
                acl: Some(vec![]),
                ephemeral: false,
                parent_c_version: 1,
            }),
        },
        digest: Some(TxnDigest {
            version: 2,
            tree_digest: zxid,
        }),
        quirk: Quirk::None,
    }
}

fn reconfig(zxid: i64) -> TxnEntry {
    TxnEntry {
        txn: Txn {
            header: TxnHeader {
                client_id: 0,
                cxid: 0,
                zxid,
                time: 0,
                type_: 16,
            },
            body: TxnBody::SetData(SetDataTxn {
                path: JStr::from("/zookeeper/config"),
                data: Some(Bytes::from_static(
                    b"server.1=127.0.0.1:1:2\nversion=100000001",
                )),
                version: -1,
            }),
        },
        digest: None,
        quirk: Quirk::Reconfig,
    }
}

fn from_leader(zxid: i64, body: Body) -> Input {
    Input::Frame(Frame::Packet(Packet::new(zxid, body)))
}

fn inform(e: TxnEntry) -> Input {
    from_leader(e.zxid(), Body::Inform(e))
}

fn sent(out: &[Output]) -> Vec<Packet> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn applied(out: &[Output]) -> Vec<i64> {
    out.iter()
        .filter_map(|o| match o {
            Output::Apply { entry } => Some(entry.zxid()),
            _ => None,
        })
        .collect()
}

fn resync(out: &[Output]) -> Option<&Resync> {
    out.iter().find_map(|o| match o {
        Output::Resync(r) => Some(r),
        _ => None,
    })
}

fn protocol_error(out: &[Output]) -> String {
    match resync(out) {
        Some(Resync::Protocol(why)) => why.clone(),
        other => panic!("expected a protocol resync, got {other:?} in {out:?}"),
    }
}

/// Connected, LEADERINFO of `epoch`: returns the learner awaiting DIFF/SNAP/TRUNC.
fn handshake(l: &mut Learner, epoch: i64) -> Vec<Output> {
    let mut out = l.step(Input::Connected);
    out.extend(l.step(from_leader(
        z(epoch, 0),
        Body::LeaderInfo {
            protocol_version: PROTOCOL_VERSION,
        },
    )));
    out
}

/// A learner synced by DIFF with the leader of `epoch` (no txns in the DIFF).
fn observing(last: i64, epoch: i64) -> Learner {
    let mut l = Learner::new(cfg(last));
    handshake(&mut l, epoch);
    l.step(from_leader(last, Body::Diff));
    l.step(from_leader(z(epoch, 0), Body::NewLeader { config: None }));
    let out = l.step(from_leader(-1, Body::UpToDate));
    assert_eq!(out.last(), Some(&Output::Synced { zxid: last }), "{out:?}");
    l
}

#[test]
fn handshake_announces_the_observer_and_acks_a_newer_epoch_with_its_current_one() {
    let mut l = Learner::new(cfg(z(1, 7)));
    let out = handshake(&mut l, 2);
    let p = sent(&out);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].kind(), PacketType::ObserverInfo);
    assert_eq!(p[0].zxid, z(1, 0), "makeZxid(acceptedEpoch, 0)");
    let Body::ObserverInfo(info) = &p[0].body else {
        unreachable!()
    };
    assert_eq!(
        (info.serverid, info.protocol_version, info.config_version),
        (ME, 0x10000, 0)
    );
    assert_eq!(
        p[1],
        Packet::new(z(1, 7), Body::AckEpoch { current_epoch: 1 })
    );
    assert_eq!(l.accepted_epoch(), 2);
    assert_eq!(l.current_epoch(), 1, "current only after NEWLEADER");
}

#[test]
fn an_epoch_already_accepted_is_acked_with_minus_one_and_an_older_one_refused() {
    let mut l = Learner::new(cfg(z(1, 7)));
    let out = handshake(&mut l, 1);
    assert_eq!(sent(&out)[1].body, Body::AckEpoch { current_epoch: -1 });

    let mut l = Learner::new(LearnerConfig {
        accepted_epoch: 3,
        ..cfg(z(1, 7))
    });
    let out = handshake(&mut l, 2);
    assert!(protocol_error(&out).contains("less than the accepted epoch"));
    let mut l = Learner::new(cfg(0));
    l.step(Input::Connected);
    let out = l.step(from_leader(
        z(2, 0),
        Body::LeaderInfo {
            protocol_version: 1,
        },
    ));
    assert!(protocol_error(&out).contains("before Zab 1.0"));
}

#[test]
fn snap_loads_the_snapshot_skips_txns_it_holds_and_applies_the_rest() {
    let mut l = Learner::new(cfg(0));
    handshake(&mut l, 1);
    // What the leader writes: SNAP, the snapshot, the signature, then queued packets.
    let mut wire = BytesMut::new();
    Packet::new(z(1, 10), Body::Snap).write(&mut wire);
    wire.extend_from_slice(&snapshot_body());
    JStr::from_bytes(Bytes::from_static(SIGNATURE)).write(&mut wire);
    // Forwarding started before the leader read the snapshot's zxid: 9 and 10 are in it.
    for n in 9..=11 {
        Packet::new(z(1, n), Body::Inform(create(z(1, n), 0, 0, "/n"))).write(&mut wire);
    }
    Packet::new(
        z(1, 0),
        Body::NewLeader {
            config: Some(Bytes::from_static(b"cfg")),
        },
    )
    .write(&mut wire);
    Packet::new(z(1, 12), Body::Inform(create(z(1, 12), 0, 0, "/m"))).write(&mut wire);
    Packet::new(-1, Body::UpToDate).write(&mut wire);

    let mut d = Decoder::new(Direction::FromLeader, Limits::default());
    let mut out = Vec::new();
    // Split mid-snapshot, as a socket would.
    for piece in wire.chunks(37) {
        d.push(piece);
        while let Some(f) = d.next_frame().unwrap() {
            out.extend(l.step(Input::Frame(f)));
        }
    }
    // The snapshot came as items (split wherever the socket split it), then its end.
    let items: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::SnapshotItems(items) => Some(items.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    let ends: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::SnapshotEnd { zxid, end } => Some((*zxid, *end)),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].0, z(1, 10));
    assert_eq!((ends[0].1.sessions, ends[0].1.nodes), (1, 2));
    let loaded = palisade_zab::assemble(items);
    assert_eq!(loaded.nodes.len(), 2);
    assert_eq!(loaded.sessions.len(), 1);
    assert_eq!(applied(&out), [z(1, 11), z(1, 12)]);
    let skipped = out
        .iter()
        .filter(|o| {
            matches!(
                o,
                Output::Ignored {
                    why: "already in the snapshot",
                    ..
                }
            )
        })
        .count();
    assert_eq!(skipped, 2);
    let acks: Vec<_> = sent(&out)
        .into_iter()
        .filter(|p| p.body == Body::Ack)
        .collect();
    assert_eq!(
        acks,
        [
            Packet::new(z(1, 0), Body::Ack),
            Packet::new(z(1, 0), Body::Ack)
        ]
    );
    assert_eq!(out.last(), Some(&Output::Synced { zxid: z(1, 12) }));
    assert!(l.is_synced());
    assert_eq!(l.current_epoch(), 1);
}

/// Sessions, an empty ACL table, the root and /a: a snapshot body as ZooKeeper streams it.
fn snapshot_body() -> Bytes {
    let mut b = BytesMut::new();
    b.extend_from_slice(&1i32.to_be_bytes());
    SnapSession {
        id: 0x100,
        timeout: 30000,
    }
    .write(&mut b);
    b.extend_from_slice(&0i32.to_be_bytes());
    for path in ["", "/a"] {
        JStr::from(path).write(&mut b);
        DataNode {
            data: Some(Bytes::from_static(b"d")),
            acl: -1,
            stat: Default::default(),
        }
        .write(&mut b);
    }
    JStr::from("/").write(&mut b);
    b.freeze()
}

#[test]
fn diff_applies_each_proposal_at_its_commit() {
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    let mut out = l.step(from_leader(z(1, 8), Body::Diff));
    for n in 6..=8 {
        out.extend(l.step(from_leader(
            z(1, n),
            Body::Proposal(create(z(1, n), 0, 0, "/d")),
        )));
        assert_eq!(
            applied(&out).len() as i64,
            n - 6,
            "nothing applied before its COMMIT"
        );
        out.extend(l.step(from_leader(z(1, n), Body::Commit)));
    }
    out.extend(l.step(from_leader(z(2, 0), Body::NewLeader { config: None })));
    out.extend(l.step(from_leader(-1, Body::UpToDate)));
    assert_eq!(applied(&out), [z(1, 6), z(1, 7), z(1, 8)]);
    assert_eq!(out.last(), Some(&Output::Synced { zxid: z(1, 8) }));
    assert_eq!(l.current_epoch(), 2);
}

#[test]
fn a_commit_for_another_txn_than_the_next_proposal_resyncs() {
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 7), Body::Diff));
    l.step(from_leader(
        z(1, 6),
        Body::Proposal(create(z(1, 6), 0, 0, "/d")),
    ));
    let out = l.step(from_leader(z(1, 7), Body::Commit));
    assert!(protocol_error(&out).contains("next PROPOSAL"));
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 7), Body::Diff));
    let out = l.step(from_leader(z(1, 6), Body::Commit));
    assert!(protocol_error(&out).contains("no PROPOSAL"));
}

#[test]
fn trunc_truncates_then_syncs_from_there() {
    let mut l = Learner::new(cfg(z(2, 9)));
    handshake(&mut l, 3);
    let mut out = l.step(from_leader(z(2, 3), Body::Trunc));
    assert_eq!(
        out,
        [
            Output::Syncing {
                mode: SyncMode::Trunc,
                zxid: z(2, 3),
                from: z(2, 9)
            },
            Output::Truncate { zxid: z(2, 3) }
        ]
    );
    assert_eq!(l.last_zxid(), z(2, 3));
    out.extend(l.step(from_leader(z(3, 0), Body::NewLeader { config: None })));
    out.extend(l.step(from_leader(-1, Body::UpToDate)));
    out.extend(l.step(inform(create(z(3, 1), 0, 0, "/t"))));
    assert_eq!(applied(&out), [z(3, 1)]);

    // Truncating to after what we hold makes no sense.
    let mut l = Learner::new(cfg(z(2, 3)));
    handshake(&mut l, 3);
    let out = l.step(from_leader(z(2, 9), Body::Trunc));
    assert!(protocol_error(&out).contains("TRUNC"));
}

#[test]
fn steady_state_applies_informs_and_releases_forwarded_writes_and_syncs() {
    let mut l = observing(z(1, 5), 1);
    let s = 0x400000e61b20000;
    let write = |cxid, op| Input::Forward {
        request: ForwardedRequest {
            session_id: s,
            cxid,
            op,
            body: Bytes::new(),
        },
        authinfo: Some(vec![Id {
            scheme: JStr::from("ip"),
            id: JStr::from("127.0.0.1"),
        }]),
    };
    let out = l.step(write(1, 1));
    let p = sent(&out);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].kind(), PacketType::Request);
    assert_eq!(p[0].zxid, -1);
    assert!(p[0].authinfo.is_some());
    l.step(write(2, 9)); // a sync
    let out = l.step(inform(create(z(1, 6), s, 1, "/w")));
    assert_eq!(
        out,
        [
            Output::Apply {
                entry: create(z(1, 6), s, 1, "/w")
            },
            Output::WriteDone {
                session_id: s,
                cxid: 1,
                zxid: z(1, 6)
            }
        ]
    );
    // Another session's txn with the same cxid releases nothing.
    let out = l.step(inform(create(z(1, 7), s + 1, 2, "/o")));
    assert_eq!(applied(&out), [z(1, 7)]);
    assert_eq!(out.len(), 1);
    let out = l.step(from_leader(0, Body::Sync));
    assert_eq!(
        out,
        [Output::SyncDone {
            session_id: s,
            cxid: 2
        }]
    );
    let out = l.step(from_leader(0, Body::Sync));
    assert!(matches!(
        out[..],
        [Output::Ignored {
            kind: PacketType::Sync,
            ..
        }]
    ));
}

#[test]
fn ping_is_answered_with_the_sessions_touched_since_the_last() {
    let mut l = observing(z(1, 5), 1);
    let out = l.step(from_leader(z(1, 5), Body::Ping));
    assert_eq!(sent(&out), [Packet::new(z(1, 5), Body::PingReply(vec![]))]);
    for (id, to) in [(0x30, 10000), (0x10, 20000), (0x30, 15000)] {
        l.step(Input::Touch {
            session_id: id,
            timeout: to,
        });
    }
    let out = l.step(from_leader(z(1, 6), Body::Ping));
    let touches = vec![
        SessionTouch {
            session_id: 0x30,
            timeout: 15000,
        },
        SessionTouch {
            session_id: 0x10,
            timeout: 20000,
        },
    ];
    assert_eq!(sent(&out), [Packet::new(z(1, 6), Body::PingReply(touches))]);
    let out = l.step(from_leader(z(1, 6), Body::Ping));
    assert_eq!(sent(&out), [Packet::new(z(1, 6), Body::PingReply(vec![]))]);
}

#[test]
fn revalidation_answers_are_matched_to_the_question() {
    let mut l = observing(z(1, 5), 1);
    let out = l.step(Input::Revalidate {
        session_id: 0x77,
        timeout: 9000,
    });
    assert_eq!(
        sent(&out),
        [Packet::new(
            -1,
            Body::Revalidate(SessionTouch {
                session_id: 0x77,
                timeout: 9000
            })
        )]
    );
    let reply = |id, valid| {
        from_leader(
            -1,
            Body::RevalidateReply(palisade_proto::RevalidateReply {
                session_id: id,
                valid,
            }),
        )
    };
    let out = l.step(reply(0x78, true));
    assert!(matches!(out[..], [Output::Ignored { .. }]));
    let out = l.step(reply(0x77, false));
    assert_eq!(
        out,
        [Output::Revalidated {
            session_id: 0x77,
            valid: false
        }]
    );
}

#[test]
fn a_torn_link_drops_every_pending_request_and_resyncs_from_the_last_zxid() {
    let mut l = observing(z(1, 5), 1);
    let fwd = |cxid, op| Input::Forward {
        request: ForwardedRequest {
            session_id: 9,
            cxid,
            op,
            body: Bytes::new(),
        },
        authinfo: None,
    };
    l.step(fwd(1, 1));
    l.step(fwd(2, 9));
    l.step(Input::Revalidate {
        session_id: 5,
        timeout: 1,
    });
    l.step(Input::Touch {
        session_id: 9,
        timeout: 1,
    });
    let out = l.step(Input::Closed);
    assert_eq!(
        out,
        [
            Output::Dropped(Pending::Write {
                session_id: 9,
                cxid: 1
            }),
            Output::Dropped(Pending::Sync {
                session_id: 9,
                cxid: 2
            }),
            Output::Dropped(Pending::Revalidate { session_id: 5 }),
            Output::Resync(Resync::Closed),
        ]
    );
    assert!(!l.is_synced());
    // Not synced: requests are refused at once, frames of the dead link ignored.
    assert_eq!(
        l.step(fwd(3, 1)),
        [Output::Dropped(Pending::Write {
            session_id: 9,
            cxid: 3
        })]
    );
    assert_eq!(l.step(inform(create(z(1, 6), 0, 0, "/late"))), []);
    // Reconnected: the handshake reports where it stopped; the touches were forgotten.
    let out = handshake(&mut l, 2);
    assert_eq!(
        sent(&out)[1],
        Packet::new(z(1, 5), Body::AckEpoch { current_epoch: 1 })
    );
    l.step(from_leader(z(1, 5), Body::Diff));
    l.step(from_leader(z(2, 0), Body::NewLeader { config: None }));
    l.step(from_leader(-1, Body::UpToDate));
    let out = l.step(from_leader(z(2, 0), Body::Ping));
    assert_eq!(sent(&out), [Packet::new(z(2, 0), Body::PingReply(vec![]))]);
}

#[test]
fn a_leader_change_in_the_middle_of_a_snap_sync_starts_over_with_the_new_leader() {
    let mut l = Learner::new(cfg(0));
    handshake(&mut l, 2);
    let mut d = Decoder::new(Direction::FromLeader, Limits::default());
    let mut wire = BytesMut::new();
    Packet::new(z(2, 40), Body::Snap).write(&mut wire);
    let body = snapshot_body();
    wire.extend_from_slice(&body[..body.len() / 2]);
    d.push(&wire);
    let mut partial = Vec::new();
    while let Some(f) = d.next_frame().unwrap() {
        partial.extend(l.step(Input::Frame(f)));
    }
    assert!(d.in_snapshot());
    assert!(
        matches!(
            partial[..],
            [
                Output::Syncing {
                    mode: SyncMode::Snap,
                    ..
                },
                Output::SnapshotItems(_)
            ]
        ),
        "{partial:?}"
    );
    // The leader dies mid-snapshot: its items came out but never its end (the driver drops
    // the tree it was building); the decoder goes with the link.
    let out = l.step(Input::Closed);
    assert_eq!(out, [Output::Resync(Resync::Closed)]);
    assert_eq!(l.last_zxid(), 0);
    // The next leader (epoch 3) starts over: a new connection, a new decoder, a whole SNAP.
    let out = handshake(&mut l, 3);
    let p = sent(&out);
    assert_eq!(
        p[0].zxid,
        z(2, 0),
        "the epoch accepted from the dead leader"
    );
    assert_eq!(p[1], Packet::new(0, Body::AckEpoch { current_epoch: 1 }));
    let mut d = Decoder::new(Direction::FromLeader, Limits::default());
    let mut wire = BytesMut::new();
    Packet::new(z(2, 41), Body::Snap).write(&mut wire);
    wire.extend_from_slice(&body);
    JStr::from_bytes(Bytes::from_static(SIGNATURE)).write(&mut wire);
    d.push(&wire);
    let mut out = Vec::new();
    while let Some(f) = d.next_frame().unwrap() {
        out.extend(l.step(Input::Frame(f)));
    }
    assert!(
        matches!(out[..], [Output::Syncing { mode: SyncMode::Snap, .. }, Output::SnapshotItems(_), Output::SnapshotEnd { zxid, .. }] if zxid == z(2, 41)),
        "{out:?}"
    );
    assert_eq!(l.last_zxid(), z(2, 41));
}

#[test]
fn silence_past_init_limit_then_sync_limit_resyncs() {
    let mut l = Learner::new(cfg(0));
    l.step(Input::Tick { now_ms: 1_000 });
    l.step(Input::Connected);
    assert!(
        l.step(Input::Tick { now_ms: 21_000 }).is_empty(),
        "10 ticks of 2 s: not yet"
    );
    let out = l.step(Input::Tick { now_ms: 21_001 });
    assert_eq!(out, [Output::Resync(Resync::Timeout { silent_ms: 20_001 })]);

    let mut l = observing(z(1, 5), 1);
    l.step(Input::Tick { now_ms: 100 });
    l.step(from_leader(z(1, 5), Body::Ping));
    assert!(l.step(Input::Tick { now_ms: 10_100 }).is_empty());
    let out = l.step(Input::Tick { now_ms: 10_101 });
    assert!(matches!(out[..], [Output::Resync(Resync::Timeout { .. })]));
}

#[test]
fn packets_out_of_phase_resync() {
    // An INFORM before the leader said how it will sync us.
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 1);
    let out = l.step(inform(create(z(1, 6), 0, 0, "/x")));
    assert!(protocol_error(&out).contains("where DIFF, SNAP or TRUNC was expected"));
    // Anything but LEADERINFO first.
    let mut l = Learner::new(cfg(z(1, 5)));
    l.step(Input::Connected);
    let out = l.step(from_leader(z(1, 5), Body::Diff));
    assert!(protocol_error(&out).contains("LEADERINFO"));
    // UPTODATE before NEWLEADER, a NEWLEADER of another epoch, a second NEWLEADER.
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 5), Body::Diff));
    assert!(protocol_error(&l.step(from_leader(-1, Body::UpToDate))).contains("before NEWLEADER"));
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 5), Body::Diff));
    let out = l.step(from_leader(z(3, 0), Body::NewLeader { config: None }));
    assert!(protocol_error(&out).contains("LEADERINFO announced"));
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 5), Body::Diff));
    l.step(from_leader(z(2, 0), Body::NewLeader { config: None }));
    let out = l.step(from_leader(z(2, 0), Body::NewLeader { config: None }));
    assert!(protocol_error(&out).contains("second NEWLEADER"));
    // A snapshot nobody announced; a packet where the snapshot should be.
    let mut l = Learner::new(cfg(0));
    handshake(&mut l, 1);
    l.step(from_leader(0, Body::Diff));
    let items = vec![palisade_zab::SnapItem::SessionCount(0)];
    assert!(protocol_error(&l.step(Input::Frame(Frame::SnapshotItems(items)))).contains("SNAP"));
    let mut l = Learner::new(cfg(0));
    handshake(&mut l, 1);
    l.step(from_leader(z(1, 3), Body::Snap));
    assert!(protocol_error(&l.step(from_leader(0, Body::Diff))).contains("snapshot"));
    // Sync-phase packets after UPTODATE, a learner's packet from the leader.
    for body in [Body::Diff, Body::Snap, Body::NewLeader { config: None }] {
        let mut l = observing(z(1, 5), 1);
        assert!(protocol_error(&l.step(from_leader(z(1, 5), body))).contains("after UPTODATE"));
    }
    let mut l = observing(z(1, 5), 1);
    let out = l.step(from_leader(z(1, 5), Body::Ack));
    assert!(protocol_error(&out).contains("learner's packet"));
}

#[test]
fn proposals_and_commits_after_uptodate_are_ignored_as_zookeeper_does() {
    let mut l = observing(z(1, 5), 1);
    let out = l.step(from_leader(
        z(1, 6),
        Body::Proposal(create(z(1, 6), 0, 0, "/p")),
    ));
    assert!(matches!(
        out[..],
        [Output::Ignored {
            kind: PacketType::Proposal,
            ..
        }]
    ));
    let out = l.step(from_leader(z(1, 6), Body::Commit));
    assert!(matches!(
        out[..],
        [Output::Ignored {
            kind: PacketType::Commit,
            ..
        }]
    ));
    let out = l.step(from_leader(-1, Body::UpToDate));
    assert!(matches!(
        out[..],
        [Output::Ignored {
            kind: PacketType::UpToDate,
            ..
        }]
    ));
    assert!(l.is_synced());
    assert_eq!(l.last_zxid(), z(1, 5));
}

#[test]
fn a_txn_stream_that_does_not_add_up_resyncs_rather_than_diverging() {
    // Backwards.
    let mut l = observing(z(1, 5), 1);
    let out = l.step(inform(create(z(1, 5), 0, 0, "/x")));
    assert!(protocol_error(&out).contains("backwards"));
    // A gap inside an epoch: a txn lost on the way.
    let mut l = observing(z(1, 5), 1);
    let out = l.step(inform(create(z(1, 7), 0, 0, "/x")));
    assert!(protocol_error(&out).contains("missing"));
    assert_eq!(l.last_zxid(), z(1, 5));
    // A packet whose zxid is not its txn's.
    let mut l = observing(z(1, 5), 1);
    let out = l.step(from_leader(
        z(1, 6),
        Body::Inform(create(z(1, 9), 0, 0, "/x")),
    ));
    assert!(protocol_error(&out).contains("carries a txn"));
    // A new epoch starts its counter again: no gap.
    let mut l = observing(z(1, 5), 2);
    let out = l.step(inform(create(z(2, 1), 0, 0, "/x")));
    assert_eq!(applied(&out), [z(2, 1)]);
}

#[test]
fn reconfig_activation_is_applied_and_reported() {
    let mut l = observing(z(1, 5), 1);
    let e = reconfig(z(1, 6));
    let out = l.step(from_leader(
        z(1, 6),
        Body::InformAndActivate {
            leader_id: 2,
            entry: e.clone(),
        },
    ));
    assert_eq!(
        out,
        [
            Output::Apply { entry: e },
            Output::Reconfigured {
                leader_id: 2,
                zxid: z(1, 6)
            }
        ]
    );
    // During a DIFF: the PROPOSAL, then COMMITANDACTIVATE.
    let mut l = Learner::new(cfg(z(1, 5)));
    handshake(&mut l, 2);
    l.step(from_leader(z(1, 6), Body::Diff));
    l.step(from_leader(z(1, 6), Body::Proposal(reconfig(z(1, 6)))));
    let out = l.step(from_leader(
        z(1, 6),
        Body::CommitAndActivate { leader_id: 3 },
    ));
    assert_eq!(applied(&out), [z(1, 6)]);
    assert_eq!(
        out.last(),
        Some(&Output::Reconfigured {
            leader_id: 3,
            zxid: z(1, 6)
        })
    );
}

#[test]
fn a_broken_stream_or_a_second_connection_resyncs() {
    let mut l = observing(z(1, 5), 1);
    let e = palisade_zab::CodecError::UnknownType(99);
    assert_eq!(
        l.step(Input::BadStream(e.clone())),
        [Output::Resync(Resync::Stream(e))]
    );
    let mut l = observing(z(1, 5), 1);
    let out = l.step(Input::Connected);
    assert_eq!(out[0], Output::Resync(Resync::Reconnected));
    assert_eq!(sent(&out)[0].kind(), PacketType::ObserverInfo);
    // Idle: closing again says nothing.
    let mut l = Learner::new(cfg(0));
    assert!(l.step(Input::Closed).is_empty());
}

#[test]
fn the_observer_roles_calls_report_what_is_pending_and_each_answer() {
    let mut l = observing(z(1, 5), 1);
    let s = 0x0400_0000_0000_0001; // a session this observer created (its sid on top)
    let ip = vec![palisade_proto::Id {
        scheme: JStr::from("ip"),
        id: JStr::from("127.0.0.1"),
    }];
    let write = ForwardedRequest {
        session_id: s,
        cxid: 1,
        op: 1,
        body: Bytes::from_static(b"create body"),
    };
    let out = l.forward(write.clone(), Some(ip.clone()));
    assert_eq!(
        sent(&out),
        [Packet {
            zxid: -1,
            body: Body::Request(write),
            authinfo: Some(ip),
        }]
    );
    let sync = ForwardedRequest {
        session_id: s,
        cxid: 2,
        op: 9,
        body: Bytes::from_static(b"\0\0\0\x01/"),
    };
    l.forward(sync, None);
    l.revalidate(0x77, 9000);
    l.touch(s, 30000);
    l.touch(0x77, 9000);
    assert_eq!(
        l.pending(),
        [
            Pending::Write {
                session_id: s,
                cxid: 1
            },
            Pending::Sync {
                session_id: s,
                cxid: 2
            },
            Pending::Revalidate { session_id: 0x77 },
        ]
    );
    assert_eq!(l.touches().len(), 2);
    // The write failed at the leader (NODEEXISTS): its error txn answers it all the same.
    let failed = TxnEntry {
        txn: Txn {
            header: TxnHeader {
                client_id: s,
                cxid: 1,
                zxid: z(1, 6),
                time: 1,
                type_: -1,
            },
            body: TxnBody::Error(palisade_proto::ErrorTxn { err: -110 }),
        },
        digest: None,
        quirk: Quirk::None,
    };
    let out = l.step(inform(failed));
    assert_eq!(
        out[1..],
        [Output::WriteDone {
            session_id: s,
            cxid: 1,
            zxid: z(1, 6)
        }]
    );
    // The PING answer carries the touches, and clears them.
    let out = l.step(from_leader(z(1, 6), Body::Ping));
    assert!(matches!(&sent(&out)[..], [Packet { body: Body::PingReply(t), .. }] if t.len() == 2));
    assert!(l.touches().is_empty());
    // The link tears: what is still pending is dropped, for the role to fail to its clients.
    let out = l.step(Input::Closed);
    assert_eq!(
        out,
        [
            Output::Dropped(Pending::Sync {
                session_id: s,
                cxid: 2
            }),
            Output::Dropped(Pending::Revalidate { session_id: 0x77 }),
            Output::Resync(Resync::Closed),
        ]
    );
    assert!(l.pending().is_empty());
}
