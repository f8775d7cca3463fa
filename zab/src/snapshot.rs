//! The snapshot a leader streams after SNAP (ZKDatabase.serializeSnapshot, then the string
//! "BenWasHere"): a snapshot file's body without its FileHeader, seals or digest, unframed.
//! The decoder walks it item by item as it arrives, to know where it ends;
//! [`WireSnapshot::decode`] turns it into zkdisk's [`ZkSnapshot`], the form the importer loads.

use crate::error::CodecError;
use crate::scan::{Scan, Stop};
use bytes::{Bytes, BytesMut};
use palisade_proto::{DataNode, FileHeader, JStr, Reader, Record, SnapAcl, SnapSession};
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

/// A snapshot as received: the sessions, the ACL table and the nodes, exactly the bytes the
/// leader sent (the signature excluded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireSnapshot {
    pub body: Bytes,
    pub sessions: u64,
    pub acls: u64,
    pub nodes: u64,
}

impl WireSnapshot {
    /// Appends the snapshot as the leader streams it (body, then the signature).
    pub fn write(&self, w: &mut BytesMut) {
        w.extend_from_slice(&self.body);
        JStr::from_bytes(Bytes::from_static(SIGNATURE)).write(w);
    }

    /// The snapshot as zkdisk's reader would return it from a file: the header a file would
    /// carry, no digest (the link sends none; each INFORM carries the digest after it).
    pub fn decode(&self) -> Result<ZkSnapshot, CodecError> {
        let total = self.body.len();
        let mut r = Reader::new(self.body.clone(), usize::MAX);
        let at = |r: &Reader| total.saturating_sub(r.remaining()) as u64;
        let bad = |r: &Reader, what: &str, e: &dyn std::fmt::Display| CodecError::Snapshot {
            offset: at(r),
            reason: format!("{what}: {e}"),
        };
        let count = |r: &mut Reader, what: &str| -> Result<usize, CodecError> {
            let n = r.int().map_err(|e| bad(r, what, &e))?;
            usize::try_from(n).map_err(|_| bad(r, what, &format!("negative count {n}")))
        };
        let n = count(&mut r, "session count")?;
        let mut sessions = Vec::with_capacity(n.min(r.remaining() / SESSION));
        for _ in 0..n {
            sessions.push(SnapSession::read(&mut r).map_err(|e| bad(&r, "session", &e))?);
        }
        let n = count(&mut r, "ACL count")?;
        let mut acls = Vec::with_capacity(n.min(r.remaining() / 12));
        for _ in 0..n {
            let a = SnapAcl::read(&mut r).map_err(|e| bad(&r, "ACL table entry", &e))?;
            if a.acls.is_none() {
                return Err(bad(&r, "ACL table entry", &"no list (missing acls)"));
            }
            acls.push(a);
        }
        let mut nodes = Vec::new();
        loop {
            let offset = at(&r);
            let p = r.ustring().map_err(|e| bad(&r, "node path", &e))?;
            if p.as_bytes() == b"/" {
                break;
            }
            let path = p
                .as_str()
                .ok_or_else(|| bad(&r, "node path", &"null or not UTF-8"))?
                .to_string();
            let node = DataNode::read(&mut r).map_err(|e| bad(&r, "node", &e))?;
            nodes.push(ZkNode { path, node, offset });
        }
        if !r.is_empty() {
            return Err(bad(
                &r,
                "end",
                &format!("{} bytes after the last node", r.remaining()),
            ));
        }
        Ok(ZkSnapshot {
            header: FileHeader {
                magic: SNAP_MAGIC,
                version: FORMAT_VERSION,
                dbid: DBID,
            },
            sessions,
            acls,
            nodes,
            digest: None,
        })
    }
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

/// How far the snapshot in the decoder's buffer has been walked.
#[derive(Debug)]
pub(crate) struct SnapScan {
    part: Part,
    /// Bytes of the buffer known to be whole items.
    pos: usize,
    sessions: u64,
    acls: u64,
    nodes: u64,
}

/// A walked snapshot: the body's length and the signature's end in the buffer.
pub(crate) struct Walked {
    pub body_len: usize,
    pub end: usize,
    pub sessions: u64,
    pub acls: u64,
    pub nodes: u64,
}

impl SnapScan {
    pub fn new() -> Self {
        SnapScan {
            part: Part::SessionCount,
            pos: 0,
            sessions: 0,
            acls: 0,
            nodes: 0,
        }
    }

    /// Walks the items `buf` holds whole: `Ok(None)` until the signature has arrived.
    pub fn advance(
        &mut self,
        buf: &[u8],
        max_buffer: usize,
        max_snapshot: u64,
    ) -> Result<Option<Walked>, CodecError> {
        loop {
            let mut s = Scan::new(buf, self.pos, max_buffer, max_snapshot, "snapshot");
            match self.item(&mut s) {
                Ok(done) => {
                    self.pos = s.at;
                    if let Some(body_len) = done {
                        return Ok(Some(Walked {
                            body_len,
                            end: s.at,
                            sessions: self.sessions,
                            acls: self.acls,
                            nodes: self.nodes,
                        }));
                    }
                }
                Err(Stop::Incomplete) => return Ok(None),
                Err(Stop::Bad(e)) => return Err(e),
            }
        }
    }

    /// Walks one item; `Some(body length)` once the signature is read.
    fn item(&mut self, s: &mut Scan) -> Result<Option<usize>, Stop> {
        let bad = |at: usize, reason: &str| {
            Stop::Bad(CodecError::Snapshot {
                offset: at as u64,
                reason: reason.into(),
            })
        };
        let start = s.at;
        match self.part {
            Part::SessionCount => {
                let n = s.count("session count", SESSION as u64)?;
                self.sessions = n.ok_or_else(|| bad(start, "session count -1"))?;
                self.part = Part::Sessions(self.sessions);
            }
            Part::Sessions(0) => self.part = Part::AclCount,
            Part::Sessions(left) => {
                s.skip(SESSION)?;
                self.part = Part::Sessions(left - 1);
            }
            Part::AclCount => {
                let n = s.count("ACL count", 12)?;
                self.acls = n.ok_or_else(|| bad(start, "ACL count -1"))?;
                self.part = Part::Acls(self.acls);
            }
            Part::Acls(0) => self.part = Part::Nodes,
            Part::Acls(left) => {
                s.long()?;
                let n = s.count("ACL list", MIN_ACL)?;
                let n = n.ok_or_else(|| bad(start, "ACL table entry without a list"))?;
                for _ in 0..n {
                    s.int()?;
                    s.buffer("ACL scheme")?;
                    s.buffer("ACL id")?;
                }
                self.part = Part::Acls(left - 1);
            }
            Part::Nodes => {
                let path = s.buffer("node path")?;
                match path {
                    None => return Err(bad(start, "null node path")),
                    Some(b"/") => self.part = Part::Signature,
                    Some(_) => {
                        s.buffer("node data")?;
                        s.skip(8 + STAT_PERSISTED)?;
                        self.nodes += 1;
                    }
                }
            }
            Part::Signature => {
                let sig = s.buffer("signature")?;
                if sig != Some(SIGNATURE) {
                    return Err(bad(start, "missing signature: not \"BenWasHere\""));
                }
                return Ok(Some(start));
            }
        }
        Ok(None)
    }
}
