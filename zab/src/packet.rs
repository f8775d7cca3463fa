//! QuorumPackets with their data decoded by type. The data layouts are in proto-spec's spec
//! ("ZooKeeper's quorum link"); the exchange they make up is in zab/README.md.

use crate::error::CodecError;
use crate::txn::TxnEntry;
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{
    Id, LearnerInfo, LearnerRequestHeader, QuorumPacket, Reader, Record, Request, RevalidateReply,
    SessionTouch,
};

/// The packet types: Leader.java's constants (ZooKeeper 3.4 to 3.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Request = 1,
    Proposal = 2,
    Ack = 3,
    Commit = 4,
    Ping = 5,
    Revalidate = 6,
    Sync = 7,
    Inform = 8,
    CommitAndActivate = 9,
    NewLeader = 10,
    FollowerInfo = 11,
    UpToDate = 12,
    Diff = 13,
    Trunc = 14,
    Snap = 15,
    ObserverInfo = 16,
    LeaderInfo = 17,
    AckEpoch = 18,
    InformAndActivate = 19,
}

impl PacketType {
    pub fn from_i32(t: i32) -> Option<PacketType> {
        use PacketType::*;
        Some(match t {
            1 => Request,
            2 => Proposal,
            3 => Ack,
            4 => Commit,
            5 => Ping,
            6 => Revalidate,
            7 => Sync,
            8 => Inform,
            9 => CommitAndActivate,
            10 => NewLeader,
            11 => FollowerInfo,
            12 => UpToDate,
            13 => Diff,
            14 => Trunc,
            15 => Snap,
            16 => ObserverInfo,
            17 => LeaderInfo,
            18 => AckEpoch,
            19 => InformAndActivate,
            _ => return None,
        })
    }

    pub fn code(self) -> i32 {
        self as i32
    }
}

/// Which side sent the bytes: the same type carries different data each way (PING,
/// REVALIDATE), and some types go one way only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    FromLeader,
    FromLearner,
}

/// The Zab protocol version a 3.4+ learner and leader announce (LearnerInfo, LEADERINFO).
pub const PROTOCOL_VERSION: i32 = 0x10000;

/// The epoch of a zxid (its high 32 bits).
pub fn epoch_of(zxid: i64) -> i64 {
    zxid >> 32
}

/// ZxidUtils.makeZxid.
pub fn make_zxid(epoch: i64, counter: i64) -> i64 {
    (epoch << 32) | (counter & 0xFFFF_FFFF)
}

/// A client write a learner forwards (REQUEST). `body` is the request record as the client
/// sent it, after its RequestHeader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardedRequest {
    pub session_id: i64,
    pub cxid: i32,
    /// An OpCode (createSession -10, closeSession -11, sync 9, ...).
    pub op: i32,
    pub body: Bytes,
}

/// What a forwarded request carries, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardedBody {
    /// ZooKeeperServer.createSession forwards the negotiated timeout alone.
    CreateSession { timeout: i32 },
    /// Any request record a client sends (closeSession has an empty body).
    Client(Request),
}

impl ForwardedRequest {
    pub const CREATE_SESSION: i32 = -10;

    pub fn decode_body(
        &self,
        max_len: usize,
    ) -> Result<ForwardedBody, palisade_proto::DecodeError> {
        if self.op == Self::CREATE_SESSION {
            let mut r = Reader::new(self.body.clone(), max_len);
            let timeout = r.int()?;
            r.finish()?;
            return Ok(ForwardedBody::CreateSession { timeout });
        }
        Request::decode(self.op, self.body.clone(), max_len).map(ForwardedBody::Client)
    }
}

/// A packet's data, decoded by type (and by direction where the two differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    // learner -> leader
    FollowerInfo(LearnerInfo),
    ObserverInfo(LearnerInfo),
    /// The learner's current epoch, or -1 when it had already accepted the leader's epoch.
    AckEpoch {
        current_epoch: i32,
    },
    Ack,
    Request(ForwardedRequest),
    Revalidate(SessionTouch),
    /// The sessions touched since the last PING (possibly none).
    PingReply(Vec<SessionTouch>),
    // leader -> learner
    LeaderInfo {
        protocol_version: i32,
    },
    Diff,
    Trunc,
    Snap,
    Proposal(TxnEntry),
    Commit,
    CommitAndActivate {
        leader_id: i64,
    },
    /// The leader's config text (null from pre-3.5 leaders).
    NewLeader {
        config: Option<Bytes>,
    },
    UpToDate,
    Inform(TxnEntry),
    InformAndActivate {
        leader_id: i64,
        entry: TxnEntry,
    },
    Ping,
    RevalidateReply(RevalidateReply),
    Sync,
}

/// One QuorumPacket: zxid and authinfo as sent, the data decoded into `body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub zxid: i64,
    pub body: Body,
    pub authinfo: Option<Vec<Id>>,
}

impl Packet {
    /// A packet without authinfo (every packet but a forwarded REQUEST).
    pub fn new(zxid: i64, body: Body) -> Packet {
        Packet {
            zxid,
            body,
            authinfo: None,
        }
    }

    pub fn kind(&self) -> PacketType {
        use PacketType as T;
        match &self.body {
            Body::FollowerInfo(_) => T::FollowerInfo,
            Body::ObserverInfo(_) => T::ObserverInfo,
            Body::AckEpoch { .. } => T::AckEpoch,
            Body::Ack => T::Ack,
            Body::Request(_) => T::Request,
            Body::Revalidate(_) | Body::RevalidateReply(_) => T::Revalidate,
            Body::PingReply(_) | Body::Ping => T::Ping,
            Body::LeaderInfo { .. } => T::LeaderInfo,
            Body::Diff => T::Diff,
            Body::Trunc => T::Trunc,
            Body::Snap => T::Snap,
            Body::Proposal(_) => T::Proposal,
            Body::Commit => T::Commit,
            Body::CommitAndActivate { .. } => T::CommitAndActivate,
            Body::NewLeader { .. } => T::NewLeader,
            Body::UpToDate => T::UpToDate,
            Body::Inform(_) => T::Inform,
            Body::InformAndActivate { .. } => T::InformAndActivate,
            Body::Sync => T::Sync,
        }
    }

    /// Which side sends packets of this body.
    pub fn direction(&self) -> Direction {
        match &self.body {
            Body::FollowerInfo(_)
            | Body::ObserverInfo(_)
            | Body::AckEpoch { .. }
            | Body::Ack
            | Body::Request(_)
            | Body::Revalidate(_)
            | Body::PingReply(_) => Direction::FromLearner,
            _ => Direction::FromLeader,
        }
    }

    /// The data bytes ZooKeeper puts in a packet of this body.
    fn data(&self) -> Option<Bytes> {
        fn rec(r: &impl Record) -> Option<Bytes> {
            Some(r.encode().freeze())
        }
        fn int(v: i32) -> Option<Bytes> {
            Some(Bytes::copy_from_slice(&v.to_be_bytes()))
        }
        match &self.body {
            Body::FollowerInfo(li) | Body::ObserverInfo(li) => rec(li),
            Body::AckEpoch { current_epoch } => int(*current_epoch),
            Body::LeaderInfo { protocol_version } => int(*protocol_version),
            Body::Request(r) => {
                let mut w = BytesMut::with_capacity(16 + r.body.len());
                LearnerRequestHeader {
                    session_id: r.session_id,
                    cxid: r.cxid,
                    type_: r.op,
                }
                .write(&mut w);
                w.put_slice(&r.body);
                Some(w.freeze())
            }
            Body::Revalidate(t) => rec(t),
            Body::RevalidateReply(r) => rec(r),
            Body::PingReply(touches) => {
                let mut w = BytesMut::with_capacity(12 * touches.len());
                for t in touches {
                    t.write(&mut w);
                }
                Some(w.freeze())
            }
            Body::Proposal(e) | Body::Inform(e) => Some(e.encode()),
            Body::InformAndActivate { leader_id, entry } => Some(entry.encode_after(*leader_id)),
            Body::CommitAndActivate { leader_id } => {
                Some(Bytes::copy_from_slice(&leader_id.to_be_bytes()))
            }
            Body::NewLeader { config } => config.clone(),
            Body::Ack
            | Body::Diff
            | Body::Trunc
            | Body::Snap
            | Body::Commit
            | Body::UpToDate
            | Body::Ping
            | Body::Sync => None,
        }
    }

    pub fn to_quorum_packet(&self) -> QuorumPacket {
        QuorumPacket {
            type_: self.kind().code(),
            zxid: self.zxid,
            data: self.data(),
            authinfo: self.authinfo.clone(),
        }
    }

    /// Appends the packet as it goes on the wire (a bare QuorumPacket record).
    pub fn write(&self, w: &mut BytesMut) {
        self.to_quorum_packet().write(w);
    }

    pub fn encode(&self) -> Bytes {
        self.to_quorum_packet().encode().freeze()
    }

    /// Decodes the data of a QuorumPacket sent in direction `dir`.
    pub fn from_quorum_packet(qp: QuorumPacket, dir: Direction) -> Result<Packet, CodecError> {
        let kind = PacketType::from_i32(qp.type_).ok_or(CodecError::UnknownType(qp.type_))?;
        let zxid = qp.zxid;
        let body = decode_body(kind, zxid, qp.data, dir)?;
        let p = Packet {
            zxid,
            body,
            authinfo: qp.authinfo,
        };
        if p.direction() != dir {
            return Err(CodecError::WrongDirection { kind, dir });
        }
        Ok(p)
    }
}

fn decode_body(
    kind: PacketType,
    zxid: i64,
    data: Option<Bytes>,
    dir: Direction,
) -> Result<Body, CodecError> {
    use PacketType as T;
    let bad = |reason: &str| CodecError::malformed(kind, zxid, reason);
    let dec = |e| CodecError::decode(kind, zxid, e);
    // Types whose data is always null.
    let none = |body: Body| match &data {
        None => Ok(body),
        Some(d) => Err(bad(&format!(
            "{} bytes of data where ZooKeeper sends none",
            d.len()
        ))),
    };
    let whole = |data: &Option<Bytes>| data.clone().ok_or_else(|| bad("no data"));
    let learner = dir == Direction::FromLearner;
    Ok(match kind {
        T::Ack => none(Body::Ack)?,
        T::Diff => none(Body::Diff)?,
        T::Trunc => none(Body::Trunc)?,
        T::Snap => none(Body::Snap)?,
        T::Commit => none(Body::Commit)?,
        T::UpToDate => none(Body::UpToDate)?,
        T::Sync => none(Body::Sync)?,
        T::Ping if !learner => none(Body::Ping)?,
        T::Ping => {
            let mut r = Reader::new(whole(&data)?, usize::MAX);
            let mut touches = Vec::with_capacity(r.remaining() / 12);
            while !r.is_empty() {
                touches.push(SessionTouch::read(&mut r).map_err(dec)?);
            }
            Body::PingReply(touches)
        }
        T::FollowerInfo => Body::FollowerInfo(LearnerInfo::decode(whole(&data)?, 0).map_err(dec)?),
        T::ObserverInfo => Body::ObserverInfo(LearnerInfo::decode(whole(&data)?, 0).map_err(dec)?),
        T::AckEpoch => Body::AckEpoch {
            current_epoch: one_int(whole(&data)?).map_err(dec)?,
        },
        T::LeaderInfo => Body::LeaderInfo {
            protocol_version: one_int(whole(&data)?).map_err(dec)?,
        },
        T::Revalidate if learner => {
            Body::Revalidate(SessionTouch::decode(whole(&data)?, 0).map_err(dec)?)
        }
        T::Revalidate => {
            Body::RevalidateReply(RevalidateReply::decode(whole(&data)?, 0).map_err(dec)?)
        }
        T::Request => {
            let mut r = Reader::new(whole(&data)?, 0);
            let h = LearnerRequestHeader::read(&mut r).map_err(dec)?;
            Body::Request(ForwardedRequest {
                session_id: h.session_id,
                cxid: h.cxid,
                op: h.type_,
                body: r.rest().clone(),
            })
        }
        T::Proposal => Body::Proposal(TxnEntry::decode(whole(&data)?).map_err(dec)?),
        T::Inform => Body::Inform(TxnEntry::decode(whole(&data)?).map_err(dec)?),
        T::InformAndActivate => {
            let mut r = Reader::new(whole(&data)?, 0);
            let leader_id = r.long().map_err(dec)?;
            let entry = TxnEntry::decode(r.rest().clone()).map_err(dec)?;
            Body::InformAndActivate { leader_id, entry }
        }
        T::CommitAndActivate => {
            let mut r = Reader::new(whole(&data)?, 0);
            let leader_id = r.long().map_err(dec)?;
            r.finish().map_err(dec)?;
            Body::CommitAndActivate { leader_id }
        }
        T::NewLeader => Body::NewLeader { config: data },
    })
}

fn one_int(b: Bytes) -> Result<i32, palisade_proto::DecodeError> {
    let mut r = Reader::new(b, 0);
    let v = r.int()?;
    r.finish()?;
    Ok(v)
}
