//! A 1,000,000-node snapshot (100-byte data, names like `n0000123456` under 300 parents):
//! encoding it (the core's share; into fresh chunk Vecs, and into one reused buffer),
//! writing it (the writer thread's: validation, write, fsync, rename), opening it (full
//! validation) and opening plus iterating every item (what recovery pays before building its
//! tree). The file is in the page cache, as after a clean shutdown.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use palisade_snapshot::{
    encode_acl, encode_node, encode_session, AclEntry, Item, NodeItem, Snapshot, SnapshotWriter,
    Trailer, NO_PARENT,
};
use std::path::Path;
use std::time::Duration;

const NODES: u32 = 1_000_000;
const PARENTS: u32 = 300;
/// About what the core hands over per step.
const CHUNK_BYTES: usize = 1 << 20;

fn node<'a>(parent: u32, name: &'a [u8], data: &'a [u8], i: i64) -> NodeItem<'a> {
    NodeItem {
        parent,
        name,
        data: Some(data),
        acl: 0,
        czxid: i,
        mzxid: i,
        pzxid: i,
        ctime: 1_700_000_000_000 + i,
        mtime: 1_700_000_000_000 + i,
        version: 0,
        cversion: 0,
        aversion: 0,
        owner: 0,
    }
}

/// Encodes the whole tree into ~1 MiB chunks, a fresh Vec per chunk as the core sends them.
fn encode() -> (Vec<Vec<u8>>, Trailer) {
    let data = [0x5a_u8; 100];
    let mut chunks = Vec::new();
    let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
    let mut flush = |out: &mut Vec<u8>, force: bool| {
        if force || out.len() >= CHUNK_BYTES {
            chunks.push(std::mem::replace(
                out,
                Vec::with_capacity(CHUNK_BYTES + 4096),
            ));
        }
    };
    for s in 0..100 {
        encode_session(&mut out, 0x1000 + s, 30_000);
    }
    encode_acl(
        &mut out,
        0,
        &[AclEntry {
            perms: 31,
            scheme: b"world",
            id: b"anyone",
        }],
    );
    encode_node(&mut out, &node(NO_PARENT, b"", b"", 0));
    let mut name = Vec::with_capacity(16);
    for p in 0..PARENTS {
        name.clear();
        name.extend_from_slice(format!("p{p:04}").as_bytes());
        encode_node(&mut out, &node(0, &name, &data, i64::from(p)));
    }
    for i in 0..NODES {
        write_name(&mut name, i);
        encode_node(&mut out, &node(1 + i % PARENTS, &name, &data, i64::from(i)));
        flush(&mut out, false);
    }
    flush(&mut out, true);
    let t = Trailer {
        end_zxid: i64::from(NODES),
        digest: 0,
        node_count: u64::from(1 + PARENTS + NODES),
        session_count: 100,
        acl_count: 1,
    };
    (chunks, t)
}

/// `n` and ten digits, without the allocation `format!` would add to the measured time (the
/// core's names are already bytes in its tree).
fn write_name(name: &mut Vec<u8>, mut i: u32) {
    name.clear();
    name.resize(11, b'0');
    name[0] = b'n';
    for d in name[1..].iter_mut().rev() {
        *d = b'0' + (i % 10) as u8;
        i /= 10;
    }
}

fn write(dir: &Path, chunks: &[Vec<u8>], t: Trailer) -> std::path::PathBuf {
    let mut w = SnapshotWriter::create(dir, 1, 0x5a).unwrap();
    for c in chunks {
        w.write_block(c).unwrap();
    }
    w.finish(t).unwrap()
}

fn iterate(snap: &Snapshot) -> u64 {
    let mut sum = 0u64;
    for item in snap.items() {
        if let Item::Node(n) = item {
            sum += n.data.map_or(0, |d| d.len() as u64) + n.name.len() as u64 + u64::from(n.parent);
        }
    }
    sum
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (chunks, t) = encode();
    let path = write(dir.path(), &chunks, t);
    if let Ok(keep) = std::env::var("SNAP_BENCH_KEEP") {
        std::fs::copy(&path, keep).unwrap();
    }
    let len = std::fs::metadata(&path).unwrap().len();
    eprintln!("1M-node snapshot: {} bytes in {} blocks", len, chunks.len());

    let mut g = c.benchmark_group("snapshot_1m_nodes");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("encode", |b| b.iter(|| black_box(encode())));
    // The same encoding into one reused chunk buffer: the difference from "encode" is the
    // first touch of ~190 MB of fresh chunk memory, which a buffer pool between the core and
    // the writer thread would save.
    g.bench_function("encode_reused_buffer", |b| {
        let data = [0x5a_u8; 100];
        let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
        let mut name = Vec::new();
        b.iter(|| {
            for i in 0..NODES {
                write_name(&mut name, i);
                encode_node(&mut out, &node(1 + i % PARENTS, &name, &data, i64::from(i)));
                if out.len() >= CHUNK_BYTES {
                    black_box(&out);
                    out.clear();
                }
            }
        })
    });
    g.bench_function("write", |b| {
        b.iter(|| black_box(write(dir.path(), &chunks, t)))
    });
    g.bench_function("open", |b| {
        b.iter(|| black_box(Snapshot::open(&path).unwrap()))
    });
    g.bench_function("open_iterate", |b| {
        b.iter(|| {
            let snap = Snapshot::open(&path).unwrap();
            black_box(iterate(&snap))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
