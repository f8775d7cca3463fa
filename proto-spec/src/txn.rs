//! Transactions as the log stores them: TxnHeader + the record of the header's type.
//!
//! `create2` txns are CreateTxn bodies under header type 15 (as in ZooKeeper); the reaper's
//! `deleteContainer` is a DeleteTxn under type 20. A multi's sub-records are `Txn{type, data}`.

use crate::error::DecodeError;
use crate::jute::{Reader, Record};
use crate::records::*;
use bytes::{Bytes, BytesMut};

/// The body of a logged transaction, by its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnBody {
    Create(CreateTxn),
    Create2(CreateTxn),
    CreateContainer(CreateContainerTxn),
    CreateTtl(CreateTTLTxn),
    Delete(DeleteTxn),
    DeleteContainer(DeleteTxn),
    SetData(SetDataTxn),
    SetAcl(SetACLTxn),
    Check(CheckVersionTxn),
    CreateSession(CreateSessionTxn),
    CloseSession(CloseSessionTxn),
    Error(ErrorTxn),
    Multi(Vec<TxnBody>),
}

/// One logged transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub header: TxnHeader,
    pub body: TxnBody,
}

impl TxnBody {
    pub fn op_code(&self) -> OpCode {
        match self {
            TxnBody::Create(_) => OpCode::Create,
            TxnBody::Create2(_) => OpCode::Create2,
            TxnBody::CreateContainer(_) => OpCode::CreateContainer,
            TxnBody::CreateTtl(_) => OpCode::CreateTTL,
            TxnBody::Delete(_) => OpCode::Delete,
            TxnBody::DeleteContainer(_) => OpCode::DeleteContainer,
            TxnBody::SetData(_) => OpCode::SetData,
            TxnBody::SetAcl(_) => OpCode::SetACL,
            TxnBody::Check(_) => OpCode::Check,
            TxnBody::CreateSession(_) => OpCode::CreateSession,
            TxnBody::CloseSession(_) => OpCode::CloseSession,
            TxnBody::Error(_) => OpCode::Error,
            TxnBody::Multi(_) => OpCode::Multi,
        }
    }

    pub fn write(&self, w: &mut BytesMut) {
        match self {
            TxnBody::Create(x) | TxnBody::Create2(x) => x.write(w),
            TxnBody::CreateContainer(x) => x.write(w),
            TxnBody::CreateTtl(x) => x.write(w),
            TxnBody::Delete(x) | TxnBody::DeleteContainer(x) => x.write(w),
            TxnBody::SetData(x) => x.write(w),
            TxnBody::SetAcl(x) => x.write(w),
            TxnBody::Check(x) => x.write(w),
            TxnBody::CreateSession(x) => x.write(w),
            TxnBody::CloseSession(x) => x.write(w),
            TxnBody::Error(x) => x.write(w),
            TxnBody::Multi(subs) => {
                let txns = subs
                    .iter()
                    .map(|s| {
                        let mut b = BytesMut::new();
                        s.write(&mut b);
                        crate::records::Txn {
                            type_: s.op_code().code(),
                            data: Some(b.freeze()),
                        }
                    })
                    .collect();
                MultiTxn { txns: Some(txns) }.write(w);
            }
        }
    }

    /// Reads the body of a txn of type `op`; every byte must be used.
    pub fn read(op: i32, r: &mut Reader) -> Result<TxnBody, DecodeError> {
        let code = OpCode::from_i32(op).ok_or(DecodeError::UnknownOpCode(op))?;
        Ok(match code {
            OpCode::Create => TxnBody::Create(CreateTxn::read(r)?),
            OpCode::Create2 => TxnBody::Create2(CreateTxn::read(r)?),
            OpCode::CreateContainer => TxnBody::CreateContainer(CreateContainerTxn::read(r)?),
            OpCode::CreateTTL => TxnBody::CreateTtl(CreateTTLTxn::read(r)?),
            OpCode::Delete => TxnBody::Delete(DeleteTxn::read(r)?),
            OpCode::DeleteContainer => TxnBody::DeleteContainer(DeleteTxn::read(r)?),
            OpCode::SetData => TxnBody::SetData(SetDataTxn::read(r)?),
            OpCode::SetACL => TxnBody::SetAcl(SetACLTxn::read(r)?),
            OpCode::Check => TxnBody::Check(CheckVersionTxn::read(r)?),
            OpCode::CreateSession => TxnBody::CreateSession(CreateSessionTxn::read(r)?),
            OpCode::CloseSession => TxnBody::CloseSession(CloseSessionTxn::read(r)?),
            OpCode::Error => TxnBody::Error(ErrorTxn::read(r)?),
            OpCode::Multi => {
                let m = MultiTxn::read(r)?;
                let mut subs = Vec::new();
                for t in m.txns.unwrap_or_default() {
                    let mut sr = Reader::new(t.data.unwrap_or_default(), usize::MAX);
                    let sub = TxnBody::read(t.type_, &mut sr)?;
                    sr.finish()?;
                    if matches!(sub, TxnBody::Multi(_)) {
                        return Err(DecodeError::OpNotAllowed {
                            op: t.type_,
                            context: "inside a multi txn",
                        });
                    }
                    subs.push(sub);
                }
                TxnBody::Multi(subs)
            }
            _ => {
                return Err(DecodeError::OpNotAllowed {
                    op,
                    context: "as a txn type",
                })
            }
        })
    }
}

impl Txn {
    pub fn encode(&self) -> Bytes {
        // Most txns (a header, a path, ~100 bytes of data) fit: one allocation, not a growth
        // at every field (the first profile entry of a setData's allocations).
        let mut w = BytesMut::with_capacity(256);
        self.header.write(&mut w);
        self.body.write(&mut w);
        w.freeze()
    }

    /// The header of an encoded txn, its body left unread: what a member checks (the zxid's
    /// epoch) before it decodes the rest.
    pub fn peek_header(buf: &Bytes) -> Result<TxnHeader, DecodeError> {
        TxnHeader::read(&mut Reader::new(buf.clone(), usize::MAX))
    }

    pub fn decode(buf: Bytes, max_len: usize) -> Result<Txn, DecodeError> {
        let mut r = Reader::new(buf, max_len);
        let header = TxnHeader::read(&mut r)?;
        let body = TxnBody::read(header.type_, &mut r)?;
        r.finish()?;
        Ok(Txn { header, body })
    }
}
