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
use hashbrown::HashTable;
use hashbrown::{HashMap, HashSet};
use palisade_proto::Stat;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) mod digest;
mod load;
mod quota;
pub use load::TreeLoader;

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

/// Stored ephemeralOwner of containers and TTL nodes (clients see 0).
pub const CONTAINER_OWNER: i64 = i64::MIN;
const TTL_MARK: i64 = 0xFF00_0000_0000_0000_u64 as i64;
pub const MAX_TTL: i64 = (1 << 40) - 1;

pub fn ttl_owner(ttl: i64) -> i64 {
    TTL_MARK | (ttl & MAX_TTL)
}

/// What kind of node an ephemeralOwner value denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Persistent,
    Ephemeral(i64),
    Container,
    Ttl(i64),
}

/// The cversion clients see for a node with `child_creates` = C and `num_children` children:
/// `2·C − numChildren` (each live child is one change, each deleted one two), as ZooKeeper
/// computes it (ZOOKEEPER-1046).
pub fn visible_cversion(child_creates: i32, num_children: usize) -> i32 {
    let n = i32::try_from(num_children).unwrap_or(i32::MAX);
    child_creates.wrapping_mul(2).wrapping_sub(n)
}

pub fn kind_of(owner: i64) -> NodeKind {
    if owner == 0 {
        NodeKind::Persistent
    } else if owner == CONTAINER_OWNER {
        NodeKind::Container
    } else if owner & TTL_MARK == TTL_MARK {
        NodeKind::Ttl(owner & MAX_TTL)
    } else {
        NodeKind::Ephemeral(owner)
    }
}

pub struct Node {
    /// The name, then the data, in one allocation.
    bytes: Box<[u8]>,
    /// The name's length, and in the top bit whether the node has data (null data is not
    /// empty data). One field rather than two keeps a node at 96 bytes, not 104.
    layout: u32,
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub aversion: i32,
    /// C: the number of child creations ever (sequential suffixes come from it). Not the
    /// cversion clients see, which is `2·C − numChildren` (see [`DataTree::stat`]).
    pub child_creates: i32,
    pub owner: i64,
    pub acl: u32,
    pub parent: NodeId,
    children: Option<Box<HashTable<NodeId>>>,
}

/// `Node::layout`'s flag bit.
const HAS_DATA: u32 = 1 << 31;

/// A name longer than 2^31 − 1 bytes cannot arrive (frames are bounded by jute.maxbuffer);
/// one would corrupt the flag bit, so it stops the process rather than the node.
fn layout(name_len: usize, has_data: bool) -> u32 {
    let len = u32::try_from(name_len).unwrap_or(u32::MAX);
    assert!(len & HAS_DATA == 0, "node name of {name_len} bytes");
    if has_data {
        len | HAS_DATA
    } else {
        len
    }
}

impl Node {
    pub fn name(&self) -> &str {
        std::str::from_utf8(self.name_bytes()).unwrap_or("")
    }
    /// The name's bytes: what lookups compare and hash (no UTF-8 check on the hot path; a
    /// name is always set from a `&str`).
    pub fn name_bytes(&self) -> &[u8] {
        self.bytes.get(..self.name_len()).unwrap_or(&[])
    }
    pub fn data(&self) -> Option<&[u8]> {
        self.has_data()
            .then(|| self.bytes.get(self.name_len()..).unwrap_or(&[]))
    }
    pub fn data_len(&self) -> usize {
        self.bytes.len().saturating_sub(self.name_len())
    }
    fn name_len(&self) -> usize {
        (self.layout & !HAS_DATA) as usize
    }
    fn has_data(&self) -> bool {
        self.layout & HAS_DATA != 0
    }
    pub fn num_children(&self) -> usize {
        self.children.as_ref().map_or(0, |c| c.len())
    }
    pub fn kind(&self) -> NodeKind {
        kind_of(self.owner)
    }
    fn set_bytes(&mut self, name: &str, data: Option<&[u8]>) {
        let d = data.unwrap_or(&[]);
        let mut v = Vec::with_capacity(name.len() + d.len());
        v.extend_from_slice(name.as_bytes());
        v.extend_from_slice(d);
        self.bytes = v.into_boxed_slice();
        self.layout = layout(name.len(), data.is_some());
    }
}

/// Fields of a new node.
pub(in crate::state) struct NewNode<'a> {
    pub data: Option<&'a [u8]>,
    pub acl: Vec<Entry>,
    pub owner: i64,
    pub zxid: i64,
    pub time: i64,
}

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
        let mut root = Node {
            bytes: Box::new([]),
            layout: HAS_DATA,
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            ctime: 0,
            mtime: 0,
            version: 0,
            aversion: 0,
            child_creates: 0,
            owner: 0,
            acl,
            parent: ROOT,
            children: None,
        };
        root.set_bytes("", Some(&[]));
        t.nodes.push(Some(root));
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

    fn insert(&mut self, parent: NodeId, name: &str, new: NewNode<'_>) -> NodeId {
        let acl = self.acls.intern(new.acl);
        let mut node = Node {
            bytes: Box::new([]),
            layout: 0,
            czxid: new.zxid,
            mzxid: new.zxid,
            pzxid: new.zxid,
            ctime: new.time,
            mtime: new.time,
            version: 0,
            aversion: 0,
            child_creates: 0,
            owner: new.owner,
            acl,
            parent,
            children: None,
        };
        node.set_bytes(name, new.data);
        let size = node.data_len() as u64;
        let id = match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.nodes.get_mut(id as usize) {
                    *slot = Some(node);
                }
                id
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as NodeId
            }
        };
        self.link(parent, id);
        self.index_owner(id, new.owner);
        self.count += 1;
        self.data_size += size + self.path_len(id) as u64;
        self.quota_created(id);
        self.digest_add(id);
        id
    }

    /// Adds `id` (already in the arena) to its parent's children table.
    fn link(&mut self, parent: NodeId, id: NodeId) {
        let hash = self.hash(self.node(id).map_or(&[], |n| n.name_bytes()));
        // The table is taken out of its parent while it may rehash, which reads other nodes'
        // names from the arena.
        let mut table = self
            .node_mut(parent)
            .and_then(|p| p.children.take())
            .unwrap_or_default();
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        table.insert_unique(hash, id, |&c| {
            hasher.hash_one(
                nodes
                    .get(c as usize)
                    .and_then(|n| n.as_ref())
                    .map_or(&[][..], |n| n.name_bytes()),
            )
        });
        if let Some(p) = self.node_mut(parent) {
            p.children = Some(table);
        }
    }

    /// Indexes a node by its kind: a session's ephemerals, the reaper's containers and TTLs.
    fn index_owner(&mut self, id: NodeId, owner: i64) {
        match kind_of(owner) {
            NodeKind::Ephemeral(s) => {
                self.ephemerals.entry(s).or_default().insert(id);
            }
            NodeKind::Container | NodeKind::Ttl(_) => {
                self.reapable.insert(id);
            }
            NodeKind::Persistent => {}
        }
    }

    fn path_len(&self, mut id: NodeId) -> usize {
        let mut len = 0;
        while id != ROOT {
            let Some(n) = self.node(id) else { break };
            len += 1 + n.name_len();
            id = n.parent;
        }
        len
    }

    /// Applies a create at `parent`: the child gets `new`; the parent's counter becomes
    /// max(C, parent_cversion) and its pzxid is raised. If the child already exists (a replay
    /// over a fuzzy snapshot), only the raise-only parent update happens. Returns the child.
    ///
    /// The counter rises only through `max`, never asserted: `parent_cversion` is the txn's
    /// (Palisade's prep or ZooKeeper's wrote it, and logs are files, which inspectors and the
    /// import read as untrusted), so a create that does not raise it is applied as ZooKeeper
    /// applies one (its DataTree.createNode), not stopped on. The pzxid is checked.
    pub(in crate::state) fn apply_create(
        &mut self,
        parent: NodeId,
        name: &str,
        parent_cversion: i32,
        new: NewNode<'_>,
    ) -> Option<NodeId> {
        let zxid = new.zxid;
        let pzxid = self.node(parent)?.pzxid;
        self.assert_not_ahead(parent, pzxid, zxid);
        self.digest_remove(parent);
        let existing = self.child(parent, name);
        let child = match existing {
            Some(c) => c,
            None => self.insert(parent, name, new),
        };
        if let Some(p) = self.node_mut(parent) {
            p.child_creates = p.child_creates.max(parent_cversion);
            p.pzxid = p.pzxid.max(zxid);
        }
        self.digest_add(parent);
        Some(child)
    }

    /// Removes a childless node; the parent's pzxid is raised, its counter untouched.
    ///
    /// The caller (state::apply) has checked that `id` is a live node other than the root,
    /// with no children. Anything else is a broken invariant: going on would make this tree
    /// differ from every other replay of the same log, so it stops the process.
    pub(in crate::state) fn apply_delete(&mut self, id: NodeId, zxid: i64) {
        let node = self.node(id);
        assert!(
            id != ROOT && node.is_some_and(|n| n.num_children() == 0),
            "apply_delete of node {id}: not a live childless non-root node"
        );
        let Some(node) = self.node(id) else {
            unreachable!("checked above")
        };
        let parent = node.parent;
        let pzxid = self.node(parent).map_or(0, |p| p.pzxid);
        self.assert_not_ahead(parent, pzxid, zxid);
        self.quota_deleting(id);
        self.digest_remove(id);
        let Some(node) = self.node(id) else {
            unreachable!("checked above")
        };
        let (owner, acl) = (node.owner, node.acl);
        let hash = self.hash(node.name_bytes());
        let size = node.data_len() as u64 + self.path_len(id) as u64;
        self.digest_remove(parent);
        let p = self.nodes.get_mut(parent as usize).and_then(|p| p.as_mut());
        let unlinked = p.is_some_and(|p| {
            p.pzxid = p.pzxid.max(zxid);
            let Some(t) = p.children.as_mut() else {
                return false;
            };
            let found = t.find_entry(hash, |&c| c == id).map(|e| e.remove()).is_ok();
            if t.is_empty() {
                p.children = None;
            }
            found
        });
        assert!(
            unlinked,
            "node {id} is not in its parent {parent}'s children"
        );
        self.digest_add(parent);
        match kind_of(owner) {
            NodeKind::Ephemeral(s) => {
                if let Some(set) = self.ephemerals.get_mut(&s) {
                    set.remove(&id);
                    if set.is_empty() {
                        self.ephemerals.remove(&s);
                    }
                }
            }
            NodeKind::Container | NodeKind::Ttl(_) => {
                self.reapable.remove(&id);
            }
            NodeKind::Persistent => {}
        }
        self.acls.release(acl);
        if let Some(slot) = self.nodes.get_mut(id as usize) {
            *slot = None;
        }
        self.free.push(id);
        self.count -= 1;
        self.data_size = self.data_size.saturating_sub(size);
    }

    /// Raises a node's count of child creations (where its children's sequential suffixes
    /// come from) to at least `c`: a restored node never hands out a suffix its live
    /// predecessor already did (state/restore.rs).
    pub(in crate::state) fn raise_child_creates(&mut self, id: NodeId, c: i32) {
        self.digest_remove(id);
        if let Some(n) = self.node_mut(id) {
            n.child_creates = n.child_creates.max(c);
        }
        self.digest_add(id);
    }

    /// A replayed delete of a node already gone: only its parent's pzxid rises.
    pub(in crate::state) fn raise_pzxid(&mut self, id: NodeId, zxid: i64) {
        if let Some(n) = self.node(id) {
            self.assert_not_ahead(id, n.pzxid, zxid);
        }
        self.digest_remove(id);
        if let Some(n) = self.node_mut(id) {
            n.pzxid = n.pzxid.max(zxid);
        }
        self.digest_add(id);
    }

    /// A setData: the data, and the version, mzxid and mtime it carries (absolute values, so
    /// a replay over a fuzzy capture may lower them until the later txn is replayed).
    pub(in crate::state) fn apply_set_data(
        &mut self,
        id: NodeId,
        data: Option<&[u8]>,
        version: i32,
        zxid: i64,
        time: i64,
    ) {
        let Some(mzxid) = self.node(id).map(|n| n.mzxid) else {
            unreachable!("apply_set_data of node {id}, which is not live")
        };
        self.assert_not_ahead(id, mzxid, zxid);
        self.set_data_unchecked(id, data, version, zxid, time);
    }

    /// Sets a node's data and the stat fields around it, with no check: setData's and the
    /// ensemble configuration's (`State::set_ensemble_config`, not a txn).
    pub(in crate::state) fn set_data_unchecked(
        &mut self,
        id: NodeId,
        data: Option<&[u8]>,
        version: i32,
        zxid: i64,
        time: i64,
    ) {
        self.digest_remove(id);
        let Some(n) = self.node_mut(id) else {
            unreachable!("set_data_unchecked of node {id}, which is not live")
        };
        n.version = version;
        n.mzxid = zxid;
        n.mtime = time;
        self.replace_data(id, data);
        self.digest_add(id);
    }

    /// Replaces a node's data, leaving its stat alone (setData sets the stat around it; quota
    /// stats nodes change in place).
    fn replace_data(&mut self, id: NodeId, data: Option<&[u8]>) {
        if let Some((old, new)) = self.write_data(id, data) {
            self.quota_resized(id, old, new);
        }
    }

    /// The data swap itself; returns the old and new sizes. Quota stats nodes are written with
    /// this directly, so updating them never counts toward a quota itself.
    fn write_data(&mut self, id: NodeId, data: Option<&[u8]>) -> Option<(usize, usize)> {
        let n = self.node_mut(id)?;
        let old = n.data_len();
        let d = data.unwrap_or(&[]);
        let name_len = n.name_len();
        let mut v = Vec::with_capacity(name_len + d.len());
        v.extend_from_slice(n.bytes.get(..name_len).unwrap_or(&[]));
        v.extend_from_slice(d);
        n.bytes = v.into_boxed_slice();
        n.layout = layout(name_len, data.is_some());
        let new = n.data_len();
        self.data_size = self.data_size.saturating_sub(old as u64) + new as u64;
        Some((old, new))
    }

    pub(in crate::state) fn apply_set_acl(&mut self, id: NodeId, acl: Vec<Entry>, aversion: i32) {
        assert!(
            self.node(id).is_some(),
            "apply_set_acl of node {id}, not live"
        );
        let new = self.acls.intern(acl);
        self.digest_remove(id);
        if let Some(n) = self.node_mut(id) {
            let old = std::mem::replace(&mut n.acl, new);
            n.aversion = aversion;
            self.acls.release(old);
        }
        self.digest_add(id);
    }

    pub fn acl_of(&self, id: NodeId) -> &[Entry] {
        self.node(id).map_or(&[], |n| self.acls.get(n.acl))
    }
}

#[cfg(test)]
#[path = "tree_test.rs"]
mod tests;
