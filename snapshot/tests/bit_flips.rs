//! Every single-bit flip anywhere in a snapshot makes `open` fail: the header crc, each block
//! crc (over its length, kind and payload) and the trailer leave no byte unguarded.

mod common;
use common::*;
use palisade_snapshot::Snapshot;
use proptest::prelude::*;
use std::os::unix::fs::FileExt;

/// Exhaustive over a small snapshot (three blocks and a trailer): all 8 × len flips.
#[test]
fn every_single_bit_flip_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(write(dir.path(), 5, &sample(12), 6)).unwrap();
    let path = dir.path().join("flipped");
    std::fs::write(&path, &good).unwrap();
    // Flip in place and flip back: rewriting the whole file 8 × len times is what costs.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for (at, &byte) in good.iter().enumerate() {
        for bit in 0..8 {
            file.write_all_at(&[byte ^ (1 << bit)], at as u64).unwrap();
            assert!(
                Snapshot::open(&path).is_err(),
                "flip of bit {bit} at offset {at} went unnoticed"
            );
        }
        file.write_all_at(&[byte], at as u64).unwrap();
    }
    Snapshot::open(&path).unwrap();
}

/// Flips in the header report the header; flips in a block report that block's start.
#[test]
fn damage_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(write(dir.path(), 5, &sample(12), 6)).unwrap();
    let spans = spans(&good);
    for &(start, end, _) in &spans {
        let mut bad = good.clone();
        bad[(start + end) / 2] ^= 0x10;
        let (offset, reason) = corrupt(open_bytes(dir.path(), "b", &bad));
        assert_eq!(offset, start as u64, "{reason}");
        assert!(reason.contains("crc"), "{reason}");
    }
    let mut bad = good.clone();
    bad[10] ^= 1;
    let (offset, reason) = corrupt(open_bytes(dir.path(), "h", &bad));
    assert_eq!(offset, 28);
    assert!(reason.contains("header crc"), "{reason}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random flips in a larger, many-block snapshot.
    #[test]
    fn random_flips_are_detected(pick in any::<proptest::sample::Index>(), bit in 0u8..8) {
        thread_local! {
            static FIXTURE: (tempfile::TempDir, Vec<u8>) = {
                let dir = tempfile::tempdir().unwrap();
                let bytes = std::fs::read(write(dir.path(), 9, &sample(400), 33)).unwrap();
                (dir, bytes)
            };
        }
        FIXTURE.with(|(dir, good)| {
            let at = pick.index(good.len());
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            let r = open_bytes(dir.path(), "f", &bad);
            prop_assert!(r.is_err(), "flip of bit {} at {} went unnoticed", bit, at);
            Ok(())
        })?;
    }
}
