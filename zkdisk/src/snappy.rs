//! snappy-java's stream (`SnappyOutputStream`, what ZooKeeper's SnapStream writes for
//! `zookeeper.snapshot.compression.method=snappy`): a 16-byte header — the magic
//! `0x82 "SNAPPY" 0x00`, then big-endian version and minimum compatible version, both 1 —
//! followed by blocks, each a big-endian i32 length and that many bytes of raw snappy. A
//! stream may be several such streams concatenated (snappy-java's reader accepts a header
//! where a block length is expected). Not the official snappy framing format.

const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const HEADER_LEN: usize = 16;

fn be_i32(b: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(b.try_into().ok()?))
}

/// The decompressed stream, or where and why it is malformed; an empty reason: the block at
/// that offset would take the stream past `bound` bytes (checked from the block's declared
/// length, before it is inflated).
pub fn decode(bytes: &[u8], bound: u64) -> Result<Vec<u8>, (usize, String)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut dec = snap::raw::Decoder::new();
    let mut expect_header = true;
    while at < bytes.len() {
        let rest = bytes.get(at..).unwrap_or_default();
        if rest.starts_with(&MAGIC) {
            let version = rest
                .get(8..12)
                .and_then(be_i32)
                .ok_or((at, "stream header cut short".to_string()))?;
            let compatible = rest
                .get(12..16)
                .and_then(be_i32)
                .ok_or((at, "stream header cut short".to_string()))?;
            if compatible > 1 {
                return Err((at, format!("snappy-java stream version {version}, needs a reader of version {compatible}")));
            }
            at += HEADER_LEN;
            expect_header = false;
            continue;
        }
        if expect_header {
            return Err((
                at,
                "not a snappy-java stream (no 0x82 SNAPPY header)".into(),
            ));
        }
        let len = rest
            .get(..4)
            .and_then(be_i32)
            .ok_or((at, "block length cut short".to_string()))?;
        let len = usize::try_from(len).map_err(|_| (at, format!("negative block length {len}")))?;
        let block = rest.get(4..).and_then(|r| r.get(..len)).ok_or((
            at,
            format!("block of {len} bytes runs past the end of the file"),
        ))?;
        let declared =
            snap::raw::decompress_len(block).map_err(|e| (at, format!("snappy block: {e}")))?;
        if (out.len() as u64).saturating_add(declared as u64) > bound {
            return Err((at, String::new()));
        }
        let plain = dec
            .decompress_vec(block)
            .map_err(|e| (at, format!("snappy block: {e}")))?;
        out.extend_from_slice(&plain);
        at += 4 + len;
    }
    if expect_header {
        return Err((0, "empty file".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unbounded(bytes: &[u8]) -> Result<Vec<u8>, (usize, String)> {
        decode(bytes, u64::MAX)
    }

    fn stream(blocks: &[&[u8]]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&1i32.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        let mut enc = snap::raw::Encoder::new();
        for b in blocks {
            let c = enc.compress_vec(b).unwrap_or_default();
            out.extend_from_slice(&(c.len() as i32).to_be_bytes());
            out.extend_from_slice(&c);
        }
        out
    }

    #[test]
    fn blocks_and_concatenated_streams_decode_in_order() {
        let a = vec![7u8; 40_000];
        let b = b"ZKSN and the rest".to_vec();
        let mut s = stream(&[&a, &b]);
        s.extend_from_slice(&stream(&[b"tail"]));
        let mut want = a.clone();
        want.extend_from_slice(&b);
        want.extend_from_slice(b"tail");
        assert_eq!(unbounded(&s), Ok(want));
    }

    #[test]
    fn a_block_that_would_pass_the_bound_is_refused_before_it_is_inflated() {
        let a = vec![7u8; 40_000];
        let s = stream(&[&a, b"one more"]);
        assert_eq!(decode(&s, 40_008), unbounded(&s));
        let first_len = i32::from_be_bytes([s[16], s[17], s[18], s[19]]) as usize;
        assert_eq!(decode(&s, 40_007), Err((20 + first_len, String::new())));
        assert_eq!(decode(&s, 39_999), Err((16, String::new())));
    }

    #[test]
    fn damage_is_an_error_with_its_offset_never_a_panic() {
        let s = stream(&[&[1u8; 1000], b"second block"]);
        assert!(unbounded(&[]).is_err());
        assert!(unbounded(b"ZKSN plain").is_err());
        let first_len = i32::from_be_bytes([s[16], s[17], s[18], s[19]]) as usize;
        let boundaries = [16, 20 + first_len, s.len()];
        for cut in 0..s.len() {
            // A cut at a block boundary is a shorter valid stream (the snapshot's own seals
            // catch that); every other cut is refused.
            assert_eq!(
                unbounded(&s[..cut]).is_ok(),
                boundaries.contains(&cut),
                "cut at {cut}"
            );
        }
        let mut neg = s.clone();
        neg[16..20].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(unbounded(&neg).is_err_and(|(at, _)| at == 16));
        let mut big = s.clone();
        big[16..20].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(unbounded(&big).is_err());
        // Raw snappy has no checksum: a flipped byte may decode to other bytes (the snapshot's
        // Adler32 seals refuse those) but must never panic.
        for i in 16..s.len() {
            let mut flip = s.clone();
            flip[i] ^= 0xff;
            let _ = unbounded(&flip);
        }
    }
}
