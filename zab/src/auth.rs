//! Quorum SASL's records (`quorum.auth.enableSasl`): what a learner and the leader exchange
//! on the quorum port before the learner's first QuorumPacket, when the learner runs SASL
//! (ZooKeeper's `SaslQuorumAuthLearner` does only with `quorum.auth.learnerRequireSasl`).
//!
//! `QuorumAuthPacket {long magic; int status; buffer token}` (zookeeper.jute), written bare
//! like a QuorumPacket (no length prefix). The magic is `QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER`:
//! the leader peeks at the first long of a connection to tell an auth packet from a
//! QuorumPacket. The exchange (zab/README.md, "Quorum SASL") is sans-IO here: the
//! mechanism's tokens are the caller's.

use crate::error::CodecError;
use crate::scan::{Scan, Stop};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// `QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER`, written `-0xa0dbcafecafe1234L` in Java. Its comment
/// says it is negative; it is not: the hex literal is already a negative long, and negating
/// it gives this. As a QuorumPacket's first int it reads as type 0x5f243501, no packet type.
pub const QUORUM_AUTH_MAGIC: i64 = 0x5f24_3501_3501_edcc;

/// `QuorumAuth.Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStatus {
    InProgress,
    Success,
    Error,
}

impl AuthStatus {
    pub fn code(self) -> i32 {
        match self {
            AuthStatus::InProgress => 0,
            AuthStatus::Success => 1,
            AuthStatus::Error => -1,
        }
    }

    /// ZooKeeper maps any other value to ERROR (after logging it); here it is a malformed
    /// packet, which ends the connection just the same.
    pub fn from_i32(v: i32) -> Option<AuthStatus> {
        match v {
            0 => Some(AuthStatus::InProgress),
            1 => Some(AuthStatus::Success),
            -1 => Some(AuthStatus::Error),
            _ => None,
        }
    }
}

/// One QuorumAuthPacket (the magic implied: a packet without it does not decode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPacket {
    pub status: AuthStatus,
    /// `None`: a null buffer (the leader's IN_PROGRESS with no challenge).
    pub token: Option<Bytes>,
}

impl AuthPacket {
    /// What a learner sends: always IN_PROGRESS (`SaslQuorumAuthLearner.send`), the first
    /// time with an empty token (DIGEST-MD5 has no initial response).
    pub fn learner(token: &[u8]) -> AuthPacket {
        AuthPacket {
            status: AuthStatus::InProgress,
            token: Some(Bytes::copy_from_slice(token)),
        }
    }

    pub fn write(&self, w: &mut BytesMut) {
        w.put_i64(QUORUM_AUTH_MAGIC);
        w.put_i32(self.status.code());
        palisade_proto::jute::write_buffer(w, self.token.as_deref());
    }

    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::with_capacity(16 + self.token.as_ref().map_or(0, |t| t.len()));
        self.write(&mut w);
        w.freeze()
    }

    /// The token's bytes (a null token reads as none).
    pub fn token_bytes(&self) -> &[u8] {
        self.token.as_deref().unwrap_or_default()
    }
}

/// Whether `b` starts with the magic (what the leader checks; `None` until 8 bytes are in).
pub fn starts_with_magic(b: &[u8]) -> Option<bool> {
    let head: [u8; 8] = b.get(..8)?.try_into().ok()?;
    Some(i64::from_be_bytes(head) == QUORUM_AUTH_MAGIC)
}

/// Decodes QuorumAuthPackets from a connection's bytes, as they arrive. Each token is
/// refused as soon as its length is read if over `max_token`, and at most `max_packets`
/// packets are taken (an exchange that goes on is an error, not a loop). After an error every
/// call returns it and nothing more is buffered.
#[derive(Debug)]
pub struct AuthDecoder {
    buf: BytesMut,
    max_token: usize,
    packets_left: usize,
    failed: Option<CodecError>,
}

impl AuthDecoder {
    pub fn new(max_token: usize, max_packets: usize) -> AuthDecoder {
        AuthDecoder {
            buf: BytesMut::new(),
            max_token,
            packets_left: max_packets,
            failed: None,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_none() {
            self.buf.extend_from_slice(bytes);
        }
    }

    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole packet, `Ok(None)` until more bytes arrive.
    pub fn next_packet(&mut self) -> Result<Option<AuthPacket>, CodecError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.decode();
        if let Err(e) = &r {
            self.failed = Some(e.clone());
            self.buf = BytesMut::new();
        }
        r
    }

    /// The bytes after the last packet taken: the start of the QuorumPacket stream.
    pub fn into_rest(self) -> BytesMut {
        self.buf
    }

    fn decode(&mut self) -> Result<Option<AuthPacket>, CodecError> {
        if let Some(false) = starts_with_magic(&self.buf) {
            let got = self.buf.get(..8).map(|h| h.to_vec()).unwrap_or_default();
            return Err(CodecError::Auth(format!(
                "not a QuorumAuthPacket (first bytes {}, not the magic)",
                hex(&got)
            )));
        }
        // magic, status, token: a whole record is at most max_token + 16 bytes.
        let max_total = (self.max_token as u64).saturating_add(16);
        let mut s = Scan::new(&self.buf, 0, self.max_token, max_total, "QuorumAuthPacket");
        let walked = s
            .long()
            .and_then(|_| s.int())
            .and_then(|_| s.buffer("QuorumAuthPacket token").map(|t| t.is_none()));
        let null_token = match walked {
            Ok(n) => n,
            Err(Stop::Incomplete) => return Ok(None),
            Err(Stop::Bad(e)) => return Err(e),
        };
        let len = s.at;
        if self.packets_left == 0 {
            return Err(CodecError::Auth(
                "more QuorumAuthPackets than an exchange takes".into(),
            ));
        }
        self.packets_left -= 1;
        let mut rec = self.buf.split_to(len).freeze();
        rec.advance(8);
        let code = rec.get_i32();
        let status = AuthStatus::from_i32(code)
            .ok_or_else(|| CodecError::Auth(format!("unknown QuorumAuth status {code}")))?;
        let token = if null_token {
            None
        } else {
            rec.advance(4);
            Some(rec)
        };
        Ok(Some(AuthPacket { status, token }))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Where a learner's side of the exchange stands, and what to do next. The caller owns the
/// mechanism: it turns each challenge into a response ([`LearnerAuth::respond`]) and checks
/// the final token ([`LearnerAuth::finish`]); this only enforces ZooKeeper's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthStep {
    /// Hand this token (a challenge) to the mechanism, and send its response with
    /// [`AuthPacket::learner`].
    Challenge(Bytes),
    /// The leader says the exchange succeeded: check this last token (DIGEST-MD5's
    /// rspauth) before trusting the link.
    Success(Bytes),
}

/// Why an exchange fails, from the leader's packets alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthRefused {
    /// The leader answered ERROR (a wrong password, an unknown user, too many rounds).
    ByLeader,
    /// The leader sent more challenges than the mechanism takes.
    TooManyRounds(usize),
}

/// Reads one leader packet into the next step (`rounds`: challenges already answered,
/// `max_rounds`: how many the mechanism takes).
pub fn leader_step(
    p: AuthPacket,
    rounds: usize,
    max_rounds: usize,
) -> Result<AuthStep, AuthRefused> {
    match p.status {
        AuthStatus::Error => Err(AuthRefused::ByLeader),
        AuthStatus::Success => Ok(AuthStep::Success(p.token.unwrap_or_default())),
        AuthStatus::InProgress if rounds >= max_rounds => Err(AuthRefused::TooManyRounds(rounds)),
        AuthStatus::InProgress => Ok(AuthStep::Challenge(p.token.unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(bytes: &[u8], max_token: usize) -> (Vec<AuthPacket>, Option<CodecError>) {
        let mut d = AuthDecoder::new(max_token, 8);
        d.push(bytes);
        let mut out = Vec::new();
        loop {
            match d.next_packet() {
                Ok(Some(p)) => out.push(p),
                Ok(None) => return (out, None),
                Err(e) => {
                    assert_eq!(d.next_packet(), Err(e.clone()), "an error is final");
                    d.push(b"more");
                    assert_eq!(d.buffered(), 0, "nothing kept after an error");
                    return (out, Some(e));
                }
            }
        }
    }

    #[test]
    fn the_magic_is_zookeepers() {
        // QuorumAuth.java: -0xa0dbcafecafe1234L, big-endian on the wire (the same bytes
        // open every learner's packet in the golden captures).
        assert_eq!(
            QUORUM_AUTH_MAGIC,
            0xa0db_cafe_cafe_1234_u64.wrapping_neg() as i64
        );
        let p = AuthPacket::learner(b"");
        assert_eq!(
            hex(&p.encode()),
            "5f2435013501edcc0000000000000000",
            "magic, IN_PROGRESS, empty token"
        );
    }

    #[test]
    fn packets_round_trip_byte_by_byte() {
        let packets = [
            AuthPacket::learner(b""),
            AuthPacket {
                status: AuthStatus::InProgress,
                token: Some(Bytes::from_static(b"realm=\"zk-quorum-sasl-md5\"")),
            },
            AuthPacket {
                status: AuthStatus::InProgress,
                token: None,
            },
            AuthPacket {
                status: AuthStatus::Success,
                token: Some(Bytes::from_static(b"rspauth=0123")),
            },
            AuthPacket {
                status: AuthStatus::Error,
                token: Some(Bytes::new()),
            },
        ];
        let mut wire = BytesMut::new();
        for p in &packets {
            p.write(&mut wire);
        }
        wire.put_slice(b"\x00\x00\x00\x10after"); // the QuorumPacket stream's start
        let mut d = AuthDecoder::new(4096, 8);
        let mut got = Vec::new();
        for b in wire.iter() {
            d.push(&[*b]);
            // Taken only while the exchange lasts: what follows is not ours to decode.
            while got.len() < packets.len() {
                match d.next_packet().unwrap() {
                    Some(p) => got.push(p),
                    None => break,
                }
            }
        }
        assert_eq!(got, packets);
        assert_eq!(&d.into_rest()[..], b"\x00\x00\x00\x10after");
    }

    #[test]
    fn hostile_packets_are_refused_before_their_bytes_arrive() {
        let head = |status: i32, len: i32| {
            let mut b = QUORUM_AUTH_MAGIC.to_be_bytes().to_vec();
            b.extend(status.to_be_bytes());
            b.extend(len.to_be_bytes());
            b
        };
        // A 2 GiB token announced in 16 bytes: refused at once.
        let (_, e) = decode_all(&head(0, i32::MAX), 4096);
        assert!(
            matches!(e, Some(CodecError::TooLarge { len, max: 4096, .. }) if len == i32::MAX as u64),
            "{e:?}"
        );
        let (_, e) = decode_all(&head(0, 4097), 4096);
        assert!(matches!(e, Some(CodecError::TooLarge { .. })), "{e:?}");
        let (p, e) = decode_all(&head(0, 4096), 4096);
        assert!(p.is_empty() && e.is_none(), "4096 is allowed: waits for it");
        let (_, e) = decode_all(&head(0, -2), 4096);
        assert!(
            matches!(e, Some(CodecError::NegativeLength { .. })),
            "{e:?}"
        );
        let (_, e) = decode_all(&head(7, 0), 4096);
        assert!(
            matches!(&e, Some(CodecError::Auth(m)) if m.contains("status 7")),
            "{e:?}"
        );
        // A QuorumPacket (a leader without quorum SASL would not send one first, but a
        // hostile one may send anything): not the magic, refused on its first 8 bytes.
        let (_, e) = decode_all(&[0, 0, 0, 17, 0, 0, 0, 1], 4096);
        assert!(
            matches!(&e, Some(CodecError::Auth(m)) if m.contains("0000001100000001")),
            "{e:?}"
        );
        let (p, e) = decode_all(&[0x5f, 0x24, 0x35], 4096);
        assert!(p.is_empty() && e.is_none(), "3 bytes: wait");
    }

    #[test]
    fn an_exchange_that_goes_on_is_cut() {
        let mut wire = BytesMut::new();
        for _ in 0..3 {
            AuthPacket::learner(b"x").write(&mut wire);
        }
        let mut d = AuthDecoder::new(64, 2);
        d.push(&wire);
        assert!(d.next_packet().unwrap().is_some());
        assert!(d.next_packet().unwrap().is_some());
        assert!(matches!(d.next_packet(), Err(CodecError::Auth(_))));
    }

    #[test]
    fn the_leaders_statuses_become_steps() {
        let p = |status, token: Option<&'static [u8]>| AuthPacket {
            status,
            token: token.map(Bytes::from_static),
        };
        use AuthStatus::*;
        assert_eq!(
            leader_step(p(InProgress, Some(b"c")), 0, 1),
            Ok(AuthStep::Challenge(Bytes::from_static(b"c")))
        );
        assert_eq!(
            leader_step(p(InProgress, None), 1, 1),
            Err(AuthRefused::TooManyRounds(1))
        );
        assert_eq!(
            leader_step(p(Success, Some(b"rspauth=1")), 1, 1),
            Ok(AuthStep::Success(Bytes::from_static(b"rspauth=1")))
        );
        assert_eq!(
            leader_step(p(Success, None), 1, 1),
            Ok(AuthStep::Success(Bytes::new()))
        );
        assert_eq!(
            leader_step(p(Error, Some(b"")), 0, 1),
            Err(AuthRefused::ByLeader)
        );
    }
}
