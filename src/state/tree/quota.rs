//! Quota accounting, as ZooKeeper's DataTree keeps it: a node
//! `/zookeeper/quota/<path>/zookeeper_limits` puts `<path>` under quota, and the server keeps
//! `/zookeeper/quota/<path>/zookeeper_stats` current ("count=N,bytes=M") as nodes in that
//! subtree are created, deleted or resized. Limits are not enforced (ZooKeeper only warns).
//!
//! The stats node is derived state, updated in place (no txn, no version change), so
//! replaying txns rebuilds it exactly as the live server did.

use super::{DataTree, NodeId};

const QUOTA_ROOT: &str = "/zookeeper/quota";
const LIMITS: &str = "zookeeper_limits";
const STATS: &str = "zookeeper_stats";

/// "count=N,bytes=M" plus whatever ZooKeeper keeps after it (hard limits), kept as is.
fn parse_stats(data: &[u8]) -> Option<(i64, i64, String)> {
    let s = std::str::from_utf8(data).ok()?;
    let rest = s.strip_prefix("count=")?;
    let (count, rest) = rest.split_once(",bytes=")?;
    let end = rest
        .find(|c: char| c != '-' && !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (bytes, tail) = rest.split_at(end);
    Some((count.parse().ok()?, bytes.parse().ok()?, tail.to_string()))
}

impl DataTree {
    /// The quota'd path a node at `path` counts toward (the longest prefix under quota), found
    /// in one walk over `path` through the trie of quota roots (not by hashing every
    /// ancestor prefix, which made each write to a deep path cost O(depth × length) once any
    /// quota existed).
    fn quota_root_of(&self, path: &str) -> Option<String> {
        let mut longest: Option<&str> = None;
        self.quota_roots
            .for_each_covering(path, |k, _| longest = Some(k.as_ref()));
        longest.map(str::to_string)
    }

    /// If `id` is a limits or stats node, the quota'd path it belongs to.
    fn quota_node_target(&self, id: NodeId) -> Option<(bool, String)> {
        let n = self.node(id)?;
        // Bytes, not `name()`: this runs for every node a write touches.
        let is_limits = match n.name_bytes() {
            b if b == LIMITS.as_bytes() => true,
            b if b == STATS.as_bytes() => false,
            _ => return None,
        };
        let parent = self.path_of(n.parent);
        let target = parent
            .strip_prefix(QUOTA_ROOT)
            .filter(|t| t.starts_with('/'))?;
        Some((is_limits, target.to_string()))
    }

    fn adjust_stats(&mut self, root: &str, count: i64, bytes: i64) {
        let stats_path = format!("{QUOTA_ROOT}{root}/{STATS}");
        let Some(id) = self.lookup(&stats_path) else {
            return;
        };
        let Some((c, b, tail)) = self.node(id).and_then(|n| n.data()).and_then(parse_stats) else {
            return;
        };
        let text = format!("count={},bytes={}{tail}", c + count, b + bytes);
        self.write_data(id, Some(text.as_bytes()));
    }

    /// After a node is created: registers a new quota, initialises a new stats node with the
    /// subtree's current figures, and counts the node toward its quota.
    pub(super) fn quota_created(&mut self, id: NodeId) {
        if let Some((is_limits, target)) = self.quota_node_target(id) {
            if is_limits {
                let key: std::sync::Arc<str> = target.as_str().into();
                self.quota_roots.get_or_insert_with(&key, || ());
            } else {
                self.recount_stats(id, &target);
            }
        }
        if self.quota_roots.is_empty() {
            return;
        }
        let path = self.path_of(id);
        if let Some(root) = self.quota_root_of(&path) {
            let len = self.node(id).map_or(0, |n| n.data_len()) as i64;
            self.adjust_stats(&root, 1, len);
        }
    }

    /// Before a node is deleted.
    pub(super) fn quota_deleting(&mut self, id: NodeId) {
        if let Some((true, target)) = self.quota_node_target(id) {
            self.quota_roots.remove(&target);
        }
        if self.quota_roots.is_empty() {
            return;
        }
        let path = self.path_of(id);
        if let Some(root) = self.quota_root_of(&path) {
            let len = self.node(id).map_or(0, |n| n.data_len()) as i64;
            self.adjust_stats(&root, -1, -len);
        }
    }

    /// After a node's data changed size.
    pub(super) fn quota_resized(&mut self, id: NodeId, old: usize, new: usize) {
        if self.quota_roots.is_empty() || old == new {
            return;
        }
        let path = self.path_of(id);
        if let Some(root) = self.quota_root_of(&path) {
            self.adjust_stats(&root, 0, new as i64 - old as i64);
        }
    }

    /// After recovery: finds every quota (limits node) again and recomputes its stats node
    /// from the subtree, as ZooKeeper does on load. A fuzzy snapshot may hold a stats node
    /// captured at another moment than the nodes it counts, and replay cannot tell.
    pub(in crate::state) fn rebuild_quotas(&mut self) {
        self.quota_roots = Default::default();
        let Some(top) = self.lookup(QUOTA_ROOT) else {
            return;
        };
        let mut stack = vec![top];
        let mut stats = Vec::new();
        while let Some(x) = stack.pop() {
            stack.extend(self.children(x));
            match self.quota_node_target(x) {
                Some((true, target)) => {
                    let key: std::sync::Arc<str> = target.into();
                    self.quota_roots.get_or_insert_with(&key, || ());
                }
                Some((false, target)) => stats.push((x, target)),
                None => {}
            }
        }
        for (id, target) in stats {
            if self.quota_roots.get(&target).is_some() {
                self.recount_stats(id, &target);
            }
        }
    }

    /// Sets a stats node to its target subtree's figures, keeping what follows them.
    fn recount_stats(&mut self, id: NodeId, target: &str) {
        let (count, bytes) = self
            .lookup(target)
            .map_or((0, 0), |t| self.subtree_usage(t));
        let tail = self
            .node(id)
            .and_then(|n| n.data())
            .and_then(parse_stats)
            .map(|s| s.2)
            .unwrap_or_default();
        self.write_data(
            id,
            Some(format!("count={count},bytes={bytes}{tail}").as_bytes()),
        );
    }

    /// Nodes in the subtree (the node included) and the sum of their data lengths.
    fn subtree_usage(&self, id: NodeId) -> (i64, i64) {
        let (mut count, mut bytes) = (0, 0);
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            count += 1;
            bytes += self.node(x).map_or(0, |n| n.data_len()) as i64;
            stack.extend(self.children(x));
        }
        (count, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::Entry;
    use crate::state::tree::{NewData, NewNode, ROOT};

    /// Zxids for the applies, rising across every test (each tree sees them in order).
    fn next_zxid() -> i64 {
        static NEXT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn mk(t: &mut DataTree, path: &str, data: &[u8]) -> NodeId {
        let parent = crate::path::parent(path)
            .and_then(|p| t.lookup(p))
            .unwrap_or(ROOT);
        let acl = vec![Entry {
            perms: 31,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let new = NewNode {
            data: Some(data),
            acl,
            owner: 0,
            zxid: next_zxid(),
            time: 0,
        };
        t.apply_create(parent, crate::path::name(path), 1, new)
            .unwrap_or(ROOT)
    }

    fn stats(t: &DataTree, path: &str) -> String {
        let id = t.lookup(path).unwrap_or(ROOT);
        String::from_utf8_lossy(t.node(id).and_then(|n| n.data()).unwrap_or(b"")).into()
    }

    #[test]
    fn stats_follow_the_subtree() {
        let mut t = DataTree::new();
        mk(&mut t, "/q", b"");
        mk(&mut t, "/q/a", b"xyz");
        mk(&mut t, "/zookeeper/quota/q", b"");
        mk(
            &mut t,
            "/zookeeper/quota/q/zookeeper_limits",
            b"count=5,bytes=-1",
        );
        mk(
            &mut t,
            "/zookeeper/quota/q/zookeeper_stats",
            b"count=0,bytes=0=;byteHardLimit=-1;countHardLimit=-1",
        );
        let s = "/zookeeper/quota/q/zookeeper_stats";
        assert_eq!(
            stats(&t, s),
            "count=2,bytes=3=;byteHardLimit=-1;countHardLimit=-1"
        );
        let b = mk(&mut t, "/q/b", b"12345");
        assert_eq!(
            stats(&t, s),
            "count=3,bytes=8=;byteHardLimit=-1;countHardLimit=-1"
        );
        t.apply_set_data(
            b,
            NewData {
                data: Some(b"1"),
                version: 1,
                zxid: next_zxid(),
                time: 0,
            },
        );
        assert_eq!(
            stats(&t, s),
            "count=3,bytes=4=;byteHardLimit=-1;countHardLimit=-1"
        );
        t.apply_delete(b, next_zxid());
        assert_eq!(
            stats(&t, s),
            "count=2,bytes=3=;byteHardLimit=-1;countHardLimit=-1"
        );
        mk(&mut t, "/other", b"zzz");
        assert_eq!(
            stats(&t, s),
            "count=2,bytes=3=;byteHardLimit=-1;countHardLimit=-1",
            "outside the quota"
        );
        let limits = t
            .lookup("/zookeeper/quota/q/zookeeper_limits")
            .unwrap_or(ROOT);
        t.apply_delete(limits, next_zxid());
        mk(&mut t, "/q/c", b"1");
        assert_eq!(
            stats(&t, s),
            "count=2,bytes=3=;byteHardLimit=-1;countHardLimit=-1",
            "quota removed"
        );
    }

    #[test]
    fn a_quota_over_the_quota_tree_does_not_feed_on_itself() {
        let mut t = DataTree::new();
        mk(&mut t, "/zookeeper/quota/zookeeper", b"");
        mk(
            &mut t,
            "/zookeeper/quota/zookeeper/zookeeper_limits",
            b"count=-1,bytes=-1",
        );
        mk(
            &mut t,
            "/zookeeper/quota/zookeeper/zookeeper_stats",
            b"count=0,bytes=0",
        );
        let before = stats(&t, "/zookeeper/quota/zookeeper/zookeeper_stats");
        mk(&mut t, "/zookeeper/x", b"ab");
        let after = stats(&t, "/zookeeper/quota/zookeeper/zookeeper_stats");
        assert_ne!(before, after);
        assert!(after.starts_with("count="), "{after}");
    }

    #[test]
    fn the_innermost_quota_counts_and_names_match_whole_components() {
        let mut t = DataTree::new();
        for p in ["/q", "/q/in", "/qx"] {
            mk(&mut t, p, b"");
        }
        for q in ["q", "q/in"] {
            mk(&mut t, &format!("/zookeeper/quota/{q}"), b"");
            mk(
                &mut t,
                &format!("/zookeeper/quota/{q}/zookeeper_limits"),
                b"count=-1,bytes=-1",
            );
            mk(
                &mut t,
                &format!("/zookeeper/quota/{q}/zookeeper_stats"),
                b"count=0,bytes=0",
            );
        }
        let outer = "/zookeeper/quota/q/zookeeper_stats";
        let inner = "/zookeeper/quota/q/in/zookeeper_stats";
        // a stats node starts from its whole subtree, nested quotas included (as ZooKeeper)
        assert_eq!(stats(&t, outer), "count=2,bytes=0");
        assert_eq!(stats(&t, inner), "count=1,bytes=0");
        mk(&mut t, "/q/in/deep", b"12");
        mk(&mut t, "/q/inx", b"1"); // not under /q/in
        mk(&mut t, "/qx/y", b"1"); // not under /q
        assert_eq!(stats(&t, inner), "count=2,bytes=2");
        assert_eq!(stats(&t, outer), "count=3,bytes=1");
    }
}
