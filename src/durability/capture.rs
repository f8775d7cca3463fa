//! The fuzzy snapshot capture. The core walks the tree depth-first a few nodes at a time,
//! between batches of writes, and encodes what it sees into chunks for the snapshot writer.
//! Each node is captured whole at one moment; different nodes at different moments.
//!
//! Why replaying the log from the start zxid S over such a capture rebuilds the tree:
//! - every node that exists from S to the end E is captured: its parent is (by induction
//!   from the root), and it was among the children listed when its parent was visited;
//! - a child is captured only if the very node listed (same slot, same czxid) still exists
//!   when the walk reaches it, so sibling names in a capture are always distinct and a node
//!   never appears under an incarnation of its parent it did not belong to;
//! - every other captured state is some state the node had between S and E, and applying
//!   the log from S+1 is harmless to it: creates only raise counters, deletes remove whatever
//!   is at the path, setData/setACL carry absolute values.
//!
//! ACL lists are written into the capture (once per list, before the first node using it),
//! never referenced from a table captured at another moment: ZooKeeper's fuzzy snapshots lose
//! ACLs that way (ZOOKEEPER-4846, ZOOKEEPER-4689).

use crate::acl::Entry;
use crate::state::tree::{DataTree, NodeId, ROOT};
use palisade_snapshot::{
    encode_acl, encode_node, encode_session, AclEntry, NodeItem, Trailer, NO_PARENT,
};
use std::collections::HashMap;
use std::sync::Arc;

/// A visited node whose listed children are still to be walked.
struct Frame {
    /// The node's number in the capture.
    seq: u32,
    /// Its children when it was visited: slot and czxid, which together name one node.
    children: Vec<(NodeId, i64)>,
    next: usize,
}

pub struct Capture {
    start_zxid: i64,
    stack: Vec<Frame>,
    /// Interned ACL id → (the list it held when written, its capture index). The Arc is kept
    /// so the id's list can be told apart from a later list interned under the same id.
    acls: HashMap<u32, (Arc<[Entry]>, u32)>,
    acl_defs: u32,
    nodes: u64,
    sessions: u64,
}

impl Capture {
    /// Starts a capture at `start_zxid` (the last applied zxid): writes the sessions and the
    /// root into `out`.
    pub fn begin(
        tree: &DataTree,
        sessions: impl Iterator<Item = (i64, i32)>,
        start_zxid: i64,
        out: &mut Vec<u8>,
    ) -> Capture {
        let mut c = Capture {
            start_zxid,
            stack: Vec::new(),
            acls: HashMap::new(),
            acl_defs: 0,
            nodes: 0,
            sessions: 0,
        };
        for (id, timeout_ms) in sessions {
            encode_session(out, id, timeout_ms);
            c.sessions += 1;
        }
        c.emit(tree, ROOT, NO_PARENT, out);
        c
    }

    pub fn start_zxid(&self) -> i64 {
        self.start_zxid
    }

    /// Walks on for at most `budget` steps (a step is one listed child looked at). Returns
    /// true when the walk is complete.
    pub fn step(&mut self, tree: &DataTree, budget: usize, out: &mut Vec<u8>) -> bool {
        for _ in 0..budget {
            let Some(top) = self.stack.last_mut() else {
                return true;
            };
            let Some(&(child, czxid)) = top.children.get(top.next) else {
                self.stack.pop();
                continue;
            };
            top.next += 1;
            let parent_seq = top.seq;
            if tree.node(child).is_some_and(|n| n.czxid == czxid) {
                self.emit(tree, child, parent_seq, out);
            }
        }
        self.stack.is_empty()
    }

    /// The trailer, once `step` returned true: `end_zxid` and `digest` are the core's at
    /// that moment.
    pub fn trailer(&self, end_zxid: i64, digest: u64) -> Trailer {
        Trailer {
            end_zxid,
            digest,
            node_count: self.nodes,
            session_count: self.sessions,
            acl_count: u64::from(self.acl_defs),
        }
    }

    fn emit(&mut self, tree: &DataTree, id: NodeId, parent: u32, out: &mut Vec<u8>) {
        let Some(n) = tree.node(id) else { return };
        let acl = self.acl_index(tree, n.acl, out);
        let seq = self.nodes as u32;
        encode_node(
            out,
            &NodeItem {
                parent,
                name: n.name_bytes(),
                data: n.data(),
                acl,
                czxid: n.czxid,
                mzxid: n.mzxid,
                pzxid: n.pzxid,
                ctime: n.ctime,
                mtime: n.mtime,
                version: n.version,
                cversion: n.child_creates,
                aversion: n.aversion,
                owner: n.owner,
            },
        );
        self.nodes += 1;
        if n.num_children() > 0 {
            let children = tree
                .children(id)
                .filter_map(|c| tree.node(c).map(|n| (c, n.czxid)))
                .collect();
            self.stack.push(Frame {
                seq,
                children,
                next: 0,
            });
        }
    }

    /// The capture index of the node's ACL list, writing its definition first if this list
    /// has not been written yet.
    fn acl_index(&mut self, tree: &DataTree, acl: u32, out: &mut Vec<u8>) -> u32 {
        if let Some((written, index)) = self.acls.get(&acl) {
            // The same allocation: the list this id held when it was written (no refcount
            // traffic on this per-node path).
            if std::ptr::eq(written.as_ptr(), tree.acls().get(acl).as_ptr()) {
                return *index;
            }
        }
        let list = tree.acls().shared(acl);
        let index = self.acl_defs;
        self.acl_defs += 1;
        let entries: Vec<AclEntry<'_>> = list
            .iter()
            .map(|e| AclEntry {
                perms: e.perms,
                scheme: e.scheme.as_bytes(),
                id: e.id.as_bytes(),
            })
            .collect();
        encode_acl(out, index, &entries);
        self.acls.insert(acl, (list, index));
        index
    }
}

#[cfg(test)]
#[path = "capture_test.rs"]
mod tests;
