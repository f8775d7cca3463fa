//! One connection's life: re-register watches, send what waited for the connection, then
//! pipeline requests and match replies, dispatch notifications, ping when idle, and notice a
//! silent or broken connection.

use super::handshake::Established;
use super::pending::{Outcome, Pending, PendingQueue, Target};
use super::{writer, Call, Command, Ended, Xid, MAX_FRAME};
use crate::error::Error;
use crate::shared::{lock, Shared};
use crate::watch::WatchedEvent;
use bytes::{Bytes, BytesMut};
use palisade_proto::{
    EventType, Frame, FrameCodec, OpCode, Reader, Record, ReplyHeader, Request, SetWatches,
    WatcherEvent,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::mpsc;
use tokio::time::sleep_until;
use tokio_util::codec::{Decoder, Encoder};

/// Stop taking new requests while this many are unanswered (bounds memory if the server or
/// the network is slow).
const MAX_IN_FLIGHT: usize = 8192;
/// setWatches is split so no message exceeds the server's jute.maxbuffer (ZooKeeper's client
/// uses 128 KiB batches too).
const SET_WATCHES_BATCH_BYTES: usize = 128 << 10;
/// Reserved xids (proto-spec/spec/zookeeper.jute, SPECIAL XIDS).
const XID_NOTIFICATION: i32 = -1;
const XID_PING: i32 = -2;
const XID_SET_WATCHES: i32 = -8;

struct Conn<'a> {
    read: OwnedReadHalf,
    rbuf: BytesMut,
    codec: FrameCodec,
    out: mpsc::UnboundedSender<Bytes>,
    shared: &'a Shared,
    pending: PendingQueue,
    /// Send times of unanswered pings, matched by xid -2 apart from the ordered queue.
    pings: VecDeque<Instant>,
    last_send: Instant,
    last_recv: Instant,
    closing: bool,
}

/// Runs the connection until it ends; every request still outstanding is failed with the
/// error that fits how it ended.
pub(crate) async fn serve(
    est: Established,
    shared: &Shared,
    rx: &mut mpsc::Receiver<Command>,
    backlog: &mut VecDeque<Call>,
    xid: &mut Xid,
) -> Ended {
    let now = Instant::now();
    let mut c = Conn {
        read: est.read,
        rbuf: est.rbuf,
        codec: est.codec,
        out: writer::spawn(est.write),
        shared,
        pending: PendingQueue::default(),
        pings: VecDeque::new(),
        last_send: now,
        last_recv: now,
        closing: false,
    };
    let ended = c.run(rx, backlog, xid).await;
    match &ended {
        Ended::Lost(_) => c.pending.fail_all(|| Error::ConnectionLoss),
        Ended::Expired => c.pending.fail_all(|| Error::SessionExpired),
        _ => c.pending.fail_all(|| Error::Closed),
    }
    ended
}

impl Conn<'_> {
    async fn run(
        &mut self,
        rx: &mut mpsc::Receiver<Command>,
        backlog: &mut VecDeque<Call>,
        xid: &mut Xid,
    ) -> Ended {
        self.send_set_watches();
        while let Some(call) = backlog.pop_front() {
            self.send_call(call, xid);
        }
        let t = self.shared.session_timeout();
        // As ZooKeeper's client: a connection silent for 2/3 of the session timeout is dead,
        // and an idle one pings at 1/3.
        let read_timeout = t * 2 / 3;
        let ping_every = (t / 3).max(Duration::from_millis(10));
        loop {
            let silence = tokio::time::Instant::from_std(self.last_recv + read_timeout);
            let ping_at = tokio::time::Instant::from_std(self.last_send + ping_every);
            tokio::select! {
                biased;
                n = self.read.read_buf(&mut self.rbuf) => match n {
                    Ok(0) => return Ended::Lost("server closed the connection".into()),
                    Err(e) => return Ended::Lost(format!("read: {e}")),
                    Ok(_) => {
                        self.last_recv = Instant::now();
                        if let Some(end) = self.drain_frames() {
                            return end;
                        }
                    }
                },
                _ = self.out.closed() => return Ended::Lost("write failed".into()),
                cmd = rx.recv(), if !self.closing && self.pending.len() < MAX_IN_FLIGHT => {
                    match cmd {
                        Some(Command::Request(call)) => self.send_call(call, xid),
                        Some(Command::Close(tx)) => self.send_close(Some(tx), xid),
                        // Every handle is gone: close the session rather than let it linger.
                        None => self.send_close(None, xid),
                        Some(Command::DropConnection) => {
                            return Ended::Lost("dropped on request".into())
                        }
                        Some(Command::Abandon) => return Ended::Abandoned,
                    }
                }
                _ = sleep_until(ping_at) => self.send_ping(),
                _ = sleep_until(silence) => {
                    return Ended::Lost(format!("nothing heard for {read_timeout:?}"))
                }
            }
        }
    }

    fn send(&mut self, req: &Request, xid: i32) {
        let mut frame = BytesMut::new();
        // Encoding fails only for a message over 2 GiB; the server refuses far less anyway.
        if self
            .codec
            .encode(req.encode(xid).freeze(), &mut frame)
            .is_ok()
        {
            let _ = self.out.send(frame.freeze());
        }
        self.last_send = Instant::now();
    }

    fn send_call(&mut self, call: Call, xid: &mut Xid) {
        let x = xid.next();
        self.send(&call.req, x);
        self.pending.push(Pending {
            xid: x,
            op: call.req.op_code(),
            sent_at: self.last_send,
            target: Target::Call(call),
        });
    }

    fn send_close(
        &mut self,
        tx: Option<tokio::sync::oneshot::Sender<Result<(), Error>>>,
        xid: &mut Xid,
    ) {
        let x = xid.next();
        self.send(&Request::CloseSession, x);
        self.pending.push(Pending {
            xid: x,
            op: OpCode::CloseSession,
            sent_at: self.last_send,
            target: Target::Close(tx),
        });
        self.closing = true;
    }

    fn send_ping(&mut self) {
        self.send(&Request::Ping, XID_PING);
        self.pings.push_back(self.last_send);
    }

    /// Re-registers every watch still awaited, relative to the last zxid seen: the server fires
    /// at once those whose node changed meanwhile.
    fn send_set_watches(&mut self) {
        let tables = lock(&self.shared.watches).paths();
        let mut batch = SetWatches::default();
        let mut size = 0;
        for (table, paths) in tables.into_iter().enumerate() {
            for p in paths {
                size += p.len() + 4;
                let v = match table {
                    0 => &mut batch.data_watches,
                    1 => &mut batch.exist_watches,
                    _ => &mut batch.child_watches,
                };
                v.get_or_insert_with(Vec::new).push(p.into());
                if size >= SET_WATCHES_BATCH_BYTES {
                    self.send_set_watches_batch(std::mem::take(&mut batch));
                    size = 0;
                }
            }
        }
        if size > 0 {
            self.send_set_watches_batch(batch);
        }
    }

    fn send_set_watches_batch(&mut self, mut b: SetWatches) {
        b.relative_zxid = self.shared.last_zxid();
        // The server wants three vectors, empty rather than null.
        for v in [
            &mut b.data_watches,
            &mut b.exist_watches,
            &mut b.child_watches,
        ] {
            v.get_or_insert_with(Vec::new);
        }
        self.send(&Request::SetWatches(b), XID_SET_WATCHES);
        self.pending.push(Pending {
            xid: XID_SET_WATCHES,
            op: OpCode::SetWatches,
            sent_at: self.last_send,
            target: Target::Internal,
        });
    }

    /// Handles every complete frame in the read buffer; `Some` ends the connection.
    fn drain_frames(&mut self) -> Option<Ended> {
        loop {
            let frame = match self.codec.decode(&mut self.rbuf) {
                Ok(Some(Frame::Packet(b))) => b,
                Ok(Some(Frame::FourLetter(_))) => return Some(Ended::Lost("bad frame".into())),
                Ok(None) => return None,
                Err(e) => return Some(Ended::Lost(format!("frame: {e}"))),
            };
            if let Some(end) = self.handle_frame(frame) {
                return Some(end);
            }
        }
    }

    fn handle_frame(&mut self, frame: Bytes) -> Option<Ended> {
        let mut r = Reader::new(frame, MAX_FRAME);
        let hdr = match ReplyHeader::read(&mut r) {
            Ok(h) => h,
            Err(e) => return Some(Ended::Lost(format!("reply header: {e}"))),
        };
        self.shared.saw_zxid(hdr.zxid);
        let body = r.rest().clone();
        match hdr.xid {
            XID_NOTIFICATION => self.notify(body),
            XID_PING => {
                if let Some(sent) = self.pings.pop_front() {
                    self.shared.alive_at(sent);
                }
                None
            }
            _ => match self.pending.complete(&hdr, body, self.shared) {
                Ok(Outcome::Continue) => None,
                Ok(Outcome::Closed) => Some(Ended::Closed),
                Ok(Outcome::Expired) => Some(Ended::Expired),
                Err(why) => Some(Ended::Lost(why)),
            },
        }
    }

    fn notify(&mut self, body: Bytes) -> Option<Ended> {
        let ev = match WatcherEvent::decode(body, MAX_FRAME) {
            Ok(ev) => ev,
            Err(e) => return Some(Ended::Lost(format!("notification: {e}"))),
        };
        let Some(event_type) = EventType::from_i32(ev.type_) else {
            tracing::debug!(type_ = ev.type_, "notification of unknown type ignored");
            return None;
        };
        let path = ev
            .path
            .to_lossy()
            .map(|p| p.into_owned())
            .unwrap_or_default();
        lock(&self.shared.watches).fire(&WatchedEvent { event_type, path });
        None
    }
}
