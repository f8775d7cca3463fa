//! The tree digest's per-node hash: the digest is a 64-bit sum of these over the tree, kept
//! current by every mutation (see `DataTree::digest`), written to the log every few hundred
//! txns and into each snapshot, and checked during replay — a mismatch means the replayed tree
//! diverged from the one that was acknowledged.
//!
//! As in ZooKeeper, nodes under `/zookeeper/` are left out: the quota stats there are derived
//! data, updated in place and recomputed after recovery. Everything else a client can observe
//! is in: the path, data, every stat field (the stored create counter C rather than the
//! visible cversion, which follows from C and the children), the owner and the ACL's content.
//! Hashes are fixed functions of the bytes (crc32 and a fixed mixer), so every process and
//! every version computes the same digest.

use super::Node;

/// SplitMix64's finaliser: a fixed, well-spread 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The hash of one node, given the crc32 of its path and its ACL list's content hash.
pub(crate) fn node_hash(path_crc: u32, n: &Node, acl_hash: u64) -> u64 {
    let data_crc = n.data().map_or(u64::MAX, |d| u64::from(crc32fast::hash(d)));
    let fields = [
        data_crc,
        n.czxid as u64,
        n.mzxid as u64,
        n.pzxid as u64,
        n.ctime as u64,
        n.mtime as u64,
        u64::from(n.version as u32) << 32 | u64::from(n.aversion as u32),
        n.child_creates as u64,
        n.owner as u64,
        acl_hash,
    ];
    fields
        .iter()
        .fold(mix(u64::from(path_crc)), |h, &f| mix(h ^ f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixer_is_fixed() {
        // Pinned so that a change of the digest function is a deliberate format change.
        assert_eq!(mix(0), 0);
        assert_eq!(mix(1), 0x5692_161d_100b_05e5);
    }
}
