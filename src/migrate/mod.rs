//! Migration between Apache ZooKeeper 3.8 and Palisade, both ways (docs/MIGRATION.md):
//! `palisade import-zookeeper` ([`import`]) and `palisade export-zookeeper` ([`export`]).
//! ZooKeeper's files are read and written by the zkdisk crate; Palisade's through the
//! snapshot and WAL crates' writers and `State::apply`.
//!
//! Owns: the translation between ZooKeeper's data dir and Palisade's, for a server that is not
//! running. May not touch: sockets, the core, a data dir that holds anything (the import
//! refuses one).

mod applied;
pub mod export;
pub mod import;
mod observe;
mod rules;
pub mod zktree;

use crate::state::State;
use std::path::PathBuf;

/// What both commands print.
#[derive(Debug, Default)]
pub struct Summary {
    pub source: String,
    pub nodes: usize,
    pub ephemerals: usize,
    pub sessions: usize,
    pub acl_lists: usize,
    pub first_zxid: i64,
    pub last_zxid: i64,
    pub zk_digest: i64,
    pub palisade_digest: u64,
    pub digests_checked: u64,
    pub notes: Vec<String>,
    pub read_ms: u64,
    pub write_ms: u64,
}

impl Summary {
    fn of(state: &State) -> Summary {
        let tree = &state.tree;
        let mut lists = std::collections::HashSet::new();
        let (mut nodes, mut zk_digest) = (0, 0i64);
        zktree::walk(tree, |path, _, n| {
            lists.insert(n.acl);
            nodes += 1;
            let d =
                palisade_zkdisk::digest::node_digest(path, n.data(), &zktree::stat_persisted(n));
            zk_digest = zk_digest.wrapping_add(d);
        });
        Summary {
            // Counted, not znode_count(): that one is ZooKeeper's mntr figure, which counts
            // the root twice (as "" and "/").
            nodes,
            ephemerals: tree.ephemeral_count(),
            sessions: state.sessions().len(),
            acl_lists: lists.len(),
            last_zxid: state.zxid(),
            zk_digest,
            palisade_digest: tree.digest(),
            ..Summary::default()
        }
    }

    fn print(&self, what: &str, dry_run: bool) {
        let dry = if dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        };
        print!("{what}{dry}\n{}", self.text());
    }

    /// The summary's lines (from, nodes, zxids, digest, notes, time).
    pub fn text(&self) -> String {
        let mut o = format!(
            "  from:       {}\n  nodes:      {} ({} ephemeral), {} ACL lists, {} sessions\n  zxids:      {:#x} .. {:#x}\n  digest:     ZooKeeper {:#x}, Palisade {:#018x}; {} recorded digest(s) checked\n",
            self.source, self.nodes, self.ephemerals, self.acl_lists, self.sessions,
            self.first_zxid, self.last_zxid, self.zk_digest, self.palisade_digest, self.digests_checked
        );
        for n in &self.notes {
            o.push_str(&format!("  note:       {n}\n"));
        }
        o.push_str(&format!(
            "  time:       read {} ms, write {} ms\n",
            self.read_ms, self.write_ms
        ));
        o
    }
}

const USAGE: &str = "usage:\n  palisade import-zookeeper --zk-data-dir DIR [--zk-log-dir DIR] --data-dir OUT [--dry-run] [--max-snapshot-bytes N]\n  palisade export-zookeeper --data-dir DIR --zk-data-dir OUT [--dry-run]";

/// Runs `palisade import-zookeeper|export-zookeeper ARGS`; returns the exit code, or `None`
/// when `cmd` is neither.
pub fn main(cmd: &str, args: impl Iterator<Item = String>) -> Option<u8> {
    if cmd == "observe-zookeeper" {
        return Some(observe::main(args));
    }
    if cmd != "import-zookeeper" && cmd != "export-zookeeper" {
        return None;
    }
    let (mut zk_data, mut zk_log, mut data, mut dry) = (None, None, None, false);
    let mut max_snapshot_bytes = None;
    let mut args = args;
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--zk-data-dir" => &mut zk_data,
            "--zk-log-dir" => &mut zk_log,
            "--data-dir" => &mut data,
            "--dry-run" => {
                dry = true;
                continue;
            }
            "--max-snapshot-bytes" if cmd == "import-zookeeper" => {
                match args.next().and_then(|v| v.parse::<u64>().ok()) {
                    Some(n) if n > 0 => max_snapshot_bytes = Some(n),
                    _ => {
                        eprintln!("{a} needs a positive number of bytes\n{USAGE}");
                        return Some(2);
                    }
                }
                continue;
            }
            _ => {
                eprintln!("unknown option {a}\n{USAGE}");
                return Some(2);
            }
        };
        match args.next() {
            Some(v) => *slot = Some(PathBuf::from(v)),
            None => {
                eprintln!("{a} needs a value\n{USAGE}");
                return Some(2);
            }
        }
    }
    let (Some(zk_data), Some(data)) = (zk_data, data) else {
        eprintln!("--zk-data-dir and --data-dir are required\n{USAGE}");
        return Some(2);
    };
    let r = if cmd == "import-zookeeper" {
        import::run(&import::ImportOpts {
            zk_data_dir: zk_data,
            zk_log_dir: zk_log,
            data_dir: data,
            dry_run: dry,
            max_snapshot_bytes,
        })
        .map(|s| s.print("imported a ZooKeeper data dir", dry))
    } else {
        if zk_log.is_some() {
            eprintln!("--zk-log-dir is for import only\n{USAGE}");
            return Some(2);
        }
        export::run(&export::ExportOpts {
            data_dir: data,
            zk_data_dir: zk_data,
            dry_run: dry,
        })
        .map(|s| s.print("exported a ZooKeeper 3.8 data dir", dry))
    };
    match r {
        Ok(()) => Some(0),
        Err(e) => {
            eprintln!("palisade {cmd}: {e}");
            Some(1)
        }
    }
}

#[cfg(test)]
#[path = "migrate_test.rs"]
mod tests;
