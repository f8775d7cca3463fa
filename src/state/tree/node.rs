//! A znode as the tree stores it: its name and data in one allocation, its stat fields, the
//! stored child-create counter and its children's table; what an ephemeralOwner value
//! denotes (session, container, TTL); and the fields a create brings.

use super::NodeId;
use crate::acl::Entry;
use hashbrown::HashTable;

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
    pub(super) bytes: Box<[u8]>,
    /// The name's length, and in the top bit whether the node has data (null data is not
    /// empty data). One field rather than two keeps a node at 96 bytes, not 104.
    pub(super) layout: u32,
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub aversion: i32,
    /// C: the number of child creations ever (sequential suffixes come from it). Not the
    /// cversion clients see, which is `2·C − numChildren` (see [`super::DataTree::stat`]).
    pub child_creates: i32,
    pub owner: i64,
    pub acl: u32,
    pub parent: NodeId,
    pub(super) children: Option<Box<HashTable<NodeId>>>,
}

/// `Node::layout`'s flag bit.
pub(super) const HAS_DATA: u32 = 1 << 31;

/// A name longer than 2^31 − 1 bytes cannot arrive (frames are bounded by jute.maxbuffer);
/// one would corrupt the flag bit, so it stops the process rather than the node.
pub(super) fn layout(name_len: usize, has_data: bool) -> u32 {
    let len = u32::try_from(name_len).unwrap_or(u32::MAX);
    assert!(len & HAS_DATA == 0, "node name of {name_len} bytes");
    if has_data {
        len | HAS_DATA
    } else {
        len
    }
}

impl Node {
    /// A node named `name` holding `data`, under `parent`, every stat field zero: the caller
    /// sets those it has (`Node { czxid, .., ..Node::new(..) }`), and the name and data are
    /// packed in one place.
    pub(super) fn new(name: &str, data: Option<&[u8]>, acl: u32, parent: NodeId) -> Node {
        let mut node = Node {
            bytes: Box::new([]),
            layout: 0,
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
            parent,
            children: None,
        };
        node.set_bytes(name, data);
        node
    }

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
    pub(super) fn name_len(&self) -> usize {
        (self.layout & !HAS_DATA) as usize
    }
    pub(super) fn has_data(&self) -> bool {
        self.layout & HAS_DATA != 0
    }
    pub fn num_children(&self) -> usize {
        self.children.as_ref().map_or(0, |c| c.len())
    }
    pub fn kind(&self) -> NodeKind {
        kind_of(self.owner)
    }
    pub(super) fn set_bytes(&mut self, name: &str, data: Option<&[u8]>) {
        let d = data.unwrap_or(&[]);
        let mut v = Vec::with_capacity(name.len() + d.len());
        v.extend_from_slice(name.as_bytes());
        v.extend_from_slice(d);
        self.bytes = v.into_boxed_slice();
        self.layout = layout(name.len(), data.is_some());
    }
}

/// What a setData leaves on a node: its data and the stat fields it carries (absolute
/// values, as the txn has them).
pub(in crate::state) struct NewData<'a> {
    pub data: Option<&'a [u8]>,
    pub version: i32,
    pub zxid: i64,
    pub time: i64,
}

/// Fields of a new node.
pub(in crate::state) struct NewNode<'a> {
    pub data: Option<&'a [u8]>,
    pub acl: Vec<Entry>,
    pub owner: i64,
    pub zxid: i64,
    pub time: i64,
}
