//! Digest records: the tree digest (state/tree/digest.rs) right after a txn, logged every
//! [`crate::limits::DIGEST_EVERY`] txns as a WAL Meta record, so that replay can prove it
//! rebuilt the tree the live server had.

/// The payload of a digest record in the log (a WAL Meta record): the tree digest right after
/// the txn `zxid` was applied. Tag byte 1, then zxid and digest, big-endian.
pub fn encode_record(zxid: i64, digest: u64) -> [u8; 17] {
    let mut b = [0u8; 17];
    b[0] = 1;
    b[1..9].copy_from_slice(&zxid.to_be_bytes());
    b[9..17].copy_from_slice(&digest.to_be_bytes());
    b
}

/// Reads a digest record; `None` if the payload is not one.
pub fn decode_record(payload: &[u8]) -> Option<(i64, u64)> {
    let (&tag, rest) = payload.split_first()?;
    if tag != 1 || rest.len() != 16 {
        return None;
    }
    let zxid = i64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let digest = u64::from_be_bytes(rest.get(8..)?.try_into().ok()?);
    Some((zxid, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_records_round_trip_and_reject_others() {
        let r = encode_record(0x1_0000_002a, 0xdead_beef_0123_4567);
        assert_eq!(
            decode_record(&r),
            Some((0x1_0000_002a, 0xdead_beef_0123_4567))
        );
        assert_eq!(decode_record(&r[..16]), None);
        let mut other = r;
        other[0] = 2;
        assert_eq!(decode_record(&other), None);
    }
}
