//! A link's frames: a u32 big-endian length, then a postcard body. The announced length is
//! checked against the link's cap before anything is reserved; the body's bytes are counted
//! against the member's frames-in-flight budget while they are read, and must all arrive
//! within a deadline once the length has.

use crate::limits::{PEER_FRAMES_IN_FLIGHT, PEER_FRAME_DEADLINE};
use serde::{Deserialize, Serialize};
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

/// The budget's unit: a frame reserves its length rounded up to KiB.
const UNIT: usize = 1 << 10;

/// Bytes of frames being read on all of a member's links at once.
#[derive(Clone)]
pub struct FrameBudget(Arc<Semaphore>);

impl Default for FrameBudget {
    fn default() -> Self {
        FrameBudget::new(PEER_FRAMES_IN_FLIGHT)
    }
}

impl FrameBudget {
    pub fn new(bytes: usize) -> Self {
        FrameBudget(Arc::new(Semaphore::new(bytes.div_ceil(UNIT))))
    }

    /// Free units (for tests).
    pub fn available(&self) -> usize {
        self.0.available_permits().saturating_mul(UNIT)
    }
}

pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
    w: &mut W,
    msg: &T,
    cap: u32,
) -> io::Result<()> {
    // The body is encoded behind room for its length, which is then filled in: one buffer,
    // one write, no copy of a body that can hold a 1 MiB batch.
    let mut buf = postcard::to_extend(msg, vec![0u8; 4]).map_err(io::Error::other)?;
    let body = buf.len().saturating_sub(4);
    let len = u32::try_from(body)
        .ok()
        .filter(|l| *l <= cap)
        .ok_or_else(|| io::Error::other(format!("frame of {body} bytes too large")))?;
    if let Some(head) = buf.first_chunk_mut::<4>() {
        *head = len.to_be_bytes();
    }
    w.write_all(&buf).await?;
    w.flush().await
}

/// Reads one frame of at most `cap` bytes. `Ok(None)`: the peer closed the link between
/// frames. Read links through a `BufReader`, so that a frame's length and a small body come
/// in one read call.
pub async fn read_frame<R: AsyncRead + Unpin, T: for<'a> Deserialize<'a>>(
    r: &mut R,
    cap: u32,
    budget: &FrameBudget,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len);
    if len > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("peer frame of {len} bytes announced (max {cap})"),
        ));
    }
    let size = len as usize;
    // The reservation is held until the body is decoded.
    let (body, _held) = tokio::time::timeout(PEER_FRAME_DEADLINE, async {
        let units = u32::try_from(size.div_ceil(UNIT)).unwrap_or(u32::MAX);
        let held = budget
            .0
            .clone()
            .acquire_many_owned(units)
            .await
            .map_err(|_| io::Error::other("frame budget closed"))?;
        let mut body = Vec::with_capacity(size.min(crate::limits::PEER_FRAME_RESERVE));
        let got = r.take(u64::from(len)).read_to_end(&mut body).await?;
        if got != size {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        Ok::<_, io::Error>((body, held))
    })
    .await
    .map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("a peer frame of {len} bytes did not arrive within {PEER_FRAME_DEADLINE:?}"),
        )
    })??;
    postcard::from_bytes(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
