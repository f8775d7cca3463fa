//! The server's own rules, applied to what an import reads: a ZooKeeper log can hold only
//! txns its server's prep accepted, and its tree only nodes a client could create, so a txn or
//! node that breaks one is damage or forgery. The import refuses it (naming the file and
//! offset) rather than build a data dir the server would refuse to start on, or panic on.
//! The snapshot's nodes are checked as they load (`zktree::load`); here, the logged txns and
//! the tree a replay ends with.

use super::zktree;
use crate::path;
use crate::state::tree::{kind_of, DataTree, NodeKind, MAX_TTL};
use palisade_proto::{JStr, TxnBody};

fn shown(p: &JStr) -> String {
    format!("{:?}", p.to_lossy().unwrap_or_default())
}

/// The path a txn names, if it is one a client could name (`path::is_valid`).
fn valid<'a>(p: &'a JStr, op: &str) -> Result<&'a str, String> {
    match p.as_str() {
        Some(s) if path::is_valid(s) => Ok(s),
        _ => Err(format!(
            "{op} of {}: not a valid path (an empty, \".\" or \"..\" name, a trailing \"/\", or a character ZooKeeper forbids)",
            shown(p)
        )),
    }
}

fn create(p: &JStr, op: &str) -> Result<(), String> {
    if valid(p, op)? == "/" {
        return Err(format!("{op} of \"/\", which always exists"));
    }
    Ok(())
}

fn delete(p: &JStr, op: &str) -> Result<(), String> {
    let s = valid(p, op)?;
    if path::is_special(s) {
        return Err(format!(
            "{op} of {s:?}, which the server never deletes (BADARGUMENTS)"
        ));
    }
    Ok(())
}

/// Whether a logged txn (a multi's every op) keeps the rules the server's prep applies
/// before it logs anything: paths a client could create, no create of `/`, no delete of `/` or
/// of /zookeeper's own nodes, a TTL in range. The reason, if not.
pub fn txn(body: &TxnBody) -> Result<(), String> {
    match body {
        TxnBody::Create(c) | TxnBody::Create2(c) => create(&c.path, "create"),
        TxnBody::CreateContainer(c) => create(&c.path, "createContainer"),
        TxnBody::CreateTtl(c) => {
            create(&c.path, "createTTL")?;
            if !(1..=MAX_TTL).contains(&c.ttl) {
                return Err(format!(
                    "createTTL of {} with TTL {}, outside 1..={MAX_TTL}",
                    shown(&c.path),
                    c.ttl
                ));
            }
            Ok(())
        }
        TxnBody::Delete(d) => delete(&d.path, "delete"),
        TxnBody::DeleteContainer(d) => delete(&d.path, "deleteContainer"),
        TxnBody::CloseSession(c) => c
            .paths2_delete
            .iter()
            .flatten()
            .try_for_each(|p| delete(p, "closeSession's delete")),
        TxnBody::SetData(s) => valid(&s.path, "setData").map(|_| ()),
        TxnBody::SetAcl(s) => valid(&s.path, "setACL").map(|_| ()),
        TxnBody::Check(c) => valid(&c.path, "check").map(|_| ()),
        TxnBody::Multi(ops) => ops.iter().try_for_each(txn),
        TxnBody::CreateSession(_) | TxnBody::Error(_) => Ok(()),
    }
}

/// A node with a child under an ephemeral node, which the server never creates
/// (NOCHILDRENFOREPHEMERALS).
pub struct EphemeralParent {
    pub child: String,
    pub child_czxid: i64,
    pub parent: String,
    pub session: i64,
}

/// The first child of an ephemeral node in `tree`, if any. Checked on the tree a replay ends
/// with, not txn by txn: replaying over a fuzzy snapshot may pass through such a state (a
/// create logged under a persistent parent, replayed where a later ephemeral of the same name
/// already stands) that the rest of the log undoes.
pub fn ephemeral_parent(tree: &DataTree) -> Option<EphemeralParent> {
    let mut found = None;
    zktree::walk(tree, |p, id, n| {
        if found.is_some() {
            return;
        }
        let NodeKind::Ephemeral(session) = kind_of(n.owner) else {
            return;
        };
        if let Some(c) = tree.children(id).find_map(|c| tree.node(c)) {
            found = Some(EphemeralParent {
                child: path::join(p, c.name()),
                child_czxid: c.czxid,
                parent: p.to_string(),
                session,
            });
        }
    });
    found
}
