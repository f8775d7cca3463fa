//! A compressed (radix) trie of znode paths, for "which stored paths are this path or one of
//! its ancestors": recursive watches are looked up with it, so that an event on a path of
//! length L costs O(L) however deep the path is and however many recursive watches exist,
//! instead of hashing each of its ancestor prefixes (O(depth × L)).
//!
//! Edges are labelled with byte strings and split only where stored paths diverge, so the trie
//! has at most two nodes per stored path and holds O(total bytes of the stored paths): a
//! 1 MB path of 500,000 components is one node, not 500,000. Nodes live in one arena
//! (`Vec`), so nothing is recursive: neither a walk, nor an insert, nor dropping the trie.
//!
//! A stored path `w` covers `p` when `p == w`, or `p` starts with `w` followed by `/`, or `w`
//! is `/` (the root covers every absolute path).

use std::sync::Arc;

type Id = u32;
const ROOT: Id = 0;

struct Node<V> {
    /// The bytes on the edge from the parent to this node (empty for the root only).
    label: Box<[u8]>,
    parent: Id,
    /// Children by the first byte of their label, sorted by that byte.
    children: Vec<(u8, Id)>,
    /// The stored path ending here, with its value.
    value: Option<(Arc<str>, V)>,
}

impl<V> Node<V> {
    fn new(label: &[u8], parent: Id) -> Self {
        Node {
            label: label.into(),
            parent,
            children: Vec::new(),
            value: None,
        }
    }

    fn child(&self, b: u8) -> Option<Id> {
        self.children
            .binary_search_by_key(&b, |&(k, _)| k)
            .ok()
            .and_then(|i| self.children.get(i))
            .map(|&(_, id)| id)
    }
}

/// A map from znode paths to `V` that finds, in one pass over a path, every stored path
/// covering it.
pub struct PathTrie<V> {
    nodes: Vec<Option<Node<V>>>,
    free: Vec<Id>,
    len: usize,
}

impl<V> Default for PathTrie<V> {
    fn default() -> Self {
        PathTrie {
            nodes: vec![Some(Node::new(b"", ROOT))],
            free: Vec::new(),
            len: 0,
        }
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl<V> PathTrie<V> {
    /// Number of stored paths.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn node(&self, id: Id) -> Option<&Node<V>> {
        self.nodes.get(id as usize).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, id: Id) -> Option<&mut Node<V>> {
        self.nodes.get_mut(id as usize).and_then(Option::as_mut)
    }

    fn alloc(&mut self, n: Node<V>) -> Id {
        match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.nodes.get_mut(id as usize) {
                    *slot = Some(n);
                }
                id
            }
            None => {
                self.nodes.push(Some(n));
                (self.nodes.len() - 1) as Id
            }
        }
    }

    fn release(&mut self, id: Id) {
        if let Some(slot) = self.nodes.get_mut(id as usize) {
            *slot = None;
            self.free.push(id);
        }
    }

    /// The node whose path is exactly `key`, if there is one (valued or not).
    fn find(&self, key: &[u8]) -> Option<Id> {
        let mut id = ROOT;
        let mut rest = key;
        while let Some(&b) = rest.first() {
            let c = self.node(id)?.child(b)?;
            let label = &self.node(c)?.label;
            rest = rest.strip_prefix(label.as_ref())?;
            id = c;
        }
        Some(id)
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        let id = self.find(key.as_bytes())?;
        self.node(id)?.value.as_ref().map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let id = self.find(key.as_bytes())?;
        self.node_mut(id)?.value.as_mut().map(|(_, v)| v)
    }

    /// The stored key equal to `key` (to share its allocation).
    pub fn key(&self, key: &str) -> Option<&Arc<str>> {
        let id = self.find(key.as_bytes())?;
        self.node(id)?.value.as_ref().map(|(k, _)| k)
    }

    /// The value at `key`, inserted with `make` (and the key `Arc`) when absent. None only if
    /// the arena were inconsistent (it is not: every node reached is live).
    pub fn get_or_insert_with(
        &mut self,
        key: &Arc<str>,
        make: impl FnOnce() -> V,
    ) -> Option<&mut V> {
        let id = self.node_for(key.as_bytes());
        if self.node(id)?.value.is_none() {
            self.len += 1;
        }
        let slot = &mut self.node_mut(id)?.value;
        slot.get_or_insert_with(|| (key.clone(), make()));
        slot.as_mut().map(|(_, v)| v)
    }

    /// The node for `key`, created (splitting an edge if need be) when missing.
    fn node_for(&mut self, key: &[u8]) -> Id {
        let mut id = ROOT;
        let mut rest = key;
        loop {
            let Some(&b) = rest.first() else {
                return id;
            };
            let Some(c) = self.node(id).and_then(|n| n.child(b)) else {
                let leaf = self.alloc(Node::new(rest, id));
                self.link(id, b, leaf);
                return leaf;
            };
            let label_len = self.node(c).map_or(0, |n| n.label.len());
            let shared = self.node(c).map_or(0, |n| common_prefix(&n.label, rest));
            if shared == label_len {
                rest = rest.get(shared..).unwrap_or_default();
                id = c;
                continue;
            }
            // Split c's edge after `shared` bytes (shared >= 1: the first bytes agree).
            let Some(head) = rest.get(..shared) else {
                return id;
            };
            let mid = self.alloc(Node::new(head, id));
            self.link(id, b, mid);
            if let Some(n) = self.node_mut(c) {
                let tail: Box<[u8]> = n.label.get(shared..).unwrap_or_default().into();
                n.label = tail;
                n.parent = mid;
            }
            if let Some(tb) = self.node(c).and_then(|n| n.label.first().copied()) {
                self.link(mid, tb, c);
            }
            rest = rest.get(shared..).unwrap_or_default();
            id = mid;
        }
    }

    /// Sets `parent`'s child for first byte `b` to `child` (adding or replacing).
    fn link(&mut self, parent: Id, b: u8, child: Id) {
        if let Some(p) = self.node_mut(parent) {
            match p.children.binary_search_by_key(&b, |&(k, _)| k) {
                Ok(i) => {
                    if let Some(e) = p.children.get_mut(i) {
                        e.1 = child;
                    }
                }
                Err(i) => p.children.insert(i, (b, child)),
            }
        }
    }

    fn unlink(&mut self, parent: Id, b: u8) {
        if let Some(p) = self.node_mut(parent) {
            if let Ok(i) = p.children.binary_search_by_key(&b, |&(k, _)| k) {
                p.children.remove(i);
            }
        }
    }

    /// Removes the value at `key`, and the nodes that only existed for it.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let id = self.find(key.as_bytes())?;
        let (_, v) = self.node_mut(id)?.value.take()?;
        self.len -= 1;
        self.compact(id);
        Some(v)
    }

    /// After `id` lost its value: drop it if it has no children, and merge a valueless node
    /// with a single child into that child, so the trie stays at most 2 nodes per path.
    fn compact(&mut self, id: Id) {
        let mut id = id;
        // At most two steps: the node itself, then its parent.
        for _ in 0..2 {
            if id == ROOT {
                return;
            }
            let Some(n) = self.node(id) else {
                return;
            };
            if n.value.is_some() {
                return;
            }
            let parent = n.parent;
            let first = n.label.first().copied();
            match n.children.len() {
                0 => {
                    if let Some(b) = first {
                        self.unlink(parent, b);
                    }
                    self.release(id);
                    id = parent;
                }
                1 => {
                    let child = n.children.first().map(|&(_, c)| c);
                    let head = n.label.clone();
                    if let (Some(c), Some(b)) = (child, first) {
                        if let Some(cn) = self.node_mut(c) {
                            let mut label = Vec::with_capacity(head.len() + cn.label.len());
                            label.extend_from_slice(&head);
                            label.extend_from_slice(&cn.label);
                            cn.label = label.into();
                            cn.parent = parent;
                        }
                        self.link(parent, b, c);
                        self.release(id);
                    }
                    return;
                }
                _ => return,
            }
        }
    }

    /// Calls `f` with every stored (key, value) covering `path` (see the module doc), shortest
    /// first, in one pass over `path`. Returns the number of path bytes examined, which is at
    /// most `path.len()`: the evidence, in tests, that the cost does not grow with depth.
    pub fn for_each_covering<'s>(
        &'s self,
        path: &str,
        mut f: impl FnMut(&'s Arc<str>, &'s V),
    ) -> usize {
        let p = path.as_bytes();
        let mut id = ROOT;
        let mut at = 0usize;
        loop {
            let Some(n) = self.node(id) else {
                return at;
            };
            if let Some((k, v)) = &n.value {
                let boundary =
                    at == p.len() || p.get(at) == Some(&b'/') || k.as_bytes().last() == Some(&b'/');
                if boundary {
                    f(k, v);
                }
            }
            let Some(&b) = p.get(at) else {
                return at;
            };
            let Some(c) = n.child(b) else {
                return at;
            };
            let Some(label) = self.node(c).map(|n| &n.label) else {
                return at;
            };
            let rest = p.get(at..).unwrap_or_default();
            if !rest.starts_with(label.as_ref()) {
                return at + common_prefix(label, rest);
            }
            at += label.len();
            id = c;
        }
    }

    /// Every stored (key, value), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.nodes
            .iter()
            .filter_map(|n| n.as_ref()?.value.as_ref().map(|(k, v)| (k, v)))
    }

    /// Every stored value, mutably, with its key.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Arc<str>, &mut V)> {
        self.nodes
            .iter_mut()
            .filter_map(|n| n.as_mut()?.value.as_mut().map(|(k, v)| (&*k, v)))
    }

    /// Number of arena nodes in use (the root included).
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn covering(t: &PathTrie<u32>, p: &str) -> Vec<String> {
        let mut out = Vec::new();
        t.for_each_covering(p, |k, _| out.push(k.to_string()));
        out
    }

    fn put(t: &mut PathTrie<u32>, k: &str, v: u32) {
        if let Some(x) = t.get_or_insert_with(&Arc::from(k), || v) {
            *x = v;
        }
    }

    /// The reference: every ancestor prefix of `p` (and `p`), shortest first, looked up.
    fn naive(m: &BTreeMap<String, u32>, p: &str) -> Vec<String> {
        let mut prefixes = vec![p.to_string()];
        let mut q = p;
        while let Some(parent) = crate::path::parent(q).filter(|&x| x != q) {
            prefixes.push(parent.to_string());
            q = parent;
        }
        prefixes.reverse();
        prefixes.dedup();
        prefixes.into_iter().filter(|x| m.contains_key(x)).collect()
    }

    #[test]
    fn covers_on_component_boundaries_only() {
        let mut t = PathTrie::default();
        for (i, k) in ["/", "/a", "/a/b/c", "/ab", "/a/bc"].iter().enumerate() {
            put(&mut t, k, i as u32);
        }
        assert_eq!(covering(&t, "/a/b/c/d"), ["/", "/a", "/a/b/c"]);
        assert_eq!(covering(&t, "/a/b"), ["/", "/a"]);
        assert_eq!(covering(&t, "/abc"), ["/"]);
        assert_eq!(covering(&t, "/ab/x"), ["/", "/ab"]);
        assert_eq!(covering(&t, "/a/bc"), ["/", "/a", "/a/bc"]);
        assert_eq!(covering(&t, "/"), ["/"]);
        assert_eq!(t.get("/a/b"), None);
        assert_eq!(t.get("/a/b/c"), Some(&2));
        assert_eq!(t.len(), 5);
        for k in ["/", "/a", "/a/b/c", "/ab", "/a/bc"] {
            assert!(t.remove(k).is_some());
            assert!(t.remove(k).is_none());
        }
        assert!(t.is_empty());
        assert_eq!(t.node_count(), 1);
    }

    #[test]
    fn one_node_for_a_very_deep_path() {
        let mut t = PathTrie::default();
        let deep = "/a".repeat(500_000);
        put(&mut t, &deep, 1);
        assert_eq!(t.node_count(), 2);
        assert_eq!(covering(&t, &format!("{deep}/x")), vec![deep.clone()]);
        assert!(t.remove(&deep).is_some());
        assert_eq!(t.node_count(), 1);
    }

    #[test]
    fn a_walk_examines_each_byte_of_the_path_at_most_once() {
        // 400 components, a stored path at every ancestor: hashing each prefix would touch
        // about 400 × 400 bytes; the walk touches each of the path's bytes once.
        let comps: Vec<String> = (0..400).map(|i| format!("n{i:04}")).collect();
        let mut t = PathTrie::default();
        let mut prefix = String::new();
        for c in &comps {
            prefix.push('/');
            prefix.push_str(c);
            put(&mut t, &prefix, 0);
        }
        put(&mut t, "/", 0);
        let leaf = format!("{prefix}/leaf");
        let mut seen = 0;
        let examined = t.for_each_covering(&leaf, |_, _| seen += 1);
        assert_eq!(seen, 401);
        assert!(examined <= leaf.len(), "{examined} > {}", leaf.len());
        // and with one stored path only, the same bound
        let mut one = PathTrie::default();
        put(&mut one, "/", 0);
        assert!(one.for_each_covering(&leaf, |_, _| {}) <= 1);
    }

    fn arb_path() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "ab", "ba", "a b"]),
            0..5,
        )
        .prop_map(|cs| {
            if cs.is_empty() {
                "/".to_string()
            } else {
                cs.iter().map(|c| format!("/{c}")).collect()
            }
        })
    }

    proptest! {
        #[test]
        fn matches_the_ancestor_walk(
            ops in prop::collection::vec((any::<bool>(), arb_path()), 0..60),
            probes in prop::collection::vec(arb_path(), 1..10),
        ) {
            let mut t = PathTrie::default();
            let mut m = BTreeMap::new();
            for (i, (insert, k)) in ops.iter().enumerate() {
                if *insert {
                    put(&mut t, k, i as u32);
                    m.insert(k.clone(), i as u32);
                } else {
                    prop_assert_eq!(t.remove(k), m.remove(k));
                }
                prop_assert_eq!(t.len(), m.len());
                prop_assert!(t.node_count() <= 2 * m.len() + 1);
                for p in &probes {
                    prop_assert_eq!(covering(&t, p), naive(&m, p));
                    prop_assert_eq!(t.get(p), m.get(p));
                }
            }
            let mut all: Vec<(String, u32)> = t.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            all.sort();
            prop_assert_eq!(all, m.into_iter().collect::<Vec<_>>());
        }
    }
}
