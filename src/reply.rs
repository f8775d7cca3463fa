//! Encoding of server messages: length prefix + ReplyHeader + body, ready to write.

use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{EventType, JStr, Record, ReplyHeader, WatcherEvent};

/// xid of notifications, pings and auth replies.
pub const XID_NOTIFICATION: i32 = -1;
pub const XID_PING: i32 = -2;
pub const XID_AUTH: i32 = -4;
/// WatcherEvent.state the server always sends (SyncConnected).
const STATE_SYNC_CONNECTED: i32 = 3;

pub fn frame(xid: i32, zxid: i64, err: i32, body: impl FnOnce(&mut BytesMut)) -> Bytes {
    frame_sized(xid, zxid, err, 108, body)
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
