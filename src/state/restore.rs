//! A backup's state put in the place of a live one (the AdminServer's `restore`,
//! core/restore.rs). Two things ZooKeeper 3.9's restore does not keep, and Palisade does:
//!
//! - **Sequential suffixes are never handed out twice.** A node the live tree also holds keeps
//!   the larger of the two counts of child creations, so a lock's next contender gets a
//!   suffix (and a fencing token) above every one given before the restore. A node the live
//!   tree no longer holds comes back with the backup's count: nothing remembers a deleted
//!   node's suffixes.
//! - **Zxids go on increasing.** The restored state stands at a zxid past both the live and
//!   the backup's, so a client that saw the live state's zxid reconnects (ZooKeeper refuses a
//!   client whose last zxid is ahead of the server's) and the log stays in order.

use super::tree::{NewData, NodeId, ROOT};
use super::State;

impl State {
    /// This state (a backup's) made to replace `live` at `zxid`, which must be past both.
    pub fn restored_over(mut self, live: &State, zxid: i64) -> State {
        assert!(
            zxid > live.zxid && zxid > self.zxid,
            "a restore at {zxid:#x} does not follow the live {:#x} and the backup's {:#x}",
            live.zxid,
            self.zxid
        );
        let mut pairs: Vec<(NodeId, NodeId)> = vec![(ROOT, ROOT)];
        while let Some((ours, theirs)) = pairs.pop() {
            if let Some(n) = live.tree.node(theirs) {
                self.tree.0.raise_child_creates(ours, n.child_creates);
            }
            let children: Vec<NodeId> = self.tree.children(ours).collect();
            for c in children {
                let Some(name) = self.tree.node(c).map(|n| n.name().to_owned()) else {
                    continue;
                };
                if let Some(t) = live.tree.child(theirs, &name) {
                    pairs.push((c, t));
                }
            }
        }
        self.zxid = zxid;
        self
    }

    /// On an ensemble member: the configuration node as `live` has it, not as the backup
    /// does (a backup of another ensemble, or of a standalone server, names other members;
    /// the members' configuration is the log's, and a restore does not change it).
    pub fn keep_ensemble_config(&mut self, live: &State) {
        let (Some(theirs), Some(ours)) = (
            live.tree.lookup(super::CONFIG_NODE),
            self.tree.lookup(super::CONFIG_NODE),
        ) else {
            return;
        };
        let Some(n) = live.tree.node(theirs) else {
            return;
        };
        let data = n.data().map(<[u8]>::to_vec);
        let (version, mzxid, mtime) = (n.version, n.mzxid, n.mtime);
        self.tree.0.set_data_unchecked(
            ours,
            NewData {
                data: data.as_deref(),
                version,
                zxid: mzxid,
                time: mtime,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Workload;

    /// The live tree handed out more suffixes under a parent than the backup knows of; the
    /// restored parent counts from the live one's, and every other field is the backup's.
    #[test]
    fn a_restored_parent_counts_child_creations_from_the_larger() {
        let mut w = Workload::run(7, 200);
        let backup =
            crate::durability::image::decode(&crate::durability::image::encode(&w.state)).unwrap();
        w.steps(400);
        let live = &w.state;
        let zxid = live.zxid().max(backup.zxid()) + 1;
        let mut raised_some = false;
        let restored = crate::durability::image::decode(&crate::durability::image::encode(&backup))
            .unwrap()
            .restored_over(live, zxid);
        assert_eq!(restored.zxid(), zxid);
        let mut stack = vec![(super::ROOT, "/".to_string())];
        while let Some((id, path)) = stack.pop() {
            let r = restored.tree.node(id).unwrap();
            let b = backup
                .tree
                .node(backup.tree.lookup(&path).unwrap())
                .unwrap();
            let want = match live.tree.lookup(&path).and_then(|l| live.tree.node(l)) {
                Some(l) => b.child_creates.max(l.child_creates),
                None => b.child_creates,
            };
            assert_eq!(r.child_creates, want, "{path}");
            raised_some |= r.child_creates > b.child_creates;
            assert_eq!(
                (r.czxid, r.mzxid, r.pzxid, r.version),
                (b.czxid, b.mzxid, b.pzxid, b.version)
            );
            for c in restored.tree.children(id) {
                let name = restored.tree.node(c).unwrap().name();
                let p = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                stack.push((c, p));
            }
        }
        assert!(
            raised_some,
            "the workload created no child under a node the backup holds"
        );
        assert_eq!(restored.tree.digest(), restored.tree.full_digest());
    }

    #[test]
    #[should_panic(expected = "does not follow")]
    fn a_restore_zxid_behind_the_live_state_stops() {
        let w = Workload::run(1, 20);
        let z = w.state.zxid();
        crate::state::State::new().restored_over(&w.state, z);
    }
}
