//! One client connection: a reader task (frames → decoded requests → core) and a writer task
//! (core's output → socket). The reader stops reading while the connection has
//! `max_outstanding` requests unanswered or is over its byte budget of unsent output
//! (`OutBudget`, shared with the core): backpressure instead of unbounded queues. Before the
//! handshake a connection may send one frame of at most `limits::PRE_HANDSHAKE_FRAME` bytes,
//! within `handshake_timeout`.

use crate::core::conn_id::ConnId;
use crate::core::{ConnWriter, CoreMsg, GlobalBudget, Handshake, Out, OutBudget, OutTx};
use crate::limits::{PRE_HANDSHAKE_FRAME, READER_RECHECK, WRITE_BATCH, WRITE_BUFFER};
use bytes::BytesMut;
use futures_util::StreamExt;
use palisade_proto::{ConnectRequest, Frame, FrameCodec, Reader, Record, Request, RequestHeader};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

pub struct ConnParams {
    pub max_buffer: usize,
    pub max_outstanding: usize,
    pub handshake_timeout: Duration,
    /// Bytes of unsent output a connection may have queued (`connectionOutputBudget`).
    pub output_budget: usize,
    pub global: Arc<GlobalBudget>,
}

#[derive(Debug)]
struct Shared {
    cancel: CancellationToken,
    budget: Arc<OutBudget>,
    /// Wakes the reader when output was written.
    freed: Notify,
}

/// The connection's tasks as the core reaches them (core/msg.rs `ConnWriter`): the writer
/// task's queue, and the tasks' wake-up and cancellation.
#[derive(Debug)]
struct TaskWriter {
    tx: mpsc::UnboundedSender<Out>,
    shared: Arc<Shared>,
}

impl ConnWriter for TaskWriter {
    fn hand(&self, o: Out) -> Result<(), Out> {
        self.tx.send(o).map_err(|e| e.0)
    }
    fn cancel(&self) {
        self.shared.cancel.cancel();
    }
    fn freed(&self) {
        self.shared.freed.notify_one();
    }
}

/// Who a client connection is, and where its requests go.
pub struct Client {
    pub peer: SocketAddr,
    pub conn: ConnId,
    pub core: mpsc::Sender<CoreMsg>,
    pub params: Arc<ConnParams>,
}

/// A plaintext connection: the socket's own split halves (no lock between reader and writer),
/// and a dup of it for the core, which writes replies itself when the writer task holds
/// nothing (`direct.rs`).
pub async fn serve(stream: TcpStream, client: Client) {
    use std::os::fd::AsFd;
    let _ = stream.set_nodelay(true);
    let direct = stream
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::net::TcpStream::from)
        .map(super::direct::Socket);
    let (rd, wr) = stream.into_split();
    serve_halves(rd, wr, client, None, direct).await
}

/// A connection's byte stream split in two: a plaintext socket's own halves, with `direct`
/// its dup for the core, or a TLS stream through `tokio::io::split` (no direct writes), with
/// `x509` the subject of its verified client certificate.
pub async fn serve_halves<R, W>(
    rd: R,
    wr: W,
    client: Client,
    x509: Option<Box<str>>,
    direct: Option<super::direct::Socket>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Client {
        peer,
        conn,
        core,
        params: p,
    } = client;
    let (out_tx, shared, out_rx) = output_end(conn, &p, direct);
    let writer = tokio::spawn(write_loop(wr, out_rx, shared.clone(), conn, core.clone()));
    // Until the handshake, one small frame: a ConnectRequest or a four-letter word.
    let mut frames = FramedRead::new(rd, FrameCodec::server(PRE_HANDSHAKE_FRAME));

    let first = tokio::select! {
        f = tokio::time::timeout(p.handshake_timeout, frames.next()) => f,
        _ = shared.cancel.cancelled() => Ok(None),
    };
    match first {
        Ok(Some(Ok(Frame::FourLetter(word)))) => {
            // The core answers and then closes; the writer ends after flushing.
            let _ = core
                .send(CoreMsg::FourLetter {
                    word,
                    out: out_tx,
                    peer,
                })
                .await;
        }
        Ok(Some(Ok(Frame::Packet(body)))) => match ConnectRequest::decode(body, p.max_buffer) {
            Ok(req) => {
                let (ready_tx, ready_rx) = oneshot::channel();
                let msg = CoreMsg::Connect(Handshake {
                    conn,
                    req,
                    out: out_tx,
                    peer,
                    ready: ready_tx,
                    x509,
                });
                if core.send(msg).await.is_ok() && ready_rx.await.unwrap_or(false) {
                    frames.decoder_mut().set_max_frame(p.max_buffer);
                    read_loop(&mut frames, conn, &core, &p, &shared).await;
                    let _ = core.send(CoreMsg::Closed { conn }).await;
                    shared.cancel.cancel();
                }
                // A refused handshake: the core sends its answer (if any) and then Close.
            }
            Err(e) => {
                tracing::debug!(%peer, error = %e, "malformed ConnectRequest; closing");
                shared.cancel.cancel();
            }
        },
        Ok(Some(Err(e))) => {
            tracing::debug!(%peer, error = %e, "bad first frame; closing");
            shared.cancel.cancel();
        }
        _ => shared.cancel.cancel(),
    }
    let _ = writer.await;
}

/// The connection's output end for the core (through the writer task's queue, and straight
/// to `direct` when there is one), what its tasks share, and the writer task's queue.
fn output_end(
    conn: ConnId,
    p: &ConnParams,
    direct: Option<super::direct::Socket>,
) -> (OutTx, Arc<Shared>, mpsc::UnboundedReceiver<Out>) {
    let budget = OutBudget::new(p.output_budget, p.global.clone());
    let shared = Arc::new(Shared {
        cancel: CancellationToken::new(),
        budget: budget.clone(),
        freed: Notify::new(),
    });
    let (tx, out_rx) = mpsc::unbounded_channel();
    let writer = TaskWriter {
        tx,
        shared: shared.clone(),
    };
    let mut out_tx = OutTx::new(Arc::new(writer), budget);
    if let Some(sock) = direct {
        out_tx = out_tx.with_direct(conn, Box::new(sock));
    }
    (out_tx, shared, out_rx)
}

async fn read_loop<R: AsyncRead + Unpin>(
    frames: &mut FramedRead<R, FrameCodec>,
    conn: ConnId,
    core: &mpsc::Sender<CoreMsg>,
    p: &ConnParams,
    shared: &Shared,
) {
    loop {
        // Held back while too many requests are unanswered or too much output is unsent
        // (the writer wakes us; the server-wide budget is rechecked now and then).
        while shared.budget.outstanding() >= p.max_outstanding || shared.budget.over() {
            tokio::select! {
                _ = shared.freed.notified() => {}
                _ = tokio::time::sleep(READER_RECHECK) => {}
                _ = shared.cancel.cancelled() => return,
            }
        }
        let frame = tokio::select! {
            f = frames.next() => f,
            _ = shared.cancel.cancelled() => return,
        };
        let body = match frame {
            Some(Ok(Frame::Packet(b))) => b,
            Some(Ok(Frame::FourLetter(_))) => return,
            Some(Err(e)) => {
                tracing::debug!(conn, error = %e, "framing error; closing");
                return;
            }
            None => return,
        };
        let mut r = Reader::new(body.clone(), p.max_buffer);
        let Ok(h) = RequestHeader::read(&mut r) else {
            tracing::debug!(conn, "frame too short for a request header; closing");
            return;
        };
        // Bytes after the request record are ignored, as ZooKeeper's server ignores them.
        let msg = match Request::decode_prefix(h.type_, &mut r) {
            Ok(req) => CoreMsg::Request {
                conn,
                xid: h.xid,
                req,
                frame: body,
            },
            Err(error) => {
                tracing::debug!(conn, op = h.type_, %error, "request did not decode");
                CoreMsg::Bad {
                    conn,
                    xid: h.xid,
                    op: h.type_,
                    error,
                }
            }
        };
        shared.budget.read_one();
        if core.send(msg).await.is_err() {
            return;
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
    shared: Arc<Shared>,
    conn: ConnId,
    core: mpsc::Sender<CoreMsg>,
) {
    let budget = &shared.budget;
    let mut buf = BytesMut::with_capacity(WRITE_BUFFER);
    'outer: loop {
        let first = tokio::select! {
            o = rx.recv() => match o {
                Some(o) => o,
                None => break,
            },
            _ = shared.cancel.cancelled() => break,
        };
        let (mut close, mut replies, mut weight) = (false, 0usize, (0usize, 0usize));
        let mut items = 0;
        let mut next = Some(first);
        while let Some(o) = next.take() {
            items += 1;
            let w = o.weight();
            weight = (weight.0 + w.0, weight.1 + w.1);
            match o {
                Out::Bytes(b) | Out::Event(b) => buf.extend_from_slice(&b),
                Out::Reply(b) => {
                    replies += 1;
                    buf.extend_from_slice(&b);
                }
                Out::Batch {
                    bytes, replies: r, ..
                } => {
                    replies += r;
                    buf.extend_from_slice(&bytes);
                }
                Out::Close => close = true,
            }
            if !close && buf.len() < WRITE_BATCH {
                next = rx.try_recv().ok();
            }
        }
        let written = tokio::select! {
            // Flushed at its end: a no-op on a socket; pushes out what a TLS stream still holds.
            ok = write_counted(&mut wr, &buf, budget) => ok,
            _ = shared.cancel.cancelled() => false,
        };
        if !written {
            budget.release(weight);
            budget.done_with(items);
            break 'outer;
        }
        buf.clear();
        budget.wrote(weight);
        budget.answered(replies);
        shared.freed.notify_one();
        let (own, global) = budget.lifted();
        if own && core.send(CoreMsg::Drained(Some(conn))).await.is_err() {
            break;
        }
        if global && core.send(CoreMsg::Drained(None)).await.is_err() {
            break;
        }
        // Last: only now may the core write to the socket itself again.
        budget.done_with(items);
        if close {
            break;
        }
    }
    shared.cancel.cancel();
    // What is still queued will never be written: give it back to the budgets.
    rx.close();
    while let Ok(o) = rx.try_recv() {
        budget.release(o.weight());
    }
    let _ = wr.shutdown().await;
}

/// Writes all of `buf`, counting each part that reaches the socket as the client's progress
/// (a slow reader's backlog drains in parts; the core looks at progress for liveness).
async fn write_counted<W: AsyncWrite + Unpin>(wr: &mut W, buf: &[u8], budget: &OutBudget) -> bool {
    let mut rest = buf;
    while !rest.is_empty() {
        match wr.write(rest).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                budget.progress(n);
                rest = rest.get(n..).unwrap_or_default();
            }
        }
    }
    wr.flush().await.is_ok()
}
