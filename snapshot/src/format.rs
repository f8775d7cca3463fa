//! The file layout: header, block framing, trailer, file names. The byte-by-byte description
//! is in the crate docs; this module is its single implementation, used by the writer, the
//! reader and the tests that build damaged files by hand.

use crate::cursor::Cursor;

/// `0x504C534E` ("PLSN" read as a big-endian word; the bytes on disk are `4E 53 4C 50`).
pub const MAGIC: u32 = 0x504C_534E;
/// The version this crate writes. Version 1 (earlier builds) is still read, for tools and so
/// the server can name it when it refuses it: its header carries no data-dir identity.
pub const FORMAT_VERSION: u32 = 2;
pub const FORMAT_VERSION_V1: u32 = 1;
pub const HEADER_LEN: usize = 32;
/// Bytes of the header covered by its crc (everything before the crc).
const HEADER_CRC_COVERS: usize = 28;
pub const BLOCK_HEADER_LEN: usize = 12;
/// A larger length field is damage, never a real block: it bounds what a corrupt length can
/// make the reader look at, and keeps every block small enough to hold in memory.
pub const BLOCK_BYTES_MAX: u32 = 64 << 20;
pub const KIND_ITEMS: u8 = 1;
pub const KIND_TRAILER: u8 = 2;
pub const TRAILER_LEN: usize = 52;

const _: () = assert!(HEADER_CRC_COVERS + 4 == HEADER_LEN);
const _: () = assert!(TRAILER_LEN == 6 * 8 + 4);
const _: () = assert!((BLOCK_BYTES_MAX as u64) < u32::MAX as u64);

/// A damage report before the file name is known: where and what.
#[derive(Debug)]
pub(crate) enum FormatError {
    Corrupt { offset: u64, reason: String },
    Version { found: u32 },
}

pub(crate) fn corrupt(offset: impl TryInto<u64>, reason: impl Into<String>) -> FormatError {
    FormatError::Corrupt {
        offset: offset.try_into().unwrap_or(u64::MAX),
        reason: reason.into(),
    }
}

/// The snapshot file name for a start zxid: `snapshot.` and 16 lowercase hex digits.
pub fn file_name(start_zxid: i64) -> String {
    format!("snapshot.{:016x}", start_zxid as u64)
}

/// The start zxid in a snapshot file name, or `None` for any other name (including `.tmp`).
pub fn parse_file_name(name: &str) -> Option<i64> {
    let hex = name.strip_prefix("snapshot.")?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if hex.len() != 16 || !hex.bytes().all(lower_hex) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|z| z as i64)
}

/// A version-2 header: `identity` is the data dir's (non-zero).
pub fn encode_header(start_zxid: i64, identity: u64) -> [u8; HEADER_LEN] {
    encode_header_version(FORMAT_VERSION, start_zxid, identity)
}

/// A header of `version`, for tests and fixtures of older versions (version 1: pass 0).
pub fn encode_header_version(version: u32, start_zxid: i64, identity: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    let mut w = h.as_mut_slice();
    put(&mut w, &MAGIC.to_le_bytes());
    put(&mut w, &version.to_le_bytes());
    put(&mut w, &start_zxid.to_le_bytes());
    put(&mut w, &identity.to_le_bytes());
    put(&mut w, &[0u8; 4]);
    let crc = crc32fast::hash(
        h.first_chunk::<HEADER_CRC_COVERS>()
            .map_or(&[][..], |c| c.as_slice()),
    );
    if let Some((_, tail)) = h.split_last_chunk_mut::<4>() {
        *tail = crc.to_le_bytes();
    }
    h
}

/// Copies `src` to the front of `w` and advances it (a fixed layout, so it always fits).
fn put(w: &mut &mut [u8], src: &[u8]) {
    let taken = std::mem::take(w);
    if let Some((head, tail)) = taken.split_at_mut_checked(src.len()) {
        head.copy_from_slice(src);
        *w = tail;
    }
}

/// What a header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub start_zxid: i64,
    /// The data dir's identity; None in a version-1 file.
    pub identity: Option<u64>,
}

/// Checks the header. Magic first, so a foreign file says so.
pub(crate) fn decode_header(file: &[u8]) -> Result<Header, FormatError> {
    let Some(h) = file.first_chunk::<HEADER_LEN>() else {
        return Err(corrupt(
            file.len(),
            format!(
                "the file is {} bytes, shorter than the {HEADER_LEN}-byte header",
                file.len()
            ),
        ));
    };
    let mut c = Cursor::new(h);
    let magic = c.u32().unwrap_or_default();
    if magic != MAGIC {
        return Err(corrupt(
            0,
            format!("bad magic {magic:#010x}, not a snapshot"),
        ));
    }
    let covered = h
        .first_chunk::<HEADER_CRC_COVERS>()
        .map_or(&[][..], |c| c.as_slice());
    let stored = u32::from_le_bytes(*h.last_chunk::<4>().unwrap_or(&[0; 4]));
    let computed = crc32fast::hash(covered);
    if stored != computed {
        return Err(corrupt(
            HEADER_CRC_COVERS,
            format!("header crc {stored:#010x}, computed {computed:#010x}"),
        ));
    }
    let version = c.u32().unwrap_or_default();
    if version != FORMAT_VERSION && version != FORMAT_VERSION_V1 {
        return Err(FormatError::Version { found: version });
    }
    let start_zxid = c.i64().unwrap_or_default();
    let identity = c.u64().unwrap_or_default();
    if c.bytes(4).is_none_or(|r| r.iter().any(|&b| b != 0)) {
        return Err(corrupt(24, "reserved header bytes are not zero"));
    }
    let identity = match (version, identity) {
        (FORMAT_VERSION_V1, 0) => None,
        (FORMAT_VERSION_V1, _) => return Err(corrupt(16, "reserved header bytes are not zero")),
        (_, 0) => return Err(corrupt(16, "the header carries no data-dir identity")),
        (_, id) => Some(id),
    };
    Ok(Header {
        start_zxid,
        identity,
    })
}

/// The 12-byte block header: len, kind, 3 zero bytes, then the crc over those 8 bytes and the
/// payload (so a flipped length or kind is caught as surely as a flipped payload byte).
pub fn encode_block_header(kind: u8, payload: &[u8]) -> [u8; BLOCK_HEADER_LEN] {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut head = [0u8; 8];
    let mut w = head.as_mut_slice();
    put(&mut w, &len.to_le_bytes());
    put(&mut w, &[kind, 0, 0, 0]);
    let crc = block_crc(&head, payload);
    let mut h = [0u8; BLOCK_HEADER_LEN];
    let mut w = h.as_mut_slice();
    put(&mut w, &head);
    put(&mut w, &crc.to_le_bytes());
    h
}

pub(crate) fn block_crc(head: &[u8; 8], payload: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(head);
    crc.update(payload);
    crc.finalize()
}

/// Appends a whole block (header and payload) to `out`.
pub fn append_block(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    out.extend_from_slice(&encode_block_header(kind, payload));
    out.extend_from_slice(payload);
}

/// A block as found in the file, crc verified. `payload` borrows the file.
pub(crate) struct Block<'a> {
    pub kind: u8,
    pub crc: u32,
    pub payload: &'a [u8],
}

/// Reads the block at `offset`. `Ok(None)` is a clean end of file (no bytes left).
pub(crate) fn read_block(file: &[u8], offset: usize) -> Result<Option<Block<'_>>, FormatError> {
    let rest = file.get(offset..).unwrap_or_default();
    if rest.is_empty() {
        return Ok(None);
    }
    let mut c = Cursor::new(rest);
    let Some(head) = c.array::<8>() else {
        return Err(corrupt(offset, "truncated block header"));
    };
    let Some(crc) = c.u32() else {
        return Err(corrupt(offset, "truncated block header"));
    };
    let mut h = Cursor::new(head);
    let len = h.u32().unwrap_or_default();
    let kind = h.u8().unwrap_or_default();
    let reserved = h.bytes(3).unwrap_or_default();
    // Checked before the crc so a huge length cannot make us hash past the end.
    if len > BLOCK_BYTES_MAX {
        return Err(corrupt(
            offset,
            format!("block length {len} exceeds {BLOCK_BYTES_MAX}"),
        ));
    }
    let Some(payload) = c.bytes(len as usize) else {
        return Err(corrupt(
            offset,
            format!(
                "truncated block: {len} payload bytes, {} left in the file",
                c.remaining()
            ),
        ));
    };
    let computed = block_crc(head, payload);
    if computed != crc {
        return Err(corrupt(
            offset,
            format!("block crc {crc:#010x}, computed {computed:#010x}"),
        ));
    }
    // After the crc: these can only be wrong if a writer wrote them so.
    if kind != KIND_ITEMS && kind != KIND_TRAILER {
        return Err(corrupt(offset, format!("unknown block kind {kind}")));
    }
    if reserved.iter().any(|&b| b != 0) {
        return Err(corrupt(offset, "reserved block header bytes are not zero"));
    }
    Ok(Some(Block { kind, crc, payload }))
}

/// What the core knows at the end of a capture. The counts are checked against the items on
/// both write and open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Trailer {
    /// The last zxid applied when the capture finished (≥ the header's start zxid).
    pub end_zxid: i64,
    /// The server's tree digest at `end_zxid` (opaque to this crate).
    pub digest: u64,
    /// Node items in the file.
    pub node_count: u64,
    /// Session items in the file.
    pub session_count: u64,
    /// Acl items in the file, redefinitions included.
    pub acl_count: u64,
}

/// The trailer block's payload: the caller's trailer plus what the writer adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TrailerBlock {
    pub trailer: Trailer,
    pub block_count: u64,
    pub chain: u32,
}

pub fn encode_trailer(t: &Trailer, block_count: u64, chain: u32) -> [u8; TRAILER_LEN] {
    let mut p = [0u8; TRAILER_LEN];
    let mut w = p.as_mut_slice();
    put(&mut w, &t.end_zxid.to_le_bytes());
    put(&mut w, &t.digest.to_le_bytes());
    put(&mut w, &t.node_count.to_le_bytes());
    put(&mut w, &t.session_count.to_le_bytes());
    put(&mut w, &t.acl_count.to_le_bytes());
    put(&mut w, &block_count.to_le_bytes());
    put(&mut w, &chain.to_le_bytes());
    p
}

pub(crate) fn decode_trailer(payload: &[u8], offset: usize) -> Result<TrailerBlock, FormatError> {
    let Some(p) = payload
        .first_chunk::<TRAILER_LEN>()
        .filter(|_| payload.len() == TRAILER_LEN)
    else {
        return Err(corrupt(
            offset,
            format!(
                "trailer payload is {} bytes, not {TRAILER_LEN}",
                payload.len()
            ),
        ));
    };
    let mut c = Cursor::new(p);
    let mut u64_ = || c.u64().unwrap_or_default();
    let trailer = Trailer {
        end_zxid: u64_() as i64,
        digest: u64_(),
        node_count: u64_(),
        session_count: u64_(),
        acl_count: u64_(),
    };
    let block_count = u64_();
    let chain = c.u32().unwrap_or_default();
    Ok(TrailerBlock {
        trailer,
        block_count,
        chain,
    })
}

/// crc32 over the crcs of the items blocks in file order: a block dropped, duplicated or
/// moved changes it even when every block is intact on its own.
#[derive(Clone, Default)]
pub struct Chain(crc32fast::Hasher);

impl Chain {
    pub fn new() -> Self {
        Chain::default()
    }

    pub fn push(&mut self, block_crc: u32) {
        self.0.update(&block_crc.to_le_bytes());
    }

    pub fn value(&self) -> u32 {
        self.0.clone().finalize()
    }
}
