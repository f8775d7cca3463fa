//! The overlay: what txns prepped but not yet applied will change, by path, so that a write
//! is validated against the tree as it will be when the write is applied, not as it is now.

use crate::acl::Entry;
use hashbrown::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;

/// A node as prep sees it: the applied tree overridden by pending changes.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub version: i32,
    pub aversion: i32,
    /// The stored child-create counter C (not the visible cversion).
    pub child_creates: i32,
    pub num_children: i32,
    pub owner: i64,
    pub acl: Arc<[Entry]>,
}

/// A path's pending state: the node it will have (None: deleted), and the txn that set it.
pub(super) struct Change {
    zxid: i64,
    node: Option<NodeView>,
}

/// What one request recorded, to take back if a later op of the same request fails.
pub(super) type Undo = Vec<(Arc<str>, Option<Change>)>;

/// Changes of prepped, not yet applied txns, by path, and the paths each zxid touched (so
/// forgetting an applied txn costs its own changes, not the size of the overlay).
#[derive(Default)]
pub struct Overlay {
    map: HashMap<Arc<str>, Change>,
    by_zxid: VecDeque<(i64, Vec<Arc<str>>)>,
}

impl Overlay {
    /// Forgets the changes of txns up to `zxid` once applied; a path changed again by a later
    /// pending txn keeps that later change.
    pub fn applied(&mut self, zxid: i64) {
        while self.by_zxid.front().is_some_and(|(z, _)| *z <= zxid) {
            let Some((z, paths)) = self.by_zxid.pop_front() else {
                break;
            };
            for p in paths {
                if self.map.get(&p).is_some_and(|c| c.zxid == z) {
                    self.map.remove(&p);
                }
            }
        }
    }

    /// The pending state of `path`: `Some(None)` if a pending txn deletes it, `None` if no
    /// pending txn touches it.
    pub(super) fn get(&self, path: &str) -> Option<Option<&NodeView>> {
        self.map.get(path).map(|c| c.node.as_ref())
    }

    /// Records that txn `zxid` leaves `path` as `node`, remembering what it replaced.
    pub(super) fn record(
        &mut self,
        zxid: i64,
        path: &str,
        node: Option<NodeView>,
        undo: &mut Undo,
    ) {
        let key: Arc<str> = Arc::from(path);
        match self.by_zxid.back_mut() {
            Some((z, paths)) if *z == zxid => paths.push(key.clone()),
            _ => self.by_zxid.push_back((zxid, vec![key.clone()])),
        }
        let old = self.map.insert(key.clone(), Change { zxid, node });
        undo.push((key, old));
    }

    /// Takes back what a failed request recorded, newest first. (Its paths stay listed under
    /// its zxid; `applied` skips entries whose zxid no longer matches.)
    pub(super) fn rollback(&mut self, undo: Undo) {
        for (p, old) in undo.into_iter().rev() {
            match old {
                Some(c) => self.map.insert(p, c),
                None => self.map.remove(&p),
            };
        }
    }

    /// Paths of pending nodes (created, not yet applied) owned by `owner`.
    pub(super) fn pending_owned_by(&self, owner: i64) -> impl Iterator<Item = &str> {
        self.map
            .iter()
            .filter(move |(_, c)| c.node.as_ref().is_some_and(|n| n.owner == owner))
            .map(|(p, _)| &**p)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
