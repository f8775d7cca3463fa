//! Client requests: the record each opcode carries after its RequestHeader, and multi.

use crate::error::DecodeError;
use crate::jute::{JStr, Reader, Record};
use crate::records::*;
use bytes::{BufMut, Bytes, BytesMut};

/// Whether requests of this type change state (they go through the log and take a zxid, even
/// when they fail). createSession counts: a client sending it gets an error txn, as in ZooKeeper.
pub fn is_write_op(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTTL
            | OpCode::Delete
            | OpCode::DeleteContainer
            | OpCode::SetData
            | OpCode::SetACL
            | OpCode::Check
            | OpCode::Multi
            | OpCode::Reconfig
            | OpCode::CreateSession
            | OpCode::CloseSession
    )
}

/// One decoded request body, tagged by its opcode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Create(CreateRequest),
    Create2(CreateRequest),
    CreateContainer(CreateRequest),
    CreateTtl(CreateTTLRequest),
    Delete(DeleteRequest),
    /// Internal in ZooKeeper (the container reaper); the body is the raw UTF-8 path.
    DeleteContainer(JStr),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetAcl(GetACLRequest),
    SetAcl(SetACLRequest),
    GetChildren(GetChildrenRequest),
    GetChildren2(GetChildren2Request),
    Sync(SyncRequest),
    Ping,
    Check(CheckVersionRequest),
    Multi(MultiRequest),
    MultiRead(MultiRequest),
    Reconfig(ReconfigRequest),
    CheckWatches(CheckWatchesRequest),
    RemoveWatches(RemoveWatchesRequest),
    Auth(AuthPacket),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    Sasl(GetSASLRequest),
    GetEphemerals(GetEphemeralsRequest),
    GetAllChildrenNumber(GetAllChildrenNumberRequest),
    AddWatch(AddWatchRequest),
    WhoAmI,
    CloseSession,
}

/// The ops of a multi or multiRead, each with the header it came with, and the terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiRequest {
    pub ops: Vec<MultiOp>,
    pub end: MultiHeader,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiOp {
    pub header: MultiHeader,
    pub op: Request,
}

impl MultiRequest {
    /// Builds a multi with the headers clients send: `{op, false, -1}` ... `{-1, true, -1}`.
    pub fn new(ops: Vec<Request>) -> Self {
        MultiRequest {
            ops: ops
                .into_iter()
                .map(|op| MultiOp {
                    header: MultiHeader {
                        type_: op.op_code().code(),
                        done: false,
                        err: -1,
                    },
                    op,
                })
                .collect(),
            end: MultiHeader {
                type_: -1,
                done: true,
                err: -1,
            },
        }
    }

    fn read(r: &mut Reader) -> Result<Self, DecodeError> {
        let mut ops = Vec::new();
        loop {
            let header = MultiHeader::read(r)?;
            if header.done {
                return Ok(MultiRequest { ops, end: header });
            }
            // An unknown op type inside a multi is a malformed body (MARSHALLINGERROR in
            // ZooKeeper), not an unknown request.
            let allowed = OpCode::from_i32(header.type_).filter(|op| {
                matches!(
                    op,
                    OpCode::Create
                        | OpCode::Create2
                        | OpCode::CreateContainer
                        | OpCode::CreateTTL
                        | OpCode::Delete
                        | OpCode::SetData
                        | OpCode::Check
                        | OpCode::GetData
                        | OpCode::GetChildren
                )
            });
            let Some(op) = allowed else {
                return Err(DecodeError::OpNotAllowed {
                    op: header.type_,
                    context: "inside multi",
                });
            };
            let op = Request::read_body(op, r)?;
            ops.push(MultiOp { header, op });
        }
    }

    /// Succeeds when every op is a write (`writes`) or every op a read. Mixing reads and
    /// writes is `MixedMulti`; ops all of the other kind are `OpNotAllowed` (ZooKeeper rejects
    /// the first while parsing, the second only when it runs the ops).
    fn all(self, writes: bool, context: &'static str) -> Result<Self, DecodeError> {
        let n_writes = self.ops.iter().filter(|o| o.op.is_write()).count();
        if n_writes != 0 && n_writes != self.ops.len() {
            return Err(DecodeError::MixedMulti);
        }
        match self.ops.iter().find(|o| o.op.is_write() != writes) {
            Some(o) => Err(DecodeError::OpNotAllowed {
                op: o.header.type_,
                context,
            }),
            None => Ok(self),
        }
    }

    fn write(&self, w: &mut BytesMut) {
        for op in &self.ops {
            op.header.write(w);
            op.op.write_body(w);
        }
        self.end.write(w);
    }
}

impl Request {
    pub fn op_code(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::Create,
            Request::Create2(_) => OpCode::Create2,
            Request::CreateContainer(_) => OpCode::CreateContainer,
            Request::CreateTtl(_) => OpCode::CreateTTL,
            Request::Delete(_) => OpCode::Delete,
            Request::DeleteContainer(_) => OpCode::DeleteContainer,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetACL,
            Request::SetAcl(_) => OpCode::SetACL,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::Sync(_) => OpCode::Sync,
            Request::Ping => OpCode::Ping,
            Request::Check(_) => OpCode::Check,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Reconfig(_) => OpCode::Reconfig,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::Sasl(_) => OpCode::Sasl,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::CloseSession => OpCode::CloseSession,
        }
    }

    /// Whether the request changes state (goes through the log).
    pub fn is_write(&self) -> bool {
        is_write_op(self.op_code())
    }

    /// Decodes the body that follows a RequestHeader of type `op_code`; every byte must be used.
    pub fn decode(op_code: i32, body: Bytes, max_len: usize) -> Result<Request, DecodeError> {
        let mut r = Reader::new(body, max_len);
        let req = Request::decode_prefix(op_code, &mut r)?;
        r.finish()?;
        Ok(req)
    }

    /// Decodes a request from the start of `r`, leaving any bytes after it unread. ZooKeeper's
    /// server ignores such trailing bytes, so a server matching it decodes with this.
    pub fn decode_prefix(op_code: i32, r: &mut Reader) -> Result<Request, DecodeError> {
        let op = OpCode::from_i32(op_code).ok_or(DecodeError::UnknownOpCode(op_code))?;
        Request::read_body(op, r)
    }

    fn read_body(op: OpCode, r: &mut Reader) -> Result<Request, DecodeError> {
        Ok(match op {
            OpCode::Create => Request::Create(CreateRequest::read(r)?),
            OpCode::Create2 => Request::Create2(CreateRequest::read(r)?),
            OpCode::CreateContainer => Request::CreateContainer(CreateRequest::read(r)?),
            OpCode::CreateTTL => Request::CreateTtl(CreateTTLRequest::read(r)?),
            OpCode::Delete => Request::Delete(DeleteRequest::read(r)?),
            OpCode::DeleteContainer => {
                let rest = r.rest().clone();
                let n = rest.len();
                let path = JStr::from_bytes(rest);
                *r = Reader::new(Bytes::new(), n);
                Request::DeleteContainer(path)
            }
            OpCode::Exists => Request::Exists(ExistsRequest::read(r)?),
            OpCode::GetData => Request::GetData(GetDataRequest::read(r)?),
            OpCode::SetData => Request::SetData(SetDataRequest::read(r)?),
            OpCode::GetACL => Request::GetAcl(GetACLRequest::read(r)?),
            OpCode::SetACL => Request::SetAcl(SetACLRequest::read(r)?),
            OpCode::GetChildren => Request::GetChildren(GetChildrenRequest::read(r)?),
            OpCode::GetChildren2 => Request::GetChildren2(GetChildren2Request::read(r)?),
            OpCode::Sync => Request::Sync(SyncRequest::read(r)?),
            OpCode::Ping => Request::Ping,
            OpCode::Check => Request::Check(CheckVersionRequest::read(r)?),
            // multi takes only writes and multiRead only reads (ZooKeeper: MARSHALLINGERROR).
            OpCode::Multi => Request::Multi(MultiRequest::read(r)?.all(true, "in multi")?),
            OpCode::MultiRead => {
                Request::MultiRead(MultiRequest::read(r)?.all(false, "in multiRead")?)
            }
            OpCode::Reconfig => Request::Reconfig(ReconfigRequest::read(r)?),
            OpCode::CheckWatches => Request::CheckWatches(CheckWatchesRequest::read(r)?),
            OpCode::RemoveWatches => Request::RemoveWatches(RemoveWatchesRequest::read(r)?),
            OpCode::Auth => Request::Auth(AuthPacket::read(r)?),
            OpCode::SetWatches => Request::SetWatches(SetWatches::read(r)?),
            OpCode::SetWatches2 => Request::SetWatches2(SetWatches2::read(r)?),
            OpCode::Sasl => Request::Sasl(GetSASLRequest::read(r)?),
            OpCode::GetEphemerals => Request::GetEphemerals(GetEphemeralsRequest::read(r)?),
            OpCode::GetAllChildrenNumber => {
                Request::GetAllChildrenNumber(GetAllChildrenNumberRequest::read(r)?)
            }
            OpCode::AddWatch => Request::AddWatch(AddWatchRequest::read(r)?),
            OpCode::WhoAmI => Request::WhoAmI,
            OpCode::CloseSession => Request::CloseSession,
            // ZooKeeper accepts createSession from a client and then fails to parse it.
            OpCode::CreateSession => {
                return Err(DecodeError::OpNotAllowed {
                    op: op.code(),
                    context: "from a client",
                })
            }
            OpCode::Notification | OpCode::Error => {
                return Err(DecodeError::UnknownOpCode(op.code()))
            }
        })
    }

    /// Appends the body (what follows the RequestHeader).
    pub fn write_body(&self, w: &mut BytesMut) {
        match self {
            Request::Create(x) | Request::Create2(x) | Request::CreateContainer(x) => x.write(w),
            Request::CreateTtl(x) => x.write(w),
            Request::Delete(x) => x.write(w),
            Request::DeleteContainer(p) => w.put_slice(p.as_bytes()),
            Request::Exists(x) => x.write(w),
            Request::GetData(x) => x.write(w),
            Request::SetData(x) => x.write(w),
            Request::GetAcl(x) => x.write(w),
            Request::SetAcl(x) => x.write(w),
            Request::GetChildren(x) => x.write(w),
            Request::GetChildren2(x) => x.write(w),
            Request::Sync(x) => x.write(w),
            Request::Check(x) => x.write(w),
            Request::Multi(m) | Request::MultiRead(m) => m.write(w),
            Request::Reconfig(x) => x.write(w),
            Request::CheckWatches(x) => x.write(w),
            Request::RemoveWatches(x) => x.write(w),
            Request::Auth(x) => x.write(w),
            Request::SetWatches(x) => x.write(w),
            Request::SetWatches2(x) => x.write(w),
            Request::Sasl(x) => x.write(w),
            Request::GetEphemerals(x) => x.write(w),
            Request::GetAllChildrenNumber(x) => x.write(w),
            Request::AddWatch(x) => x.write(w),
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
        }
    }

    /// Decodes a whole client message (RequestHeader, then the body of its type) as a server
    /// reads one: bytes after the request are ignored, as ZooKeeper's server ignores them
    /// (`decode_prefix`), so a member decoding a message a follower forwarded accepts what the
    /// follower's connection accepted.
    pub fn decode_message(
        msg: Bytes,
        max_len: usize,
    ) -> Result<(RequestHeader, Request), DecodeError> {
        let mut r = Reader::new(msg, max_len);
        let header = RequestHeader::read(&mut r)?;
        let req = Request::decode_prefix(header.type_, &mut r)?;
        Ok((header, req))
    }

    /// Encodes a whole client message: RequestHeader{xid, opcode} + body.
    pub fn encode(&self, xid: i32) -> BytesMut {
        // Typical requests fit; larger ones grow once or twice.
        let mut w = BytesMut::with_capacity(256);
        RequestHeader {
            xid,
            type_: self.op_code().code(),
        }
        .write(&mut w);
        self.write_body(&mut w);
        w
    }
}
