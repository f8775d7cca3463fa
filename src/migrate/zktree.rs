//! Between ZooKeeper's snapshot records and Palisade's tree: loading a ZooKeeper snapshot's
//! nodes into a [`DataTree`] (through the same [`TreeLoader`] recovery uses), walking a tree
//! in ZooKeeper's pre-order with ZooKeeper's paths, and ZooKeeper's tree digest.

use crate::acl::Entry;
use crate::state::tree::{kind_of, DataTree, Node, NodeId, NodeKind, TreeLoader, ROOT};
use palisade_proto::{SnapAcl, StatPersisted, ACL};
use palisade_snapshot::{NodeItem, NO_PARENT};
use palisade_zkdisk::{digest, ZkNode, ZkSnapshot};
use std::collections::HashMap;

/// ReferenceCountedACLCache's index for world:anyone:cdrwa without a table entry.
pub const OPEN_ACL_INDEX: i64 = -1;

pub fn entries(acl: &[ACL]) -> Vec<Entry> {
    acl.iter()
        .map(|a| Entry {
            perms: a.perms,
            scheme: a.id.scheme.to_lossy().unwrap_or_default().into(),
            id: a.id.id.to_lossy().unwrap_or_default().into(),
        })
        .collect()
}

fn world_anyone() -> Vec<Entry> {
    vec![Entry {
        perms: 31,
        scheme: "world".into(),
        id: "anyone".into(),
    }]
}

/// The node's stat as ZooKeeper stores it (cversion is the stored create counter).
pub fn stat_persisted(n: &Node) -> StatPersisted {
    StatPersisted {
        czxid: n.czxid,
        mzxid: n.mzxid,
        ctime: n.ctime,
        mtime: n.mtime,
        version: n.version,
        cversion: n.child_creates,
        aversion: n.aversion,
        ephemeral_owner: n.owner,
        pzxid: n.pzxid,
    }
}

/// Builds the tree of a ZooKeeper snapshot, checking what ZooKeeper's DataTree.deserialize
/// checks (the root first, every parent before its children), that every ACL index is in
/// the table, and the server's own node rules: every path one a client could create
/// (`path::is_valid`: no empty, `.` or `..` component, no forbidden character) and no child
/// under an ephemeral node. An error names the node and the byte its record starts at.
pub fn load(snap: &ZkSnapshot) -> Result<DataTree, String> {
    let mut l = ZkLoader::new();
    for a in &snap.acls {
        l.acl(a)?;
    }
    for zn in &snap.nodes {
        l.node(zn)?;
    }
    l.finish()
}

/// [`load`] item by item, as a snapshot arrives (the ACL table, then the nodes in order):
/// what it holds is the tree being built and each node's number by path.
#[derive(Default)]
pub struct ZkLoader {
    loader: TreeLoader,
    acl_index: HashMap<i64, u32>,
    /// Each node's number and owner (ephemeralOwner), by path.
    seq_of: HashMap<String, (u32, i64)>,
    nodes: usize,
}

impl ZkLoader {
    pub fn new() -> Self {
        ZkLoader::default()
    }

    /// The next entry of the ACL table.
    pub fn acl(&mut self, a: &SnapAcl) -> Result<(), String> {
        let local = u32::try_from(self.acl_index.len()).map_err(|_| "too many ACL lists")?;
        self.loader
            .acl(local, entries(a.acls.as_deref().unwrap_or_default()))?;
        self.acl_index.insert(a.index, local);
        Ok(())
    }

    /// The next node (pre-order).
    pub fn node(&mut self, zn: &ZkNode) -> Result<(), String> {
        let i = self.nodes;
        let seq = u32::try_from(i).map_err(|_| "too many nodes".to_string())?;
        let path = zn.path.as_str();
        let at = zn.offset;
        let (parent, name) = place(i, path, at, &self.seq_of)?;
        let acl =
            local_acl(zn.node.acl, &mut self.acl_index, &mut self.loader).ok_or_else(|| {
                format!(
                    "at byte {at}: node {path:?}: ACL index {} is not in the table",
                    zn.node.acl
                )
            })??;
        let st = &zn.node.stat;
        self.loader
            .node(&NodeItem {
                parent,
                name: name.as_bytes(),
                data: zn.node.data.as_deref(),
                acl,
                czxid: st.czxid,
                mzxid: st.mzxid,
                pzxid: st.pzxid,
                ctime: st.ctime,
                mtime: st.mtime,
                version: st.version,
                cversion: st.cversion,
                aversion: st.aversion,
                owner: st.ephemeral_owner,
            })
            .map_err(|e| format!("at byte {at}: {e}"))?;
        self.seq_of
            .insert(path.to_string(), (seq, st.ephemeral_owner));
        self.nodes += 1;
        Ok(())
    }

    pub fn finish(self) -> Result<DataTree, String> {
        self.loader.finish()
    }
}

/// The parent (by its number) and name of the `i`th node of a snapshot, at byte `at`: the
/// root first, every parent before its children, a path a client could create, no child of
/// an ephemeral node. `seq_of`: the nodes so far, by path.
fn place<'a>(
    i: usize,
    path: &'a str,
    at: u64,
    seq_of: &HashMap<String, (u32, i64)>,
) -> Result<(u32, &'a str), String> {
    if i == 0 {
        if !path.is_empty() {
            return Err(format!(
                "at byte {at}: the first node is {path:?}, not the root"
            ));
        }
        return Ok((NO_PARENT, ""));
    }
    let Some(slash) = path.rfind('/') else {
        return Err(format!("at byte {at}: node {path:?}: not an absolute path"));
    };
    let (pp, name) = (
        path.get(..slash).unwrap_or(""),
        path.get(slash + 1..).unwrap_or(""),
    );
    let &(parent, parent_owner) = seq_of.get(pp).ok_or_else(|| {
        format!("at byte {at}: Invalid Datatree, unable to find parent {pp:?} of path {path:?}")
    })?;
    if !crate::path::is_valid(path) {
        return Err(format!(
            "at byte {at}: node {path:?}: not a valid path (an empty, \".\" or \"..\" name, or a character ZooKeeper forbids); the server refuses it"
        ));
    }
    if let NodeKind::Ephemeral(owner) = kind_of(parent_owner) {
        return Err(format!(
            "at byte {at}: node {path:?}: a child of an ephemeral node (session {owner:#x}); the server refuses it (NOCHILDRENFOREPHEMERALS)"
        ));
    }
    Ok((parent, name))
}

/// The loader's ACL id for a node's snapshot ACL index: one of the table's, or ZooKeeper's
/// -1 (open ACL unsafe, world:anyone), added to the loader the first time it is met. None: an
/// index the table does not hold.
fn local_acl(
    index: i64,
    acl_index: &mut HashMap<i64, u32>,
    loader: &mut TreeLoader,
) -> Option<Result<u32, String>> {
    match acl_index.get(&index) {
        Some(&a) => Some(Ok(a)),
        None if index == OPEN_ACL_INDEX => Some(add_open_acl(acl_index, loader)),
        None => None,
    }
}

/// Adds world:anyone for ZooKeeper's ACL index -1.
fn add_open_acl(acl_index: &mut HashMap<i64, u32>, loader: &mut TreeLoader) -> Result<u32, String> {
    let local = u32::try_from(acl_index.len()).map_err(|_| "too many ACL lists")?;
    loader.acl(local, world_anyone())?;
    acl_index.insert(OPEN_ACL_INDEX, local);
    Ok(local)
}

/// Visits every node in pre-order with ZooKeeper's path for it ("" for the root). One path
/// buffer serves the whole walk: when a node comes off the stack, every node visited since its
/// parent is the parent's descendant, so the buffer still starts with the parent's path.
pub fn walk(tree: &DataTree, mut f: impl FnMut(&str, NodeId, &Node)) {
    let mut path = String::new();
    // (node, length of its parent's path)
    let mut stack: Vec<(NodeId, usize)> = vec![(ROOT, 0)];
    while let Some((id, parent_len)) = stack.pop() {
        let Some(n) = tree.node(id) else { continue };
        path.truncate(parent_len);
        if id != ROOT {
            path.push('/');
            path.push_str(n.name());
        }
        f(&path, id, n);
        let len = path.len();
        stack.extend(tree.children(id).map(|c| (c, len)));
    }
}

/// ZooKeeper's digest (version 2) of the tree.
pub fn zk_digest(tree: &DataTree) -> i64 {
    let mut sum = 0i64;
    walk(tree, |path, _, n| {
        sum = sum.wrapping_add(digest::node_digest(path, n.data(), &stat_persisted(n)));
    });
    sum
}
