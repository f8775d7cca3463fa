//! The snapshot a leader streams after SNAP (ZKDatabase.serializeSnapshot, then the string
//! "BenWasHere"): a snapshot file's body without its FileHeader, seals or digest, unframed.
//! The decoder walks it item by item as it arrives and hands the items on in bounded batches
//! ([`SnapItem`]s, then a [`SnapshotEnd`]): a learner never holds the whole snapshot as bytes,
//! only the tree it builds from the items. [`assemble`] collects items into zkdisk's
//! [`ZkSnapshot`], the form the importer loads (for tests and small snapshots).

use crate::error::CodecError;
use crate::scan::{Scan, Stop};
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{DataNode, FileHeader, JStr, Record, SnapAcl, SnapSession};
use palisade_zkdisk::snap::{DBID, FORMAT_VERSION, SNAP_MAGIC};
use palisade_zkdisk::{ZkNode, ZkSnapshot};

/// What LearnerHandler writes after the snapshot, and Learner checks ("Missing signature").
pub const SIGNATURE: &[u8] = b"BenWasHere";

/// StatPersisted: czxid, mzxid, ctime, mtime, ephemeralOwner, pzxid (longs) and version,
/// cversion, aversion (ints).
const STAT_PERSISTED: usize = 8 * 6 + 4 * 3;
const SESSION: usize = 12;
/// The least an ACL takes: perms and two null strings.
const MIN_ACL: u64 = 12;

/// One item of the snapshot, in stream order: the session count, the sessions, the ACL
/// count, the ACL table, the nodes (pre-order, the root's path "").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapItem {
    SessionCount(u32),
    Session(SnapSession),
    AclCount(u32),
    Acl(SnapAcl),
    Node(ZkNode),
}

impl SnapItem {
    /// Appends the item as the leader streams it.
    pub fn write(&self, w: &mut BytesMut) {
        match self {
            SnapItem::SessionCount(n) | SnapItem::AclCount(n) => w.put_i32(*n as i32),
            SnapItem::Session(s) => s.write(w),
            SnapItem::Acl(a) => a.write(w),
            SnapItem::Node(n) => {
                JStr::from(n.path.as_str()).write(w);
                n.node.write(w);
            }
        }
    }
}

/// The end of the snapshot (the "/" path, then the signature), with what it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotEnd {
    pub sessions: u64,
    pub acls: u64,
    pub nodes: u64,
    /// The snapshot's bytes, from its session count to the signature's end.
    pub bytes: u64,
}

impl SnapshotEnd {
    pub fn write(&self, w: &mut BytesMut) {
        JStr::from("/").write(w);
        JStr::from_bytes(Bytes::from_static(SIGNATURE)).write(w);
    }
}

/// The snapshot the items make, as zkdisk's reader would return it from a file: the header
/// a file would carry, no digest (the link sends none; each INFORM carries the digest after
/// it). Holds everything: for tests and tools, not for the learner's path.
pub fn assemble(items: impl IntoIterator<Item = SnapItem>) -> ZkSnapshot {
    let mut z = ZkSnapshot {
        header: FileHeader {
            magic: SNAP_MAGIC,
            version: FORMAT_VERSION,
            dbid: DBID,
        },
        sessions: Vec::new(),
        acls: Vec::new(),
        nodes: Vec::new(),
        digest: None,
    };
    for i in items {
        match i {
            SnapItem::Session(s) => z.sessions.push(s),
            SnapItem::Acl(a) => z.acls.push(a),
            SnapItem::Node(n) => z.nodes.push(n),
            SnapItem::SessionCount(_) | SnapItem::AclCount(_) => {}
        }
    }
    z
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    SessionCount,
    Sessions(u64),
    AclCount,
    Acls(u64),
    Nodes,
    Signature,
}

/// How far the snapshot has been walked. The decoder drops the bytes of every item handed
/// on, so `base` counts the snapshot's bytes before the start of its buffer.
#[derive(Debug)]
pub(crate) struct SnapScan {
    part: Part,
    base: u64,
    sessions: u64,
    acls: u64,
    nodes: u64,
}

/// What one call walked: items (possibly none) and the buffer bytes they took, or the end.
pub(crate) enum Walked {
    Items { items: Vec<SnapItem>, used: usize },
    End { end: SnapshotEnd, used: usize },
}

impl SnapScan {
    pub fn new() -> Self {
        SnapScan {
            part: Part::SessionCount,
            base: 0,
            sessions: 0,
            acls: 0,
            nodes: 0,
        }
    }

    /// Walks the whole items at the start of `buf`, up to about `batch` bytes of them. The
    /// end comes alone, after the last batch of items.
    pub fn advance(
        &mut self,
        buf: &[u8],
        max_buffer: usize,
        max_snapshot: u64,
        batch: usize,
    ) -> Result<Walked, CodecError> {
        let mut items = Vec::new();
        let mut pos = 0usize;
        // Every length is checked against what is left of the snapshot's bound.
        let room = max_snapshot.saturating_sub(self.base);
        while pos < batch.max(1) {
            if self.part == Part::Signature && !items.is_empty() {
                break;
            }
            let mut s = Scan::new(buf, pos, max_buffer, room, "snapshot");
            let start = pos;
            match self.item(&mut s) {
                Ok(Step::Item(item)) => {
                    pos = s.at;
                    if let Some(item) = item {
                        items.push(item);
                    }
                }
                Ok(Step::End) => {
                    let used = s.at;
                    let end = SnapshotEnd {
                        sessions: self.sessions,
                        acls: self.acls,
                        nodes: self.nodes,
                        bytes: self.base.saturating_add(used as u64),
                    };
                    return Ok(Walked::End { end, used });
                }
                Err(Stop::Incomplete) => {
                    pos = start;
                    break;
                }
                Err(Stop::Bad(e)) => return Err(self.at_offset(e)),
            }
        }
        self.base = self.base.saturating_add(pos as u64);
        Ok(Walked::Items { items, used: pos })
    }

    /// An error's offset within the buffer made one within the snapshot.
    fn at_offset(&self, e: CodecError) -> CodecError {
        match e {
            CodecError::Snapshot { offset, reason } => CodecError::Snapshot {
                offset: self.base.saturating_add(offset),
                reason,
            },
            CodecError::TooLarge {
                what: "snapshot",
                len,
                max,
            } => CodecError::TooLarge {
                what: "snapshot",
                len: self.base.saturating_add(len),
                max: self.base.saturating_add(max),
            },
            e => e,
        }
    }

    /// Walks one item and decodes it. A count of items is checked against the snapshot's
    /// room before anything waits for them.
    fn item(&mut self, s: &mut Scan) -> Result<Step, Stop> {
        let start = s.at;
        let item = match self.part {
            Part::SessionCount => {
                let n = s.count("session count", SESSION as u64)?;
                self.sessions = n.ok_or_else(|| bad(start, "session count -1".into()))?;
                self.part = Part::Sessions(self.sessions);
                Some(SnapItem::SessionCount(self.sessions as u32))
            }
            Part::Sessions(0) => {
                self.part = Part::AclCount;
                None
            }
            Part::Sessions(left) => {
                s.skip(SESSION)?;
                self.part = Part::Sessions(left - 1);
                let r = &mut s.reader(start);
                Some(SnapItem::Session(
                    SnapSession::read(r).map_err(|e| bad(start, format!("session: {e}")))?,
                ))
            }
            Part::AclCount => {
                let n = s.count("ACL count", 12)?;
                self.acls = n.ok_or_else(|| bad(start, "ACL count -1".into()))?;
                self.part = Part::Acls(self.acls);
                Some(SnapItem::AclCount(self.acls as u32))
            }
            Part::Acls(0) => {
                self.part = Part::Nodes;
                None
            }
            Part::Acls(left) => {
                let acl = acl_item(s, start)?;
                self.part = Part::Acls(left - 1);
                Some(acl)
            }
            Part::Nodes => self.node_item(s, start)?,
            Part::Signature => {
                let sig = s.buffer("signature")?;
                if sig != Some(SIGNATURE) {
                    return Err(bad(start, "missing signature: not \"BenWasHere\"".into()));
                }
                return Ok(Step::End);
            }
        };
        Ok(Step::Item(item))
    }
}

impl SnapScan {
    /// A node, or (`None`) the "/" that ends the nodes.
    fn node_item(&mut self, s: &mut Scan, start: usize) -> Result<Option<SnapItem>, Stop> {
        let path = s.buffer("node path")?;
        let path = match path {
            None => return Err(bad(start, "null node path".into())),
            Some(b"/") => {
                self.part = Part::Signature;
                return Ok(None);
            }
            Some(p) => std::str::from_utf8(p)
                .map_err(|_| bad(start, "node path: not UTF-8".into()))?
                .to_string(),
        };
        let node_at = s.at;
        s.buffer("node data")?;
        s.skip(8 + STAT_PERSISTED)?;
        let node =
            DataNode::read(&mut s.reader(node_at)).map_err(|e| bad(start, format!("node: {e}")))?;
        self.nodes += 1;
        Ok(Some(SnapItem::Node(ZkNode {
            path,
            node,
            offset: self.base.saturating_add(start as u64),
        })))
    }
}

/// An entry of the ACL table: its index, then a list that must be there (ZooKeeper: "missing
/// acls"), each ACL's lengths checked before it is decoded.
fn acl_item(s: &mut Scan, start: usize) -> Result<SnapItem, Stop> {
    s.long()?;
    let n = s.count("ACL list", MIN_ACL)?;
    let n = n.ok_or_else(|| {
        bad(
            start,
            "ACL table entry without a list (missing acls)".into(),
        )
    })?;
    for _ in 0..n {
        s.int()?;
        s.buffer("ACL scheme")?;
        s.buffer("ACL id")?;
    }
    let a = SnapAcl::read(&mut s.reader(start))
        .map_err(|e| bad(start, format!("ACL table entry: {e}")))?;
    Ok(SnapItem::Acl(a))
}

/// A snapshot that does not parse, at byte `at` of the buffer.
fn bad(at: usize, reason: String) -> Stop {
    Stop::Bad(CodecError::Snapshot {
        offset: at as u64,
        reason,
    })
}

enum Step {
    /// One item walked (None: a section boundary, no bytes).
    Item(Option<SnapItem>),
    End,
}
