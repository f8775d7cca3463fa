//! A large snapshot is handed to the disk as it is written, a window at a time, so the
//! page cache never holds more than two windows of it dirty and the final fsync is short
//! (a WAL fdatasync queued behind a multi-GB flush stalled every write for seconds).

mod common;
use common::*;
use palisade_snapshot::{Snapshot, SnapshotWriter, WRITEBACK_BYTES};

#[test]
fn a_large_snapshot_is_written_back_as_it_goes_and_still_reads_whole() {
    let dir = tempfile::tempdir().unwrap();
    // The root and 400 nodes of 64 KiB: about 26 MB, six windows.
    let big = vec![0xabu8; 64 << 10];
    let mut items = vec![node(palisade_snapshot::NO_PARENT, "", Some(b""), 0)];
    items.splice(0..0, [acl(0, "world", "anyone")]);
    for i in 1..=400u32 {
        items.push(node(0, &format!("n{i}"), Some(&big), 0));
    }
    let mut w = SnapshotWriter::create(dir.path(), 7, 0x5a).unwrap();
    let mut written = 0u64;
    for c in chunks(&items, 8) {
        w.write_block(&c).unwrap();
        written += c.len() as u64;
        // Never more than two windows behind what was written (block framing aside).
        assert!(
            w.written_back() + 2 * WRITEBACK_BYTES + (1 << 20) >= written,
            "{} bytes written, only {} written back",
            written,
            w.written_back()
        );
    }
    assert!(
        w.written_back() >= written - 2 * WRITEBACK_BYTES - (1 << 20),
        "written back {} of {written}",
        w.written_back()
    );
    assert!(w.written_back() >= 3 * WRITEBACK_BYTES);
    let path = w.finish(trailer_for(&items, 17, 1)).unwrap();
    let snap = Snapshot::open(&path).unwrap();
    let back: Vec<Owned> = snap.items().map(|i| Owned::from_item(&i)).collect();
    assert_eq!(back, items);
}
