//! ZooKeeper's snapshot stream (FileSnap, SerializeUtils.serializeSnapshot, DataTree.serialize,
//! SnapStream.sealStream): read with every seal checked, and written exactly as ZooKeeper
//! 3.8 writes it. The layout is in proto-spec/spec/zookeeper.jute ("ZooKeeper's on-disk files").

use crate::adler32::adler32;
use crate::error::ZkError;
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{
    DataNode, DecodeError, FileHeader, JStr, Reader, Record, SnapAcl, SnapSeal, SnapSession,
    ZxidDigest,
};
use std::path::Path;

/// "ZKSN" as a big-endian int (FileSnap.SNAP_MAGIC).
pub const SNAP_MAGIC: i32 = 0x5a4b_534e;
/// FileSnap.VERSION / FileTxnLog.VERSION.
pub const FORMAT_VERSION: i32 = 2;
/// The dbid ZooKeeper writes (FileTxnSnapLog: dbId = -1, never changed).
pub const DBID: i64 = -1;
/// The digest version ZooKeeper 3.8 computes (DigestCalculator.DIGEST_VERSION).
pub const DIGEST_VERSION: i32 = 2;

/// One znode as the snapshot lists it.
#[derive(Debug, Clone)]
pub struct ZkNode {
    /// "" for the root, "/a/b" otherwise.
    pub path: String,
    pub node: DataNode,
    /// Where its record starts in the (decompressed) stream, for errors; 0 for a node not
    /// read from a file. Not part of the node's value: equality ignores it.
    pub offset: u64,
}

impl PartialEq for ZkNode {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.node == other.node
    }
}

impl Eq for ZkNode {}

/// A compressed snapshot may inflate to this many times its file's size unless the caller
/// gives a bound of its own ([`read_snapshot_within`]). A real snapshot does not come near: its
/// nodes' zxids and times differ from node to node, and gzip's deflate cannot pass about
/// 1,030× even on zeros; a hostile `.gz` of 3 MB can inflate to 3 GiB.
pub const MAX_INFLATION: u64 = 100;
/// ... and at least this many bytes (a small file's bound is not its ratio's).
pub const MIN_INFLATION_BOUND: u64 = 64 << 20;

/// The default bound on what a compressed snapshot file of `file_len` bytes may inflate to.
pub fn inflation_bound(file_len: u64) -> u64 {
    file_len
        .saturating_mul(MAX_INFLATION)
        .max(MIN_INFLATION_BOUND)
}

/// A whole snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkSnapshot {
    pub header: FileHeader,
    pub sessions: Vec<SnapSession>,
    pub acls: Vec<SnapAcl>,
    /// Pre-order: every node after its parent.
    pub nodes: Vec<ZkNode>,
    /// The digest section (absent when ZooKeeper ran with zookeeper.digest.enabled=false).
    /// ZooKeeper ignores one with zxid 0 (written when no txn had been applied).
    pub digest: Option<ZxidDigest>,
}

struct At<'a> {
    path: &'a Path,
    total: usize,
}

impl At<'_> {
    fn offset(&self, r: &Reader) -> u64 {
        self.total.saturating_sub(r.remaining()) as u64
    }
    fn corrupt(&self, r: &Reader, reason: impl Into<String>) -> ZkError {
        ZkError::Corrupt {
            path: self.path.to_path_buf(),
            offset: self.offset(r),
            reason: reason.into(),
        }
    }
    fn decode(&self, r: &Reader, what: &str) -> impl FnOnce(DecodeError) -> ZkError + '_ {
        let (path, offset, what) = (self.path.to_path_buf(), self.offset(r), what.to_string());
        move |e| ZkError::Corrupt {
            path,
            offset,
            reason: format!("{what}: {e}"),
        }
    }
}

/// A count ZooKeeper wrote with writeInt; bounded by the bytes left (each item is ≥ `min`).
fn count(at: &At<'_>, r: &mut Reader, what: &str, min: usize) -> Result<usize, ZkError> {
    let n = r.int().map_err(at.decode(r, what))?;
    let n = usize::try_from(n).map_err(|_| at.corrupt(r, format!("negative {what} {n}")))?;
    if n.saturating_mul(min) > r.remaining() {
        return Err(at.corrupt(r, format!("{what} {n} exceeds the bytes left")));
    }
    Ok(n)
}

fn seal(at: &At<'_>, r: &mut Reader, bytes: &[u8], which: &str) -> Result<(), ZkError> {
    let upto = bytes.len().saturating_sub(r.remaining());
    let ours = adler32(bytes.get(..upto).unwrap_or_default());
    let s = SnapSeal::read(r).map_err(at.decode(r, which))?;
    if s.checksum != ours {
        return Err(ZkError::Corrupt {
            path: at.path.to_path_buf(),
            offset: upto as u64,
            reason: format!(
                "{which}: Adler32 {:#x} recorded, {ours:#x} computed (CRC corruption)",
                s.checksum
            ),
        });
    }
    if s.path.as_bytes() != b"/" {
        return Err(at.corrupt(r, format!("{which}: seal path is {:?}, not \"/\"", s.path)));
    }
    Ok(())
}

/// Decodes an uncompressed snapshot stream; `path` names it in errors.
pub fn decode_snapshot(bytes: Bytes, path: &Path) -> Result<ZkSnapshot, ZkError> {
    let at = At {
        path,
        total: bytes.len(),
    };
    let mut r = Reader::new(bytes.clone(), usize::MAX);
    let header = FileHeader::read(&mut r).map_err(at.decode(&r, "file header"))?;
    if header.magic != SNAP_MAGIC {
        return Err(at.corrupt(&r, format!("magic {:#x} is not ZKSN", header.magic)));
    }
    if header.version != FORMAT_VERSION {
        return Err(at.corrupt(&r, format!("format version {}", header.version)));
    }
    let n = count(&at, &mut r, "session count", 12)?;
    let mut sessions = Vec::with_capacity(n);
    for _ in 0..n {
        sessions.push(SnapSession::read(&mut r).map_err(at.decode(&r, "session"))?);
    }
    let n = count(&at, &mut r, "ACL count", 12)?;
    let mut acls = Vec::with_capacity(n);
    for _ in 0..n {
        let a = SnapAcl::read(&mut r).map_err(at.decode(&r, "ACL table entry"))?;
        if a.acls.is_none() {
            return Err(at.corrupt(&r, "ACL table entry without a list (missing acls)"));
        }
        acls.push(a);
    }
    let mut nodes = Vec::new();
    loop {
        let offset = at.offset(&r);
        let p = r.ustring().map_err(at.decode(&r, "node path"))?;
        if p.as_bytes() == b"/" {
            break;
        }
        let path = p
            .as_str()
            .ok_or_else(|| at.corrupt(&r, "node path is null or not UTF-8"))?
            .to_string();
        let node = DataNode::read(&mut r).map_err(at.decode(&r, "node"))?;
        nodes.push(ZkNode { path, node, offset });
    }
    seal(&at, &mut r, &bytes, "seal")?;
    let mut digest = None;
    if !r.is_empty() {
        let zxid = r.long().map_err(at.decode(&r, "digest"))?;
        let digest_version = r.int().map_err(at.decode(&r, "digest"))?;
        let value = if digest_version < 2 {
            let s = r.ustring().map_err(at.decode(&r, "digest"))?;
            match s.as_str() {
                None => 0,
                Some(h) => u64::from_str_radix(h, 16)
                    .map_err(|_| at.corrupt(&r, format!("digest {h:?} is not hex")))?
                    as i64,
            }
        } else {
            r.long().map_err(at.decode(&r, "digest"))?
        };
        seal(&at, &mut r, &bytes, "digest seal")?;
        digest = Some(ZxidDigest {
            zxid,
            digest_version,
            digest: value,
        });
    }
    if !r.is_empty() {
        // ZooKeeper 3.9 appends lastProcessedZxid and a third seal.
        r.long().map_err(at.decode(&r, "lastProcessedZxid"))?;
        seal(&at, &mut r, &bytes, "third seal")?;
    }
    if !r.is_empty() {
        return Err(at.corrupt(&r, format!("{} bytes after the last seal", r.remaining())));
    }
    Ok(ZkSnapshot {
        header,
        sessions,
        acls,
        nodes,
        digest,
    })
}

fn put_seal(out: &mut BytesMut) {
    let checksum = adler32(out);
    SnapSeal {
        checksum,
        path: JStr::from("/"),
    }
    .write(out);
}

/// Encodes a snapshot as ZooKeeper 3.8 writes it (the digest section when `digest` is set).
pub fn encode_snapshot(s: &ZkSnapshot) -> Bytes {
    let mut out = BytesMut::new();
    s.header.write(&mut out);
    out.put_i32(i32::try_from(s.sessions.len()).unwrap_or(i32::MAX));
    for x in &s.sessions {
        x.write(&mut out);
    }
    out.put_i32(i32::try_from(s.acls.len()).unwrap_or(i32::MAX));
    for a in &s.acls {
        a.write(&mut out);
    }
    for n in &s.nodes {
        JStr::from(n.path.as_str()).write(&mut out);
        n.node.write(&mut out);
    }
    JStr::from("/").write(&mut out);
    put_seal(&mut out);
    if let Some(d) = &s.digest {
        d.write(&mut out);
        put_seal(&mut out);
    }
    out.freeze()
}

/// Reads and checks one snapshot file (plain, `.gz` or `.snappy`); the seals are checked over
/// the decompressed stream, as SnapStream does. A compressed file may inflate to
/// [`inflation_bound`] of its size.
pub fn read_snapshot(path: &Path) -> Result<ZkSnapshot, ZkError> {
    read_snapshot_within(path, None)
}

/// [`read_snapshot`], with a compressed file allowed to inflate to `bound` bytes (None: the
/// default, [`inflation_bound`]). Past it the file is refused, naming the byte of the file by
/// which the bound was passed, before more memory is taken.
pub fn read_snapshot_within(path: &Path, bound: Option<u64>) -> Result<ZkSnapshot, ZkError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut bytes = std::fs::read(path).map_err(ZkError::io(path))?;
    let file_len = bytes.len() as u64;
    let bound = bound.unwrap_or_else(|| inflation_bound(file_len));
    let too_big = |offset: u64| {
        ZkError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason: format!(
            "the compressed stream inflates past {bound} bytes by here ({}x the file's {file_len} bytes): more than a real snapshot of this size holds; refused (import-zookeeper --max-snapshot-bytes sets another bound)",
            bound / file_len.max(1)
        ),
    }
    };
    if name.ends_with(".gz") {
        // SnapStream checks the seals over the decompressed stream. Inflated a part at a
        // time, each part allocated once at its size (a growing buffer would hold up to twice
        // what it holds while it moves): one byte past the bound refuses the file.
        use std::io::Read;
        const PART: u64 = 1 << 20;
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut total = 0u64;
        let mut gz = flate2::read::GzDecoder::new(bytes.as_slice());
        loop {
            let mut part = Vec::with_capacity(PART as usize);
            let n = (&mut gz)
                .take(PART)
                .read_to_end(&mut part)
                .map_err(|e| ZkError::Corrupt {
                    path: path.to_path_buf(),
                    offset: 0,
                    reason: format!("gzip stream: {e}"),
                })?;
            total = total.saturating_add(n as u64);
            if total > bound {
                // The compressed bytes the decoder has taken (its read-ahead included).
                return Err(too_big(file_len.saturating_sub(gz.get_ref().len() as u64)));
            }
            if n == 0 {
                break;
            }
            parts.push(part);
        }
        bytes = parts.concat();
    } else if name.ends_with(".snappy") {
        bytes = crate::snappy::decode(&bytes, bound).map_err(|(offset, reason)| {
            if reason.is_empty() {
                too_big(offset as u64)
            } else {
                ZkError::Corrupt {
                    path: path.to_path_buf(),
                    offset: offset as u64,
                    reason,
                }
            }
        })?;
    }
    decode_snapshot(Bytes::from(bytes), path)
}

/// Writes `bytes` to `path` durably: a tmp file, fsync, rename, fsync of the directory.
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), ZkError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    // A leading dot: ZooKeeper's name parser never mistakes a leftover for a data file.
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(ZkError::io(&tmp))?;
    f.write_all(bytes).map_err(ZkError::io(&tmp))?;
    f.sync_all().map_err(ZkError::io(&tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(ZkError::io(path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(ZkError::io(dir))?;
    Ok(())
}
