//! One pipelined session: the handshake, then requests written back to back with up to
//! `inflight` unanswered, replies matched in order (the server answers in request order),
//! each reply's latency recorded.

use bytes::{Buf, Bytes, BytesMut};
use palisade_proto::*;
use std::collections::VecDeque;
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub struct Session {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    xid: i32,
}

/// A reply: its header (workloads that read bodies or latencies will add them here).
pub struct Reply {
    pub header: ReplyHeader,
}

fn err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

async fn read_frame(r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> io::Result<Bytes> {
    let n = r.read_i32().await?;
    if !(0..=64 << 20).contains(&n) {
        return Err(err(format!("bad frame length {n}")));
    }
    let mut buf = BytesMut::zeroed(n as usize);
    r.read_exact(&mut buf).await?;
    Ok(buf.freeze())
}

impl Session {
    pub async fn connect(addr: &str, timeout_ms: i32) -> io::Result<Session> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (r, mut writer) = stream.into_split();
        let mut reader = BufReader::with_capacity(1 << 16, r);
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: timeout_ms,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
        };
        let body = req.encode();
        let mut msg = BytesMut::with_capacity(body.len() + 4);
        msg.extend_from_slice(&(body.len() as i32).to_be_bytes());
        msg.extend_from_slice(&body);
        writer.write_all(&msg).await?;
        let resp =
            ConnectResponse::decode(read_frame(&mut reader).await?, usize::MAX).map_err(err)?;
        if resp.time_out <= 0 {
            return Err(err("session refused"));
        }
        Ok(Session {
            reader,
            writer,
            xid: 0,
        })
    }

    /// Runs `n` requests from `next(i)` with at most `inflight` unanswered; `done` sees each
    /// reply (with the index of its request) in order.
    pub async fn pipeline(
        &mut self,
        n: u64,
        inflight: usize,
        mut next: impl FnMut(u64) -> Request,
        mut done: impl FnMut(u64, Reply),
    ) -> io::Result<()> {
        let mut sent: VecDeque<(u64, i32)> = VecDeque::with_capacity(inflight);
        let mut out = BytesMut::with_capacity(64 << 10);
        let mut i = 0u64;
        let mut answered = 0u64;
        while answered < n {
            // Fill the window, then flush once.
            while i < n && sent.len() < inflight.max(1) {
                self.xid = self.xid.wrapping_add(1).max(1);
                let frame = next(i).encode(self.xid);
                out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
                out.extend_from_slice(&frame);
                sent.push_back((i, self.xid));
                i += 1;
            }
            if !out.is_empty() {
                self.writer.write_all(&out).await?;
                out.clear();
            }
            let mut frame = read_frame(&mut self.reader).await?;
            // The body is left unread: no workload here needs it yet.
            if frame.len() < 16 {
                return Err(err("short reply"));
            }
            let header = ReplyHeader {
                xid: frame.get_i32(),
                zxid: frame.get_i64(),
                err: frame.get_i32(),
            };
            if header.xid == -1 {
                continue; // a notification
            }
            let Some((idx, xid)) = sent.pop_front() else {
                return Err(err("reply with nothing outstanding"));
            };
            if header.xid != xid {
                return Err(err(format!("reply xid {} for request {xid}", header.xid)));
            }
            answered += 1;
            done(idx, Reply { header });
        }
        Ok(())
    }

    /// One request, waited for.
    pub async fn call(&mut self, req: Request) -> io::Result<Reply> {
        let mut reply = None;
        self.pipeline(1, 1, |_| req.clone(), |_, r| reply = Some(r))
            .await?;
        reply.ok_or_else(|| err("no reply"))
    }
}

pub fn open_acl() -> Vec<ACL> {
    vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }]
}

pub fn create(path: String, data: Bytes, flags: i32) -> Request {
    Request::Create(CreateRequest {
        path: JStr::from(path),
        data: Some(data),
        acl: Some(open_acl()),
        flags,
    })
}
