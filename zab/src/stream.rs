//! Incremental decoding of one direction of a quorum link: push the bytes as they arrive,
//! take whole frames out. There is no length prefix, so a packet is known whole only when
//! its lengths have been walked (`scan.rs`); after a SNAP from the leader the stream
//! carries the snapshot, unframed, and the decoder walks that too.
//!
//! Bounded: every buffer, every packet and the snapshot have a limit, checked as soon as the
//! length that would exceed it is read, never by allocating the announced size. An error is
//! final: the bytes after it cannot be framed, so the connection must be dropped.

use crate::error::CodecError;
use crate::packet::{Body, Direction, Packet};
use crate::scan::{Scan, Stop};
use crate::snapshot::{SnapItem, SnapScan, SnapshotEnd, Walked};
use bytes::{Buf, BytesMut};
use palisade_proto::{QuorumPacket, Record, DEFAULT_MAX_BUFFER};

/// How large things may be on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest buffer or string: ZooKeeper's BinaryInputArchive accepts jute.maxbuffer +
    /// zookeeper.jute.maxbuffer.extrasize, and a txn may exceed jute.maxbuffer alone (a
    /// setData of a value just under it, plus the path, header and digest).
    pub max_buffer: usize,
    /// The largest whole packet (its data, header and authinfo).
    pub max_packet: u64,
    /// The largest snapshot after SNAP. ZooKeeper has no bound; a learner must have one.
    pub max_snapshot: u64,
    /// The snapshot is handed on in batches of items of about this many bytes: what the
    /// decoder holds of it at once (with one item and one read).
    pub snapshot_batch: usize,
}

impl Limits {
    /// ZooKeeper's own per-buffer bound for these settings (extrasize defaults to
    /// jute.maxbuffer, and is at least 1024), 64 KiB more for a packet's header and
    /// authinfo, a snapshot bound of `max_snapshot` bytes, handed on in 1 MiB batches.
    pub fn zookeeper(jute_maxbuffer: usize, extrasize: usize, max_snapshot: u64) -> Limits {
        let max_buffer = jute_maxbuffer.saturating_add(extrasize.max(1024));
        Limits {
            max_buffer,
            max_packet: max_buffer as u64 + 64 * 1024,
            max_snapshot,
            snapshot_batch: 1 << 20,
        }
    }
}

impl Default for Limits {
    /// ZooKeeper's defaults (jute.maxbuffer 0xfffff, extrasize the same) and snapshots of
    /// up to 4 GiB.
    fn default() -> Self {
        Limits::zookeeper(DEFAULT_MAX_BUFFER, DEFAULT_MAX_BUFFER, 4 << 30)
    }
}

/// One unit of a stream: a packet, or a part of the snapshot that follows a SNAP (batches of
/// its items, then its end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Packet(Packet),
    SnapshotItems(Vec<SnapItem>),
    SnapshotEnd(SnapshotEnd),
}

impl Frame {
    /// Appends the frame's bytes as they go on the wire.
    pub fn write(&self, w: &mut BytesMut) {
        match self {
            Frame::Packet(p) => p.write(w),
            Frame::SnapshotItems(items) => items.iter().for_each(|i| i.write(w)),
            Frame::SnapshotEnd(e) => e.write(w),
        }
    }
}

/// Decodes what one side of a link sends.
#[derive(Debug)]
pub struct Decoder {
    dir: Direction,
    limits: Limits,
    buf: BytesMut,
    /// Set after a SNAP from the leader, until the snapshot has been taken out.
    snapshot: Option<SnapScan>,
    failed: Option<CodecError>,
}

impl Decoder {
    /// A decoder for the bytes sent in direction `dir` (a learner decodes `FromLeader`).
    pub fn new(dir: Direction, limits: Limits) -> Decoder {
        Decoder {
            dir,
            limits,
            buf: BytesMut::new(),
            snapshot: None,
            failed: None,
        }
    }

    /// Appends bytes received from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_none() {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// Bytes received and not yet taken out as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether the decoder is inside the snapshot that follows a SNAP.
    pub fn in_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }

    /// The next whole frame: `Ok(None)` until more bytes arrive. After an error, every call
    /// returns that error.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, CodecError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.decode();
        if let Err(e) = &r {
            self.failed = Some(e.clone());
            self.buf = BytesMut::new();
        }
        r
    }

    fn decode(&mut self) -> Result<Option<Frame>, CodecError> {
        let l = self.limits;
        if let Some(scan) = &mut self.snapshot {
            let walked = scan.advance(&self.buf, l.max_buffer, l.max_snapshot, l.snapshot_batch)?;
            return Ok(match walked {
                Walked::Items { items, used } => {
                    self.buf.advance(used);
                    (!items.is_empty()).then_some(Frame::SnapshotItems(items))
                }
                Walked::End { end, used } => {
                    self.buf.advance(used);
                    self.snapshot = None;
                    Some(Frame::SnapshotEnd(end))
                }
            });
        }
        let len = match packet_len(&self.buf, l) {
            Ok(n) => n,
            Err(Stop::Incomplete) => return Ok(None),
            Err(Stop::Bad(e)) => return Err(e),
        };
        let bytes = self.buf.split_to(len).freeze();
        let qp = QuorumPacket::decode(bytes, l.max_buffer)
            .map_err(|e| CodecError::Packet(e.to_string()))?;
        let p = Packet::from_quorum_packet(qp, self.dir)?;
        if matches!(p.body, Body::Snap) {
            self.snapshot = Some(SnapScan::new());
        }
        Ok(Some(Frame::Packet(p)))
    }
}

/// The length of the QuorumPacket at the start of `b`, once all of it is there.
fn packet_len(b: &[u8], l: Limits) -> Result<usize, Stop> {
    let mut s = Scan::new(b, 0, l.max_buffer, l.max_packet, "packet");
    s.int()?; // type
    s.long()?; // zxid
    s.buffer("packet data")?;
    // Each Id is two strings, 8 bytes at least.
    if let Some(n) = s.count("authinfo", 8)? {
        for _ in 0..n {
            s.buffer("authinfo scheme")?;
            s.buffer("authinfo id")?;
        }
    }
    Ok(s.at)
}
