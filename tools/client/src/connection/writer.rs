//! The write half of a connection, owned by its own task so the connection loop never blocks
//! on a full socket while the server may be blocked writing to us. Frames waiting together go
//! out in one write.

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

/// Batches up to this much into one write.
const BATCH_BYTES: usize = 256 << 10;

/// Spawns the writer; it ends (closing the write half) when the sender is dropped or a write
/// fails. The connection loop notices the latter through `Sender::closed`.
pub(crate) fn spawn(mut w: OwnedWriteHalf) -> mpsc::UnboundedSender<Bytes> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(async move {
        let mut buf = BytesMut::new();
        while let Some(first) = rx.recv().await {
            buf.extend_from_slice(&first);
            while buf.len() < BATCH_BYTES {
                match rx.try_recv() {
                    Ok(more) => buf.extend_from_slice(&more),
                    Err(_) => break,
                }
            }
            if w.write_all(&buf).await.is_err() {
                return;
            }
            buf.clear();
        }
        let _ = w.shutdown().await;
    });
    tx
}
