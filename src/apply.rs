//! Apply: executes a transaction against the data tree (in zxid order) and collects the
//! watch events it triggers. Replays of txns the tree already reflects are harmless:
//! creates only raise the parent's counters, deletes of missing nodes only raise pzxid.

use crate::acl::Entry;
use crate::path;
use crate::tree::{self, DataTree, NewNode, NodeId};
use crate::watch::{ConnId, Kind, Watches, ON_CHILDREN, ON_DATA, ON_DELETE};
use palisade_proto::{ErrorCode, EventType, Stat, TxnBody, TxnHeader, ACL};

/// The result of one op: its error code, and the node it produced or changed.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub err: i32,
    pub path: String,
    /// The node's Stat right after this op (create, setData, setACL).
    pub stat: Option<Stat>,
}

/// One watch event to deliver: its type, the path, and who gets it.
pub struct Event {
    pub kind: EventType,
    pub path: String,
    pub conns: Vec<ConnId>,
}

pub struct Applier<'a> {
    pub tree: &'a mut DataTree,
    pub watches: &'a mut Watches,
    pub events: &'a mut Vec<Event>,
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

fn fail(code: ErrorCode, path: &str) -> Outcome {
    Outcome {
        err: code.code(),
        path: path.to_string(),
        stat: None,
    }
}

impl Applier<'_> {
    fn ok(&self, path: &str, node: Option<NodeId>) -> Outcome {
        Outcome {
            err: 0,
            path: path.to_string(),
            stat: node.map(|id| self.tree.stat(id)),
        }
    }

    /// Queues `event` at `path` for every connection holding a watch of one of `kinds` there
    /// (or a recursive watch on an ancestor), once per connection.
    fn fire(&mut self, kinds: &[Kind], event: EventType, path: &str) {
        let conns = self.watches.trigger(kinds, path);
        if !conns.is_empty() {
            self.events.push(Event {
                kind: event,
                path: path.to_string(),
                conns,
            });
        }
    }

    /// Applies one txn; a multi yields one outcome per sub-txn.
    pub fn apply(&mut self, h: &TxnHeader, body: &TxnBody) -> Vec<Outcome> {
        match body {
            TxnBody::Multi(subs) => subs.iter().map(|s| self.apply_one(h, s)).collect(),
            b => vec![self.apply_one(h, b)],
        }
    }

    fn apply_one(&mut self, h: &TxnHeader, body: &TxnBody) -> Outcome {
        match body {
            TxnBody::Create(c) | TxnBody::Create2(c) => {
                let owner = if c.ephemeral { h.client_id } else { 0 };
                self.create(
                    h,
                    c.path.as_str(),
                    c.data.as_deref(),
                    &c.acl,
                    owner,
                    c.parent_c_version,
                )
            }
            TxnBody::CreateContainer(c) => self.create(
                h,
                c.path.as_str(),
                c.data.as_deref(),
                &c.acl,
                tree::CONTAINER_OWNER,
                c.parent_c_version,
            ),
            TxnBody::CreateTtl(c) => self.create(
                h,
                c.path.as_str(),
                c.data.as_deref(),
                &c.acl,
                tree::ttl_owner(c.ttl),
                c.parent_c_version,
            ),
            TxnBody::Delete(d) | TxnBody::DeleteContainer(d) => {
                self.delete(h.zxid, d.path.as_str().unwrap_or(""))
            }
            TxnBody::SetData(s) => {
                let p = s.path.as_str().unwrap_or("");
                let Some(id) = self.tree.lookup(p) else {
                    return fail(ErrorCode::NoNode, p);
                };
                self.tree
                    .apply_set_data(id, s.data.as_deref(), s.version, h.zxid, h.time);
                self.fire(ON_DATA, EventType::NodeDataChanged, p);
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
                    self.delete(h.zxid, p.as_str().unwrap_or(""));
                }
                self.ok("", None)
            }
            TxnBody::CreateSession(_) => self.ok("", None),
            TxnBody::Error(e) => Outcome {
                err: e.err,
                path: String::new(),
                stat: None,
            },
            TxnBody::Multi(_) => fail(ErrorCode::MarshallingError, ""),
        }
    }

    fn create(
        &mut self,
        h: &TxnHeader,
        p: Option<&str>,
        data: Option<&[u8]>,
        acl: &Option<Vec<ACL>>,
        owner: i64,
        pcv: i32,
    ) -> Outcome {
        let p = p.unwrap_or("");
        let (Some(parent_path), name) = (path::parent(p), path::name(p)) else {
            return fail(ErrorCode::BadArguments, p);
        };
        let Some(parent) = self.tree.lookup(parent_path) else {
            return fail(ErrorCode::NoNode, p);
        };
        let existed = self.tree.child(parent, name).is_some();
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
        self.fire(ON_DATA, EventType::NodeCreated, p);
        self.fire(ON_CHILDREN, EventType::NodeChildrenChanged, parent_path);
        self.ok(p, id)
    }

    fn delete(&mut self, zxid: i64, p: &str) -> Outcome {
        let Some(parent_path) = path::parent(p) else {
            return fail(ErrorCode::BadArguments, p);
        };
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
        self.tree.apply_delete(id, zxid);
        self.fire(ON_DELETE, EventType::NodeDeleted, p);
        self.fire(ON_CHILDREN, EventType::NodeChildrenChanged, parent_path);
        self.ok(p, None)
    }
}
