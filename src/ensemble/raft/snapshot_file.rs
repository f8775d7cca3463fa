//! The member's current Raft snapshot on disk, `raft-snapshot`, replaced atomically each time
//! one is built or installed: openraft purges the log up to a snapshot, so a member restarts
//! from this file plus the log after it. (The fuzzy snapshot files of `durability/` are the
//! eventual format: docs/design/ENSEMBLE.md.)
//!
//! Layout: magic "PLSN", format 1 (u32 LE), the metadata's length (u32 LE), the metadata
//! (postcard `SnapshotMeta`), the applier's bytes, then a crc32 (LE) of everything before it.

use super::sealed::replace_file_parts;
use super::types::{Node, NodeId};
use openraft::SnapshotMeta;
use std::io;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"PLSN";
const FORMAT: u32 = 1;

pub const FILE: &str = "raft-snapshot";

/// A saved snapshot: its metadata and the applier's bytes.
pub type Saved = (SnapshotMeta<NodeId, Node>, Vec<u8>);

#[derive(Clone)]
pub struct SnapshotFile {
    dir: PathBuf,
}

impl SnapshotFile {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SnapshotFile { dir: dir.into() }
    }

    /// The directory the file is in.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Makes (meta, data) the saved snapshot, durably, before returning.
    pub fn save(&self, meta: &SnapshotMeta<NodeId, Node>, data: &[u8]) -> io::Result<()> {
        let meta = postcard::to_allocvec(meta).map_err(io::Error::other)?;
        let meta_len = u32::try_from(meta.len()).map_err(io::Error::other)?;
        let mut head = Vec::with_capacity(12 + meta.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&FORMAT.to_le_bytes());
        head.extend_from_slice(&meta_len.to_le_bytes());
        head.extend_from_slice(&meta);
        // Written in parts: the image can be the size of the tree.
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        crc.update(data);
        let crc = crc.finalize().to_le_bytes();
        replace_file_parts(&self.dir, FILE, &[&head, data, &crc])
    }

    /// [`save`](Self::save) on tokio's blocking pool, handing `data` back. The Raft runtime
    /// is one thread: a snapshot of 100+ MB copied, checksummed, written and synced on it
    /// held up heartbeats and votes for hundreds of ms (a leader under heavy writes saw its
    /// own quorum lease lapse and dropped its clients).
    pub async fn save_off_thread(
        &self,
        meta: &SnapshotMeta<NodeId, Node>,
        data: Vec<u8>,
    ) -> (io::Result<()>, Vec<u8>) {
        let (file, meta) = (self.clone(), meta.clone());
        let saved = tokio::task::spawn_blocking(move || {
            let r = file.save(&meta, &data);
            (r, data)
        })
        .await;
        match saved {
            Ok(done) => done,
            // The closure panicked or the runtime is shutting down: the data went with it.
            Err(e) => (Err(io::Error::other(e)), Vec::new()),
        }
    }

    /// The saved snapshot, if any. A damaged file is an error: the log it replaced is gone.
    pub fn read(&self) -> io::Result<Option<Saved>> {
        let path = self.dir.join(FILE);
        match std::fs::read(&path) {
            Ok(b) => decode(&path, &b).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn decode(path: &Path, b: &[u8]) -> io::Result<Saved> {
    let bad = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: {why}; the Raft snapshot cannot be trusted, refusing to start",
                path.display()
            ),
        )
    };
    let (body, crc) = b
        .split_last_chunk::<4>()
        .ok_or_else(|| bad("too short".into()))?;
    if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
        return Err(bad("checksum mismatch".into()));
    }
    let (head, rest) = body
        .split_first_chunk::<12>()
        .ok_or_else(|| bad("too short".into()))?;
    if head[..4] != MAGIC[..] || head[4..8] != FORMAT.to_le_bytes() {
        return Err(bad("not a snapshot file of format 1".into()));
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&head[8..12]);
    let (meta, data) = usize::try_from(u32::from_le_bytes(len))
        .ok()
        .and_then(|l| rest.split_at_checked(l))
        .ok_or_else(|| bad("metadata length past the end".into()))?;
    let meta = postcard::from_bytes(meta).map_err(|e| bad(format!("metadata: {e}")))?;
    Ok((meta, data.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership};

    fn meta() -> SnapshotMeta<NodeId, Node> {
        let log_id = LogId::new(CommittedLeaderId::new(2, 1), 9);
        SnapshotMeta {
            last_log_id: Some(log_id),
            last_membership: StoredMembership::new(
                Some(log_id),
                Membership::new(vec![[1u64, 2, 3].into()], None),
            ),
            snapshot_id: "2-1-9-1".into(),
        }
    }

    #[test]
    fn snapshots_read_back_and_damage_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = SnapshotFile::new(d.path());
        assert!(f.read().unwrap().is_none());
        let meta = meta();
        f.save(&meta, b"state bytes").unwrap();
        let (m, data) = f.read().unwrap().unwrap();
        assert_eq!((m, data.as_slice()), (meta, &b"state bytes"[..]));
        let path = d.path().join(FILE);
        let good = std::fs::read(&path).unwrap();
        for at in [0, 5, 9, 14, good.len() - 6, good.len() - 1] {
            let mut b = good.clone();
            b[at] ^= 0x40;
            std::fs::write(&path, &b).unwrap();
            assert!(f.read().is_err(), "byte {at} flipped was accepted");
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(f.read().is_err());
    }

    /// The Raft runtime is one thread: while a big snapshot is saved, its other tasks
    /// (heartbeats, votes) must go on. A task ticking every millisecond on the same
    /// current-thread runtime ticks during the save; with the save done in place it could not
    /// tick at all until the save returned.
    #[test]
    fn a_snapshot_is_saved_off_the_raft_thread() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let d = tempfile::tempdir().unwrap();
            let f = SnapshotFile::new(d.path());
            let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let t = ticks.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    t.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
            tokio::task::yield_now().await;
            let data = vec![7u8; 64 << 20];
            let before = ticks.load(std::sync::atomic::Ordering::SeqCst);
            let (saved, back) = f.save_off_thread(&meta(), data).await;
            let during = ticks.load(std::sync::atomic::Ordering::SeqCst) - before;
            ticker.abort();
            saved.unwrap();
            assert_eq!(back.len(), 64 << 20, "the data is handed back");
            assert!(during > 0, "the runtime was held up for the whole save");
            let (_, read) = f.read().unwrap().unwrap();
            assert_eq!(read.len(), 64 << 20);
        });
    }
}
