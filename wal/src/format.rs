//! Byte layout of segment headers, records and segment file names (see the crate docs for the
//! diagrams). Everything here is pure: it encodes, or checks bytes that came from disk and so
//! must be treated as untrusted (no panics, no unchecked arithmetic).
#![deny(clippy::arithmetic_side_effects)]

use crate::RecordKind;

/// "PLWL" as a little-endian u32: the first four bytes of every segment.
pub const SEGMENT_MAGIC: u32 = 0x504C_574C;
/// "PAL2" as a little-endian u32: the first four bytes of every record. Non-zero, so a zero
/// header can only mean "end of data".
pub const RECORD_MAGIC: u32 = 0x5041_4C32;
/// "PEND" as a little-endian u32: the last four bytes of every record. A write cut short
/// leaves a prefix of the record, so a record whose end mark is present was written whole.
pub const RECORD_END_MARK: u32 = 0x5045_4E44;
/// The only segment format this crate writes and reads. Version 1 (earlier builds: no
/// identity, no created size, one crc, no end mark) is refused.
pub const FORMAT_VERSION: u32 = 2;
pub const SEGMENT_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 24;
/// Payload crc and end mark after the payload.
pub const RECORD_FOOTER_LEN: usize = 8;
const SEGMENT_CRC_AT: usize = 28;
const RECORD_CRC_AT: usize = 20;

const KIND_TXN: u8 = 1;
const KIND_META: u8 = 2;
/// A Raft log's kinds: an entry (sequenced by its Raft index, as a txn is by its zxid) and
/// the log's own metadata. Distinct bytes from the standalone kinds, so neither log's records
/// can be read as the other's.
const KIND_RAFT_ENTRY: u8 = 3;
const KIND_RAFT_META: u8 = 4;
/// The segment format of a Raft log: format 2's layout, with kinds 3 and 4 instead of 1 and 2.
pub const RAFT_FORMAT_VERSION: u32 = 3;

/// Which log a segment belongs to. Both share every byte of the layout; the version in the
/// segment header tells them apart, so a standalone open of a Raft log (or the reverse) stops
/// at [`HeaderCheck::Unsupported`] and never cuts or replays the other's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Format 2: kind 1 = Txn, 2 = Meta.
    Standalone,
    /// Format 3: kind 3 = a Raft entry (`RecordKind::Txn` inside the crate: its zxid field is
    /// the Raft index, continuous like a txn's), 4 = Raft metadata (`RecordKind::Meta`).
    Raft,
}

impl Flavour {
    pub fn version(self) -> u32 {
        match self {
            Flavour::Standalone => FORMAT_VERSION,
            Flavour::Raft => RAFT_FORMAT_VERSION,
        }
    }

    /// Whether a sequenced record numbered `found` may follow where `expected` was due. A
    /// txn continues by exactly 1; a Raft entry's index only rises (openraft's storage suite
    /// appends with gaps; the Raft layer checks its log is contiguous where it must be).
    pub fn continues(self, expected: i64, found: i64) -> bool {
        match self {
            Flavour::Standalone => found == expected,
            Flavour::Raft => found >= expected,
        }
    }

    fn kind_byte(self, kind: RecordKind) -> u8 {
        match (self, kind) {
            (Flavour::Standalone, RecordKind::Txn) => KIND_TXN,
            (Flavour::Standalone, RecordKind::Meta) => KIND_META,
            (Flavour::Raft, RecordKind::Txn) => KIND_RAFT_ENTRY,
            (Flavour::Raft, RecordKind::Meta) => KIND_RAFT_META,
        }
    }

    fn kind_of(self, byte: u8) -> Option<RecordKind> {
        match (self, byte) {
            (Flavour::Standalone, KIND_TXN) | (Flavour::Raft, KIND_RAFT_ENTRY) => {
                Some(RecordKind::Txn)
            }
            (Flavour::Standalone, KIND_META) | (Flavour::Raft, KIND_RAFT_META) => {
                Some(RecordKind::Meta)
            }
            _ => None,
        }
    }
}

/// What the first 32 bytes of a segment say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderCheck {
    Valid {
        first_zxid: i64,
        /// The data dir's identity.
        identity: u64,
        /// The size the segment was created with: the file is never shorter.
        min_len: u64,
    },
    /// A header whose crc checks out but whose version we do not read: never repair or cut
    /// it (a newer Palisade wrote it, or an earlier one: version 1).
    Unsupported {
        version: u32,
    },
    Invalid {
        reason: String,
    },
}

/// `created_len` is stored in KiB, rounded down (a lower bound is all recovery needs).
#[cfg(test)]
pub fn encode_segment_header(
    first_zxid: i64,
    identity: u64,
    created_len: u64,
) -> [u8; SEGMENT_HEADER_LEN] {
    encode_segment_header_of(Flavour::Standalone, first_zxid, identity, created_len)
}

pub fn encode_segment_header_of(
    flavour: Flavour,
    first_zxid: i64,
    identity: u64,
    created_len: u64,
) -> [u8; SEGMENT_HEADER_LEN] {
    let kib = u32::try_from(created_len / 1024).unwrap_or(u32::MAX);
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    let (head, crc) = h.split_at_mut(SEGMENT_CRC_AT);
    let (magic, rest) = head.split_at_mut(4);
    magic.copy_from_slice(&SEGMENT_MAGIC.to_le_bytes());
    let (version, rest) = rest.split_at_mut(4);
    version.copy_from_slice(&flavour.version().to_le_bytes());
    let (zxid, rest) = rest.split_at_mut(8);
    zxid.copy_from_slice(&first_zxid.to_le_bytes());
    let (id, size) = rest.split_at_mut(8);
    id.copy_from_slice(&identity.to_le_bytes());
    size.copy_from_slice(&kib.to_le_bytes());
    let sum = crc32fast::hash(head);
    crc.copy_from_slice(&sum.to_le_bytes());
    h
}

#[cfg(test)]
pub fn check_segment_header(data: &[u8]) -> HeaderCheck {
    check_segment_header_of(data, Flavour::Standalone)
}

pub fn check_segment_header_of(data: &[u8], flavour: Flavour) -> HeaderCheck {
    let invalid = |reason: String| HeaderCheck::Invalid { reason };
    let Some(h) = data.get(..SEGMENT_HEADER_LEN) else {
        return invalid(format!(
            "segment header truncated: file holds {} of {SEGMENT_HEADER_LEN} bytes",
            data.len()
        ));
    };
    let (Some(magic), Some(version), Some(first_zxid), Some(identity), Some(kib), Some(stored)) = (
        le_u32(h, 0),
        le_u32(h, 4),
        le_i64(h, 8),
        le_i64(h, 16),
        le_u32(h, 24),
        le_u32(h, SEGMENT_CRC_AT),
    ) else {
        return invalid("segment header unreadable".into());
    };
    if magic != SEGMENT_MAGIC {
        return invalid(format!("bad segment magic {magic:#010x}"));
    }
    let computed = crc32fast::hash(h.get(..SEGMENT_CRC_AT).unwrap_or_default());
    if computed != stored {
        return invalid(format!(
            "segment header crc mismatch (stored {stored:#010x}, computed {computed:#010x})"
        ));
    }
    if version != flavour.version() {
        return HeaderCheck::Unsupported { version };
    }
    if identity == 0 {
        return invalid("segment header carries no data-dir identity".into());
    }
    HeaderCheck::Valid {
        first_zxid,
        identity: identity as u64,
        min_len: u64::from(kib).saturating_mul(1024),
    }
}

/// A record whose header and crc checked out. Continuity is the caller's business.
#[derive(Debug, Clone, Copy)]
pub struct CheckedRecord<'a> {
    pub kind: RecordKind,
    pub zxid: i64,
    pub payload: &'a [u8],
    /// Offset just past this record.
    pub end: usize,
}

/// Why the bytes at an offset are not a record, and whether a write cut short (which leaves a
/// prefix of what was written, then the zeros that were there) could have left them.
#[derive(Debug, Clone)]
pub struct BadRecord {
    pub reason: String,
    pub maybe_torn: bool,
}

/// Appends one encoded record to `buf`. The caller has checked `payload.len() <= u32::MAX`.
#[cfg(test)]
pub fn encode_record(buf: &mut Vec<u8>, kind: RecordKind, zxid: i64, payload: &[u8]) {
    encode_record_of(buf, Flavour::Standalone, kind, zxid, payload)
}

pub fn encode_record_of(
    buf: &mut Vec<u8>,
    flavour: Flavour,
    kind: RecordKind,
    zxid: i64,
    payload: &[u8],
) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut h = [0u8; RECORD_HEADER_LEN];
    let (head, head_crc) = h.split_at_mut(RECORD_CRC_AT);
    let (magic, rest) = head.split_at_mut(4);
    magic.copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    let (len_bytes, rest) = rest.split_at_mut(4);
    len_bytes.copy_from_slice(&len.to_le_bytes());
    let (kind_and_reserved, zxid_bytes) = rest.split_at_mut(4);
    if let Some(k) = kind_and_reserved.first_mut() {
        *k = flavour.kind_byte(kind);
    }
    zxid_bytes.copy_from_slice(&zxid.to_le_bytes());
    head_crc.copy_from_slice(&crc32fast::hash(head).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h);
    crc.update(payload);
    buf.extend_from_slice(&h);
    buf.extend_from_slice(payload);
    buf.extend_from_slice(&crc.finalize().to_le_bytes());
    buf.extend_from_slice(&RECORD_END_MARK.to_le_bytes());
}

/// Encoded size of a record with `payload_len` bytes of payload.
pub fn record_len(payload_len: usize) -> u64 {
    (payload_len as u64).saturating_add((RECORD_HEADER_LEN + RECORD_FOOTER_LEN) as u64)
}

fn all_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Checks the record starting at `at`: header (magic, reserved bytes, kind, its own crc, so
/// the length can be trusted), length (within `max_payload` and within `data`), end mark and
/// record crc. On failure says whether a torn write could explain the bytes:
///
/// * header unusable: only if nothing non-zero follows the header's 24 bytes (a write that
///   got past the header would have left the header whole);
/// * header valid: only if the end mark is missing, or a prefix of it then zeros, and nothing
///   non-zero follows; a record whose end mark is present was written whole, so a bad crc is
///   corruption (a flipped bit), never a tear;
/// * a file that ends inside a record (header or extent) was shortened: the writer always
///   preallocates first, so never a tear.
#[cfg(test)]
pub fn check_record(
    data: &[u8],
    at: usize,
    max_payload: u32,
) -> Result<CheckedRecord<'_>, BadRecord> {
    check_record_of(data, at, max_payload, Flavour::Standalone)
}

/// [`check_record`] for a segment of `flavour`: the other flavour's kinds are unknown kinds.
pub fn check_record_of(
    data: &[u8],
    at: usize,
    max_payload: u32,
    flavour: Flavour,
) -> Result<CheckedRecord<'_>, BadRecord> {
    let bad = |reason: String, maybe_torn: bool| BadRecord { reason, maybe_torn };
    let Some(header_end) = at
        .checked_add(RECORD_HEADER_LEN)
        .filter(|&e| e <= data.len())
    else {
        return Err(bad(
            format!(
                "the file ends inside a record header ({} of {RECORD_HEADER_LEN} bytes): it was shortened",
                data.len().saturating_sub(at)
            ),
            false,
        ));
    };
    let after_header_zero = all_zero(data.get(header_end..).unwrap_or_default());
    let h = data.get(at..header_end).unwrap_or_default();
    let (Some(magic), Some(len), Some(kind), Some(reserved), Some(zxid), Some(head_crc)) = (
        le_u32(h, 0),
        le_u32(h, 4),
        h.get(8).copied(),
        h.get(9..12),
        le_i64(h, 12),
        le_u32(h, RECORD_CRC_AT),
    ) else {
        return Err(bad("record header unreadable".into(), after_header_zero));
    };
    if magic != RECORD_MAGIC {
        return Err(bad(
            format!("bad record magic {magic:#010x}"),
            after_header_zero,
        ));
    }
    let computed = crc32fast::hash(h.get(..RECORD_CRC_AT).unwrap_or_default());
    if computed != head_crc {
        return Err(bad(
            format!(
                "record header crc mismatch (stored {head_crc:#010x}, computed {computed:#010x})"
            ),
            after_header_zero,
        ));
    }
    // From here the header is as the writer wrote it.
    if reserved.iter().any(|&b| b != 0) {
        return Err(bad("record reserved bytes are not zero".into(), false));
    }
    let Some(kind) = flavour.kind_of(kind) else {
        return Err(bad(format!("unknown record kind {kind}"), false));
    };
    if len > max_payload {
        return Err(bad(
            format!("record length {len} exceeds max_payload {max_payload}"),
            false,
        ));
    }
    let payload_end = usize::try_from(len)
        .ok()
        .and_then(|l| header_end.checked_add(l));
    let Some((payload_end, end)) = payload_end
        .and_then(|p| Some((p, p.checked_add(RECORD_FOOTER_LEN)?)))
        .filter(|&(_, e)| e <= data.len())
    else {
        return Err(bad(
            format!(
                "record length {len} runs past the end of the file ({} bytes left): it was shortened",
                data.len().saturating_sub(header_end)
            ),
            false,
        ));
    };
    let payload = data.get(header_end..payload_end).unwrap_or_default();
    let mark_at = payload_end.saturating_add(4);
    let mark = data.get(mark_at..end).unwrap_or_default();
    let expected_mark = RECORD_END_MARK.to_le_bytes();
    if mark != expected_mark {
        // A tear inside the mark leaves a prefix of it, then zeros, and nothing after.
        let written = mark
            .iter()
            .zip(expected_mark.iter())
            .take_while(|(a, b)| a == b)
            .count();
        let rest_zero = all_zero(
            data.get(mark_at.saturating_add(written)..)
                .unwrap_or_default(),
        );
        return Err(bad(
            format!(
                "record end mark missing at offset {mark_at}: the record was not written whole"
            ),
            rest_zero,
        ));
    }
    let stored = le_u32(data, payload_end).unwrap_or_default();
    let mut crc = crc32fast::Hasher::new();
    crc.update(h);
    crc.update(payload);
    let computed = crc.finalize();
    if computed != stored {
        return Err(bad(
            format!(
                "record crc mismatch (stored {stored:#010x}, computed {computed:#010x}) in a \
                 record written whole (its end mark is present): corruption, not a torn write"
            ),
            false,
        ));
    }
    Ok(CheckedRecord {
        kind,
        zxid,
        payload,
        end,
    })
}

/// `log.` + 16 lowercase hex digits of the zxid's two's-complement bits.
pub fn segment_file_name(first_zxid: i64) -> String {
    format!("log.{:016x}", first_zxid as u64)
}

/// The zxid a segment file name stands for, or None if the name is not ours.
pub fn parse_segment_file_name(name: &str) -> Option<i64> {
    let hex = name.strip_prefix("log.")?;
    if hex.len() != 16
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn le_i64(b: &[u8], at: usize) -> Option<i64> {
    let bytes = b.get(at..at.checked_add(8)?)?;
    Some(i64::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_each_damage() {
        let h = encode_segment_header(0x2a, 7, 4096 + 1000);
        assert_eq!(
            check_segment_header(&h),
            HeaderCheck::Valid {
                first_zxid: 0x2a,
                identity: 7,
                min_len: 4096
            }
        );
        assert_eq!(&h[..4], b"LWLP", "magic 0x504C574C stored little-endian");
        assert_eq!(&h[16..24], &7u64.to_le_bytes());
        assert_eq!(&h[24..28], &4u32.to_le_bytes(), "created size in KiB");
        for bit in 0..(SEGMENT_HEADER_LEN * 8) {
            let mut d = h;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(
                !matches!(check_segment_header(&d), HeaderCheck::Valid { .. }),
                "flip of bit {bit} went unnoticed"
            );
        }
        assert!(matches!(
            check_segment_header(&h[..31]),
            HeaderCheck::Invalid { .. }
        ));
        assert!(matches!(
            check_segment_header(&encode_segment_header(1, 0, 0)),
            HeaderCheck::Invalid { .. }
        ));
    }

    #[test]
    fn record_layout_is_as_documented() {
        let mut buf = Vec::new();
        encode_record(&mut buf, RecordKind::Meta, -2, b"abc");
        assert_eq!(buf.len(), 35);
        assert_eq!(&buf[..4], &RECORD_MAGIC.to_le_bytes());
        assert_eq!(&buf[4..8], &3u32.to_le_bytes());
        assert_eq!(&buf[8..12], &[2, 0, 0, 0]);
        assert_eq!(&buf[12..20], &(-2i64).to_le_bytes());
        assert_eq!(&buf[20..24], &crc32fast::hash(&buf[..20]).to_le_bytes());
        assert_eq!(&buf[24..27], b"abc");
        let mut crc = crc32fast::Hasher::new();
        crc.update(&buf[..24]);
        crc.update(b"abc");
        assert_eq!(&buf[27..31], &crc.finalize().to_le_bytes());
        assert_eq!(
            &buf[31..35],
            b"DNEP",
            "end mark 0x50454E44 stored little-endian"
        );
        let r = check_record(&buf, 0, 3).unwrap();
        assert_eq!(
            (r.kind, r.zxid, r.payload, r.end),
            (RecordKind::Meta, -2, &b"abc"[..], 35)
        );
        assert!(check_record(&buf, 0, 2)
            .unwrap_err()
            .reason
            .contains("max_payload"));
        let short = check_record(&buf[..34], 0, 3).unwrap_err();
        assert!(short.reason.contains("past the end") && !short.maybe_torn);
    }

    /// How: a record followed by zeros, damaged every way: a prefix then zeros is the only
    /// thing called a possible tear; any flipped bit in a record written whole is not.
    #[test]
    fn only_a_prefix_then_zeros_may_be_a_tear() {
        let mut rec = Vec::new();
        encode_record(&mut rec, RecordKind::Txn, 5, &[0u8; 40]);
        let mut data = rec.clone();
        data.resize(rec.len() + 64, 0);
        for cut in 1..rec.len() {
            let mut d = data.clone();
            d[cut..].fill(0);
            let bad = check_record(&d, 0, 100).unwrap_err();
            assert!(bad.maybe_torn, "prefix of {cut} bytes: {}", bad.reason);
        }
        for bit in 0..rec.len() * 8 {
            let mut d = data.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            let bad = check_record(&d, 0, 100).unwrap_err();
            assert!(!bad.maybe_torn, "flip of bit {bit}: {}", bad.reason);
        }
    }

    /// How: records whose crcs are valid but whose reserved bytes or kind are not: the crc
    /// does not make them valid.
    #[test]
    fn reserved_bytes_and_unknown_kinds_are_invalid_despite_a_valid_crc() {
        let reseal = |mut b: Vec<u8>| {
            let head = crc32fast::hash(&b[..20]);
            b[20..24].copy_from_slice(&head.to_le_bytes());
            let n = b.len();
            let mut crc = crc32fast::Hasher::new();
            crc.update(&b[..n - 8]);
            let sum = crc.finalize();
            b[n - 8..n - 4].copy_from_slice(&sum.to_le_bytes());
            b
        };
        let mut buf = Vec::new();
        encode_record(&mut buf, RecordKind::Txn, 1, b"payload");
        for (at, value, why) in [
            (9, 1, "reserved"),
            (11, 0x80, "reserved"),
            (8, 3, "kind"),
            (8, 0, "kind"),
        ] {
            let mut b = buf.clone();
            b[at] = value;
            let err = check_record(&reseal(b), 0, 100).unwrap_err().reason;
            assert!(err.contains(why), "byte {at} = {value}: {err}");
        }
        assert!(check_record(&reseal(buf), 0, 100).is_ok());
    }

    #[test]
    fn names_are_16_lowercase_hex_digits() {
        assert_eq!(segment_file_name(42), "log.000000000000002a");
        assert_eq!(parse_segment_file_name("log.000000000000002a"), Some(42));
        assert_eq!(parse_segment_file_name(&segment_file_name(-5)), Some(-5));
        for bad in [
            "log.2a",
            "log.000000000000002A",
            "log.000000000000002a.tmp",
            "x.000000000000002a",
        ] {
            assert_eq!(parse_segment_file_name(bad), None, "{bad}");
        }
    }
}
