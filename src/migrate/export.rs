//! `palisade export-zookeeper`: a Palisade data dir → `OUT/version-2/` that ZooKeeper 3.8
//! starts from: one snapshot at the last zxid (every node with its stat and ACL, every live
//! session, ZooKeeper's digest and both seals, exactly as FileSnap writes them) and an empty
//! log after it. The Palisade data dir is recovered as the server recovers it (newest valid
//! snapshot plus the WAL, digests checked); like a server start, that cuts a torn WAL tail.

use super::zktree;
use super::Summary;
use crate::config::Config;
use crate::durability::recovery;
use bytes::BytesMut;
use palisade_proto::{DataNode, FileHeader, Id, SnapAcl, SnapSession, ZxidDigest, ACL};
use palisade_zkdisk::snap::{self, ZkNode, ZkSnapshot};
use palisade_zkdisk::{dir, log as zklog, VERSION_DIR};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct ExportOpts {
    pub data_dir: PathBuf,
    pub zk_data_dir: PathBuf,
    pub dry_run: bool,
}

/// The ZooKeeper snapshot of a state.
pub fn to_zk(state: &crate::state::State) -> ZkSnapshot {
    let tree = &state.tree;
    let mut acl_of: HashMap<u32, i64> = HashMap::new();
    let mut acls = Vec::new();
    let mut nodes = Vec::with_capacity(tree.znode_count());
    zktree::walk(tree, |path, _, n| {
        let next = i64::try_from(acl_of.len())
            .unwrap_or(i64::MAX)
            .saturating_add(1);
        let index = *acl_of.entry(n.acl).or_insert_with(|| {
            let list = tree
                .acls()
                .get(n.acl)
                .iter()
                .map(|e| ACL {
                    perms: e.perms,
                    id: Id {
                        scheme: (&*e.scheme).into(),
                        id: (&*e.id).into(),
                    },
                })
                .collect();
            // ZooKeeper numbers its ACL lists from 1 (ReferenceCountedACLCache.incrementIndex).
            acls.push(SnapAcl {
                index: next,
                acls: Some(list),
            });
            next
        });
        nodes.push(ZkNode {
            path: path.to_string(),
            node: DataNode {
                data: n.data().map(bytes::Bytes::copy_from_slice),
                acl: index,
                stat: zktree::stat_persisted(n),
            },
            offset: 0,
        });
    });
    ZkSnapshot {
        header: FileHeader {
            magic: snap::SNAP_MAGIC,
            version: snap::FORMAT_VERSION,
            dbid: snap::DBID,
        },
        sessions: state
            .sessions()
            .iter()
            .map(|(&id, &timeout)| SnapSession { id, timeout })
            .collect(),
        acls,
        nodes,
        digest: Some(ZxidDigest {
            zxid: state.zxid(),
            digest_version: snap::DIGEST_VERSION,
            digest: zktree::zk_digest(tree),
        }),
    }
}

fn refuse_nonempty(dir: &Path) -> Result<(), String> {
    let files = palisade_zkdisk::list(dir).map_err(|e| e.to_string())?;
    if !files.snapshots.is_empty() || !files.logs.is_empty() {
        return Err(format!(
            "{} already holds ZooKeeper data; refusing to export over it",
            dir.display()
        ));
    }
    Ok(())
}

pub fn run(o: &ExportOpts) -> Result<Summary, String> {
    let t0 = std::time::Instant::now();
    let out = o.zk_data_dir.join(VERSION_DIR);
    refuse_nonempty(&out)?;
    let cfg = Config {
        data_dir: o.data_dir.clone(),
        ..Config::default()
    };
    if !cfg.snap_dir().exists() && !cfg.log_dir().exists() {
        return Err(format!(
            "{}: not a Palisade data dir (no snapshots/ or log/)",
            o.data_dir.display()
        ));
    }
    let opts = palisade_wal::Options::new(cfg.log_dir());
    let (wal, log) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse)
        .map_err(|e| format!("cannot open the log: {e}"))?;
    let restored = recovery::recover(&cfg.snap_dir(), &log)
        .map_err(|e| format!("cannot recover the data dir: {e}"))?;
    drop((wal, log));
    let state = restored.state;
    let zk = to_zk(&state);
    let mut s = Summary::of(&state);
    s.source = format!(
        "Palisade snapshot {} + {} txns from the log",
        restored
            .snapshot
            .as_ref()
            .map_or("none".into(), |p| p.display().to_string()),
        restored.replayed
    );
    s.first_zxid = state.zxid();
    s.digests_checked = restored.digests_checked;
    s.read_ms = t0.elapsed().as_millis() as u64;
    if !o.dry_run {
        let t1 = std::time::Instant::now();
        std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let bytes = snap::encode_snapshot(&zk);
        snap::write_durably(&out.join(dir::snapshot_name(state.zxid())), &bytes)
            .map_err(|e| e.to_string())?;
        // An empty log named for the next zxid: ZooKeeper finds nothing to replay after the
        // snapshot, and its first write starts this file afresh.
        let mut lb = BytesMut::new();
        zklog::encode_log_header(&mut lb);
        snap::write_durably(
            &out.join(dir::log_name(state.zxid().saturating_add(1))),
            &lb,
        )
        .map_err(|e| e.to_string())?;
        s.write_ms = t1.elapsed().as_millis() as u64;
    }
    Ok(s)
}
