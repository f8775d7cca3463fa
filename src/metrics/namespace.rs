//! Per-namespace sizes: ZooKeeper 3.7+'s `read_per_namespace` and `write_per_namespace`
//! summary sets, keyed by a path's first component ("app" for /app/x), with the sizes its
//! DataTree counts (`updateReadStat`/`updateWriteStat`): a read is the path's length, the
//! bytes it returns (data, or the children's names) and 68 for the Stat; a write is the
//! path's length and the data it sets. Lengths are Java's `String.length()` (UTF-16 units).
//!
//! ZooKeeper keeps a summary for every top-level node ever read or written, forever. Here a
//! set keeps at most [`METRICS_NAMESPACES`] keys of at most [`METRICS_NAMESPACE_KEY_BYTES`]
//! bytes (src/limits.rs); anything past that is counted under [`OVERFLOW`], which no znode
//! name can be (it holds a '/'), so a client creating top-level nodes by the million costs a
//! bounded table and scrape.

use super::Summary;
use crate::limits::{METRICS_NAMESPACES, METRICS_NAMESPACE_KEY_BYTES, METRICS_NAMESPACE_WINDOW};
use std::collections::HashMap;

/// The key of what the bounds turned away.
pub const OVERFLOW: &str = "/*";

/// The first component of a path ("/a/b" → "a"); None for "/" and for what does not start
/// with '/' (ZooKeeper's PathUtils.getTopNamespace on a valid path).
pub fn top(path: &str) -> Option<&str> {
    let rest = path.strip_prefix('/')?;
    let ns = rest.split('/').next().unwrap_or("");
    (!ns.is_empty()).then_some(ns)
}

/// Java's `String.length()` of `s`: UTF-16 code units.
pub fn java_len(s: &str) -> u64 {
    let n = if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    };
    n as u64
}

/// One summary set, bounded.
#[derive(Clone, Debug, Default)]
pub struct NamespaceSet {
    keys: HashMap<Box<str>, Summary>,
    overflow: Option<Summary>,
}

impl NamespaceSet {
    /// One observation of `bytes` for the namespace of `path` (nothing for "/", as ZooKeeper).
    /// Allocates only for a namespace seen for the first time.
    pub fn observe(&mut self, path: &str, bytes: u64) {
        let Some(ns) = top(path) else {
            return;
        };
        if let Some(s) = self.keys.get_mut(ns) {
            s.observe(bytes);
            return;
        }
        let s = if self.keys.len() < METRICS_NAMESPACES && ns.len() <= METRICS_NAMESPACE_KEY_BYTES {
            self.keys
                .entry(ns.into())
                .or_insert_with(|| Summary::with_window(METRICS_NAMESPACE_WINDOW))
        } else {
            self.overflow
                .get_or_insert_with(|| Summary::with_window(METRICS_NAMESPACE_WINDOW))
        };
        s.observe(bytes);
    }

    /// A read of `path` that returned `bytes` (data, or the children's names in UTF-16 units).
    pub fn read(&mut self, path: &str, bytes: u64) {
        self.observe(
            path,
            java_len(path)
                .saturating_add(bytes)
                .saturating_add(crate::limits::STAT_BYTES as u64),
        );
    }

    /// A write of `path` that set `data` bytes (0 for a delete).
    pub fn write(&mut self, path: &str, data: usize) {
        self.observe(path, java_len(path).saturating_add(data as u64));
    }

    /// Every value back to zero, every key kept (ZooKeeper's `srst`).
    pub fn reset(&mut self) {
        for s in self.keys.values_mut().chain(self.overflow.as_mut()) {
            s.reset();
        }
    }

    /// The keys and their summaries, sorted by key, [`OVERFLOW`] last.
    pub fn entries(&self) -> Vec<(String, Summary)> {
        let mut out: Vec<(String, Summary)> = self
            .keys
            .iter()
            .map(|(k, s)| (k.to_string(), s.clone()))
            .collect();
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(s) = &self.overflow {
            out.push((OVERFLOW.to_string(), s.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_component_as_zookeeper_takes_it() {
        let cases = [
            ("/a/b/c", Some("a")),
            ("/a", Some("a")),
            ("/zookeeper/config", Some("zookeeper")),
            ("/", None),
            ("", None),
        ];
        for (path, want) in cases {
            assert_eq!(top(path), want, "{path:?}");
        }
    }

    /// The figures ZooKeeper 3.8.0 reported for the same operations (docs/METRICS.md).
    #[test]
    fn sizes_as_zookeeper_counts_them() {
        let mut r = NamespaceSet::default();
        r.read("/app/x", 10); // getData of 10 bytes: 6 + 10 + 68
        r.read("/app", 0); // exists
        r.read("/app", 1); // getChildren: one child "x"
        r.read("/ü", 0); // "/ü" is 2 UTF-16 units
        let e = r.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].0.as_str(), e[0].1.count(), e[0].1.sum()),
            ("app", 3, 229)
        );
        assert_eq!((e[0].1.min(), e[0].1.max()), (72, 84));
        assert_eq!((e[1].0.as_str(), e[1].1.sum()), ("ü", 70));
        let mut w = NamespaceSet::default();
        for (p, d) in [("/app", 5), ("/app/x", 0), ("/app/x", 10), ("/app/x", 0)] {
            w.write(p, d);
        }
        w.write("/", 3);
        let e = w.entries();
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].1.count(), e[0].1.sum(), e[0].1.avg()), (4, 37, 9.25));
    }

    #[test]
    fn bounded_in_keys_and_key_length() {
        let mut s = NamespaceSet::default();
        for i in 0..METRICS_NAMESPACES + 500 {
            s.write(&format!("/n{i}/x"), 1);
        }
        let long = format!("/{}", "k".repeat(METRICS_NAMESPACE_KEY_BYTES + 1));
        let mut t = NamespaceSet::default();
        t.write(&long, 0);
        assert_eq!(t.entries()[0].0, OVERFLOW);
        let e = s.entries();
        assert_eq!(e.len(), METRICS_NAMESPACES + 1);
        let (k, over) = e
            .last()
            .map(|(k, s)| (k.clone(), s.clone()))
            .unwrap_or_default();
        assert_eq!((k.as_str(), over.count()), (OVERFLOW, 500));
        // A namespace admitted before the bound keeps its own key.
        s.write("/n0", 0);
        assert_eq!(
            s.entries()
                .iter()
                .find(|(k, _)| k == "n0")
                .map(|(_, v)| v.count()),
            Some(2)
        );
    }

    #[test]
    fn reset_keeps_keys() {
        let mut s = NamespaceSet::default();
        s.write("/a", 1);
        s.reset();
        let e = s.entries();
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].1.count(), e[0].1.sum()), (0, 0));
    }
}
