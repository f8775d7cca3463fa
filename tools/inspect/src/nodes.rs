//! A znode as the inspectors show and compare it: the stat a client sees, plus what only the
//! server keeps (the stored create counter C, the raw ephemeralOwner of containers and TTL
//! nodes), its data and its ACL.

use crate::error::InspectError;
use crate::format;
use crate::opview::{acl_text, data_json, AclView};
use palisade::state::tree::{kind_of, visible_cversion, DataTree, NodeId, NodeKind, ROOT};
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub path: String,
    /// Depth below the root of the listing (0 for the listing's root).
    pub depth: usize,
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub aversion: i32,
    /// The stored create counter C: sequential suffixes come from it.
    pub c: i32,
    /// The cversion a client sees: 2·C − numChildren.
    pub cversion: i32,
    pub num_children: usize,
    /// ephemeralOwner as stored (containers and TTL nodes carry markers here).
    pub owner: i64,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<AclView>,
}

impl NodeView {
    pub fn from_tree(tree: &DataTree, id: NodeId, depth: usize) -> Option<NodeView> {
        let n = tree.node(id)?;
        let num_children = n.num_children();
        Some(NodeView {
            path: tree.path_of(id),
            depth,
            czxid: n.czxid,
            mzxid: n.mzxid,
            pzxid: n.pzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            aversion: n.aversion,
            c: n.child_creates,
            cversion: visible_cversion(n.child_creates, num_children),
            num_children,
            owner: n.owner,
            data: n.data().map(<[u8]>::to_vec),
            acl: tree
                .acl_of(id)
                .iter()
                .map(|e| AclView {
                    perms: e.perms,
                    scheme: e.scheme.to_string(),
                    id: e.id.to_string(),
                })
                .collect(),
        })
    }

    /// The last path component ("/" for the root).
    pub fn name(&self) -> &str {
        match self.path.rsplit_once('/') {
            Some((_, "")) | None => "/",
            Some((_, name)) => name,
        }
    }

    /// What the stored owner means.
    pub fn owner_text(&self) -> String {
        match kind_of(self.owner) {
            NodeKind::Persistent => "0".into(),
            NodeKind::Ephemeral(s) => format::zxid(s),
            NodeKind::Container => "container".into(),
            NodeKind::Ttl(t) => format!("ttl:{t}ms"),
        }
    }

    pub fn data_len(&self) -> usize {
        self.data.as_ref().map_or(0, Vec::len)
    }

    /// One indented line: name and stat (zxids in hex), C and the visible cversion, owner,
    /// data length and preview, ACL.
    pub fn text(&self) -> String {
        let indent = "  ".repeat(self.depth);
        let data = match &self.data {
            None => "data=null".to_string(),
            Some(d) if d.is_empty() => "data=0B".to_string(),
            Some(d) => format!("data={}B \"{}\"", d.len(), format::preview(d, 24)),
        };
        format!(
            "{indent}{} czxid={} mzxid={} pzxid={} version={} C={} cversion={} aversion={} \
             children={} ephemeralOwner={} {data} acl={}",
            self.name(),
            format::zxid(self.czxid),
            format::zxid(self.mzxid),
            format::zxid(self.pzxid),
            self.version,
            self.c,
            self.cversion,
            self.aversion,
            self.num_children,
            self.owner_text(),
            acl_text(&self.acl),
        )
    }

    pub fn json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.into(), v);
        };
        put("type", json!("node"));
        put("path", json!(self.path));
        put("depth", json!(self.depth));
        put("czxid", json!(format::zxid(self.czxid)));
        put("mzxid", json!(format::zxid(self.mzxid)));
        put("pzxid", json!(format::zxid(self.pzxid)));
        put("ctime", json!(self.ctime));
        put("mtime", json!(self.mtime));
        put("version", json!(self.version));
        put("C", json!(self.c));
        put("cversion", json!(self.cversion));
        put("aversion", json!(self.aversion));
        put("numChildren", json!(self.num_children));
        put("ephemeralOwner", json!(self.owner_text()));
        put("owner_raw", json!(format::zxid(self.owner)));
        put("dataLength", json!(self.data_len()));
        match &self.data {
            None => put("data", Value::Null),
            Some(d) => data_json(d, &mut put),
        }
        put(
            "acl",
            Value::Array(self.acl.iter().map(AclView::json).collect()),
        );
        Value::Object(m)
    }
}

/// Visits `subtree` of `tree` depth-first, children in name order (so output is stable).
pub fn walk_tree(
    tree: &DataTree,
    subtree: &str,
    mut visit: impl FnMut(NodeView),
) -> Result<(), InspectError> {
    let top = tree
        .lookup(subtree)
        .ok_or_else(|| InspectError::Cannot(format!("no node at {subtree}")))?;
    let mut stack = vec![(top, 0usize)];
    while let Some((id, depth)) = stack.pop() {
        if let Some(v) = NodeView::from_tree(tree, id, depth) {
            visit(v);
        }
        let mut kids: Vec<(String, NodeId)> = tree
            .children(id)
            .filter_map(|c| tree.node(c).map(|n| (n.name().to_string(), c)))
            .collect();
        // Reverse order on the stack pops them in name order.
        kids.sort_by(|a, b| b.0.cmp(&a.0));
        stack.extend(kids.into_iter().map(|(_, c)| (c, depth.saturating_add(1))));
    }
    Ok(())
}

/// Every node of `tree` by path, for comparisons.
pub fn all_nodes(tree: &DataTree) -> std::collections::BTreeMap<String, NodeView> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![ROOT];
    while let Some(id) = stack.pop() {
        stack.extend(tree.children(id));
        if let Some(v) = NodeView::from_tree(tree, id, 0) {
            out.insert(v.path.clone(), v);
        }
    }
    out
}
