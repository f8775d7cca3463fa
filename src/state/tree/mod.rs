//! The in-memory data tree: an arena of znodes addressed by u32 ids, children held in a
//! per-node hash table of ids (the name lives once, in the child), and interned ACL lists.
//!
//! `apply_*` are the only mutations, visible to `state` alone and called in zxid order by
//! `state::apply`; each is raise-only on the parent's counters so that replaying a txn the
//! tree already reflects is harmless. Everything outside `state` reads the tree.
//!
//! Past the image it was loaded from ([`DataTree::image_zxid`]), no zxid in the tree is above
//! the txn being applied: each came from a txn applied before it (zxids only rise,
//! `State::apply` asserts it). The applies assert it for every zxid they would overwrite
//! (`assert_not_ahead`), so a tree that ran ahead of its log stops the process rather than
//! diverge. Within the image's window a replay over a fuzzy capture may meet later zxids (the
//! capture saw later txns); there setData lowers mzxid until the later txn is replayed, and
//! the digest at the capture's end proves the tree came out as the live one.
//!
//! Two counters are easily confused: a node stores C, the number of child creations ever
//! (`Node::child_creates`; sequential suffixes come from it), while clients see the cversion
//! `2·C − numChildren` in a [`Stat`]. The names keep them apart.
//!
//! Owns: nodes, the ACL table, quota stats, the digest, loading an image. May not touch:
//! anything of the crate outside `state` but `acl` and `path`; sessions and the zxid are
//! `state`'s.

use crate::acl::{AclTable, Entry};
use hashbrown::{HashMap, HashSet};
use palisade_proto::Stat;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) mod digest;
mod load;
mod mutate;
mod node;
mod quota;
pub use load::TreeLoader;
pub use node::{kind_of, ttl_owner, visible_cversion, Node, NodeKind, CONTAINER_OWNER, MAX_TTL};
pub(in crate::state) use node::{NewData, NewNode};

/// The key of the child tables' hash. Names are chosen by clients, so the hash is keyed
/// (against crafted colliding names), but with a key every process of one installation
/// shares (derived from the data dir's secret, see server.rs) rather than a random one, so
/// that the same history gives the same table layout — and the same getChildren and capture
/// order — in every process. Tools and tests use the default, 0.
static HASH_KEY: AtomicU64 = AtomicU64::new(0);

/// Sets the key trees created from now on hash their child names with.
pub fn set_hash_key(key: u64) {
    HASH_KEY.store(key, Ordering::Relaxed);
}

type ChildHasher = foldhash::fast::FixedState;

pub type NodeId = u32;
pub const ROOT: NodeId = 0;

pub struct DataTree {
    nodes: Vec<Option<Node>>,
    free: Vec<NodeId>,
    hasher: ChildHasher,
    acls: AclTable,
    ephemerals: HashMap<i64, HashSet<NodeId>>,
    /// Containers and TTL nodes, for the reaper.
    reapable: HashSet<NodeId>,
    count: usize,
    data_size: u64,
    /// Paths under quota (they have a limits node); see quota.rs.
    quota_roots: crate::path::trie::PathTrie<()>,
    /// Sum of the node hashes (see digest.rs), kept current by every mutation.
    digest: u64,
    /// The highest zxid a node of the image this tree was loaded from holds (0 for a fresh
    /// tree): applies at or below it may be replays over a fuzzy capture (see the top).
    image_zxid: i64,
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// ZooKeeper's fresh tree: `/`, `/zookeeper`, `/zookeeper/quota`, `/zookeeper/config`.
    pub fn new() -> Self {
        let mut t = Self::empty();
        let open = vec![Entry {
            perms: crate::acl::ALL,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let acl = t.acls.intern(open.clone());
        // Empty data, not null: ZooKeeper's root holds `new byte[0]`.
        t.nodes.push(Some(Node::new("", Some(&[]), acl, ROOT)));
        t.count = 1;
        let new = |acl: Vec<Entry>| NewNode {
            data: Some(&[]),
            acl,
            owner: 0,
            zxid: 0,
            time: 0,
        };
        // insert() leaves parents' counters alone: ZooKeeper's fresh tree has C = 0 everywhere.
        let zk = t.insert(ROOT, "zookeeper", new(open.clone()));
        t.insert(zk, "quota", new(open));
        let read_only = vec![Entry {
            perms: crate::acl::READ,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let config = t.insert(zk, "config", new(read_only));
        // ZooKeeper's constructor sets this ACL with version -1, leaving aversion -1.
        if let Some(n) = t.node_mut(config) {
            n.aversion = -1;
        }
        t.digest = t.full_digest();
        t
    }

    /// A tree with no nodes at all, for the snapshot loader (see load.rs).
    fn empty() -> Self {
        DataTree {
            nodes: Vec::new(),
            free: Vec::new(),
            hasher: ChildHasher::with_seed(HASH_KEY.load(Ordering::Relaxed)),
            acls: AclTable::default(),
            ephemerals: HashMap::new(),
            reapable: HashSet::new(),
            count: 0,
            data_size: 0,
            quota_roots: Default::default(),
            digest: 0,
            image_zxid: 0,
        }
    }

    /// The tree digest (see digest.rs).
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The interned ACL lists (read-only: nodes take and release them through the applies).
    pub fn acls(&self) -> &AclTable {
        &self.acls
    }

    /// The highest zxid a node of the loaded image holds (0 for a fresh tree).
    pub fn image_zxid(&self) -> i64 {
        self.image_zxid
    }

    /// An apply at `zxid` is about to overwrite `old`, a zxid node `id` holds: past the
    /// image's window it cannot be above `zxid` (equal is a multi's earlier op). A tree ahead
    /// of its log would answer with zxids from the future and diverge from every replica
    /// that applies the same log, so this stops the process.
    fn assert_not_ahead(&self, id: NodeId, old: i64, zxid: i64) {
        assert!(
            old <= zxid || zxid <= self.image_zxid,
            "apply at zxid {zxid:#x} meets zxid {old:#x} on node {id} (image up to {:#x}): the tree is ahead of its log",
            self.image_zxid
        );
    }

    /// The crc32 of a node's path, or `None` for nodes under `/zookeeper/` (left out of the
    /// digest) and for ids that are not live nodes.
    pub(crate) fn path_crc(&self, id: NodeId) -> Option<u32> {
        if id == ROOT {
            return Some(crc32fast::hash(b"/"));
        }
        // Ancestors, nearest first; a deep path spills into a Vec.
        let mut near = [ROOT; 32];
        let mut depth = 0usize;
        let mut deep = Vec::new();
        let mut x = id;
        while x != ROOT {
            match near.get_mut(depth) {
                Some(slot) => *slot = x,
                None => deep.push(x),
            }
            depth += 1;
            x = self.node(x)?.parent;
        }
        let top = if deep.is_empty() {
            near.get(depth.checked_sub(1)?)
        } else {
            deep.last()
        };
        if depth >= 2 && self.node(*top?)?.name() == "zookeeper" {
            return None;
        }
        // Root-first: the deep spill (farthest ancestors) reversed, then the near ones.
        let near_len = depth.min(near.len());
        let chain = deep.iter().rev().chain(near.iter().take(near_len).rev());
        let mut h = crc32fast::Hasher::new();
        for n in chain.filter_map(|&c| self.node(c)) {
            h.update(b"/");
            h.update(n.name_bytes());
        }
        Some(h.finalize())
    }

    /// The node's contribution to the digest (0 for nodes left out of it).
    fn node_digest(&self, id: NodeId) -> u64 {
        match (self.path_crc(id), self.node(id)) {
            (Some(pc), Some(n)) => digest::node_hash(pc, n, self.acls.hash(n.acl)),
            _ => 0,
        }
    }

    /// The digest computed from scratch (tests check it against the kept one).
    pub fn full_digest(&self) -> u64 {
        let mut d = 0u64;
        let mut stack = vec![ROOT];
        while let Some(x) = stack.pop() {
            d = d.wrapping_add(self.node_digest(x));
            stack.extend(self.children(x));
        }
        d
    }

    fn digest_remove(&mut self, id: NodeId) {
        self.digest = self.digest.wrapping_sub(self.node_digest(id));
    }

    fn digest_add(&mut self, id: NodeId) {
        self.digest = self.digest.wrapping_add(self.node_digest(id));
    }

    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id as usize).and_then(|n| n.as_ref())
    }

    fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.nodes.get_mut(id as usize).and_then(|n| n.as_mut())
    }

    fn hash(&self, name: &[u8]) -> u64 {
        self.hasher.hash_one(name)
    }

    pub fn child(&self, parent: NodeId, name: &str) -> Option<NodeId> {
        let p = self.node(parent)?;
        let table = p.children.as_ref()?;
        let name = name.as_bytes();
        table
            .find(self.hash(name), |&c| {
                self.node(c).is_some_and(|n| n.name_bytes() == name)
            })
            .copied()
    }

    /// The node at an exact path; `None` for missing nodes and for malformed paths.
    pub fn lookup(&self, path: &str) -> Option<NodeId> {
        // ZooKeeper's node map holds the root under "" as well as "/".
        if path.is_empty() {
            return Some(ROOT);
        }
        let rest = path.strip_prefix('/')?;
        if rest.is_empty() {
            return Some(ROOT);
        }
        let mut id = ROOT;
        for comp in rest.split('/') {
            if comp.is_empty() {
                return None;
            }
            id = self.child(id, comp)?;
        }
        Some(id)
    }

    pub fn path_of(&self, mut id: NodeId) -> String {
        let mut parts = Vec::new();
        while id != ROOT {
            let Some(n) = self.node(id) else { break };
            parts.push(n.name());
            id = n.parent;
        }
        if parts.is_empty() {
            return "/".into();
        }
        let mut s = String::new();
        for p in parts.iter().rev() {
            s.push('/');
            s.push_str(p);
        }
        s
    }

    pub fn children(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.node(id)
            .and_then(|n| n.children.as_deref())
            .into_iter()
            .flat_map(|t| t.iter().copied())
    }

    /// The nodes of `id`'s children.
    pub fn child_nodes(&self, id: NodeId) -> impl Iterator<Item = &Node> + '_ {
        self.children(id).filter_map(|c| self.node(c))
    }

    pub fn stat(&self, id: NodeId) -> Stat {
        let Some(n) = self.node(id) else {
            return Stat::default();
        };
        let num_children = n.num_children();
        Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: visible_cversion(n.child_creates, num_children),
            aversion: n.aversion,
            ephemeral_owner: match n.kind() {
                NodeKind::Ephemeral(s) => s,
                _ => 0,
            },
            data_length: n.data_len() as i32,
            num_children: num_children as i32,
            pzxid: n.pzxid,
        }
    }

    /// Number of znodes as ZooKeeper counts them (its map holds the root twice).
    pub fn znode_count(&self) -> usize {
        self.count + 1
    }

    /// mntr's approximate_data_size: path lengths plus data lengths.
    pub fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    pub fn ephemerals_of(&self, session: i64) -> impl Iterator<Item = NodeId> + '_ {
        self.ephemerals
            .get(&session)
            .into_iter()
            .flat_map(|s| s.iter().copied())
    }

    /// The paths of a session's ephemeral nodes, sorted.
    pub fn ephemeral_paths(&self, session: i64) -> Vec<String> {
        let mut paths: Vec<String> = self
            .ephemerals_of(session)
            .map(|n| self.path_of(n))
            .collect();
        paths.sort_unstable();
        paths
    }

    /// Sessions that own ephemerals.
    pub fn ephemeral_owners(&self) -> impl Iterator<Item = i64> + '_ {
        self.ephemerals.keys().copied()
    }

    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(|s| s.len()).sum()
    }

    pub fn reapable(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.reapable.iter().copied()
    }

    pub fn descendants(&self, id: NodeId) -> usize {
        let mut n = 0;
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            for c in self.children(x) {
                n += 1;
                stack.push(c);
            }
        }
        n
    }

    pub fn acl_of(&self, id: NodeId) -> &[Entry] {
        self.node(id).map_or(&[], |n| self.acls.get(n.acl))
    }
}

#[cfg(test)]
#[path = "tree_test.rs"]
mod tests;
