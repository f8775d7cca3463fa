//! The writer thread tells the core, through `writing`, when a snapshot's file is finished.

use super::*;
use crate::durability::capture::Capture;
use crate::state::tree::DataTree;
use std::time::{Duration, Instant};

#[test]
fn writing_is_cleared_once_the_file_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _log_rx) = mpsc::channel();
    let (recycle, _spare) = mpsc::channel();
    let link = spawn(
        SnapDirs {
            snap_dir: dir.path().to_path_buf(),
            retain: 3,
            identity: 0x5a,
            log,
        },
        recycle,
    )
    .unwrap();
    let tree = DataTree::default();
    let mut items = Vec::new();
    let mut capture = Capture::begin(&tree, std::iter::empty(), 5, &mut items);
    while !capture.step(&tree, 64, &mut items) {}
    link.writing.store(true, Ordering::Release);
    link.tx.send(SnapMsg::Begin { start_zxid: 5 }).unwrap();
    link.tx.send(SnapMsg::Block(items)).unwrap();
    link.tx
        .send(SnapMsg::Finish(capture.trailer(5, tree.digest())))
        .unwrap();
    let t0 = Instant::now();
    while link.writing.load(Ordering::Acquire) {
        assert!(t0.elapsed() < Duration::from_secs(30), "never cleared");
        std::thread::sleep(Duration::from_millis(1));
    }
    let files = palisade_snapshot::list(dir.path()).unwrap();
    assert_eq!(files.len(), 1, "the file is in place when `writing` clears");
}
