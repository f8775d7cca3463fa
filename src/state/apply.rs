//! Applying one txn to the tree, op by op, and describing what happened: the outcome of each
//! op and the changes watchers may see. Replays of txns the tree already reflects are
//! harmless: creates only raise the parent's counters, deletes of missing nodes only raise
//! pzxid, setData/setACL carry absolute values.

use super::tree::{self, DataTree, NewData, NewNode, NodeId};
use crate::acl::Entry;
use crate::path;
use palisade_proto::{ErrorCode, EventType, Stat, Txn, TxnBody, TxnHeader, ACL};
use std::sync::Arc;

/// The result of one op: its error code, the path it acted on (a sequential create's full
/// name) and the node's Stat right after it (create, setData, setACL).
#[derive(Debug, Clone)]
pub struct Outcome<'t> {
    pub err: i32,
    pub path: &'t str,
    pub stat: Option<Stat>,
}

/// One change a watcher may be told of, in the order the txn made them.
#[derive(Debug, Clone)]
pub struct Change<'t> {
    pub event: EventType,
    pub path: &'t str,
    /// The ACL of the node the event names, as it was at the change (a deleted node's own;
    /// for NodeChildrenChanged, the parent's): persistent and recursive watchers are told
    /// only if they may read it (CVE-2024-23944).
    pub acl: Arc<[Entry]>,
}

/// A session the txn opened or closed (the txn header's client id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEffect {
    None,
    Created { timeout: i32 },
    Closed,
}

/// Everything an apply tells the world.
#[derive(Debug)]
pub struct Effects<'t> {
    /// One per op: a multi has one per sub-txn, anything else exactly one.
    pub outcomes: Vec<Outcome<'t>>,
    pub changes: Vec<Change<'t>>,
    pub session: SessionEffect,
}

impl<'t> Effects<'t> {
    /// The outcome of a txn that is not a multi.
    pub fn single(&self) -> Option<&Outcome<'t>> {
        self.outcomes.first()
    }
}

struct Applier<'a, 't> {
    tree: &'a mut DataTree,
    header: &'t TxnHeader,
    changes: Vec<Change<'t>>,
}

pub(super) fn apply<'t>(tree: &mut DataTree, txn: &'t Txn) -> Effects<'t> {
    let mut a = Applier {
        tree,
        header: &txn.header,
        changes: Vec::new(),
    };
    let outcomes = match &txn.body {
        TxnBody::Multi(subs) => subs.iter().map(|s| a.op(s)).collect(),
        b => vec![a.op(b)],
    };
    let session = match &txn.body {
        TxnBody::CreateSession(c) => SessionEffect::Created {
            timeout: c.time_out,
        },
        TxnBody::CloseSession(_) => SessionEffect::Closed,
        _ => SessionEffect::None,
    };
    Effects {
        outcomes,
        changes: a.changes,
        session,
    }
}

fn entries(acl: &Option<Vec<ACL>>) -> Vec<Entry> {
    acl.iter()
        .flatten()
        .map(|a| Entry {
            perms: a.perms,
            scheme: a.id.scheme.as_str().unwrap_or("").into(),
            id: a.id.id.as_str().unwrap_or("").into(),
        })
        .collect()
}

fn fail(code: ErrorCode, path: &str) -> Outcome<'_> {
    Outcome {
        err: code.code(),
        path,
        stat: None,
    }
}

impl<'t> Applier<'_, 't> {
    fn ok(&self, path: &'t str, node: Option<NodeId>) -> Outcome<'t> {
        Outcome {
            err: 0,
            path,
            stat: node.map(|id| self.tree.stat(id)),
        }
    }

    fn changed(&mut self, event: EventType, path: &'t str, node: NodeId) {
        // A change always names a node that exists (or, for a delete, existed until just now
        // and is read before removal). Were it ever missing, fail closed: an empty list would
        // let every watcher read (ZOOKEEPER-4689's follow-up to CVE-2024-23944).
        let acl = self.tree.node(node).map_or_else(
            || {
                Arc::from([crate::acl::Entry {
                    perms: 0,
                    scheme: "world".into(),
                    id: "anyone".into(),
                }])
            },
            |n| self.tree.acls().shared(n.acl),
        );
        self.changes.push(Change { event, path, acl });
    }

    fn op(&mut self, body: &'t TxnBody) -> Outcome<'t> {
        let h = self.header;
        match body {
            TxnBody::Create(c) | TxnBody::Create2(c) => {
                let owner = if c.ephemeral { h.client_id } else { 0 };
                self.create(
                    c.path.as_str(),
                    c.data.as_deref(),
                    &c.acl,
                    owner,
                    c.parent_c_version,
                )
            }
            TxnBody::CreateContainer(c) => self.create(
                c.path.as_str(),
                c.data.as_deref(),
                &c.acl,
                tree::CONTAINER_OWNER,
                c.parent_c_version,
            ),
            TxnBody::CreateTtl(c) => self.create(
                c.path.as_str(),
                c.data.as_deref(),
                &c.acl,
                tree::ttl_owner(c.ttl),
                c.parent_c_version,
            ),
            TxnBody::Delete(d) | TxnBody::DeleteContainer(d) => {
                self.delete(d.path.as_str().unwrap_or(""))
            }
            TxnBody::SetData(s) => {
                let p = s.path.as_str().unwrap_or("");
                let Some(id) = self.tree.lookup(p) else {
                    return fail(ErrorCode::NoNode, p);
                };
                let set = NewData {
                    data: s.data.as_deref(),
                    version: s.version,
                    zxid: h.zxid,
                    time: h.time,
                };
                self.tree.apply_set_data(id, set);
                self.changed(EventType::NodeDataChanged, p, id);
                self.ok(p, Some(id))
            }
            TxnBody::SetAcl(s) => {
                let p = s.path.as_str().unwrap_or("");
                let Some(id) = self.tree.lookup(p) else {
                    return fail(ErrorCode::NoNode, p);
                };
                self.tree.apply_set_acl(id, entries(&s.acl), s.version);
                self.ok(p, Some(id))
            }
            TxnBody::Check(c) => self.ok(c.path.as_str().unwrap_or(""), None),
            TxnBody::CloseSession(c) => {
                for p in c.paths2_delete.iter().flatten() {
                    self.delete(p.as_str().unwrap_or(""));
                }
                self.ok("", None)
            }
            TxnBody::CreateSession(_) => self.ok("", None),
            TxnBody::Error(e) => Outcome {
                err: e.err,
                path: "",
                stat: None,
            },
            // A multi inside a multi does not decode; nothing to apply.
            TxnBody::Multi(_) => fail(ErrorCode::MarshallingError, ""),
        }
    }

    fn create(
        &mut self,
        p: Option<&'t str>,
        data: Option<&[u8]>,
        acl: &Option<Vec<ACL>>,
        owner: i64,
        pcv: i32,
    ) -> Outcome<'t> {
        let p = p.unwrap_or("");
        let (Some(parent_path), name) = (path::parent(p), path::name(p)) else {
            return fail(ErrorCode::BadArguments, p);
        };
        let Some(parent) = self.tree.lookup(parent_path) else {
            return fail(ErrorCode::NoNode, p);
        };
        let existed = self.tree.child(parent, name).is_some();
        let h = self.header;
        let new = NewNode {
            data,
            acl: entries(acl),
            owner,
            zxid: h.zxid,
            time: h.time,
        };
        let id = self.tree.apply_create(parent, name, pcv, new);
        if existed {
            return fail(ErrorCode::NodeExists, p);
        }
        if let Some(id) = id {
            self.changed(EventType::NodeCreated, p, id);
        }
        self.changed(EventType::NodeChildrenChanged, parent_path, parent);
        self.ok(p, id)
    }

    fn delete(&mut self, p: &'t str) -> Outcome<'t> {
        let Some(parent_path) = path::parent(p) else {
            return fail(ErrorCode::BadArguments, p);
        };
        let zxid = self.header.zxid;
        let Some(id) = self.tree.lookup(p) else {
            // Replay of a delete the tree already reflects: only the parent's pzxid rises.
            if let Some(parent) = self.tree.lookup(parent_path) {
                self.tree.raise_pzxid(parent, zxid);
            }
            return fail(ErrorCode::NoNode, p);
        };
        if self.tree.node(id).is_some_and(|n| n.num_children() > 0) {
            return fail(ErrorCode::NotEmpty, p);
        }
        let parent = self.tree.node(id).map_or(tree::ROOT, |n| n.parent);
        // The deleted node's ACL, taken before it goes.
        self.changed(EventType::NodeDeleted, p, id);
        self.tree.apply_delete(id, zxid);
        self.changed(EventType::NodeChildrenChanged, parent_path, parent);
        self.ok(p, None)
    }
}
