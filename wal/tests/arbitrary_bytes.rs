//! Bytes read from disk are untrusted: whatever a segment holds, scanning and opening never
//! panic, and what open accepts is always a prefix of what was written.

mod common;

use common::*;
use palisade_wal::{
    scan_segment, scan_segment_as, segment_format, Corruption, LogFormat, Wal, WalError,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::fs;

proptest! {
    #![proptest_config(config(400))]

    /// How: a valid header followed by arbitrary bytes (sometimes salted with record magics).
    #[test]
    fn arbitrary_body_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2048),
                                   magics in proptest::collection::vec(0usize..2048, 0..4),
                                   truncate: bool) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = segment_header(1);
        bytes.extend(&body);
        for at in magics {
            if at + 4 <= bytes.len() {
                bytes[at..at + 4].copy_from_slice(&0x50414C32u32.to_le_bytes());
            }
        }
        let path = dir.path().join("log.0000000000000001");
        fs::write(&path, &bytes).unwrap();
        let _ = scan_segment(&path, 1 << 20).unwrap();
        let flag = if truncate { Corruption::Truncate } else { Corruption::Refuse };
        match Wal::open(opts(dir.path(), 4096), flag) {
            Ok((_, log)) => { let _ = log.all_records().count(); }
            Err(WalError::Corrupt { .. } | WalError::Gap { .. }) => prop_assert!(!truncate),
            Err(e) => prop_assert!(false, "{e}"),
        }
    }

    /// How: a whole file of arbitrary bytes, header included, read as either format.
    #[test]
    fn arbitrary_file_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.0000000000000001");
        fs::write(&path, &bytes).unwrap();
        let _ = scan_segment(&path, 1 << 20).unwrap();
        let _ = scan_segment_as(&path, 1 << 20, LogFormat::Raft).unwrap();
        let _ = segment_format(&path).unwrap();
        let _ = Wal::open(opts(dir.path(), 4096), Corruption::Refuse);
    }
}

/// How: random byte changes in a real log: open accepts a prefix of what was written or
/// refuses; with Truncate it always opens, with a prefix.
#[test]
fn mutated_log_yields_a_prefix_or_an_error() {
    let template = tempfile::tempdir().unwrap();
    let recs = records(1, 30, 4);
    write_log(template.path(), 1024, &recs);
    let segs = segments(template.path());
    let strategy = proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4);
    TestRunner::new(config(300))
        .run(&strategy, |changes| {
            let dir = copy_dir(template.path());
            for (index, xor) in changes {
                let seg = &segs[index.index(segs.len())];
                let path = dir.path().join(seg.file_name().unwrap());
                let mut b = fs::read(&path).unwrap();
                let i = index.index(b.len());
                b[i] ^= xor;
                fs::write(&path, b).unwrap();
            }
            let got = match open(dir.path(), 1024) {
                Ok((_, log)) => read_all(&log),
                Err(WalError::Corrupt { .. } | WalError::Gap { .. }) => {
                    let (_, log) = Wal::open(opts(dir.path(), 1024), Corruption::Truncate).unwrap();
                    read_all(&log)
                }
                Err(e) => panic!("{e}"),
            };
            prop_assert_eq!(&got[..], &recs[..got.len()]);
            Ok(())
        })
        .unwrap();
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}
