//! Snapshot bytes are untrusted: `open` on anything returns Ok or Err, never panics, and
//! anything but a valid snapshot is Err.

mod common;
use common::*;
use proptest::prelude::*;

thread_local! {
    static DIR: tempfile::TempDir = tempfile::tempdir().unwrap();
    static GOOD: Vec<u8> = DIR.with(|d| std::fs::read(write(d.path(), 2, &sample(25), 6)).unwrap());
}

fn open(bytes: &[u8]) -> bool {
    DIR.with(|d| open_bytes(d.path(), "any", bytes).is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random bytes, of any length.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        prop_assert!(!open(&bytes));
    }

    /// A valid header followed by random bytes: gets past the header, into block parsing.
    #[test]
    fn valid_header_random_body(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = palisade_snapshot::format::encode_header(2, 0x5a).to_vec();
        bytes.extend_from_slice(&body);
        prop_assert!(!open(&bytes));
    }

    /// A valid snapshot with random bytes overwritten: any change must be caught.
    #[test]
    fn overwritten_valid_snapshot(at in any::<proptest::sample::Index>(),
                                  patch in proptest::collection::vec(any::<u8>(), 1..64)) {
        let good = GOOD.with(|g| g.clone());
        let mut bytes = good.clone();
        let start = at.index(bytes.len());
        for (i, b) in patch.iter().enumerate() {
            if let Some(x) = bytes.get_mut(start + i) { *x = *b; }
        }
        prop_assert_eq!(open(&bytes), bytes == good);
    }

    /// Items decoding on its own (the server decodes capture chunks in tests) never panics.
    #[test]
    fn decode_items_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        for r in palisade_snapshot::decode_items(&bytes) {
            let _ = r;
        }
    }
}
