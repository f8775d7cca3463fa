//! Reading the golden streams of zab/testdata (format: testdata/README.md).
#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use palisade_zab::auth::starts_with_magic;
use palisade_zab::{AuthDecoder, AuthPacket, Decoder, Direction, Frame, Limits};
use std::path::{Path, PathBuf};

pub struct Stream {
    pub name: String,
    /// (direction of the bytes, the bytes of one proxy read), in the order read.
    pub chunks: Vec<(Direction, Bytes)>,
    /// Recording stopped while the connection went on: the last packet may be incomplete.
    pub cut: bool,
}

impl Stream {
    pub fn bytes(&self, dir: Direction) -> Bytes {
        let mut b = BytesMut::new();
        for (d, c) in &self.chunks {
            if *d == dir {
                b.extend_from_slice(c);
            }
        }
        b.freeze()
    }
}

pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

pub fn streams() -> Vec<Stream> {
    let mut paths: Vec<_> = std::fs::read_dir(testdata())
        .expect("testdata")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stream"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 5, "golden streams missing: {paths:?}");
    // The QuorumPackets of each: a quorum SASL exchange before them taken off; a stream
    // that is nothing but an exchange (refused) has none.
    paths
        .iter()
        .map(|p| split_auth(read(p)).1)
        .filter(|s| !s.chunks.is_empty())
        .collect()
}

/// The QuorumAuthPackets each side sent before its first QuorumPacket (quorum SASL;
/// learner's, then leader's), and the stream without them.
pub fn split_auth(s: Stream) -> ([Vec<AuthPacket>; 2], Stream) {
    let mut packets = [Vec::new(), Vec::new()];
    let mut skip = [0usize; 2];
    for (i, dir) in [Direction::FromLearner, Direction::FromLeader]
        .into_iter()
        .enumerate()
    {
        let mut rest = s.bytes(dir);
        while starts_with_magic(&rest) == Some(true) {
            let mut d = AuthDecoder::new(4096, 1);
            d.push(&rest);
            let p = d.next_packet().unwrap().expect("a whole QuorumAuthPacket");
            let left = d.into_rest().len();
            skip[i] += rest.len() - left;
            rest = rest.slice(rest.len() - left..);
            packets[i].push(p);
        }
    }
    let mut chunks = Vec::new();
    for (dir, c) in s.chunks {
        let i = usize::from(dir == Direction::FromLeader);
        let drop = skip[i].min(c.len());
        skip[i] -= drop;
        if drop < c.len() {
            chunks.push((dir, c.slice(drop..)));
        }
    }
    (packets, Stream { chunks, ..s })
}

pub fn stream(name: &str) -> Stream {
    read(&testdata().join(format!("{name}.stream")))
}

fn read(path: &Path) -> Stream {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let mut chunks = Vec::new();
    let mut cut = false;
    for line in text.lines() {
        if line.starts_with("# cut:") {
            cut = true;
        }
        let (dir, hex) = match line.split_once(' ') {
            Some((">", h)) => (Direction::FromLearner, h),
            Some(("<", h)) => (Direction::FromLeader, h),
            _ => continue,
        };
        chunks.push((dir, Bytes::from(hex::decode(hex).unwrap())));
    }
    Stream { name, chunks, cut }
}

/// Every frame in `bytes`, fed in `step`-byte pieces; and the bytes left undecoded.
pub fn decode_all(dir: Direction, pieces: impl IntoIterator<Item = Bytes>) -> (Vec<Frame>, usize) {
    let mut d = Decoder::new(dir, Limits::default());
    let mut frames = Vec::new();
    for p in pieces {
        d.push(&p);
        while let Some(f) = d.next_frame().unwrap() {
            frames.push(f);
        }
    }
    (frames, d.buffered())
}

pub fn encode_all(frames: &[Frame]) -> Bytes {
    let mut w = BytesMut::new();
    for f in frames {
        f.write(&mut w);
    }
    w.freeze()
}

/// The frames with each run of snapshot item batches merged into one.
pub fn merge_items(frames: Vec<Frame>) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    for f in frames {
        match (out.last_mut(), f) {
            (Some(Frame::SnapshotItems(all)), Frame::SnapshotItems(more)) => all.extend(more),
            (_, f) => out.push(f),
        }
    }
    out
}
