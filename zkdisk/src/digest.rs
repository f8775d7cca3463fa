//! ZooKeeper's tree digest (DigestCalculator, digest version 2): the 64-bit wrapping sum of one
//! CRC32 per node, over the node's path, its data and its StatPersisted fields in a fixed
//! order. Nodes under `/zookeeper/` count 0 (their quota stats are updated locally); the root
//! counts with path "" (DataTree adds it under "" and aliases "/" without a digest).

use palisade_proto::StatPersisted;

/// Whether a node at `path` counts in the digest.
pub fn counts(path: &str) -> bool {
    !path.starts_with("/zookeeper/")
}

/// One node's digest (0 for nodes that do not count). `path` is "" or "/" for the root.
pub fn node_digest(path: &str, data: Option<&[u8]>, stat: &StatPersisted) -> i64 {
    if !counts(path) {
        return 0;
    }
    let path = if path == "/" { "" } else { path };
    let mut b = [0u8; 60];
    let fields: [&[u8]; 9] = [
        &stat.czxid.to_be_bytes(),
        &stat.mzxid.to_be_bytes(),
        &stat.pzxid.to_be_bytes(),
        &stat.ctime.to_be_bytes(),
        &stat.mtime.to_be_bytes(),
        &stat.version.to_be_bytes(),
        &stat.cversion.to_be_bytes(),
        &stat.aversion.to_be_bytes(),
        &stat.ephemeral_owner.to_be_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        if let Some(dst) = b.get_mut(at..at + f.len()) {
            dst.copy_from_slice(f);
        }
        at += f.len();
    }
    let mut h = crc32fast::Hasher::new();
    h.update(path.as_bytes());
    if let Some(d) = data {
        h.update(d);
    }
    h.update(&b);
    i64::from(h.finalize())
}
