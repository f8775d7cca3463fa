//! Building a tree from a snapshot's items, fast. Nodes arrive parents first, numbered in
//! file order, and take the arena ids of that numbering, so a parent reference is an index.
//! Path crcs (for the digest) and path lengths (for the data size) are carried from parent to
//! child instead of walked. The items are untrusted bytes: every reference is checked.

use super::{DataTree, Node, NodeId, ROOT};
use crate::acl::Entry;
use palisade_snapshot::{NodeItem, NO_PARENT};

/// What a node's children inherit from its path.
struct PathInfo {
    /// crc32 state after the node's path (empty for the root); `None` under `/zookeeper/`.
    prefix: Option<crc32fast::Hasher>,
    /// The path's length in bytes (0 for the root).
    len: u32,
    /// The node is `/zookeeper` itself: its children are left out of the digest.
    is_zookeeper: bool,
}

pub struct TreeLoader {
    tree: DataTree,
    /// Snapshot ACL index → interned id; the loader holds one reference to each.
    acls: Vec<Option<u32>>,
    paths: Vec<PathInfo>,
}

impl Default for TreeLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl TreeLoader {
    pub fn new() -> Self {
        TreeLoader {
            tree: DataTree::empty(),
            acls: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// Defines (or redefines) a snapshot ACL index.
    pub fn acl(&mut self, index: u32, entries: Vec<Entry>) -> Result<(), String> {
        if index >= crate::limits::SNAPSHOT_MAX_ACL_INDEX {
            return Err(format!("ACL index {index} out of range"));
        }
        let id = self.tree.acls.intern(entries);
        let i = index as usize;
        if self.acls.len() <= i {
            self.acls.resize(i + 1, None);
        }
        if let Some(Some(old)) = self.acls.get_mut(i).map(|slot| slot.replace(id)) {
            self.tree.acls.release(old);
        }
        Ok(())
    }

    /// Adds the next node. Its id is its number in the file.
    pub fn node(&mut self, item: &NodeItem<'_>) -> Result<(), String> {
        let seq = self.tree.nodes.len();
        let id = NodeId::try_from(seq).map_err(|_| "too many nodes".to_string())?;
        let name =
            std::str::from_utf8(item.name).map_err(|_| format!("node {seq}: name is not UTF-8"))?;
        let acl = self
            .acls
            .get(item.acl as usize)
            .copied()
            .flatten()
            .ok_or_else(|| format!("node {seq}: undefined ACL index {}", item.acl))?;
        let parent = if seq == 0 {
            if item.parent != NO_PARENT || !name.is_empty() {
                return Err("the first node is not the root".into());
            }
            ROOT
        } else {
            if item.parent == NO_PARENT || item.parent >= id {
                return Err(format!(
                    "node {seq}: parent {} is not an earlier node",
                    item.parent
                ));
            }
            if name.is_empty() || name.contains('/') {
                return Err(format!("node {seq}: invalid name {name:?}"));
            }
            if self.tree.child(item.parent, name).is_some() {
                return Err(format!("node {seq}: a sibling is already named {name:?}"));
            }
            item.parent
        };
        let info = self.path_info(parent, seq, name)?;
        self.tree.acls.add_ref(acl);
        let node = Node {
            czxid: item.czxid,
            mzxid: item.mzxid,
            pzxid: item.pzxid,
            ctime: item.ctime,
            mtime: item.mtime,
            version: item.version,
            aversion: item.aversion,
            child_creates: item.cversion,
            owner: item.owner,
            ..Node::new(name, item.data, acl, parent)
        };
        let path_crc = match (&info.prefix, seq) {
            (_, 0) => Some(crc32fast::hash(b"/")),
            (Some(h), _) => Some(h.clone().finalize()),
            (None, _) => None,
        };
        if let Some(pc) = path_crc {
            let h = super::digest::node_hash(pc, &node, self.tree.acls.hash(acl));
            self.tree.digest = self.tree.digest.wrapping_add(h);
        }
        let size = node.data_len() as u64 + u64::from(info.len);
        self.tree.nodes.push(Some(node));
        if seq != 0 {
            self.tree.link(parent, id);
        }
        self.tree.index_owner(id, item.owner);
        self.tree.count += 1;
        self.tree.data_size += size;
        let newest = item.czxid.max(item.mzxid).max(item.pzxid);
        self.tree.image_zxid = self.tree.image_zxid.max(newest);
        self.paths.push(info);
        Ok(())
    }

    fn path_info(&self, parent: NodeId, seq: usize, name: &str) -> Result<PathInfo, String> {
        if seq == 0 {
            return Ok(PathInfo {
                prefix: Some(crc32fast::Hasher::new()),
                len: 0,
                is_zookeeper: false,
            });
        }
        let p = self
            .paths
            .get(parent as usize)
            .ok_or_else(|| format!("node {seq}: parent {parent} missing"))?;
        let prefix = match &p.prefix {
            Some(h) if !p.is_zookeeper => {
                let mut h = h.clone();
                h.update(b"/");
                h.update(name.as_bytes());
                Some(h)
            }
            _ => None,
        };
        Ok(PathInfo {
            prefix,
            len: p.len.saturating_add(1).saturating_add(name.len() as u32),
            is_zookeeper: parent == ROOT && name == "zookeeper",
        })
    }

    pub fn finish(mut self) -> Result<DataTree, String> {
        if self.tree.nodes.is_empty() {
            return Err("the snapshot has no root".into());
        }
        for id in self.acls.drain(..).flatten() {
            self.tree.acls.release(id);
        }
        Ok(self.tree)
    }
}
