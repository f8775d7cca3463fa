//! A snapshot cut short anywhere (a crash mid-write that somehow got renamed, or a damaged
//! disk) fails to open, as does one with bytes appended.

mod common;
use common::*;

/// Every proper prefix, from 0 bytes to one byte short, is rejected as Corrupt.
#[test]
fn every_prefix_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(write(dir.path(), 3, &sample(10), 4)).unwrap();
    let spans = spans(&good);
    let path = dir.path().join("t");
    std::fs::write(&path, &good).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    // Shortest last, cutting the same file shorter each time (cheaper than rewriting it).
    for cut in (0..good.len()).rev() {
        file.set_len(cut as u64).unwrap();
        let (offset, reason) = corrupt(palisade_snapshot::Snapshot::open(&path));
        assert!(
            offset <= cut as u64,
            "cut {cut}: offset {offset} beyond the end ({reason})"
        );
        if spans.iter().any(|&(s, _, _)| s == cut) {
            assert!(
                reason.contains("no trailer"),
                "cut {cut} at a block boundary: {reason}"
            );
        }
    }
}

/// Anything after the trailer (another trailer, a stray byte) is rejected at the trailer's end.
#[test]
fn bytes_after_the_trailer_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(write(dir.path(), 3, &sample(10), 4)).unwrap();
    let (t_start, _, _) = *spans(&good).last().unwrap();
    for extra in [vec![0u8], good[t_start..].to_vec()] {
        let mut bad = good.clone();
        bad.extend_from_slice(&extra);
        let (offset, reason) = corrupt(open_bytes(dir.path(), "x", &bad));
        assert_eq!(offset, good.len() as u64);
        assert!(reason.contains("after the trailer"), "{reason}");
    }
}
