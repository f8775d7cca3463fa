//! `replay --to Z` rebuilds exactly the tree a client read from the live server at Z: the
//! whole tree is read (getChildren + getData with stat, every node) at a quiet moment whose
//! zxid every read reply carries, more writes follow, the server is killed, and the replay
//! to Z must match node for node — stat, data, children. The data dir keeps the log from
//! zxid 1 (1 MiB segments) and every snapshot (one every ~40 txns), so a snapshot ending at
//! or before Z is the starting point; snapshots ending after Z are passed over.

mod support;

use palisade_inspect::nodes::all_nodes;
use palisade_inspect::{replay, Base, DataDir};
use palisade_proto::Stat;
use std::collections::BTreeMap;
use support::*;

type Live = BTreeMap<String, (Option<Vec<u8>>, Stat)>;

/// Every node under `/`, read through the client; returns the nodes and the zxid the
/// replies carried (all equal, or the read was not at one point).
fn read_all(c: &mut Client) -> (Live, i64) {
    let mut out = Live::new();
    let mut zxids = Vec::new();
    let mut stack = vec!["/".to_string()];
    while let Some(p) = stack.pop() {
        let (data, stat) = c
            .get_data(&p)
            .unwrap()
            .unwrap_or_else(|e| panic!("getData {p}: {e}"));
        zxids.push(c.last_zxid);
        for child in c
            .children(&p)
            .unwrap()
            .unwrap_or_else(|e| panic!("getChildren {p}: {e}"))
        {
            stack.push(if p == "/" {
                format!("/{child}")
            } else {
                format!("{p}/{child}")
            });
        }
        out.insert(p, (data, stat));
    }
    let z = zxids[0];
    assert!(
        zxids.iter().all(|&x| x == z),
        "the tree changed while it was read"
    );
    (out, z)
}

#[test]
fn replay_to_a_zxid_matches_a_live_read_at_that_zxid() {
    let tmp = temp_dir("replay");
    let mut server = Server::start_small(
        tmp.path(),
        "preAllocSize=1024\nautopurge.snapRetainCount=50\n",
    );
    workload(server.port, 5, 200);
    let mut reader = connect(server.port);
    let (live, z) = read_all(&mut reader);
    workload(server.port, 6, 120);
    server.kill9();

    let r = replay(&DataDir::new(server.data()), Some(z)).unwrap();
    assert_eq!(r.zxid, z);
    match &r.base {
        Base::Snapshot { end, .. } => assert!(*end <= z),
        Base::Empty => panic!("a snapshot ending before {z:#x} was expected to be used"),
    }
    assert!(
        r.passed_over
            .iter()
            .any(|(_, why)| why.contains("exact only from there on")),
        "snapshots ending after Z must be passed over: {:?}",
        r.passed_over
    );
    let rebuilt = all_nodes(&r.tree);
    let paths: Vec<&String> = rebuilt.keys().collect();
    assert_eq!(paths, live.keys().collect::<Vec<_>>(), "paths differ");
    for (path, (data, s)) in &live {
        let n = &rebuilt[path];
        let got = Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: n.cversion,
            aversion: n.aversion,
            ephemeral_owner: match palisade::state::tree::kind_of(n.owner) {
                palisade::state::tree::NodeKind::Ephemeral(s) => s,
                _ => 0,
            },
            data_length: n.data_len() as i32,
            num_children: n.num_children as i32,
            pzxid: n.pzxid,
        };
        assert_eq!(&got, s, "{path}: stat");
        assert_eq!(
            &n.data.clone().unwrap_or_default(),
            &data.clone().unwrap_or_default(),
            "{path}: data"
        );
    }
    // The visible cversion runs ahead of the child count somewhere (deletes happened).
    assert!(
        live.values().any(|(_, s)| s.cversion > s.num_children),
        "workload too tame"
    );

    // The same through the binary, as JSON: the node count and a parent's counters.
    let (json, code) = inspect(&[
        "replay",
        server.data().to_str().unwrap(),
        "--to",
        &format!("{z:#x}"),
        "--subtree",
        "/app",
        "--json",
    ]);
    assert_eq!(code, 0, "{json}");
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "state");
    assert_eq!(lines[0]["zxid"], format!("{z:#x}"));
    let app = lines.iter().find(|l| l["path"] == "/app").unwrap();
    assert_eq!(
        app["cversion"].as_i64(),
        Some(i64::from(live["/app"].1.cversion))
    );
    assert_eq!(app["pzxid"], format!("{:#x}", live["/app"].1.pzxid));
    let under_app = live.keys().filter(|p| p.starts_with("/app")).count();
    assert_eq!(lines.len() - 1, under_app);

    // Before the first snapshot's end only the empty tree is an exact start.
    let early = replay(&DataDir::new(server.data()), Some(5)).unwrap();
    assert_eq!((early.base.clone(), early.zxid), (Base::Empty, 5));

    // Past the end of the log there is nothing to rebuild.
    let err = replay(&DataDir::new(server.data()), Some(0x7fff_ffff))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("cannot rebuild") || err.to_string().contains("ends at"),
        "{err}"
    );
}
