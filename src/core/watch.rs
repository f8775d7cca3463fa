//! Watches, kept as ZooKeeper 3.8 keeps them: two tables, *data* (getData, exists) and *child*
//! (getChildren), and addWatch registers in both. Each table holds one entry per watched path
//! however many connections watch it, and one mode per (connection, path): the latest
//! registration replaces the earlier one, so a one-shot getData on a path where the same
//! connection holds a PERSISTENT watch turns that half into a one-shot watch (ZooKeeper 3.8's
//! WatcherModeManager; ZOOKEEPER-4466 changed this only in 3.9).
//!
//! Triggering costs the watchers of the path plus the recursive watchers of its ancestors,
//! found in one walk over the path through a trie of recursively watched paths (skipped while
//! a table holds no recursive watch): O(path length), not O(depth × path length).

use crate::path::trie::PathTrie;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::conn_id::ConnId;

/// One of ZooKeeper's two watch tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// getData / exists (also on a missing node); fires on create, delete, setData of the path.
    Data,
    /// getChildren; fires on child create/delete, and on deletion of the path.
    Child,
}

/// How a watch in one table behaves when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One-shot: removed when it fires.
    Standard,
    /// addWatch PERSISTENT: fires for the path itself, stays.
    Persistent,
    /// addWatch PERSISTENT_RECURSIVE: fires for the path and every descendant, never for
    /// NodeChildrenChanged, stays.
    Recursive,
}

/// The tables a create or setData of a path triggers (NodeCreated / NodeDataChanged).
pub const ON_DATA: &[Kind] = &[Kind::Data];
/// The tables triggered on a node whose children changed (NodeChildrenChanged); recursive
/// watches never see this event.
pub const ON_CHILDREN: &[Kind] = &[Kind::Child];
/// The tables a deletion of a path triggers (NodeDeleted), data first, then child: as in
/// ZooKeeper, a connection notified by the first is not notified again by the second, and
/// recursive watches of the child table do see a deletion.
pub const ON_DELETE: &[Kind] = &[Kind::Data, Kind::Child];

/// The mode addWatch registers for `mode` (0 = PERSISTENT, 1 = PERSISTENT_RECURSIVE).
pub fn add_watch_mode(mode: i32) -> Option<Mode> {
    match mode {
        0 => Some(Mode::Persistent),
        1 => Some(Mode::Recursive),
        _ => None,
    }
}

/// One table: the non-recursive watchers of each path (with whether they persist), and the
/// recursive ones in a trie of watched paths, so that an event finds the recursive watchers
/// of its path and of all its ancestors in one walk over the path (O(path length), however
/// deep the path and however many recursive watches there are).
#[derive(Default)]
struct Table {
    exact: HashMap<Arc<str>, HashMap<ConnId, bool>>,
    recursive: PathTrie<HashSet<ConnId>>,
    /// Every connection that registered a watch in this table, with the paths it still
    /// watches. Like ZooKeeper's watch2Paths, an entry stays (possibly empty) after its
    /// watches fired or were removed, until the connection goes; `wchs`/`wchc` show it.
    by_conn: HashMap<ConnId, HashSet<Arc<str>>>,
    /// Number of recursive (connection, path) watches in this table.
    recursive_count: usize,
}

impl Table {
    /// The stored key for `path`, shared with the entries that already name it.
    fn key(&self, path: &str) -> Arc<str> {
        match self.exact.get_key_value(path) {
            Some((k, _)) => k.clone(),
            None => self
                .recursive
                .key(path)
                .cloned()
                .unwrap_or_else(|| Arc::from(path)),
        }
    }

    /// Removes `conn`'s watch at `path` from the watcher sets (not from `by_conn`); Some(true)
    /// if it was a recursive one.
    fn take(&mut self, path: &str, conn: ConnId) -> Option<bool> {
        if let Some(set) = self.recursive.get_mut(path) {
            if set.remove(&conn) {
                if set.is_empty() {
                    self.recursive.remove(path);
                }
                self.recursive_count = self.recursive_count.saturating_sub(1);
                return Some(true);
            }
        }
        let m = self.exact.get_mut(path)?;
        m.remove(&conn)?;
        if m.is_empty() {
            self.exact.remove(path);
        }
        Some(false)
    }

    fn add(&mut self, mode: Mode, path: &str, conn: ConnId) {
        let key = self.key(path);
        self.take(path, conn);
        match mode {
            Mode::Standard | Mode::Persistent => {
                self.exact
                    .entry(key.clone())
                    .or_default()
                    .insert(conn, mode == Mode::Persistent);
            }
            Mode::Recursive => {
                if let Some(set) = self.recursive.get_or_insert_with(&key, HashSet::new) {
                    set.insert(conn);
                    self.recursive_count += 1;
                }
            }
        }
        self.by_conn.entry(conn).or_default().insert(key);
    }

    fn has(&self, path: &str, conn: ConnId) -> bool {
        self.exact.get(path).is_some_and(|m| m.contains_key(&conn))
            || self.recursive.get(path).is_some_and(|s| s.contains(&conn))
    }

    fn watched(&self, path: &str) -> bool {
        self.exact.contains_key(path) || self.recursive.get(path).is_some()
    }

    fn remove(&mut self, path: &str, conn: ConnId) -> bool {
        let Some(paths) = self.by_conn.get_mut(&conn) else {
            return false;
        };
        if !paths.remove(path) {
            return false;
        }
        self.take(path, conn).is_some()
    }

    fn remove_conn(&mut self, conn: ConnId) {
        let Some(paths) = self.by_conn.remove(&conn) else {
            return;
        };
        for p in paths {
            self.take(&p, conn);
        }
    }

    /// ZooKeeper 3.8's triggerWatch: every watcher at `path` fires (one-shot ones are
    /// removed), and recursive watchers at `path` and its ancestors fire unless the event is
    /// NodeChildrenChanged.
    fn trigger(&mut self, path: &str, children_changed: bool, mut notify: impl FnMut(ConnId)) {
        if let Some((key, m)) = self.exact.get_key_value(path) {
            let key = key.clone();
            let mut fired_once = Vec::new();
            for (&c, &persistent) in m {
                notify(c);
                if !persistent {
                    fired_once.push(c);
                }
            }
            if !fired_once.is_empty() {
                if let Some(m) = self.exact.get_mut(path) {
                    for c in &fired_once {
                        m.remove(c);
                    }
                    if m.is_empty() {
                        self.exact.remove(path);
                    }
                }
                for c in fired_once {
                    if let Some(ps) = self.by_conn.get_mut(&c) {
                        ps.remove(&key);
                    }
                }
            }
        }
        if self.recursive_count == 0 || children_changed {
            return;
        }
        self.recursive
            .for_each_covering(path, |_, set| set.iter().for_each(|&c| notify(c)));
    }

    fn count(&self) -> usize {
        self.exact.values().map(HashMap::len).sum::<usize>() + self.recursive_count
    }

    /// Number of distinct watched paths.
    fn path_count(&self) -> usize {
        let rec_only = self
            .recursive
            .iter()
            .filter(|(k, _)| !self.exact.contains_key(k.as_ref()))
            .count();
        self.exact.len() + rec_only
    }

    /// Every watched path with its connections.
    fn by_path(&self) -> impl Iterator<Item = (&Arc<str>, Vec<ConnId>)> {
        let exact = self.exact.iter().map(|(p, m)| {
            let mut conns: Vec<ConnId> = m.keys().copied().collect();
            if let Some(s) = self.recursive.get(p) {
                conns.extend(s.iter().copied());
            }
            (p, conns)
        });
        let rec_only = self
            .recursive
            .iter()
            .filter(|(k, _)| !self.exact.contains_key(k.as_ref()))
            .map(|(k, s)| (k, s.iter().copied().collect()));
        exact.chain(rec_only)
    }
}

#[derive(Default)]
pub struct Watches {
    data: Table,
    child: Table,
}

impl Watches {
    fn table(&mut self, kind: Kind) -> &mut Table {
        match kind {
            Kind::Data => &mut self.data,
            Kind::Child => &mut self.child,
        }
    }

    fn table_ref(&self, kind: Kind) -> &Table {
        match kind {
            Kind::Data => &self.data,
            Kind::Child => &self.child,
        }
    }

    /// A one-shot watch (getData/exists: `Data`, getChildren: `Child`).
    pub fn add(&mut self, kind: Kind, path: &str, conn: ConnId) {
        self.add_mode(kind, Mode::Standard, path, conn);
    }

    /// Registers `conn` at `path` in one table with `mode`, replacing the mode it had there.
    pub fn add_mode(&mut self, kind: Kind, mode: Mode, path: &str, conn: ConnId) {
        self.table(kind).add(mode, path, conn);
    }

    /// addWatch: both tables (a recursive watch too, as ZooKeeper 3.8 does).
    pub fn add_watch(&mut self, mode: Mode, path: &str, conn: ConnId) {
        self.add_mode(Kind::Data, mode, path, conn);
        self.add_mode(Kind::Child, mode, path, conn);
    }

    /// Whether `conn` itself watches `path` in that table (exactly there, any mode).
    pub fn has(&self, kind: Kind, path: &str, conn: ConnId) -> bool {
        self.table_ref(kind).has(path, conn)
    }

    /// checkWatches as ZooKeeper 3.8.0 answers it: true when the table holds any watch at
    /// exactly `path`, whichever connection holds it (its WatchManager.containsWatcher tests
    /// the path's watcher set for existence, not for the caller).
    pub fn watched(&self, kind: Kind, path: &str) -> bool {
        self.table_ref(kind).watched(path)
    }

    /// removeWatches for one table: removes `conn`'s watch at exactly `path`, any mode.
    pub fn remove(&mut self, kind: Kind, path: &str, conn: ConnId) -> bool {
        self.table(kind).remove(path, conn)
    }

    /// The connections to notify of one change at `path`, each once however many of its
    /// watches match. `kinds` is one of ON_DATA, ON_CHILDREN, ON_DELETE: the tables to trigger,
    /// in order; without `Data` the event is NodeChildrenChanged, which recursive watches skip.
    pub fn trigger(&mut self, kinds: &[Kind], path: &str) -> Vec<ConnId> {
        let children_changed = !kinds.contains(&Kind::Data);
        let mut out: Vec<ConnId> = Vec::new();
        let mut seen: HashSet<ConnId> = HashSet::new();
        for &kind in kinds {
            self.table(kind).trigger(path, children_changed, |c| {
                if seen.insert(c) {
                    out.push(c);
                }
            });
        }
        out
    }

    pub fn remove_conn(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }

    /// Number of (connection, path, table) watches: ZooKeeper's `zk_watch_count` (an addWatch
    /// counts twice, once per table).
    pub fn count(&self) -> usize {
        self.data.count() + self.child.count()
    }

    /// `wchs` as ZooKeeper 3.8 computes it, from the data table only: (connections that
    /// registered a data watch and are still open, watched paths, watches).
    pub fn data_summary(&self) -> (usize, usize, usize) {
        let t = &self.data;
        (t.by_conn.len(), t.path_count(), t.count())
    }

    /// The data table by connection (`wchc`): every connection that registered a data watch,
    /// with the paths it still watches (possibly none).
    pub fn data_by_conn(&self) -> impl Iterator<Item = (ConnId, &HashSet<Arc<str>>)> {
        self.data.by_conn.iter().map(|(c, p)| (*c, p))
    }

    /// The data table by path (`wchp`): every watched path with its connections.
    pub fn data_by_path(&self) -> impl Iterator<Item = (&Arc<str>, Vec<ConnId>)> {
        self.data.by_path()
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
        assert_eq!(w.data_summary(), (1000, 1, 1000));
        assert_eq!(w.count(), 1000);
        assert_eq!(w.trigger(ON_DATA, "/x").len(), 1000);
        assert_eq!(w.count(), 0);
        assert!(w.trigger(ON_DATA, "/x").is_empty());
        // the connections stay listed (with no path) until they go, as in ZooKeeper
        assert_eq!(w.data_summary(), (1000, 0, 0));
        for c in 0..1000 {
            w.remove_conn(c);
        }
        assert_eq!(w.data_summary(), (0, 0, 0));
    }

    #[test]
    fn connection_close_drops_its_watches() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/a", 1);
        w.add(Kind::Child, "/a", 1);
        w.add_watch(Mode::Persistent, "/b", 1);
        w.add_watch(Mode::Recursive, "/", 1);
        w.add(Kind::Data, "/a", 2);
        w.remove_conn(1);
        assert_eq!(w.count(), 1);
        assert_eq!(w.data_summary(), (1, 1, 1));
        assert!(w.has(Kind::Data, "/a", 2));
        assert_eq!(w.trigger(ON_DELETE, "/a/b"), Vec::<ConnId>::new());
    }

    #[test]
    fn add_watch_registers_in_both_tables() {
        let mut w = Watches::default();
        w.add_watch(add_watch_mode(0).unwrap(), "/p", 1);
        w.add_watch(add_watch_mode(1).unwrap(), "/r", 1);
        assert!(add_watch_mode(2).is_none());
        for k in [Kind::Data, Kind::Child] {
            assert!(w.has(k, "/p", 1));
            assert!(w.has(k, "/r", 1));
        }
        assert_eq!(w.count(), 4);
        assert_eq!(w.data_summary(), (1, 2, 2));
        // removing one table's half leaves the other
        assert!(w.remove(Kind::Child, "/p", 1));
        assert!(!w.remove(Kind::Child, "/p", 1));
        assert!(w.has(Kind::Data, "/p", 1));
        assert!(w.remove(Kind::Child, "/r", 1));
        assert_eq!(w.trigger(ON_DATA, "/r/x"), vec![1]);
    }

    #[test]
    fn persistent_watches_fire_without_removal() {
        let mut w = Watches::default();
        w.add_watch(Mode::Persistent, "/p", 1);
        w.add_watch(Mode::Recursive, "/r", 2);
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
        assert_eq!(w.count(), 4);
    }

    #[test]
    fn latest_registration_sets_the_mode() {
        // ZooKeeper 3.8: one mode per (connection, path, table).
        let mut w = Watches::default();
        w.add_watch(Mode::Persistent, "/p", 1);
        w.add(Kind::Data, "/p", 1); // the data half becomes one-shot
        assert_eq!(w.trigger(ON_DATA, "/p"), vec![1]);
        assert!(w.trigger(ON_DATA, "/p").is_empty());
        assert_eq!(w.trigger(ON_CHILDREN, "/p"), vec![1]); // the child half is still persistent
        assert_eq!(w.trigger(ON_CHILDREN, "/p"), vec![1]);

        w.add_watch(Mode::Recursive, "/q", 1);
        w.add_watch(Mode::Persistent, "/q", 1); // no longer recursive
        assert!(w.trigger(ON_DATA, "/q/a/b").is_empty());
        assert_eq!(w.trigger(ON_CHILDREN, "/q"), vec![1]);

        w.add_watch(Mode::Persistent, "/s", 1);
        w.add_watch(Mode::Recursive, "/s", 1); // now recursive in both tables
        assert_eq!(w.trigger(ON_DATA, "/s/a/b"), vec![1]);
        assert!(w.trigger(ON_CHILDREN, "/s").is_empty());
        assert_eq!(w.count(), 5);

        // a recursive watch downgraded to one-shot in the data table still sees deletions of
        // descendants through its child-table half
        w.add_watch(Mode::Recursive, "/t", 1);
        w.add(Kind::Data, "/t", 1);
        assert!(w.trigger(ON_DATA, "/t/a").is_empty());
        assert_eq!(w.trigger(ON_DELETE, "/t/a"), vec![1]);
    }

    #[test]
    fn one_notification_per_connection() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/a/b", 1);
        w.add(Kind::Child, "/a/b", 1);
        w.add_watch(Mode::Recursive, "/a", 1);
        w.add_watch(Mode::Recursive, "/", 1);
        w.add(Kind::Data, "/a/b", 2);
        w.add_watch(Mode::Recursive, "/a", 2);
        assert_eq!(sorted(w.trigger(ON_DELETE, "/a/b")), vec![1, 2]);
        // the one-shot watches went, the recursive ones stayed
        assert!(!w.has(Kind::Data, "/a/b", 1));
        assert!(!w.has(Kind::Child, "/a/b", 1));
        assert!(!w.has(Kind::Data, "/a/b", 2));
        assert_eq!(w.count(), 6);
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b")), vec![1, 2]);
    }

    #[test]
    fn recursive_walks_ancestors_only() {
        let mut w = Watches::default();
        w.add_watch(Mode::Recursive, "/", 1);
        w.add_watch(Mode::Recursive, "/a", 2);
        w.add_watch(Mode::Recursive, "/a/b/c", 3);
        w.add_watch(Mode::Recursive, "/ab", 4);
        w.add(Kind::Data, "/a", 5); // a one-shot watch on an ancestor does not fire
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b/c/d")), vec![1, 2, 3]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/a/b")), vec![1, 2]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/abc")), vec![1]);
        assert_eq!(sorted(w.trigger(ON_DATA, "/ab/x")), vec![1, 4]);
        assert_eq!(w.trigger(ON_DATA, "/"), vec![1]);
        assert_eq!(w.count(), 9);
    }

    #[test]
    fn check_sees_any_connections_watch_remove_only_own() {
        let mut w = Watches::default();
        w.add(Kind::Data, "/x", 7);
        assert!(w.watched(Kind::Data, "/x"));
        assert!(!w.watched(Kind::Child, "/x"));
        assert!(!w.remove(Kind::Data, "/x", 8));
        assert!(w.remove(Kind::Data, "/x", 7));
        assert!(!w.watched(Kind::Data, "/x"));
        // a recursive watch is not "watched" at a descendant
        w.add_watch(Mode::Recursive, "/r", 7);
        assert!(!w.watched(Kind::Data, "/r/a"));
    }

    #[test]
    fn data_table_reports() {
        let mut w = Watches::default();
        w.add(Kind::Child, "/c", 1); // child watches are not in wchs/wchc/wchp
        assert_eq!(w.data_summary(), (0, 0, 0));
        w.add(Kind::Data, "/x", 1);
        w.add(Kind::Data, "/x", 2);
        w.add(Kind::Data, "/y", 2);
        assert_eq!(w.data_summary(), (2, 2, 3));
        let mut by_path: Vec<(String, Vec<ConnId>)> = w
            .data_by_path()
            .map(|(p, c)| (p.to_string(), sorted(c)))
            .collect();
        by_path.sort();
        assert_eq!(
            by_path,
            vec![("/x".into(), vec![1, 2]), ("/y".into(), vec![2])]
        );
        let mut by_conn: Vec<(ConnId, usize)> =
            w.data_by_conn().map(|(c, p)| (c, p.len())).collect();
        by_conn.sort();
        assert_eq!(by_conn, vec![(1, 1), (2, 2)]);
    }
}
