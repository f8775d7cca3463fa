//! Watches: which connections wait on which paths. One entry per watched path however many
//! connections watch it; triggering costs the watchers of that path plus the recursive watchers
//! of its ancestors (the ancestor walk is skipped while no recursive watch exists).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub type ConnId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// getData / exists: fires on create, delete, setData of the path.
    Data,
    /// getChildren: fires on child create/delete, and on deletion of the path.
    Child,
    /// addWatch PERSISTENT, data half: like `Data` but not removed when it fires.
    PersistentData,
    /// addWatch PERSISTENT, child half: like `Child` but not removed when it fires.
    PersistentChild,
    /// addWatch PERSISTENT_RECURSIVE: create/delete/setData of the path or any descendant;
    /// never NodeChildrenChanged; not removed when it fires.
    Recursive,
}

/// Watches to trigger for a create or setData of a path.
pub const ON_DATA: &[Kind] = &[Kind::Data, Kind::PersistentData, Kind::Recursive];
/// Watches to trigger on a node whose children changed.
pub const ON_CHILDREN: &[Kind] = &[Kind::Child, Kind::PersistentChild];
/// Watches to trigger for the deletion of a path.
pub const ON_DELETE: &[Kind] = &[
    Kind::Data,
    Kind::Child,
    Kind::PersistentData,
    Kind::PersistentChild,
    Kind::Recursive,
];

/// The kinds addWatch registers for `mode` (0 = PERSISTENT, 1 = PERSISTENT_RECURSIVE).
pub fn add_watch_kinds(mode: i32) -> Option<&'static [Kind]> {
    match mode {
        0 => Some(&[Kind::PersistentData, Kind::PersistentChild]),
        1 => Some(&[Kind::Recursive]),
        _ => None,
    }
}

type Table = HashMap<Arc<str>, HashSet<ConnId>>;

#[derive(Default)]
pub struct Watches {
    data: Table,
    child: Table,
    pdata: Table,
    pchild: Table,
    recursive: Table,
    by_conn: HashMap<ConnId, HashSet<(Kind, Arc<str>)>>,
}

impl Watches {
    fn table(&mut self, kind: Kind) -> &mut Table {
        match kind {
            Kind::Data => &mut self.data,
            Kind::Child => &mut self.child,
            Kind::PersistentData => &mut self.pdata,
            Kind::PersistentChild => &mut self.pchild,
            Kind::Recursive => &mut self.recursive,
        }
    }

    fn table_ref(&self, kind: Kind) -> &Table {
        match kind {
            Kind::Data => &self.data,
            Kind::Child => &self.child,
            Kind::PersistentData => &self.pdata,
            Kind::PersistentChild => &self.pchild,
            Kind::Recursive => &self.recursive,
        }
    }

    fn tables(&self) -> impl Iterator<Item = (Kind, &Table)> {
        [
            Kind::Data,
            Kind::Child,
            Kind::PersistentData,
            Kind::PersistentChild,
            Kind::Recursive,
        ]
        .into_iter()
        .map(|k| (k, self.table_ref(k)))
    }

    pub fn add(&mut self, kind: Kind, path: &str, conn: ConnId) {
        let table = self.table(kind);
        let key: Arc<str> = match table.get_key_value(path) {
            Some((k, _)) => k.clone(),
            None => Arc::from(path),
        };
        table.entry(key.clone()).or_default().insert(conn);
        self.by_conn.entry(conn).or_default().insert((kind, key));
    }

    pub fn has(&self, kind: Kind, path: &str, conn: ConnId) -> bool {
        self.table_ref(kind)
            .get(path)
            .is_some_and(|s| s.contains(&conn))
    }

    pub fn remove(&mut self, kind: Kind, path: &str, conn: ConnId) -> bool {
        let table = self.table(kind);
        let Some(set) = table.get_mut(path) else {
            return false;
        };
        let removed = set.remove(&conn);
        if set.is_empty() {
            table.remove(path);
        }
        if let Some(w) = self.by_conn.get_mut(&conn) {
            w.retain(|(k, p)| !(*k == kind && &**p == path));
        }
        removed
    }

    /// The connections to notify of one change at `path`, each once however many of its
    /// watches match. One-shot kinds are removed; persistent ones stay. `Kind::Recursive`
    /// matches recursive watches on `path` and on each of its ancestors.
    pub fn trigger(&mut self, kinds: &[Kind], path: &str) -> Vec<ConnId> {
        let mut out: Vec<ConnId> = Vec::new();
        let mut seen: HashSet<ConnId> = HashSet::new();
        let mut add = |out: &mut Vec<ConnId>, set: &HashSet<ConnId>| {
            for &c in set {
                if seen.insert(c) {
                    out.push(c);
                }
            }
        };
        for &kind in kinds {
            match kind {
                Kind::Data | Kind::Child => {
                    let Some((key, set)) = self.table(kind).remove_entry(path) else {
                        continue;
                    };
                    for c in &set {
                        if let Some(w) = self.by_conn.get_mut(c) {
                            w.remove(&(kind, key.clone()));
                        }
                    }
                    add(&mut out, &set);
                }
                Kind::PersistentData | Kind::PersistentChild => {
                    if let Some(set) = self.table_ref(kind).get(path) {
                        add(&mut out, set);
                    }
                }
                Kind::Recursive => {
                    if self.recursive.is_empty() {
                        continue;
                    }
                    let mut p = path;
                    loop {
                        if let Some(set) = self.recursive.get(p) {
                            add(&mut out, set);
                        }
                        match p.rfind('/') {
                            Some(0) if p.len() > 1 => p = "/",
                            Some(i) if i > 0 => match p.get(..i) {
                                Some(parent) => p = parent,
                                None => break,
                            },
                            _ => break,
                        }
                    }
                }
            }
        }
        out
    }

    pub fn remove_conn(&mut self, conn: ConnId) {
        let Some(ws) = self.by_conn.remove(&conn) else {
            return;
        };
        for (kind, path) in ws {
            let table = self.table(kind);
            if let Some(set) = table.get_mut(&path) {
                set.remove(&conn);
                if set.is_empty() {
                    table.remove(&path);
                }
            }
        }
    }

    /// Number of (connection, path, kind) watches. A PERSISTENT watch counts twice (its data
    /// and child halves), as ZooKeeper counts it in both its data and child tables.
    pub fn count(&self) -> usize {
        self.tables()
            .flat_map(|(_, t)| t.values())
            .map(|s| s.len())
            .sum()
    }

    pub fn paths(&self) -> usize {
        self.tables().map(|(_, t)| t.len()).sum()
    }

    pub fn conns(&self) -> usize {
        self.by_conn.values().filter(|w| !w.is_empty()).count()
    }

    pub fn watchers(&self) -> impl Iterator<Item = (Kind, &Arc<str>, &HashSet<ConnId>)> {
        self.tables()
            .flat_map(|(k, t)| t.iter().map(move |(p, s)| (k, p, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<ConnId>) -> Vec<ConnId> {
        v.sort_unstable();
        v
    }

    #[test]
    fn one_entry_per_path_and_one_shot() {
        let mut w = Watches::default();
        for c in 0..1000 {
            w.add(Kind::Data, "/x", c);
        }
        assert_eq!(w.paths(), 1);
        assert_eq!(w.count(), 1000);
        assert_eq!(w.trigger(ON_DATA, "/x").len(), 1000);
        assert_eq!(w.count(), 0);
        assert!(w.trigger(ON_DATA, "/x").is_empty());
    }

    #[test]
    fn connection_close_drops_its_watches() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/a", 1);
        w.add(Kind::Child, "/a", 1);
        w.add(Kind::PersistentData, "/a", 1);
        w.add(Kind::PersistentChild, "/a", 1);
        w.add(Kind::Recursive, "/", 1);
        w.add(Kind::Data, "/a", 2);
        w.remove_conn(1);
        assert_eq!(w.count(), 1);
        assert_eq!(w.paths(), 1);
        assert_eq!(w.conns(), 1);
        assert!(w.has(Kind::Data, "/a", 2));
        assert_eq!(w.trigger(ON_DELETE, "/a/b"), Vec::<ConnId>::new());
    }

    #[test]
    fn persistent_and_recursive_registration() {
        let mut w = Watches::default();
        for k in add_watch_kinds(0).unwrap() {
            w.add(*k, "/p", 1);
        }
        for k in add_watch_kinds(1).unwrap() {
            w.add(*k, "/r", 1);
        }
        assert!(add_watch_kinds(2).is_none());
        assert!(w.has(Kind::PersistentData, "/p", 1));
        assert!(w.has(Kind::PersistentChild, "/p", 1));
        assert!(w.has(Kind::Recursive, "/r", 1));
        assert!(!w.has(Kind::Data, "/p", 1));
        assert_eq!(w.count(), 3);
        assert_eq!(w.paths(), 3);
        assert_eq!(w.conns(), 1);
        assert_eq!(w.watchers().count(), 3);
        assert!(w.remove(Kind::PersistentChild, "/p", 1));
        assert!(!w.has(Kind::PersistentChild, "/p", 1));
        assert!(w.has(Kind::PersistentData, "/p", 1));
    }

    #[test]
    fn persistent_watches_fire_without_removal() {
        let mut w = Watches::default();
        w.add(Kind::PersistentData, "/p", 1);
        w.add(Kind::PersistentChild, "/p", 1);
        w.add(Kind::Recursive, "/r", 2);
        for _ in 0..3 {
            assert_eq!(w.trigger(ON_DATA, "/p"), vec![1]);
            assert_eq!(w.trigger(ON_CHILDREN, "/p"), vec![1]);
            assert_eq!(w.trigger(ON_DELETE, "/p"), vec![1]);
            assert_eq!(w.trigger(ON_DATA, "/r"), vec![2]);
            assert_eq!(w.trigger(ON_DELETE, "/r/x"), vec![2]);
        }
        // recursive watches never see NodeChildrenChanged; persistent ones only at their path
        assert!(w.trigger(ON_CHILDREN, "/r").is_empty());
        assert!(w.trigger(ON_DATA, "/p/c").is_empty());
        assert_eq!(w.count(), 3);
    }

    #[test]
    fn one_notification_per_connection() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/a/b", 1);
        w.add(Kind::Child, "/a/b", 1);
        w.add(Kind::PersistentData, "/a/b", 1);
        w.add(Kind::PersistentChild, "/a/b", 1);
        w.add(Kind::Recursive, "/a/b", 1);
        w.add(Kind::Recursive, "/a", 1);
        w.add(Kind::Recursive, "/", 1);
        w.add(Kind::Data, "/a/b", 2);
        w.add(Kind::Recursive, "/a", 2);
        assert_eq!(sorted(w.trigger(ON_DELETE, "/a/b")), vec![1, 2]);
        // the one-shot watches went, the persistent ones stayed
        assert!(!w.has(Kind::Data, "/a/b", 1));
        assert!(!w.has(Kind::Child, "/a/b", 1));
        assert!(!w.has(Kind::Data, "/a/b", 2));
        assert_eq!(w.count(), 6);
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b")), vec![1, 2]);
    }

    #[test]
    fn recursive_walks_ancestors_only() {
        let mut w = Watches::default();
        w.add(Kind::Recursive, "/", 1);
        w.add(Kind::Recursive, "/a", 2);
        w.add(Kind::Recursive, "/a/b/c", 3);
        w.add(Kind::Recursive, "/ab", 4);
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b/c/d")), vec![1, 2, 3]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b")), vec![1, 2]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/abc")), vec![1]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/ab/x")), vec![1, 4]);
        assert_eq!(w.trigger(ON_DATA, "/"), vec![1]);
        assert_eq!(w.count(), 4);
    }
}
