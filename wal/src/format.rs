//! Byte layout of segment headers, records and segment file names (see the crate docs for the
//! diagrams). Everything here is pure: it encodes, or checks bytes that came from disk and so
//! must be treated as untrusted (no panics, no unchecked arithmetic).
#![deny(clippy::arithmetic_side_effects)]

use crate::RecordKind;

/// "PLWL" as a little-endian u32: the first four bytes of every segment.
pub const SEGMENT_MAGIC: u32 = 0x504C_574C;
/// "PAL1" as a little-endian u32: the first four bytes of every record. Non-zero, so a zero
/// header can only mean "end of data".
pub const RECORD_MAGIC: u32 = 0x5041_4C31;
/// The only segment format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
pub const SEGMENT_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 24;
const SEGMENT_CRC_AT: usize = 28;
const RECORD_CRC_AT: usize = 20;

const KIND_TXN: u8 = 1;
const KIND_META: u8 = 2;

/// What the first 32 bytes of a segment say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderCheck {
    Valid {
        first_zxid: i64,
    },
    /// A header whose crc checks out but whose version we do not know: never repair or cut it,
    /// it was written by a newer Palisade.
    Unsupported {
        version: u32,
    },
    Invalid {
        reason: String,
    },
}

pub fn encode_segment_header(first_zxid: i64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    let (head, crc) = h.split_at_mut(SEGMENT_CRC_AT);
    let (magic, rest) = head.split_at_mut(4);
    magic.copy_from_slice(&SEGMENT_MAGIC.to_le_bytes());
    let (version, rest) = rest.split_at_mut(4);
    version.copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    let (zxid, _reserved) = rest.split_at_mut(8);
    zxid.copy_from_slice(&first_zxid.to_le_bytes());
    let sum = crc32fast::hash(head);
    crc.copy_from_slice(&sum.to_le_bytes());
    h
}

pub fn check_segment_header(data: &[u8]) -> HeaderCheck {
    let invalid = |reason: String| HeaderCheck::Invalid { reason };
    let Some(h) = data.get(..SEGMENT_HEADER_LEN) else {
        return invalid(format!(
            "segment header truncated: file holds {} of {SEGMENT_HEADER_LEN} bytes",
            data.len()
        ));
    };
    let (Some(magic), Some(version), Some(first_zxid), Some(stored)) = (
        le_u32(h, 0),
        le_u32(h, 4),
        le_i64(h, 8),
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
    if version != FORMAT_VERSION {
        return HeaderCheck::Unsupported { version };
    }
    if h.get(16..SEGMENT_CRC_AT)
        .is_none_or(|r| r.iter().any(|&b| b != 0))
    {
        return invalid("segment header reserved bytes are not zero".into());
    }
    HeaderCheck::Valid { first_zxid }
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

/// Appends one encoded record to `buf`. The caller has checked `payload.len() <= u32::MAX`.
pub fn encode_record(buf: &mut Vec<u8>, kind: RecordKind, zxid: i64, payload: &[u8]) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut h = [0u8; RECORD_CRC_AT];
    let (magic, rest) = h.split_at_mut(4);
    magic.copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    let (len_bytes, rest) = rest.split_at_mut(4);
    len_bytes.copy_from_slice(&len.to_le_bytes());
    let (kind_and_reserved, zxid_bytes) = rest.split_at_mut(4);
    if let Some(k) = kind_and_reserved.first_mut() {
        *k = kind_byte(kind);
    }
    zxid_bytes.copy_from_slice(&zxid.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h);
    crc.update(payload);
    buf.extend_from_slice(&h);
    buf.extend_from_slice(&crc.finalize().to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Encoded size of a record with `payload_len` bytes of payload.
pub fn record_len(payload_len: usize) -> u64 {
    (payload_len as u64).saturating_add(RECORD_HEADER_LEN as u64)
}

/// Checks the record starting at `at`: magic, reserved bytes, kind, length (within
/// `max_payload` and within `data`) and crc. Returns why it is invalid otherwise.
pub fn check_record(data: &[u8], at: usize, max_payload: u32) -> Result<CheckedRecord<'_>, String> {
    let header_end = at
        .checked_add(RECORD_HEADER_LEN)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| {
            format!(
                "partial record header ({} of {RECORD_HEADER_LEN} bytes)",
                data.len().saturating_sub(at)
            )
        })?;
    let h = data.get(at..header_end).unwrap_or_default();
    let (Some(magic), Some(len), Some(kind), Some(reserved), Some(zxid), Some(stored)) = (
        le_u32(h, 0),
        le_u32(h, 4),
        h.get(8).copied(),
        h.get(9..12),
        le_i64(h, 12),
        le_u32(h, RECORD_CRC_AT),
    ) else {
        return Err("record header unreadable".into());
    };
    if magic != RECORD_MAGIC {
        return Err(format!("bad record magic {magic:#010x}"));
    }
    if reserved.iter().any(|&b| b != 0) {
        return Err("record reserved bytes are not zero".into());
    }
    let kind = match kind {
        KIND_TXN => RecordKind::Txn,
        KIND_META => RecordKind::Meta,
        other => return Err(format!("unknown record kind {other}")),
    };
    if len > max_payload {
        return Err(format!(
            "record length {len} exceeds max_payload {max_payload}"
        ));
    }
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| header_end.checked_add(l))
        .filter(|&e| e <= data.len())
        .ok_or_else(|| {
            format!(
                "record length {len} runs past the end of the file ({} bytes left)",
                data.len().saturating_sub(header_end)
            )
        })?;
    let payload = data.get(header_end..end).unwrap_or_default();
    let mut crc = crc32fast::Hasher::new();
    crc.update(h.get(..RECORD_CRC_AT).unwrap_or_default());
    crc.update(payload);
    let computed = crc.finalize();
    if computed != stored {
        return Err(format!(
            "record crc mismatch (stored {stored:#010x}, computed {computed:#010x})"
        ));
    }
    Ok(CheckedRecord {
        kind,
        zxid,
        payload,
        end,
    })
}

fn kind_byte(kind: RecordKind) -> u8 {
    match kind {
        RecordKind::Txn => KIND_TXN,
        RecordKind::Meta => KIND_META,
    }
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
        let h = encode_segment_header(0x2a);
        assert_eq!(
            check_segment_header(&h),
            HeaderCheck::Valid { first_zxid: 0x2a }
        );
        assert_eq!(&h[..4], b"LWLP", "magic 0x504C574C stored little-endian");
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
    }

    #[test]
    fn record_layout_is_as_documented() {
        let mut buf = Vec::new();
        encode_record(&mut buf, RecordKind::Meta, -2, b"abc");
        assert_eq!(buf.len(), 27);
        assert_eq!(&buf[..4], &RECORD_MAGIC.to_le_bytes());
        assert_eq!(&buf[4..8], &3u32.to_le_bytes());
        assert_eq!(&buf[8..12], &[2, 0, 0, 0]);
        assert_eq!(&buf[12..20], &(-2i64).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&buf[..20]);
        crc.update(b"abc");
        assert_eq!(&buf[20..24], &crc.finalize().to_le_bytes());
        let r = check_record(&buf, 0, 3).unwrap();
        assert_eq!(
            (r.kind, r.zxid, r.payload, r.end),
            (RecordKind::Meta, -2, &b"abc"[..], 27)
        );
        assert!(check_record(&buf, 0, 2)
            .unwrap_err()
            .contains("max_payload"));
        assert!(check_record(&buf[..26], 0, 3)
            .unwrap_err()
            .contains("past the end"));
    }

    /// How: records whose crc is valid but whose reserved bytes or kind are not: the crc does
    /// not make them valid.
    #[test]
    fn reserved_bytes_and_unknown_kinds_are_invalid_despite_a_valid_crc() {
        let reseal = |mut b: Vec<u8>| {
            let mut crc = crc32fast::Hasher::new();
            crc.update(&b[..20]);
            crc.update(&b[24..]);
            let sum = crc.finalize();
            b[20..24].copy_from_slice(&sum.to_le_bytes());
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
            let err = check_record(&reseal(b), 0, 100).unwrap_err();
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
