//! Encoding of server messages (length prefix + ReplyHeader + body, ready to write), and the
//! reply to a write, derived from its txn and the outcome of applying it.

use crate::limits::REPLY_GUESS;
use crate::state::{Effects, Outcome};
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::*;

/// xid of notifications and of ping replies.
pub const XID_NOTIFICATION: i32 = -1;
pub const XID_PING: i32 = -2;
/// WatcherEvent.state the server always sends (SyncConnected).
const STATE_SYNC_CONNECTED: i32 = 3;

pub fn frame(xid: i32, zxid: i64, err: i32, body: impl FnOnce(&mut BytesMut)) -> Bytes {
    frame_sized(xid, zxid, err, REPLY_GUESS, body)
}

/// Like [`frame`], with the body's size known in advance (one allocation).
pub fn frame_sized(
    xid: i32,
    zxid: i64,
    err: i32,
    body_len: usize,
    body: impl FnOnce(&mut BytesMut),
) -> Bytes {
    let mut w = BytesMut::with_capacity(20 + body_len);
    w.put_i32(0);
    ReplyHeader { xid, zxid, err }.write(&mut w);
    body(&mut w);
    let len = (w.len() - 4) as i32;
    if let Some(prefix) = w.get_mut(..4) {
        prefix.copy_from_slice(&len.to_be_bytes());
    }
    w.freeze()
}

pub fn header(xid: i32, zxid: i64, err: i32) -> Bytes {
    frame(xid, zxid, err, |_| {})
}

pub fn record<R: Record>(xid: i32, zxid: i64, r: &R) -> Bytes {
    frame_sized(xid, zxid, 0, r.wire_len(), |w| r.write(w))
}

/// A watch notification.
pub fn event(kind: EventType, path: &str) -> Bytes {
    let ev = WatcherEvent {
        type_: kind.code(),
        state: STATE_SYNC_CONNECTED,
        path: JStr::from(path),
    };
    frame(XID_NOTIFICATION, -1, 0, |w| ev.write(w))
}

/// A message without ReplyHeader (the ConnectResponse), length-prefixed.
pub fn bare<R: Record>(r: &R) -> Bytes {
    let mut w = BytesMut::with_capacity(4 + r.wire_len());
    w.put_i32(r.wire_len() as i32);
    r.write(&mut w);
    w.freeze()
}

/// The reply to a committed write: what the client asked for follows from the txn's type
/// (a create's CreateResponse or a create2's Create2Response with the stat, and so on),
/// whether it succeeded from the outcome.
pub fn write_reply(txn: &Txn, effects: &Effects<'_>) -> Bytes {
    let (xid, zxid) = (txn.header.cxid, txn.header.zxid);
    if let TxnBody::Multi(subs) = &txn.body {
        let results = subs
            .iter()
            .zip(&effects.outcomes)
            .map(|(body, o)| op_result(body, o))
            .collect();
        let m = MultiResponse::new(results);
        return frame(xid, zxid, 0, |w| m.write(w));
    }
    let Some(o) = effects.single() else {
        return header(xid, zxid, ErrorCode::SystemError.code());
    };
    if o.err != 0 {
        return header(xid, zxid, o.err);
    }
    let stat = || o.stat.clone().unwrap_or_default();
    match &txn.body {
        TxnBody::Create(_) => record(
            xid,
            zxid,
            &CreateResponse {
                path: JStr::from(o.path),
            },
        ),
        TxnBody::Create2(_) | TxnBody::CreateContainer(_) | TxnBody::CreateTtl(_) => record(
            xid,
            zxid,
            &Create2Response {
                path: JStr::from(o.path),
                stat: stat(),
            },
        ),
        TxnBody::SetData(_) | TxnBody::SetAcl(_) => record(xid, zxid, &stat()),
        _ => header(xid, zxid, 0),
    }
}

/// One op's result inside a multi's reply. A failed multi is logged as one error per op (0
/// for those before the failure), and each is answered as an error result.
fn op_result(body: &TxnBody, o: &Outcome<'_>) -> OpResult {
    if o.err != 0 {
        return OpResult::Error(ErrorResponse { err: o.err });
    }
    let stat = || o.stat.clone().unwrap_or_default();
    match body {
        TxnBody::Create(_) => OpResult::Create(CreateResponse {
            path: JStr::from(o.path),
        }),
        TxnBody::Create2(_) | TxnBody::CreateContainer(_) | TxnBody::CreateTtl(_) => {
            OpResult::Create2(Create2Response {
                path: JStr::from(o.path),
                stat: stat(),
            })
        }
        TxnBody::Delete(_) | TxnBody::DeleteContainer(_) => OpResult::Delete,
        TxnBody::SetData(_) | TxnBody::SetAcl(_) => OpResult::SetData(stat()),
        TxnBody::Check(_) => OpResult::Check,
        // An error body: ErrorResponse with its code (0 for ops before the failed one).
        TxnBody::Error(e) => OpResult::Error(ErrorResponse { err: e.err }),
        _ => OpResult::Error(ErrorResponse {
            err: ErrorCode::MarshallingError.code(),
        }),
    }
}
