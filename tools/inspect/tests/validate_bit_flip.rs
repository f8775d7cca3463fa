//! `validate` on a real data dir (segments rolling every 4 KiB, snapshots every ~40 txns,
//! old ones purged) passes; then, on copies made by `damage --prepare`, one flipped bit in a
//! log record that has valid records after it, or in a snapshot, fails the validation, and
//! the report names the file and the offset where the damage is.

mod support;

use palisade_inspect::damage::{self, Damage};
use palisade_inspect::validate::Status;
use palisade_inspect::{validate, DataDir};
use std::path::Path;
use support::*;

#[test]
fn validate_passes_then_fails_on_a_flipped_bit_naming_file_and_offset() {
    let tmp = temp_dir("validate");
    let mut server = Server::start_small(tmp.path(), "");
    let last = workload(server.port, 3, 250);
    server.kill9();
    let data = server.data();

    let good = validate(&DataDir::new(&data)).unwrap();
    assert!(good.ok(), "{}", good.text());
    let replays = good
        .verdicts
        .iter()
        .filter(|v| v.kind == "replay" && v.status == Status::Ok);
    assert!(replays.count() >= 2, "{}", good.text());
    assert!(
        good.text().contains(&format!("replays end at {last:#x}")),
        "{}",
        good.text()
    );
    let (text, code) = inspect(&["validate", data.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("verdict: OK\n"), "{text}");

    // A bit inside the first record of the first segment: valid records follow, so this is
    // corruption, not a torn tail. The record's header starts at offset 32.
    let copy = tmp.path().join("copy-log");
    damage::prepare(&data, &copy).unwrap();
    let first_seg = first_file(&copy.join("log"), "log.");
    let rel = first_seg.strip_prefix(&copy).unwrap().to_path_buf();
    damage::damage(
        &copy,
        &Damage::FlipBit {
            file: rel,
            offset: 70,
            bit: 3,
        },
    )
    .unwrap();
    let bad = validate(&DataDir::new(&copy)).unwrap();
    assert!(!bad.ok(), "{}", bad.text());
    let v = bad
        .verdicts
        .iter()
        .find(|v| v.status == Status::Failed && v.kind == "segment")
        .unwrap_or_else(|| panic!("{}", bad.text()));
    assert_eq!(Path::new(&v.subject), first_seg.as_path());
    assert_eq!(v.offset, Some(32), "{}", bad.text());
    let (text, code) = inspect(&["validate", copy.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    let name = first_seg.file_name().unwrap().to_str().unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains(name) && l.contains("FAILED at offset 32") && l.contains("crc")),
        "{text}"
    );
    assert!(text.contains("verdict: FAILED"), "{text}");

    // A bit in the newest snapshot's first block.
    let copy = tmp.path().join("copy-snap");
    damage::prepare(&data, &copy).unwrap();
    let snaps = palisade_snapshot::list(&copy.join("snapshots")).unwrap();
    let newest = snaps.first().map(|(_, p)| p.clone()).unwrap();
    let rel = newest.strip_prefix(&copy).unwrap().to_path_buf();
    damage::damage(
        &copy,
        &Damage::FlipBit {
            file: rel,
            offset: 60,
            bit: 0,
        },
    )
    .unwrap();
    let bad = validate(&DataDir::new(&copy)).unwrap();
    let v = bad
        .verdicts
        .iter()
        .find(|v| v.status == Status::Failed)
        .unwrap_or_else(|| panic!("{}", bad.text()));
    assert_eq!(
        (v.kind, Path::new(&v.subject)),
        ("snapshot", newest.as_path())
    );
    assert_eq!(
        v.offset,
        Some(32),
        "the first block starts after the 32-byte header"
    );
    assert!(v.detail.contains("block crc"), "{}", v.detail);
}

fn first_file(dir: &Path, prefix: &str) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && !n.ends_with(".tmp"))
        })
        .collect();
    v.sort();
    v.remove(0)
}
