//! Shared by the integration tests: an owned mirror of `Item` (so expected values outlive
//! the buffers they were encoded into), a sample capture, and byte-level surgery helpers.
#![allow(dead_code)]

use palisade_snapshot::format::{self, append_block, encode_header, encode_trailer, Chain};
use palisade_snapshot::{
    encode_item, AclEntry, Item, NodeItem, SnapshotWriter, Trailer, NO_PARENT,
};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owned {
    Session {
        id: i64,
        timeout_ms: i32,
    },
    Acl {
        index: u32,
        entries: Vec<(i32, Vec<u8>, Vec<u8>)>,
    },
    Node(OwnedNode),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedNode {
    pub parent: u32,
    pub name: Vec<u8>,
    pub data: Option<Vec<u8>>,
    pub acl: u32,
    pub stat: [i64; 5],
    pub versions: [i32; 3],
    pub owner: i64,
}

impl Owned {
    pub fn from_item(item: &Item<'_>) -> Owned {
        match item {
            Item::Session { id, timeout_ms } => Owned::Session {
                id: *id,
                timeout_ms: *timeout_ms,
            },
            Item::Acl { index, entries } => Owned::Acl {
                index: *index,
                entries: entries
                    .iter()
                    .map(|e| (e.perms, e.scheme.to_vec(), e.id.to_vec()))
                    .collect(),
            },
            Item::Node(n) => Owned::Node(OwnedNode {
                parent: n.parent,
                name: n.name.to_vec(),
                data: n.data.map(<[u8]>::to_vec),
                acl: n.acl,
                stat: [n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime],
                versions: [n.version, n.cversion, n.aversion],
                owner: n.owner,
            }),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Owned::Session { id, timeout_ms } => encode_item(
                out,
                &Item::Session {
                    id: *id,
                    timeout_ms: *timeout_ms,
                },
            ),
            Owned::Acl { index, entries } => {
                let entries = entries
                    .iter()
                    .map(|(perms, scheme, id)| AclEntry {
                        perms: *perms,
                        scheme,
                        id,
                    })
                    .collect();
                encode_item(
                    out,
                    &Item::Acl {
                        index: *index,
                        entries,
                    },
                );
            }
            Owned::Node(n) => encode_item(
                out,
                &Item::Node(NodeItem {
                    parent: n.parent,
                    name: &n.name,
                    data: n.data.as_deref(),
                    acl: n.acl,
                    czxid: n.stat[0],
                    mzxid: n.stat[1],
                    pzxid: n.stat[2],
                    ctime: n.stat[3],
                    mtime: n.stat[4],
                    version: n.versions[0],
                    cversion: n.versions[1],
                    aversion: n.versions[2],
                    owner: n.owner,
                }),
            ),
        }
    }
}

pub fn node(parent: u32, name: &str, data: Option<&[u8]>, acl: u32) -> Owned {
    let i = i64::from(parent);
    Owned::Node(OwnedNode {
        parent,
        name: name.as_bytes().to_vec(),
        data: data.map(<[u8]>::to_vec),
        acl,
        stat: [i + 1, i + 2, i + 3, 1_700_000_000_000 + i, -i],
        versions: [parent as i32, -(parent as i32), 7],
        owner: if parent.is_multiple_of(5) {
            0x1000 + i
        } else {
            0
        },
    })
}

pub fn acl(index: u32, scheme: &str, id: &str) -> Owned {
    Owned::Acl {
        index,
        entries: vec![(31, scheme.as_bytes().to_vec(), id.as_bytes().to_vec())],
    }
}

/// Sessions, ACL definitions (index 1 redefined mid-file), the root and `nodes` more nodes
/// whose data cycles through null, empty, binary and larger values.
pub fn sample(nodes: u32) -> Vec<Owned> {
    let mut v = vec![
        Owned::Session {
            id: 0x1000,
            timeout_ms: 30_000,
        },
        Owned::Session {
            id: -1,
            timeout_ms: 4_000,
        },
        acl(0, "world", "anyone"),
        node(NO_PARENT, "", Some(b""), 0),
        Owned::Acl {
            index: 1,
            entries: vec![
                (1, b"digest".to_vec(), b"u:h".to_vec()),
                (31, b"ip".to_vec(), b"10.0.0.1".to_vec()),
            ],
        },
        Owned::Acl {
            index: 9,
            entries: vec![],
        },
    ];
    for i in 1..=nodes {
        if i == nodes / 2 {
            v.push(acl(1, "sasl", "redefined"));
            v.push(Owned::Session {
                id: 0x2000 + i64::from(i),
                timeout_ms: 10_000,
            });
        }
        let data: Option<Vec<u8>> = match i % 4 {
            0 => None,
            1 => Some(Vec::new()),
            2 => Some((0..=255u8).map(|b| b.wrapping_mul(i as u8)).collect()),
            _ => Some(vec![0u8; (i % 200) as usize]),
        };
        // Parents are earlier nodes: a mix of shallow and deep chains.
        let parent = if i % 3 == 0 { i - 1 } else { i / 7 };
        v.push(node(
            parent,
            &format!("n{i:010}"),
            data.as_deref(),
            [0, 1, 9][(i % 3) as usize],
        ));
    }
    v
}

pub fn trailer_for(items: &[Owned], end_zxid: i64, digest: u64) -> Trailer {
    let count = |f: fn(&Owned) -> bool| items.iter().filter(|i| f(i)).count() as u64;
    Trailer {
        end_zxid,
        digest,
        node_count: count(|i| matches!(i, Owned::Node(_))),
        session_count: count(|i| matches!(i, Owned::Session { .. })),
        acl_count: count(|i| matches!(i, Owned::Acl { .. })),
    }
}

/// Splits items into encoded chunks of `per_chunk` items.
pub fn chunks(items: &[Owned], per_chunk: usize) -> Vec<Vec<u8>> {
    items
        .chunks(per_chunk)
        .map(|c| {
            let mut out = Vec::new();
            for i in c {
                i.encode(&mut out);
            }
            out
        })
        .collect()
}

/// Writes `items` through the real writer, `per_chunk` items per block.
pub fn write(dir: &Path, start_zxid: i64, items: &[Owned], per_chunk: usize) -> PathBuf {
    let mut w = SnapshotWriter::create(dir, start_zxid, 0x5a).unwrap();
    for c in chunks(items, per_chunk) {
        w.write_block(&c).unwrap();
    }
    w.finish(trailer_for(items, start_zxid + 10, 0xfeed_beef))
        .unwrap()
}

/// A file built by hand: header, the given items blocks, and a trailer computed from them
/// unless `trailer` overrides (trailer, block_count, chain). For damage the writer refuses.
pub fn raw(start_zxid: i64, blocks: &[Vec<u8>], trailer: Option<(Trailer, u64, u32)>) -> Vec<u8> {
    let mut out = encode_header(start_zxid, 0x5a).to_vec();
    let mut chain = Chain::new();
    for b in blocks {
        let at = out.len();
        append_block(&mut out, format::KIND_ITEMS, b);
        chain.push(u32::from_le_bytes(out[at + 8..at + 12].try_into().unwrap()));
    }
    let (t, n, c) = trailer.unwrap_or_else(|| {
        let items: Vec<Owned> = blocks
            .iter()
            .flat_map(|b| {
                palisade_snapshot::decode_items(b)
                    .map(|i| Owned::from_item(&i.unwrap()))
                    .collect::<Vec<_>>()
            })
            .collect();
        (
            trailer_for(&items, start_zxid, 0),
            blocks.len() as u64,
            chain.value(),
        )
    });
    append_block(&mut out, format::KIND_TRAILER, &encode_trailer(&t, n, c));
    out
}

/// (start, end, kind) of every block in a well-formed file.
pub fn spans(file: &[u8]) -> Vec<(usize, usize, u8)> {
    let mut at = format::HEADER_LEN;
    let mut out = Vec::new();
    while at < file.len() {
        let len = u32::from_le_bytes(file[at..at + 4].try_into().unwrap()) as usize;
        let end = at + format::BLOCK_HEADER_LEN + len;
        out.push((at, end, file[at + 4]));
        at = end;
    }
    out
}

pub fn read_all(path: &Path) -> Vec<Owned> {
    palisade_snapshot::Snapshot::open(path)
        .unwrap()
        .items()
        .map(|i| Owned::from_item(&i))
        .collect()
}

/// Writes `bytes` as a snapshot file at `dir/name` and opens it.
pub fn open_bytes(
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<palisade_snapshot::Snapshot, palisade_snapshot::SnapError> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    palisade_snapshot::Snapshot::open(&path)
}

/// The (offset, reason) of a Corrupt error, or a panic naming what came instead.
pub fn corrupt<T: std::fmt::Debug>(r: Result<T, palisade_snapshot::SnapError>) -> (u64, String) {
    match r {
        Err(palisade_snapshot::SnapError::Corrupt { offset, reason, .. }) => (offset, reason),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}
