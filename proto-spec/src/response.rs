//! Server replies: the record that follows a ReplyHeader, by the opcode of the request it answers.

use crate::error::DecodeError;
use crate::jute::{Reader, Record};
use crate::records::*;
use bytes::{Bytes, BytesMut};

/// One decoded reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// Header only: errors, delete, setWatches, checkWatches, removeWatches, ping, auth, close.
    Empty,
    Create(CreateResponse),
    Create2(Create2Response),
    /// exists, setData, setACL.
    Stat(Stat),
    GetData(GetDataResponse),
    GetAcl(GetACLResponse),
    GetChildren(GetChildrenResponse),
    GetChildren2(GetChildren2Response),
    Sync(SyncResponse),
    Multi(MultiResponse),
    GetEphemerals(GetEphemeralsResponse),
    GetAllChildrenNumber(GetAllChildrenNumberResponse),
    WhoAmI(WhoAmIResponse),
    /// addWatch's 4-byte body.
    AddWatch(ErrorResponse),
    Sasl(SetSASLResponse),
    /// reconfig answers with the new config and its Stat.
    Reconfig(GetDataResponse),
}

/// Per-op results of multi / multiRead, each with its header, and the terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiResponse {
    pub results: Vec<(MultiHeader, OpResult)>,
    pub end: MultiHeader,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Create(CreateResponse),
    Create2(Create2Response),
    Delete,
    SetData(Stat),
    Check,
    GetData(GetDataResponse),
    GetChildren(GetChildrenResponse),
    Error(ErrorResponse),
}

impl OpResult {
    /// The MultiHeader.type this result is sent with.
    pub fn type_code(&self) -> i32 {
        match self {
            OpResult::Create(_) => OpCode::Create.code(),
            OpResult::Create2(_) => OpCode::Create2.code(),
            OpResult::Delete => OpCode::Delete.code(),
            OpResult::SetData(_) => OpCode::SetData.code(),
            OpResult::Check => OpCode::Check.code(),
            OpResult::GetData(_) => OpCode::GetData.code(),
            OpResult::GetChildren(_) => OpCode::GetChildren.code(),
            OpResult::Error(_) => OpCode::Error.code(),
        }
    }

    fn write(&self, w: &mut BytesMut) {
        match self {
            OpResult::Create(x) => x.write(w),
            OpResult::Create2(x) => x.write(w),
            OpResult::SetData(x) => x.write(w),
            OpResult::GetData(x) => x.write(w),
            OpResult::GetChildren(x) => x.write(w),
            OpResult::Error(x) => x.write(w),
            OpResult::Delete | OpResult::Check => {}
        }
    }

    fn wire_len(&self) -> usize {
        match self {
            OpResult::Create(x) => x.wire_len(),
            OpResult::Create2(x) => x.wire_len(),
            OpResult::SetData(x) => x.wire_len(),
            OpResult::GetData(x) => x.wire_len(),
            OpResult::GetChildren(x) => x.wire_len(),
            OpResult::Error(x) => x.wire_len(),
            OpResult::Delete | OpResult::Check => 0,
        }
    }
}

impl MultiResponse {
    /// Builds the response with the headers ZooKeeper sends: `{type, false, err}` per result
    /// (err is the code for an error result, else 0) and `{-1, true, -1}` at the end.
    pub fn new(results: Vec<OpResult>) -> Self {
        MultiResponse {
            results: results
                .into_iter()
                .map(|r| {
                    let err = match &r {
                        OpResult::Error(e) => e.err,
                        _ => 0,
                    };
                    (
                        MultiHeader {
                            type_: r.type_code(),
                            done: false,
                            err,
                        },
                        r,
                    )
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
        let mut results = Vec::new();
        loop {
            let h = MultiHeader::read(r)?;
            if h.done {
                return Ok(MultiResponse { results, end: h });
            }
            let res = match OpCode::from_i32(h.type_) {
                Some(OpCode::Create) => OpResult::Create(CreateResponse::read(r)?),
                Some(OpCode::Create2) => OpResult::Create2(Create2Response::read(r)?),
                Some(OpCode::Delete) => OpResult::Delete,
                Some(OpCode::SetData) => OpResult::SetData(Stat::read(r)?),
                Some(OpCode::Check) => OpResult::Check,
                Some(OpCode::GetData) => OpResult::GetData(GetDataResponse::read(r)?),
                Some(OpCode::GetChildren) => OpResult::GetChildren(GetChildrenResponse::read(r)?),
                Some(OpCode::Error) => OpResult::Error(ErrorResponse::read(r)?),
                _ => {
                    return Err(DecodeError::BadEnum {
                        what: "multi result type",
                        value: h.type_,
                    })
                }
            };
            results.push((h, res));
        }
    }

    pub fn write(&self, w: &mut BytesMut) {
        for (h, r) in &self.results {
            h.write(w);
            r.write(w);
        }
        self.end.write(w);
    }

    pub fn wire_len(&self) -> usize {
        self.results
            .iter()
            .map(|(h, r)| h.wire_len() + r.wire_len())
            .sum::<usize>()
            + self.end.wire_len()
    }
}

impl Response {
    /// Decodes the body of a reply to a request of type `op`. An empty body is `Empty` (what
    /// error replies carry); a non-empty one must decode completely.
    pub fn decode(op: OpCode, body: Bytes, max_len: usize) -> Result<Response, DecodeError> {
        if body.is_empty() {
            return Ok(Response::Empty);
        }
        let mut r = Reader::new(body, max_len);
        let resp = match op {
            OpCode::Create => Response::Create(CreateResponse::read(&mut r)?),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTTL => {
                Response::Create2(Create2Response::read(&mut r)?)
            }
            OpCode::Exists | OpCode::SetData | OpCode::SetACL => {
                Response::Stat(Stat::read(&mut r)?)
            }
            OpCode::GetData => Response::GetData(GetDataResponse::read(&mut r)?),
            OpCode::GetACL => Response::GetAcl(GetACLResponse::read(&mut r)?),
            OpCode::GetChildren => Response::GetChildren(GetChildrenResponse::read(&mut r)?),
            OpCode::GetChildren2 => Response::GetChildren2(GetChildren2Response::read(&mut r)?),
            OpCode::Sync => Response::Sync(SyncResponse::read(&mut r)?),
            OpCode::Multi | OpCode::MultiRead => Response::Multi(MultiResponse::read(&mut r)?),
            OpCode::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::read(&mut r)?),
            OpCode::GetAllChildrenNumber => {
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse::read(&mut r)?)
            }
            OpCode::WhoAmI => Response::WhoAmI(WhoAmIResponse::read(&mut r)?),
            OpCode::AddWatch => Response::AddWatch(ErrorResponse::read(&mut r)?),
            OpCode::Sasl => Response::Sasl(SetSASLResponse::read(&mut r)?),
            OpCode::Reconfig => Response::Reconfig(GetDataResponse::read(&mut r)?),
            _ => return Err(DecodeError::TrailingBytes(r.remaining())),
        };
        r.finish()?;
        Ok(resp)
    }

    pub fn write(&self, w: &mut BytesMut) {
        match self {
            Response::Empty => {}
            Response::Create(x) => x.write(w),
            Response::Create2(x) => x.write(w),
            Response::Stat(x) => x.write(w),
            Response::GetData(x) => x.write(w),
            Response::GetAcl(x) => x.write(w),
            Response::GetChildren(x) => x.write(w),
            Response::GetChildren2(x) => x.write(w),
            Response::Sync(x) => x.write(w),
            Response::Multi(x) => x.write(w),
            Response::GetEphemerals(x) => x.write(w),
            Response::GetAllChildrenNumber(x) => x.write(w),
            Response::WhoAmI(x) => x.write(w),
            Response::AddWatch(x) => x.write(w),
            Response::Sasl(x) => x.write(w),
            Response::Reconfig(x) => x.write(w),
        }
    }
}
