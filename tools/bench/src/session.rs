//! One session over the wire protocol: the handshake, then either pipelined requests (up to
//! `inflight` unanswered, replies matched in order — the server answers in request order) or
//! one call at a time. Watch notifications are queued, never dropped, for the recipes that
//! wait on them.
//!
//! `--server` may name an ensemble, `host:port,host:port,…`: session i then connects to host
//! i mod n (one counter for the whole process) and, before it is used, waits for a `sync` of
//! "/", so that it sees every write acknowledged before it connected — the nodes a set-up
//! session created through another member included.

use bytes::{Buf, Bytes, BytesMut};
use palisade_proto::*;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub struct Session {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    xid: i32,
    /// Notifications received while waiting for replies.
    events: VecDeque<WatcherEvent>,
}

/// A reply: header, body, and the time from sending the request to reading the reply.
pub struct Reply {
    pub header: ReplyHeader,
    pub body: Bytes,
    pub latency: Duration,
}

pub fn err(e: impl std::fmt::Display) -> io::Error {
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

/// A frame split into its header and body.
fn split(mut frame: Bytes) -> io::Result<(ReplyHeader, Bytes)> {
    if frame.len() < 16 {
        return Err(err("short reply"));
    }
    let header = ReplyHeader {
        xid: frame.get_i32(),
        zxid: frame.get_i64(),
        err: frame.get_i32(),
    };
    Ok((header, frame))
}

/// The members of a `--server` list.
pub fn hosts(server: &str) -> Vec<&str> {
    server
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect()
}

/// Sessions connected so far, for the round-robin over an ensemble's members.
static NEXT_HOST: AtomicUsize = AtomicUsize::new(0);

/// The address the next session connects to, and whether it must sync first (several hosts).
/// One host is used as given, so a standalone run is what it always was.
pub fn next_host(server: &str) -> (&str, bool) {
    let hosts = hosts(server);
    if hosts.len() <= 1 {
        return (server, false);
    }
    let i = NEXT_HOST.fetch_add(1, Ordering::Relaxed);
    (hosts[i % hosts.len()], true)
}

pub fn sync_root() -> Request {
    Request::Sync(SyncRequest {
        path: JStr::from("/"),
    })
}

impl Session {
    /// A session on `server` (one host, or the next member of a list; see the module doc).
    pub async fn connect(server: &str, timeout_ms: i32) -> io::Result<Session> {
        let (addr, sync) = next_host(server);
        let mut s = Session::connect_to(addr, timeout_ms).await?;
        if sync {
            let r = s.call(sync_root()).await?;
            if r.header.err != 0 {
                return Err(err(format!("sync on {addr}: error {}", r.header.err)));
            }
        }
        Ok(s)
    }

    async fn connect_to(addr: &str, timeout_ms: i32) -> io::Result<Session> {
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
            events: VecDeque::new(),
        })
    }

    /// Runs requests from `next(i)` for i = 0.. until `next` returns None or `stop` is reached,
    /// with at most `inflight` unanswered; `done` sees each reply in order with its index.
    pub async fn pipeline(
        &mut self,
        inflight: usize,
        stop: Option<Instant>,
        mut next: impl FnMut(u64) -> Option<Request>,
        mut done: impl FnMut(u64, Reply),
    ) -> io::Result<u64> {
        let mut sent: VecDeque<(u64, i32, Instant)> = VecDeque::with_capacity(inflight);
        let mut out = BytesMut::with_capacity(64 << 10);
        let mut i = 0u64;
        let mut exhausted = false;
        loop {
            if stop.is_some_and(|s| Instant::now() >= s) {
                exhausted = true;
            }
            // Refill the window only when no whole reply is waiting in the read buffer: one
            // write per batch of replies rather than one per reply (the load generator shares
            // the machine's cores with the server, so its syscalls count).
            while !exhausted && sent.len() < inflight.max(1) && !self.reply_buffered() {
                let Some(req) = next(i) else {
                    exhausted = true;
                    break;
                };
                self.xid = self.xid.wrapping_add(1).max(1);
                let frame = req.encode(self.xid);
                out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
                out.extend_from_slice(&frame);
                sent.push_back((i, self.xid, Instant::now()));
                i += 1;
            }
            if !out.is_empty() {
                self.writer.write_all(&out).await?;
                out.clear();
            }
            if sent.is_empty() {
                return Ok(i);
            }
            let (header, body) = split(read_frame(&mut self.reader).await?)?;
            if header.xid == -1 {
                self.events
                    .push_back(WatcherEvent::decode(body, usize::MAX).map_err(err)?);
                continue;
            }
            let Some((idx, xid, at)) = sent.pop_front() else {
                return Err(err("reply with nothing outstanding"));
            };
            if header.xid != xid {
                return Err(err(format!("reply xid {} for request {xid}", header.xid)));
            }
            done(
                idx,
                Reply {
                    header,
                    body,
                    latency: at.elapsed(),
                },
            );
        }
    }

    /// A whole frame is already in the read buffer.
    fn reply_buffered(&self) -> bool {
        let b = self.reader.buffer();
        b.get(..4)
            .and_then(|l| <[u8; 4]>::try_from(l).ok())
            .is_some_and(|l| b.len() >= 4 + i32::from_be_bytes(l).max(0) as usize)
    }

    /// One request, waited for.
    pub async fn call(&mut self, req: Request) -> io::Result<Reply> {
        let mut req = Some(req);
        let mut reply = None;
        self.pipeline(1, None, |_| req.take(), |_, r| reply = Some(r))
            .await?;
        reply.ok_or_else(|| err("no reply"))
    }

    /// The next watch notification (queued, or read from the socket), waiting at most `limit`.
    pub async fn next_event(&mut self, limit: Duration) -> io::Result<WatcherEvent> {
        if let Some(e) = self.events.pop_front() {
            return Ok(e);
        }
        let read = async {
            loop {
                let (header, body) = split(read_frame(&mut self.reader).await?)?;
                if header.xid == -1 {
                    return WatcherEvent::decode(body, usize::MAX).map_err(err);
                }
                // A ping answer or a stray reply: nothing is outstanding, so ignore it.
            }
        };
        tokio::time::timeout(limit, read)
            .await
            .map_err(|_| err("no notification in time"))?
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

pub fn create(path: impl Into<String>, data: Bytes, flags: i32) -> Request {
    Request::Create(CreateRequest {
        path: JStr::from(path.into()),
        data: Some(data),
        acl: Some(open_acl()),
        flags,
    })
}

pub fn get_data(path: impl Into<String>, watch: bool) -> Request {
    Request::GetData(GetDataRequest {
        path: JStr::from(path.into()),
        watch,
    })
}

pub fn set_data(path: impl Into<String>, data: Bytes) -> Request {
    Request::SetData(SetDataRequest {
        path: JStr::from(path.into()),
        data: Some(data),
        version: -1,
    })
}

pub fn exists(path: impl Into<String>, watch: bool) -> Request {
    Request::Exists(ExistsRequest {
        path: JStr::from(path.into()),
        watch,
    })
}

pub fn get_children(path: impl Into<String>) -> Request {
    Request::GetChildren(GetChildrenRequest {
        path: JStr::from(path.into()),
        watch: false,
    })
}

pub fn delete(path: impl Into<String>) -> Request {
    Request::Delete(DeleteRequest {
        path: JStr::from(path.into()),
        version: -1,
    })
}

/// The path in a create reply.
pub fn created_path(r: &Reply) -> io::Result<String> {
    let c = CreateResponse::decode(r.body.clone(), usize::MAX).map_err(err)?;
    Ok(c.path.as_str().unwrap_or("").to_string())
}

/// The names in a getChildren reply.
pub fn children(r: &Reply) -> io::Result<Vec<String>> {
    let c = GetChildrenResponse::decode(r.body.clone(), usize::MAX).map_err(err)?;
    Ok(c.children
        .unwrap_or_default()
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists() {
        assert_eq!(hosts("127.0.0.1:2181"), ["127.0.0.1:2181"]);
        assert_eq!(
            hosts("127.0.0.1:1, 127.0.0.1:2,127.0.0.1:3,"),
            ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
        );
        // One host: as given, no sync.
        assert_eq!(next_host("127.0.0.1:2181"), ("127.0.0.1:2181", false));
        // Several: round robin from the process-wide counter (other tests may take turns, so
        // three in a row cover every member whatever the start).
        let list = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3";
        let mut seen: Vec<&str> = (0..3)
            .map(|_| {
                let (h, sync) = next_host(list);
                assert!(sync);
                h
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, hosts(list));
    }
}
