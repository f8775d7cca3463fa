//! `snapshot FILE`: a snapshot's header, trailer and sessions, then its tree in file order (a
//! depth-first walk, as captured), each node with its stat. The file is validated as a whole
//! first (`Snapshot::open`); a damaged file is an error naming the offset.

use crate::error::InspectError;
use crate::format;
use crate::nodes::NodeView;
use crate::opview::AclView;
use palisade::durability::recovery::{RecoveryError, Replayer};
use palisade::state::tree::visible_cversion;
use palisade_snapshot::{Item, Snapshot, Trailer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What the trailer's digest says about the capture on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestCheck {
    /// Nothing was applied during the capture, and the tree it holds has the recorded digest.
    Matches,
    /// Nothing was applied during the capture, yet the digest differs.
    Differs { ours: u64, recorded: u64 },
    /// Writes went on during the capture (start < end): the tree is exact only after the log
    /// from start + 1 to end is replayed over it (`validate` does that).
    Fuzzy,
    /// The items do not form a tree the server can load.
    Unloadable(String),
}

impl DigestCheck {
    pub fn text(&self) -> String {
        match self {
            DigestCheck::Matches => "matches the captured tree".into(),
            DigestCheck::Differs { ours, recorded } => {
                format!(
                    "MISMATCH: the captured tree has {ours:#018x}, the trailer {recorded:#018x}"
                )
            }
            DigestCheck::Fuzzy => "checked only after replaying the log over the capture".into(),
            DigestCheck::Unloadable(r) => format!("UNLOADABLE: {r}"),
        }
    }

    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            DigestCheck::Differs { .. } | DigestCheck::Unloadable(_)
        )
    }
}

/// A snapshot's header, trailer and sessions.
#[derive(Debug, Clone)]
pub struct SnapshotSummary {
    pub path: PathBuf,
    pub file_len: u64,
    pub blocks: usize,
    pub start_zxid: i64,
    pub trailer: Trailer,
    /// (session id, timeout ms) in file order.
    pub sessions: Vec<(i64, i32)>,
    pub digest: DigestCheck,
}

impl SnapshotSummary {
    pub fn text(&self) -> String {
        let t = &self.trailer;
        let mut s = format!(
            "snapshot {} ({} bytes, {} blocks)\nheader: start zxid {}\n\
             trailer: end zxid {}, digest {:#018x} ({}), {} nodes, {} sessions, {} ACL lists\n\
             sessions:",
            self.path.display(),
            self.file_len,
            self.blocks,
            format::zxid(self.start_zxid),
            format::zxid(t.end_zxid),
            t.digest,
            self.digest.text(),
            t.node_count,
            t.session_count,
            t.acl_count,
        );
        for (id, timeout) in &self.sessions {
            s.push_str(&format!("\n  {} timeout={timeout}ms", format::zxid(*id)));
        }
        s
    }

    pub fn json(&self) -> Value {
        let t = &self.trailer;
        json!({
            "type": "snapshot",
            "path": self.path.display().to_string(),
            "file_len": self.file_len,
            "blocks": self.blocks,
            "start_zxid": format::zxid(self.start_zxid),
            "end_zxid": format::zxid(t.end_zxid),
            "digest": format!("{:#018x}", t.digest),
            "digest_check": self.digest.text(),
            "node_count": t.node_count,
            "session_count": t.session_count,
            "acl_count": t.acl_count,
            "sessions": self.sessions.iter()
                .map(|(id, to)| json!({"id": format::zxid(*id), "timeout_ms": to}))
                .collect::<Vec<_>>(),
        })
    }
}

/// A validated snapshot file.
pub struct SnapshotFile {
    snap: Snapshot,
}

impl SnapshotFile {
    /// Validates the whole file (every block crc, the chain, every item and reference).
    pub fn open(path: &Path) -> Result<SnapshotFile, InspectError> {
        Ok(SnapshotFile {
            snap: Snapshot::open(path)?,
        })
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// Header, trailer, sessions, and whether the server can load the tree (and, for a
    /// capture without writes during it, whether its digest matches).
    pub fn summary(&self) -> SnapshotSummary {
        let snap = &self.snap;
        let sessions = snap
            .items()
            .filter_map(|i| match i {
                Item::Session { id, timeout_ms } => Some((id, timeout_ms)),
                _ => None,
            })
            .collect();
        let digest = match Replayer::from_snapshot(snap) {
            Ok(_) if snap.start_zxid() == snap.trailer().end_zxid => DigestCheck::Matches,
            Ok(_) => DigestCheck::Fuzzy,
            Err(RecoveryError::Diverged { ours, recorded, .. }) => {
                DigestCheck::Differs { ours, recorded }
            }
            Err(e) => DigestCheck::Unloadable(e.to_string()),
        };
        SnapshotSummary {
            path: snap.path().to_path_buf(),
            file_len: snap.file_len(),
            blocks: snap.block_count(),
            start_zxid: snap.start_zxid(),
            trailer: *snap.trailer(),
            sessions,
            digest,
        }
    }

    /// Visits the nodes of `subtree` (all for `/`) in file order, depth relative to it.
    pub fn walk_nodes(
        &self,
        subtree: &str,
        mut visit: impl FnMut(NodeView),
    ) -> Result<(), InspectError> {
        let shape = Shape::of(&self.snap);
        let top = shape
            .paths
            .iter()
            .position(|p| p == subtree)
            .ok_or_else(|| InspectError::Cannot(format!("no node at {subtree} in the snapshot")))?;
        let mut inside = vec![false; shape.paths.len()];
        let base_depth = shape.depth.get(top).copied().unwrap_or(0);
        let mut acls: HashMap<u32, Vec<AclView>> = HashMap::new();
        let mut seq = 0usize;
        for item in self.snap.items() {
            let n = match item {
                Item::Acl { index, entries } => {
                    let list = entries
                        .iter()
                        .map(|e| AclView {
                            perms: e.perms,
                            scheme: String::from_utf8_lossy(e.scheme).into_owned(),
                            id: String::from_utf8_lossy(e.id).into_owned(),
                        })
                        .collect();
                    acls.insert(index, list);
                    continue;
                }
                Item::Session { .. } => continue,
                Item::Node(n) => n,
            };
            let i = seq;
            seq = seq.saturating_add(1);
            let parent_inside = usize::try_from(n.parent)
                .ok()
                .and_then(|p| inside.get(p).copied())
                .unwrap_or(false);
            let is_inside = i == top || (i > top && parent_inside);
            if let Some(slot) = inside.get_mut(i) {
                *slot = is_inside;
            }
            if !is_inside {
                continue;
            }
            let num_children = shape.children.get(i).copied().unwrap_or(0);
            visit(NodeView {
                path: shape.paths.get(i).cloned().unwrap_or_default(),
                depth: shape
                    .depth
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(base_depth),
                czxid: n.czxid,
                mzxid: n.mzxid,
                pzxid: n.pzxid,
                ctime: n.ctime,
                mtime: n.mtime,
                version: n.version,
                aversion: n.aversion,
                c: n.cversion,
                cversion: visible_cversion(n.cversion, num_children),
                num_children,
                owner: n.owner,
                data: n.data.map(<[u8]>::to_vec),
                acl: acls.get(&n.acl).cloned().unwrap_or_default(),
            });
        }
        Ok(())
    }
}

/// Paths, depths and child counts by node number (parents come before their children).
struct Shape {
    paths: Vec<String>,
    depth: Vec<usize>,
    children: Vec<usize>,
}

impl Shape {
    fn of(snap: &Snapshot) -> Shape {
        let mut s = Shape {
            paths: Vec::new(),
            depth: Vec::new(),
            children: Vec::new(),
        };
        for item in snap.items() {
            let Item::Node(n) = item else { continue };
            let name = String::from_utf8_lossy(n.name);
            let parent = usize::try_from(n.parent)
                .ok()
                .filter(|&p| p < s.paths.len());
            let (path, depth) = match parent {
                None => ("/".to_string(), 0),
                Some(p) => {
                    if let Some(c) = s.children.get_mut(p) {
                        *c = c.saturating_add(1);
                    }
                    let pp = s.paths.get(p).map_or("", String::as_str);
                    let sep = if pp == "/" { "" } else { pp };
                    let d = s.depth.get(p).copied().unwrap_or(0).saturating_add(1);
                    (format!("{sep}/{name}"), d)
                }
            };
            s.paths.push(path);
            s.depth.push(depth);
            s.children.push(0);
        }
        s
    }
}
