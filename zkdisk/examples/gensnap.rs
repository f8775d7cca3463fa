//! Writes a ZooKeeper 3.8 data dir holding one snapshot of N znodes, for measuring import on
//! large trees (docs/MIGRATION.md): `/bench/gNNNN/nNNNN`, 1000 children per group, 64 bytes
//! of data each, ZooKeeper's digest and seals. Start ZooKeeper on it to have ZooKeeper itself
//! load it and write its own snapshot.
//!
//!     cargo run --release -p palisade-zkdisk --example gensnap -- 1000000 /tmp/zk1m/data
use bytes::Bytes;
use palisade_proto::{DataNode, FileHeader, Id, SnapAcl, StatPersisted, ZxidDigest, ACL};
use palisade_zkdisk::{digest, dir, snap};

fn stat(czxid: i64, cversion: i32, pzxid: i64) -> StatPersisted {
    StatPersisted {
        czxid,
        mzxid: czxid,
        ctime: 1_700_000_000_000 + czxid,
        mtime: 1_700_000_000_000 + czxid,
        version: 0,
        cversion,
        aversion: 0,
        ephemeral_owner: 0,
        pzxid,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: i64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let out = std::path::PathBuf::from(args.next().unwrap_or("/tmp/zk1m/data".into()));
    let groups = (n + 999) / 1000;
    let last = 1 + groups + n; // /bench, the groups, the leaves: one zxid each
    let mut nodes = Vec::new();
    let mut push = |path: String, data: Option<Bytes>, st: StatPersisted| {
        nodes.push(snap::ZkNode {
            path,
            node: DataNode {
                data,
                acl: 1,
                stat: st,
            },
            offset: 0,
        });
    };
    push(String::new(), Some(Bytes::new()), stat(0, 2, 1));
    push(
        "/bench".into(),
        Some(Bytes::new()),
        stat(1, groups as i32, 1 + groups),
    );
    let data = Bytes::from(vec![b'x'; 64]);
    let mut z = 1 + groups;
    for g in 0..groups {
        let kids = (n - g * 1000).min(1000);
        let gz = 2 + g;
        let first_leaf = 1 + groups + g * 1000 + 1;
        push(
            format!("/bench/g{g:04}"),
            Some(Bytes::new()),
            stat(gz, kids as i32, first_leaf + kids - 1),
        );
        for i in 0..kids {
            z = first_leaf + i;
            push(
                format!("/bench/g{g:04}/n{i:04}"),
                Some(data.clone()),
                stat(z, 0, z),
            );
        }
    }
    push("/zookeeper".into(), Some(Bytes::new()), stat(0, 0, 0));
    push(
        "/zookeeper/config".into(),
        Some(Bytes::new()),
        StatPersisted {
            aversion: -1,
            ..stat(0, 0, 0)
        },
    );
    push("/zookeeper/quota".into(), Some(Bytes::new()), stat(0, 0, 0));
    for n in nodes
        .iter_mut()
        .filter(|n| n.path.starts_with("/zookeeper"))
    {
        n.node.stat.ctime = 0;
        n.node.stat.mtime = 0;
    }
    let sum = nodes.iter().fold(0i64, |s, n| {
        s.wrapping_add(digest::node_digest(
            &n.path,
            n.node.data.as_deref(),
            &n.node.stat,
        ))
    });
    assert_eq!(z, last);
    let s = snap::ZkSnapshot {
        header: FileHeader {
            magic: snap::SNAP_MAGIC,
            version: snap::FORMAT_VERSION,
            dbid: snap::DBID,
        },
        sessions: Vec::new(),
        acls: vec![SnapAcl {
            index: 1,
            acls: Some(vec![ACL {
                perms: 31,
                id: Id {
                    scheme: "world".into(),
                    id: "anyone".into(),
                },
            }]),
        }],
        nodes,
        digest: Some(ZxidDigest {
            zxid: last,
            digest_version: snap::DIGEST_VERSION,
            digest: sum,
        }),
    };
    let v2 = out.join(dir::VERSION_DIR);
    std::fs::create_dir_all(&v2).expect("create the version-2 dir");
    let bytes = snap::encode_snapshot(&s);
    snap::write_durably(&v2.join(dir::snapshot_name(last)), &bytes).expect("write the snapshot");
    println!(
        "{} nodes, zxid {last:#x}, {} bytes",
        s.nodes.len(),
        bytes.len()
    );
}
