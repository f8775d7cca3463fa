//! What an items block holds: sessions, ACL lists and znodes, each a tag byte then its fields.
//! Decoding borrows names, data and ACL strings from the input (the mmap), so the only
//! allocation is the entry list of an ACL item.

use crate::cursor::Cursor;

/// The parent of the root node, which is node 0.
pub const NO_PARENT: u32 = u32::MAX;
/// Longer names are damage (ZooKeeper paths are bounded by jute.maxbuffer, far below this).
pub const NAME_BYTES_MAX: usize = 64 << 10;
/// Longer data is damage: a node's data never exceeds a block anyway.
pub const DATA_BYTES_MAX: usize = 64 << 20;
/// More entries in one ACL list are damage.
pub const ACL_ENTRIES_MAX: usize = 1 << 16;

const TAG_SESSION: u8 = 1;
const TAG_ACL: u8 = 2;
const TAG_NODE: u8 = 3;
/// The data length that means "null" (distinct from empty).
const DATA_NULL: u32 = u32::MAX;
/// Tag, parent, acl, 5 × i64 stat, 3 × i32 versions, owner, name length.
const NODE_FIXED_LEN: usize = 1 + 4 + 4 + 5 * 8 + 3 * 4 + 8 + 4;
/// Perms, scheme length, id length: the smallest an ACL entry can be.
const ACL_ENTRY_MIN_LEN: usize = 4 + 4 + 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    Session {
        id: i64,
        timeout_ms: i32,
    },
    /// An ACL list, defined before the nodes that reference it. `index` is local to the
    /// snapshot; a later definition of the same index replaces the earlier one for the nodes
    /// after it.
    Acl {
        index: u32,
        entries: Vec<AclEntry<'a>>,
    },
    /// A znode. Nodes are numbered in file order from 0.
    Node(NodeItem<'a>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclEntry<'a> {
    pub perms: i32,
    pub scheme: &'a [u8],
    pub id: &'a [u8],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeItem<'a> {
    /// The number of an earlier node; [`NO_PARENT`] for node 0 (the root) and only for it.
    pub parent: u32,
    pub name: &'a [u8],
    /// `None` is null data, distinct from `Some(&[])`.
    pub data: Option<&'a [u8]>,
    /// An ACL index defined earlier in the file.
    pub acl: u32,
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    /// The stored child-create counter.
    pub cversion: i32,
    pub aversion: i32,
    /// ephemeralOwner as stored.
    pub owner: i64,
}

pub fn encode_item(out: &mut Vec<u8>, item: &Item<'_>) {
    match item {
        Item::Session { id, timeout_ms } => encode_session(out, *id, *timeout_ms),
        Item::Acl { index, entries } => encode_acl(out, *index, entries),
        Item::Node(n) => encode_node(out, n),
    }
}

pub fn encode_session(out: &mut Vec<u8>, id: i64, timeout_ms: i32) {
    out.push(TAG_SESSION);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&timeout_ms.to_le_bytes());
}

pub fn encode_acl(out: &mut Vec<u8>, index: u32, entries: &[AclEntry<'_>]) {
    out.push(TAG_ACL);
    out.extend_from_slice(&index.to_le_bytes());
    out.extend_from_slice(&len_u32(entries.len()).to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.perms.to_le_bytes());
        put_bytes(out, e.scheme);
        put_bytes(out, e.id);
    }
}

/// The hot path of a capture: one reserve, then plain appends; no allocation of its own.
pub fn encode_node(out: &mut Vec<u8>, n: &NodeItem<'_>) {
    let data = n.data.unwrap_or_default();
    out.reserve(
        NODE_FIXED_LEN
            .saturating_add(4)
            .saturating_add(n.name.len())
            .saturating_add(data.len()),
    );
    out.push(TAG_NODE);
    out.extend_from_slice(&n.parent.to_le_bytes());
    out.extend_from_slice(&n.acl.to_le_bytes());
    for v in [n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [n.version, n.cversion, n.aversion] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&n.owner.to_le_bytes());
    put_bytes(out, n.name);
    match n.data {
        None => out.extend_from_slice(&DATA_NULL.to_le_bytes()),
        // Never encodes as DATA_NULL: an oversized length is still oversized (and rejected).
        Some(d) => put_bytes(out, d),
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&len_u32(b.len()).to_le_bytes());
    out.extend_from_slice(b);
}

/// Lengths beyond u32 cannot be encoded; they saturate below the null marker so the writer's
/// validation rejects the item rather than misreading it.
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).map_or(DATA_NULL - 1, |l| l.min(DATA_NULL - 1))
}

/// An item that does not decode. `offset` is the item's start within the decoded buffer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("item at offset {offset}: {reason}")]
pub struct ItemError {
    pub offset: usize,
    pub reason: String,
}

/// Decodes a buffer of encoded items (a capture chunk or a block payload). Each is checked
/// on its own (tags, lengths, limits); references between items are checked only by
/// [`crate::Snapshot::open`] and the writer, which see the whole file. Stops after the
/// first error.
pub fn decode_items(buf: &[u8]) -> ItemReader<'_> {
    ItemReader {
        c: Cursor::new(buf),
        failed: false,
    }
}

pub struct ItemReader<'a> {
    c: Cursor<'a>,
    failed: bool,
}

impl<'a> ItemReader<'a> {
    /// Bytes consumed so far: the offset of the next item.
    pub fn offset(&self) -> usize {
        self.c.pos()
    }
}

impl<'a> Iterator for ItemReader<'a> {
    type Item = Result<Item<'a>, ItemError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.c.is_empty() {
            return None;
        }
        let offset = self.c.pos();
        let r = decode(&mut self.c).map_err(|reason| ItemError { offset, reason });
        self.failed = r.is_err();
        Some(r)
    }
}

impl std::iter::FusedIterator for ItemReader<'_> {}

/// Decodes one item at the cursor; on error the reason (the caller knows the offset).
pub(crate) fn decode<'a>(c: &mut Cursor<'a>) -> Result<Item<'a>, String> {
    match c.u8() {
        Some(TAG_NODE) => decode_node(c).map(Item::Node),
        Some(TAG_SESSION) => {
            let (Some(id), Some(timeout_ms)) = (c.i64(), c.i32()) else {
                return Err("truncated session".into());
            };
            Ok(Item::Session { id, timeout_ms })
        }
        Some(TAG_ACL) => decode_acl(c),
        Some(tag) => Err(format!("unknown item tag {tag}")),
        None => Err("no item".into()),
    }
}

fn decode_node<'a>(c: &mut Cursor<'a>) -> Result<NodeItem<'a>, String> {
    let t = || "truncated node".to_string();
    let parent = c.u32().ok_or_else(t)?;
    let acl = c.u32().ok_or_else(t)?;
    let czxid = c.i64().ok_or_else(t)?;
    let mzxid = c.i64().ok_or_else(t)?;
    let pzxid = c.i64().ok_or_else(t)?;
    let ctime = c.i64().ok_or_else(t)?;
    let mtime = c.i64().ok_or_else(t)?;
    let version = c.i32().ok_or_else(t)?;
    let cversion = c.i32().ok_or_else(t)?;
    let aversion = c.i32().ok_or_else(t)?;
    let owner = c.i64().ok_or_else(t)?;
    let name_len = c.u32().ok_or_else(t)? as usize;
    if name_len > NAME_BYTES_MAX {
        return Err(format!(
            "node name is {name_len} bytes, over {NAME_BYTES_MAX}"
        ));
    }
    let name = c.bytes(name_len).ok_or_else(t)?;
    let data = match c.u32().ok_or_else(t)? {
        DATA_NULL => None,
        len if len as usize > DATA_BYTES_MAX => {
            return Err(format!("node data is {len} bytes, over {DATA_BYTES_MAX}"));
        }
        len => Some(c.bytes(len as usize).ok_or_else(t)?),
    };
    Ok(NodeItem {
        parent,
        name,
        data,
        acl,
        czxid,
        mzxid,
        pzxid,
        ctime,
        mtime,
        version,
        cversion,
        aversion,
        owner,
    })
}

fn decode_acl<'a>(c: &mut Cursor<'a>) -> Result<Item<'a>, String> {
    let t = || "truncated ACL".to_string();
    let index = c.u32().ok_or_else(t)?;
    let count = c.u32().ok_or_else(t)? as usize;
    if count > ACL_ENTRIES_MAX {
        return Err(format!("ACL has {count} entries, over {ACL_ENTRIES_MAX}"));
    }
    // Sized by what the bytes can hold, not by what they claim.
    let mut entries = Vec::with_capacity(count.min(c.remaining() / ACL_ENTRY_MIN_LEN));
    for _ in 0..count {
        let perms = c.i32().ok_or_else(t)?;
        let scheme_len = c.u32().ok_or_else(t)? as usize;
        let scheme = c.bytes(scheme_len).ok_or_else(t)?;
        let id_len = c.u32().ok_or_else(t)? as usize;
        let id = c.bytes(id_len).ok_or_else(t)?;
        entries.push(AclEntry { perms, scheme, id });
    }
    Ok(Item::Acl { index, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(name: &'a [u8], data: Option<&'a [u8]>) -> NodeItem<'a> {
        NodeItem {
            parent: 7,
            name,
            data,
            acl: 3,
            czxid: 1,
            mzxid: -2,
            pzxid: i64::MAX,
            ctime: i64::MIN,
            mtime: 5,
            version: -1,
            cversion: i32::MAX,
            aversion: 9,
            owner: 0x1234_5678_9abc,
        }
    }

    /// Encodes each kind of item, decodes the concatenation, and compares field by field;
    /// null and empty data must stay distinct.
    #[test]
    fn every_kind_round_trips() {
        let items = vec![
            Item::Session {
                id: -5,
                timeout_ms: 30_000,
            },
            Item::Acl {
                index: 4,
                entries: vec![
                    AclEntry {
                        perms: 31,
                        scheme: b"world",
                        id: b"anyone",
                    },
                    AclEntry {
                        perms: 1,
                        scheme: b"",
                        id: b"",
                    },
                ],
            },
            Item::Acl {
                index: 5,
                entries: vec![],
            },
            Item::Node(node(b"a", None)),
            Item::Node(node(b"b", Some(b""))),
            Item::Node(node(b"", Some(&[0, 255, 10]))),
        ];
        let mut buf = Vec::new();
        for i in &items {
            encode_item(&mut buf, i);
        }
        let back: Vec<_> = decode_items(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, items);
    }

    /// The fixed part of a node is what NODE_FIXED_LEN says, so `encode_node` reserves
    /// exactly once.
    #[test]
    fn node_length_matches_the_fixed_layout() {
        let mut buf = Vec::new();
        encode_node(&mut buf, &node(b"abc", Some(b"xy")));
        assert_eq!(buf.len(), NODE_FIXED_LEN + 3 + 4 + 2);
    }

    /// Each limit is enforced on decode, and the first byte past it is what is rejected.
    #[test]
    fn limits_are_corruption() {
        let name = vec![b'n'; NAME_BYTES_MAX];
        let mut ok = Vec::new();
        encode_node(&mut ok, &node(&name, None));
        assert!(decode_items(&ok).all(|r| r.is_ok()));
        let long = vec![b'n'; NAME_BYTES_MAX + 1];
        let mut bad = Vec::new();
        encode_node(&mut bad, &node(&long, None));
        let err = decode_items(&bad).next().unwrap().unwrap_err();
        assert!(err.reason.contains("name"), "{err}");

        let mut acl = vec![TAG_ACL];
        acl.extend_from_slice(&0u32.to_le_bytes());
        acl.extend_from_slice(&(ACL_ENTRIES_MAX as u32 + 1).to_le_bytes());
        let err = decode_items(&acl).next().unwrap().unwrap_err();
        assert!(err.reason.contains("entries"), "{err}");

        let mut data = Vec::new();
        encode_node(&mut data, &node(b"x", None));
        let at = data.len() - 4;
        data[at..].copy_from_slice(&(DATA_BYTES_MAX as u32 + 1).to_le_bytes());
        let err = decode_items(&data).next().unwrap().unwrap_err();
        assert!(err.reason.contains("data"), "{err}");
    }

    /// Every proper prefix of an item fails to decode, at the item's offset, and stops the reader.
    #[test]
    fn truncated_items_fail() {
        let mut buf = Vec::new();
        encode_session(&mut buf, 1, 2);
        let first = buf.len();
        encode_node(&mut buf, &node(b"name", Some(b"data")));
        encode_acl(
            &mut buf,
            1,
            &[AclEntry {
                perms: 1,
                scheme: b"s",
                id: b"i",
            }],
        );
        for cut in first + 1..buf.len() {
            let results: Vec<_> = decode_items(&buf[..cut]).collect();
            let last = results.last().unwrap();
            if let Err(e) = last {
                assert!(e.offset >= first, "cut {cut}: {e}");
            } else {
                // A cut exactly between the node and the ACL decodes cleanly.
                assert_eq!(results.len(), 2, "cut {cut}");
            }
        }
        assert_eq!(decode_items(&[0]).next().unwrap().unwrap_err().offset, 0);
    }
}
