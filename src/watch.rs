//! Watches: which connections wait on which paths. One entry per watched path however many
//! connections watch it; triggering costs the watchers of that path only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub type ConnId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// getData / exists: fires on create, delete, setData of the path.
    Data,
    /// getChildren: fires on child create/delete, and on deletion of the path.
    Child,
}

#[derive(Default)]
pub struct Watches {
    data: HashMap<Arc<str>, HashSet<ConnId>>,
    child: HashMap<Arc<str>, HashSet<ConnId>>,
    by_conn: HashMap<ConnId, HashSet<(Kind, Arc<str>)>>,
}

impl Watches {
    fn table(&mut self, kind: Kind) -> &mut HashMap<Arc<str>, HashSet<ConnId>> {
        match kind {
            Kind::Data => &mut self.data,
            Kind::Child => &mut self.child,
        }
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
        let t = match kind {
            Kind::Data => &self.data,
            Kind::Child => &self.child,
        };
        t.get(path).is_some_and(|s| s.contains(&conn))
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

    /// Removes and returns the one-shot watchers of `kind` at `path`.
    pub fn take(&mut self, kind: Kind, path: &str) -> Vec<ConnId> {
        let Some((key, set)) = self.table(kind).remove_entry(path) else {
            return Vec::new();
        };
        for c in &set {
            if let Some(w) = self.by_conn.get_mut(c) {
                w.remove(&(kind, key.clone()));
            }
        }
        set.into_iter().collect()
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

    /// Number of (connection, path, kind) watches.
    pub fn count(&self) -> usize {
        self.data
            .values()
            .chain(self.child.values())
            .map(|s| s.len())
            .sum()
    }

    pub fn paths(&self) -> usize {
        self.data.len() + self.child.len()
    }

    pub fn conns(&self) -> usize {
        self.by_conn.values().filter(|w| !w.is_empty()).count()
    }

    pub fn of_conn(&self, conn: ConnId) -> Vec<(Kind, Arc<str>)> {
        self.by_conn
            .get(&conn)
            .map(|w| w.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn watchers(&self) -> impl Iterator<Item = (Kind, &Arc<str>, &HashSet<ConnId>)> {
        self.data
            .iter()
            .map(|(p, s)| (Kind::Data, p, s))
            .chain(self.child.iter().map(|(p, s)| (Kind::Child, p, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_path_and_one_shot() {
        let mut w = Watches::default();
        for c in 0..1000 {
            w.add(Kind::Data, "/x", c);
        }
        assert_eq!(w.paths(), 1);
        assert_eq!(w.count(), 1000);
        assert_eq!(w.take(Kind::Data, "/x").len(), 1000);
        assert_eq!(w.count(), 0);
        assert!(w.take(Kind::Data, "/x").is_empty());
    }

    #[test]
    fn connection_close_drops_its_watches() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/a", 1);
        w.add(Kind::Child, "/a", 1);
        w.add(Kind::Data, "/a", 2);
        w.remove_conn(1);
        assert_eq!(w.count(), 1);
        assert!(w.has(Kind::Data, "/a", 2));
    }
}
