//! The tree on its own: ZooKeeper's fresh tree, the counters and the digest's path hash, and
//! the invariant the applies assert (no apply meets a zxid above its own past the loaded
//! image), each shown to fire.

use super::*;

fn open() -> Vec<Entry> {
    vec![Entry {
        perms: 31,
        scheme: "world".into(),
        id: "anyone".into(),
    }]
}

fn create(t: &mut DataTree, parent: &str, name: &str, zxid: i64) -> NodeId {
    let p = t.lookup(parent).unwrap_or(ROOT);
    let pcv = t.node(p).map_or(0, |n| n.child_creates) + 1;
    t.apply_create(
        p,
        name,
        pcv,
        NewNode {
            data: Some(b"x"),
            acl: open(),
            owner: 0,
            zxid,
            time: 1,
        },
    )
    .unwrap_or(ROOT)
}

/// The digest's path hash is the CRC of the path string, at every depth (past 32
/// ancestors too, where the walk spills into a Vec); `/zookeeper/...` is left out.
#[test]
fn path_crc_is_the_crc_of_the_path() {
    let mut t = DataTree::new();
    let mut path = String::new();
    for depth in 1..=40 {
        let parent = if path.is_empty() {
            "/".to_string()
        } else {
            path.clone()
        };
        path = format!("{path}/d{depth}");
        let id = create(&mut t, &parent, &format!("d{depth}"), depth);
        assert_eq!(
            t.path_crc(id),
            Some(crc32fast::hash(path.as_bytes())),
            "{path}"
        );
    }
    assert_eq!(t.path_crc(ROOT), Some(crc32fast::hash(b"/")));
    let cfg = t.lookup("/zookeeper/config").unwrap_or(ROOT);
    assert_eq!(t.path_crc(cfg), None);
}

#[test]
fn fresh_tree_matches_zookeeper() {
    let t = DataTree::new();
    assert_eq!(t.stat(ROOT).cversion, -1);
    let zk = t.lookup("/zookeeper").unwrap_or(ROOT);
    assert_eq!(t.stat(zk).cversion, -2);
    let cfg = t.lookup("/zookeeper/config").unwrap_or(ROOT);
    assert_eq!(t.stat(cfg).aversion, -1);
    assert_eq!(t.znode_count(), 5);
    assert_eq!(t.descendants(ROOT), 3);
}

#[test]
fn cversion_counts_creates_and_deletes() {
    let mut t = DataTree::new();
    let p = create(&mut t, "/", "p", 1);
    let a = create(&mut t, "/p", "a", 2);
    let b = create(&mut t, "/p", "b", 3);
    t.apply_delete(a, 4);
    t.apply_delete(b, 5);
    let s = t.stat(p);
    assert_eq!((s.cversion, s.num_children, s.pzxid), (4, 0, 5));
    assert_eq!(t.node(p).map(|n| n.child_creates), Some(2));
}

#[test]
fn replayed_create_only_raises() {
    let mut t = DataTree::new();
    let p = create(&mut t, "/", "p", 1);
    let new = || NewNode {
        data: None,
        acl: open(),
        owner: 0,
        zxid: 9,
        time: 1,
    };
    t.apply_create(p, "c", 7, new());
    assert_eq!(t.node(p).map(|n| n.child_creates), Some(7));
    // Replaying an older create of the same child, as over a fuzzy image that saw zxid 9,
    // must not lower anything.
    t.image_zxid = 9;
    t.apply_create(p, "c", 3, NewNode { zxid: 2, ..new() });
    let n = t.node(p).map(|n| (n.child_creates, n.pzxid));
    assert_eq!(n, Some((7, 9)));
}

#[test]
fn lookup_rejects_malformed_paths() {
    let mut t = DataTree::new();
    create(&mut t, "/", "a", 1);
    assert!(t.lookup("/a").is_some());
    assert_eq!(t.lookup(""), Some(ROOT));
    for p in ["/a/", "//a", "a"] {
        assert!(t.lookup(p).is_none(), "{p:?}");
    }
}

#[test]
fn identical_acls_are_stored_once() {
    let mut t = DataTree::new();
    let before = t.acls.len();
    for i in 0..100 {
        create(&mut t, "/", &format!("n{i}"), i + 1);
    }
    assert_eq!(t.acls.len(), before);
}

#[test]
fn null_and_empty_data_stay_apart_and_names_survive_data_changes() {
    // The layout packing is what keeps a node at 96 bytes (memory per znode, BENCHMARKS.md).
    assert_eq!(std::mem::size_of::<Option<Node>>(), 96);
    let mut t = DataTree::new();
    let id = create(&mut t, "/", "name", 1);
    for data in [None, Some(&b""[..]), Some(&b"abc"[..]), None] {
        t.write_data(id, data);
        let n = t.node(id);
        assert_eq!(n.map(|n| (n.name(), n.data())), Some(("name", data)));
        assert_eq!(n.map(|n| n.data_len()), Some(data.map_or(0, |d| d.len())));
    }
}

// --- the applies' invariant: past the loaded image, no apply meets a zxid above its own ----

/// A setData of `data` at `zxid` (its time is 1: these tests do not look at it).
fn set_data(t: &mut DataTree, id: NodeId, data: &[u8], version: i32, zxid: i64) {
    let set = NewData {
        data: Some(data),
        version,
        zxid,
        time: 1,
    };
    t.apply_set_data(id, set);
}

/// A fresh tree with /p (zxid 1) and /p/c (zxid 5), and /p/c's data set at zxid 7: the tree
/// has seen zxids up to 7.
fn seen_up_to_7() -> (DataTree, NodeId, NodeId) {
    let mut t = DataTree::new();
    let p = create(&mut t, "/", "p", 1);
    let c = create(&mut t, "/p", "c", 5);
    set_data(&mut t, c, b"v", 1, 7);
    (t, p, c)
}

#[test]
fn applies_at_or_above_every_zxid_they_meet_pass() {
    let (mut t, p, c) = seen_up_to_7();
    // Equal zxids are a multi's later ops.
    set_data(&mut t, c, b"w", 2, 7);
    create(&mut t, "/p", "d", 7);
    t.apply_delete(c, 8);
    t.raise_pzxid(p, 9);
    let s = t.stat(p);
    assert_eq!((s.pzxid, s.num_children), (9, 1));
}

#[test]
#[should_panic(expected = "the tree is ahead of its log")]
fn a_set_data_below_the_nodes_mzxid_stops() {
    let (mut t, _, c) = seen_up_to_7();
    set_data(&mut t, c, b"old", 2, 6);
}

#[test]
#[should_panic(expected = "the tree is ahead of its log")]
fn a_create_below_the_parents_pzxid_stops() {
    let (mut t, _, _) = seen_up_to_7();
    create(&mut t, "/p", "late", 4);
}

#[test]
#[should_panic(expected = "the tree is ahead of its log")]
fn a_delete_below_the_parents_pzxid_stops() {
    let (mut t, _, c) = seen_up_to_7();
    t.apply_delete(c, 4);
}

#[test]
#[should_panic(expected = "the tree is ahead of its log")]
fn a_replayed_delete_below_the_parents_pzxid_stops() {
    let (mut t, p, _) = seen_up_to_7();
    t.raise_pzxid(p, 4);
}

/// Within the window of the image a tree was loaded from, a replay over the fuzzy capture
/// meets later zxids by design: setData may lower mzxid there (the later txn's replay puts
/// it back), creates and deletes only raise.
#[test]
fn within_the_loaded_images_window_replays_meet_later_zxids() {
    let (mut t, p, c) = seen_up_to_7();
    t.image_zxid = 7;
    set_data(&mut t, c, b"older", 1, 6);
    assert_eq!(t.node(c).map(|n| n.mzxid), Some(6));
    create(&mut t, "/p", "d", 3);
    t.apply_delete(c, 4);
    t.raise_pzxid(p, 2);
    assert_eq!(t.stat(p).pzxid, 5);
    // Past the window, applies meet only older zxids again.
    create(&mut t, "/p", "e", 8);
    t.raise_pzxid(p, 8);
    assert_eq!(t.stat(p).pzxid, 8);
}

/// The loader records the highest zxid any node of the image holds, in any of its fields.
#[test]
fn the_loader_records_the_images_newest_zxid() {
    use palisade_snapshot::{NodeItem, NO_PARENT};
    let item = |parent, name: &'static [u8], (czxid, mzxid, pzxid)| NodeItem {
        parent,
        name,
        data: None,
        acl: 0,
        czxid,
        mzxid,
        pzxid,
        ctime: 0,
        mtime: 0,
        version: 0,
        cversion: 0,
        aversion: 0,
        owner: 0,
    };
    for (zxids, newest) in [((3, 4, 9), 9), ((3, 12, 9), 12), ((15, 4, 9), 15)] {
        let mut l = TreeLoader::new();
        l.acl(0, open()).unwrap();
        l.node(&item(NO_PARENT, b"", (0, 0, 2))).unwrap();
        l.node(&item(0, b"a", zxids)).unwrap();
        let t = l.finish().unwrap();
        assert_eq!(t.image_zxid(), newest, "{zxids:?}");
    }
    assert_eq!(DataTree::new().image_zxid(), 0);
}
