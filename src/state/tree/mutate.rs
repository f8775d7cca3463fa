//! The tree's mutations: the raise-only applies `state::apply` calls in zxid order (create,
//! delete, setData, setACL, the parent's counters), and the arena's insert and link they use.
//! Visible to `state` alone (see the folder's notes).

use super::node::layout;
use super::{kind_of, DataTree, NewData, NewNode, Node, NodeId, NodeKind, ROOT};
use crate::acl::Entry;
use std::hash::BuildHasher;

impl DataTree {
    pub(super) fn insert(&mut self, parent: NodeId, name: &str, new: NewNode<'_>) -> NodeId {
        let acl = self.acls.intern(new.acl);
        let node = Node {
            czxid: new.zxid,
            mzxid: new.zxid,
            pzxid: new.zxid,
            ctime: new.time,
            mtime: new.time,
            owner: new.owner,
            ..Node::new(name, new.data, acl, parent)
        };
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
    pub(super) fn link(&mut self, parent: NodeId, id: NodeId) {
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
    pub(super) fn index_owner(&mut self, id: NodeId, owner: i64) {
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

    pub(super) fn path_len(&self, mut id: NodeId) -> usize {
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
    pub(in crate::state) fn apply_set_data(&mut self, id: NodeId, set: NewData<'_>) {
        let Some(mzxid) = self.node(id).map(|n| n.mzxid) else {
            unreachable!("apply_set_data of node {id}, which is not live")
        };
        self.assert_not_ahead(id, mzxid, set.zxid);
        self.set_data_unchecked(id, set);
    }

    /// Sets a node's data and the stat fields around it, with no check: setData's and the
    /// ensemble configuration's (`State::set_ensemble_config`, not a txn).
    pub(in crate::state) fn set_data_unchecked(&mut self, id: NodeId, set: NewData<'_>) {
        self.digest_remove(id);
        let Some(n) = self.node_mut(id) else {
            unreachable!("set_data_unchecked of node {id}, which is not live")
        };
        n.version = set.version;
        n.mzxid = set.zxid;
        n.mtime = set.time;
        self.replace_data(id, set.data);
        self.digest_add(id);
    }

    /// Replaces a node's data, leaving its stat alone (setData sets the stat around it; quota
    /// stats nodes change in place).
    pub(super) fn replace_data(&mut self, id: NodeId, data: Option<&[u8]>) {
        if let Some((old, new)) = self.write_data(id, data) {
            self.quota_resized(id, old, new);
        }
    }

    /// The data swap itself; returns the old and new sizes. Quota stats nodes are written with
    /// this directly, so updating them never counts toward a quota itself.
    pub(super) fn write_data(&mut self, id: NodeId, data: Option<&[u8]>) -> Option<(usize, usize)> {
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
}
