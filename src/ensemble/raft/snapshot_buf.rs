//! A Raft snapshot's bytes as openraft moves them (`TypeConfig::SnapshotData`): in memory when
//! this member built or read the snapshot to send it, in a file beside the log while it is
//! received from the leader — chunk by chunk, so receiving a snapshot of any size holds no
//! more than a chunk in memory (the chunks' order and bound are checked before they are
//! written: `peer.rs` `Incoming`).

use std::io::{self, Cursor, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWrite, ReadBuf};

/// Where a snapshot being received is written (one at a time: openraft receives one stream).
pub const INCOMING: &str = "raft-snapshot.incoming";

pub enum SnapshotBuf {
    Memory(Cursor<Vec<u8>>),
    File {
        file: tokio::fs::File,
        path: PathBuf,
    },
}

impl SnapshotBuf {
    pub fn memory(data: Vec<u8>) -> SnapshotBuf {
        SnapshotBuf::Memory(Cursor::new(data))
    }

    /// An empty file in `dir` to receive a snapshot into (any earlier one replaced).
    pub async fn receive_in(dir: &Path) -> io::Result<SnapshotBuf> {
        let path = dir.join(INCOMING);
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .await?;
        Ok(SnapshotBuf::File { file, path })
    }

    /// The bytes, read back whole (a received file is then removed).
    pub async fn into_bytes(self) -> io::Result<Vec<u8>> {
        match self {
            SnapshotBuf::Memory(c) => Ok(c.into_inner()),
            SnapshotBuf::File { mut file, path } => {
                let len = file.seek(SeekFrom::End(0)).await?;
                file.seek(SeekFrom::Start(0)).await?;
                let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                file.read_to_end(&mut out).await?;
                drop(file);
                let _ = tokio::fs::remove_file(&path).await;
                Ok(out)
            }
        }
    }

    /// The bytes, if they are in memory (tests).
    pub fn into_memory(self) -> Option<Vec<u8>> {
        match self {
            SnapshotBuf::Memory(c) => Some(c.into_inner()),
            SnapshotBuf::File { .. } => None,
        }
    }

    /// The bytes in memory, if they are there (tests).
    pub fn in_memory(&self) -> Option<&[u8]> {
        match self {
            SnapshotBuf::Memory(c) => Some(c.get_ref()),
            SnapshotBuf::File { .. } => None,
        }
    }
}

impl AsyncRead for SnapshotBuf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).poll_read(cx, buf),
            SnapshotBuf::File { file, .. } => Pin::new(file).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for SnapshotBuf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).poll_write(cx, buf),
            SnapshotBuf::File { file, .. } => Pin::new(file).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).poll_flush(cx),
            SnapshotBuf::File { file, .. } => Pin::new(file).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).poll_shutdown(cx),
            SnapshotBuf::File { file, .. } => Pin::new(file).poll_shutdown(cx),
        }
    }
}

impl AsyncSeek for SnapshotBuf {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).start_seek(position),
            SnapshotBuf::File { file, .. } => Pin::new(file).start_seek(position),
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match self.get_mut() {
            SnapshotBuf::Memory(c) => Pin::new(c).poll_complete(cx),
            SnapshotBuf::File { file, .. } => Pin::new(file).poll_complete(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// As openraft receives: chunks written in order (one again, as a retry, after a seek
    /// back), then shut down, then read whole; the file goes once read.
    #[tokio::test]
    async fn a_received_snapshot_goes_to_a_file_and_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = SnapshotBuf::receive_in(dir.path()).await.unwrap();
        b.write_all(b"hello ").await.unwrap();
        b.write_all(b"wor").await.unwrap();
        b.seek(SeekFrom::Start(6)).await.unwrap();
        b.write_all(b"world").await.unwrap();
        b.shutdown().await.unwrap();
        assert!(b.in_memory().is_none());
        assert!(dir.path().join(INCOMING).exists());
        assert_eq!(b.into_bytes().await.unwrap(), b"hello world");
        assert!(!dir.path().join(INCOMING).exists());
        let m = SnapshotBuf::memory(b"abc".to_vec());
        assert_eq!(m.into_bytes().await.unwrap(), b"abc");
    }
}
