//! Helpers shared by the WAL's integration tests. The encoders here are written from the
//! format described in the crate docs, independently of the crate's own code.
#![allow(dead_code)]

use palisade_wal::{scan_segment, Corruption, Options, RecordKind, Recovered, Wal, WalError};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub kind: RecordKind,
    pub zxid: i64,
    pub payload: Vec<u8>,
}

impl Rec {
    pub fn txn(zxid: i64) -> Rec {
        Rec {
            kind: RecordKind::Txn,
            zxid,
            payload: payload(zxid as u64),
        }
    }
    pub fn meta(zxid: i64) -> Rec {
        Rec {
            kind: RecordKind::Meta,
            zxid,
            payload: format!("digest after {zxid}").into_bytes(),
        }
    }
}

/// 40..=120 bytes, different for every seed.
pub fn payload(seed: u64) -> Vec<u8> {
    let len = 40 + (seed.wrapping_mul(2654435761) % 81) as usize;
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8 + 1)
        .collect()
}

pub fn opts(dir: &Path, segment_bytes: u64) -> Options {
    Options {
        segment_bytes,
        identity: Some(TEST_IDENTITY),
        ..Options::new(dir)
    }
}

pub fn open(dir: &Path, segment_bytes: u64) -> Result<(Wal, Recovered), WalError> {
    Wal::open(opts(dir, segment_bytes), Corruption::Refuse)
}

/// Appends `recs`, syncing every `batch` records and at the end.
pub fn append_all(wal: &mut Wal, recs: &[Rec], batch: usize) {
    for (i, r) in recs.iter().enumerate() {
        wal.append(r.kind, r.zxid, &r.payload).unwrap();
        if (i + 1) % batch == 0 {
            wal.sync().unwrap();
        }
    }
    wal.sync().unwrap();
}

/// Txns `first..first+n`, with a Meta record after every `meta_every`-th txn (0 = none).
pub fn records(first: i64, n: i64, meta_every: i64) -> Vec<Rec> {
    let mut out = Vec::new();
    for z in first..first + n {
        out.push(Rec::txn(z));
        if meta_every > 0 && z % meta_every == 0 {
            out.push(Rec::meta(z));
        }
    }
    out
}

/// Writes a fresh log and returns what was appended.
pub fn write_log(dir: &Path, segment_bytes: u64, recs: &[Rec]) {
    let (mut wal, _) = open(dir, segment_bytes).unwrap();
    append_all(&mut wal, recs, 7);
}

pub fn read_all(log: &Recovered) -> Vec<Rec> {
    log.all_records()
        .map(|r| Rec {
            kind: r.kind,
            zxid: r.zxid,
            payload: r.payload.to_vec(),
        })
        .collect()
}

/// The segment files of `dir`, in zxid order.
pub fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with("log.") && n.len() == 20
        })
        .collect();
    v.sort();
    v
}

/// (start, end) of every valid record in a segment.
pub fn record_spans(path: &Path) -> Vec<(u64, u64)> {
    let scan = scan_segment(path, u32::MAX).unwrap();
    scan.records()
        .map(|r| (r.offset, r.offset + 32 + r.payload.len() as u64))
        .collect()
}

pub fn detached(dir: &Path) -> Vec<PathBuf> {
    let d = dir.join("detached");
    if !d.exists() {
        return Vec::new();
    }
    let mut v: Vec<PathBuf> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Copies the files of `from` (not subfolders) into a new temporary directory.
pub fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().unwrap() != "LOCK" {
            fs::copy(&p, to.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    to
}

pub fn crc32(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

/// The identity hand-written segments carry (a log opened without one adopts it).
pub const TEST_IDENTITY: u64 = 0x1d_e17e_57ed;

/// A segment header as documented: magic, version 2, first zxid, identity, created size in
/// KiB, crc.
pub fn segment_header_with(first_zxid: i64, identity: u64, size: usize) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&0x504C574Cu32.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes());
    h.extend_from_slice(&first_zxid.to_le_bytes());
    h.extend_from_slice(&identity.to_le_bytes());
    h.extend_from_slice(&((size / 1024) as u32).to_le_bytes());
    let crc = crc32(&[&h]);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

pub fn segment_header(first_zxid: i64) -> Vec<u8> {
    segment_header_with(first_zxid, TEST_IDENTITY, 0)
}

/// A record as documented: magic, len, kind, 3 zero bytes, zxid, crc(header[..20]), payload,
/// crc(header + payload), end mark.
pub fn encode(kind: RecordKind, zxid: i64, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&0x50414C32u32.to_le_bytes());
    h.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    h.push(match kind {
        RecordKind::Txn => 1,
        RecordKind::Meta => 2,
    });
    h.extend_from_slice(&[0; 3]);
    h.extend_from_slice(&zxid.to_le_bytes());
    let head = crc32(&[&h]);
    h.extend_from_slice(&head.to_le_bytes());
    let crc = crc32(&[&h, payload]);
    h.extend_from_slice(payload);
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(&0x50454E44u32.to_le_bytes());
    h
}

/// Writes a segment file by hand: header, records, then zeros up to `size`.
pub fn write_segment(dir: &Path, first_zxid: i64, recs: &[Rec], size: usize) -> PathBuf {
    let mut bytes = segment_header_with(first_zxid, TEST_IDENTITY, size);
    for r in recs {
        bytes.extend(encode(r.kind, r.zxid, &r.payload));
    }
    assert!(bytes.len() <= size);
    bytes.resize(size, 0);
    let path = dir.join(format!("log.{:016x}", first_zxid as u64));
    fs::write(&path, bytes).unwrap();
    path
}
