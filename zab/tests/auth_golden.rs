//! Quorum SASL's QuorumAuthPackets as ZooKeeper 3.8 members exchange them
//! (testdata/sasl-*.stream, recorded by testdata/capture_auth.py): each decodes, fed as the
//! proxy read it and byte by byte, and re-encodes to the identical bytes; the exchange has
//! ZooKeeper's shape (the learner's empty first token, the challenge, the response, then
//! SUCCESS with rspauth, or ERROR), and what follows a successful one is the Zab handshake.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use palisade_zab::auth::{leader_step, AuthRefused, AuthStep};
use palisade_zab::{AuthDecoder, AuthPacket, AuthStatus, Body, Direction, Frame};

fn exchange(name: &str) -> ([Vec<AuthPacket>; 2], Stream, Stream) {
    let s = stream(name);
    let whole = stream(name);
    let (packets, rest) = split_auth(s);
    (packets, rest, whole)
}

/// Every packet of one direction re-encoded, against the recorded bytes, and decoded again
/// one byte at a time.
fn round_trip(packets: &[AuthPacket], recorded: &Bytes) {
    let mut w = BytesMut::new();
    for p in packets {
        p.write(&mut w);
    }
    assert_eq!(&recorded[..w.len()], &w[..], "re-encoded bytes differ");
    let mut d = AuthDecoder::new(4096, packets.len());
    let mut again = Vec::new();
    for b in &recorded[..w.len()] {
        d.push(&[*b]);
        if let Some(p) = d.next_packet().unwrap() {
            again.push(p);
        }
    }
    assert_eq!(again, packets);
}

fn token(p: &AuthPacket) -> String {
    String::from_utf8_lossy(p.token_bytes()).into_owned()
}

#[test]
fn a_followers_exchange_succeeds_then_zab_begins() {
    let (packets, rest, whole) = exchange("sasl-follower-to-m3-1");
    let [learner, leader] = &packets;
    round_trip(learner, &whole.bytes(Direction::FromLearner));
    round_trip(leader, &whole.bytes(Direction::FromLeader));

    // SaslQuorumAuthLearner: always IN_PROGRESS; DIGEST-MD5 has no initial response.
    assert_eq!(learner.len(), 2);
    assert_eq!(learner[0], AuthPacket::learner(b""));
    assert!(learner.iter().all(|p| p.status == AuthStatus::InProgress));
    let response = token(&learner[1]);
    assert!(
        response.contains("digest-uri=\"zookeeper-quorum/zk-quorum-sasl-md5\"")
            && response.contains("realm=\"zk-quorum-sasl-md5\"")
            && response.contains("qop=auth"),
        "{response}"
    );

    // SaslQuorumAuthServer: the challenge (IN_PROGRESS), then SUCCESS with the rspauth.
    assert_eq!(leader.len(), 2);
    let challenge = token(&leader[0]);
    assert!(
        challenge.starts_with("realm=\"zk-quorum-sasl-md5\",nonce=\"")
            && challenge.ends_with("\",charset=utf-8,algorithm=md5-sess"),
        "{challenge}"
    );
    assert!(matches!(
        leader_step(leader[0].clone(), 0, 1),
        Ok(AuthStep::Challenge(_))
    ));
    assert_eq!(leader[1].status, AuthStatus::Success);
    assert!(token(&leader[1]).starts_with("rspauth="));
    assert!(matches!(
        leader_step(leader[1].clone(), 1, 1),
        Ok(AuthStep::Success(_))
    ));

    // Then the Zab handshake, from the first byte after the exchange.
    let pieces = rest
        .chunks
        .iter()
        .filter(|(d, _)| *d == Direction::FromLearner)
        .map(|(_, c)| c.clone());
    let (frames, _) = decode_all(Direction::FromLearner, pieces);
    assert!(
        matches!(frames.first(), Some(Frame::Packet(p)) if matches!(p.body, Body::FollowerInfo(_))),
        "{:?}",
        frames.first()
    );
}

#[test]
fn a_wrong_digest_gets_the_leaders_error_and_nothing_else() {
    let (packets, rest, whole) = exchange("sasl-refused-1");
    let [learner, leader] = &packets;
    round_trip(learner, &whole.bytes(Direction::FromLearner));
    round_trip(leader, &whole.bytes(Direction::FromLeader));
    assert_eq!(learner.len(), 2);
    assert_eq!(leader.len(), 2);
    // The leader's ERROR: an empty token (`send(dout, new byte[0], ERROR)`), then its close.
    assert_eq!(
        leader[1],
        AuthPacket {
            status: AuthStatus::Error,
            token: Some(Bytes::new())
        }
    );
    assert_eq!(
        leader_step(leader[1].clone(), 1, 1),
        Err(AuthRefused::ByLeader)
    );
    assert!(rest.chunks.is_empty(), "nothing but the exchange");
}
