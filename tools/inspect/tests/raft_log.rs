//! `log` on a Raft log (WAL segment format 3, an ensemble member's): a log written with the
//! WAL's Raft API (`Wal::open_raft`, `append_at`) over several segments, whose entries are
//! openraft entries in postcard (encoded here by hand, as `raftlog`'s golden test checks
//! against openraft itself) and whose metadata record is a committed log id, is printed
//! record by record (Raft index, log id, the txn carried; the committed id), as text and
//! JSON, from the directory and from one segment; a torn last record is reported as the torn
//! tail recovery would cut (exit 0), a flipped byte in a record written whole as corruption
//! (exit 1).

mod support;

use palisade_proto::{Txn, TxnHeader};
use palisade_wal::{Corruption, Options, RecordKind, RecordPos, Wal};
use serde_json::Value;
use std::path::{Path, PathBuf};
use support::*;

const TERM: u64 = 3;
const NODE: u64 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `postcard::to_allocvec(&Entry<TypeConfig>)`: log id (term, node, index), then the payload
/// variant (0 = blank, 1 = normal: the txn bytes, length first).
fn entry(index: u64, txn: Option<&[u8]>) -> Vec<u8> {
    let mut b = Vec::new();
    for w in [TERM, NODE, index] {
        varint(&mut b, w);
    }
    match txn {
        None => b.push(0),
        Some(t) => {
            b.push(1);
            varint(&mut b, t.len() as u64);
            b.extend_from_slice(t);
        }
    }
    b
}

fn committed(index: u64) -> Vec<u8> {
    let mut b = vec![1u8];
    for w in [index, TERM, NODE] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b
}

fn txn(index: i64) -> Vec<u8> {
    let zxid = (TERM as i64) << 32 | index;
    let path = if index == 2 {
        "/p".to_string()
    } else {
        format!("/p/s-{index:010}")
    };
    let body = create_body(&path, index as i32);
    Txn {
        header: TxnHeader {
            client_id: 0x55,
            cxid: index as i32,
            zxid,
            time: 1_798_804_800_000 + index,
            type_: body.op_code().code(),
        },
        body,
    }
    .encode()
    .to_vec()
}

/// Entries 1 (blank) to 16 (txns creating /p and its children), a committed id (6) after
/// entry 8, over 1 KiB segments. Returns each record's (kind, index, position, length).
fn write_raft_log(dir: &Path) -> Vec<(RecordKind, i64, RecordPos, usize)> {
    let opts = Options {
        segment_bytes: 1024,
        sync: false,
        max_payload: palisade_inspect::datadir::MAX_PAYLOAD,
        ..Options::new(dir)
    };
    let (mut wal, _) = Wal::open_raft(opts, Corruption::Refuse).unwrap();
    let mut out = Vec::new();
    for i in 1..=16i64 {
        let t = (i > 1).then(|| txn(i));
        let e = entry(i as u64, t.as_deref());
        out.push((
            RecordKind::Txn,
            i,
            wal.append_at(RecordKind::Txn, i, &e).unwrap(),
            e.len(),
        ));
        if i == 8 {
            let m = committed(6);
            out.push((
                RecordKind::Meta,
                8,
                wal.append_at(RecordKind::Meta, 8, &m).unwrap(),
                m.len(),
            ));
        }
    }
    wal.sync().unwrap();
    out
}

fn seg_path(dir: &Path, pos: RecordPos) -> PathBuf {
    dir.join(format!("log.{:016x}", pos.segment_first_zxid))
}

fn segment_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("--- ")).collect()
}

#[test]
fn a_raft_log_prints_its_entries_and_committed_id() {
    let tmp = temp_dir("raft-log");
    let dir = tmp.path().join("raft");
    let written = write_raft_log(&dir);
    let segments: std::collections::BTreeSet<i64> =
        written.iter().map(|w| w.2.segment_first_zxid).collect();
    assert!(segments.len() >= 3, "{segments:?}");
    let dir_s = dir.to_str().unwrap();

    let (text, code) = inspect(&["log", dir_s]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("entry 1 term=3 node=2 (") && l.ends_with(" blank")),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("entry 2 "))
        .unwrap_or_else(|| panic!("no entry 2:\n{text}"));
    assert!(
        line.contains("term=3 node=2") && line.contains("txn (") && line.contains("create /p "),
        "{line}"
    );
    assert!(line.contains(&format!("{:#x}", 3i64 << 32 | 2)), "{line}");
    assert!(
        text.contains("create /p/s-0000000016"),
        "the last entry's txn:\n{text}"
    );
    assert!(
        text.lines().any(|l| l == "committed index=6 term=3 node=2"),
        "{text}"
    );
    assert!(!text.contains("UNDECODABLE"), "{text}");
    let segs = segment_lines(&text);
    assert_eq!(segs.len(), segments.len(), "{text}");
    assert!(segs.iter().all(|l| l.contains("clean at offset")), "{text}");
    assert!(segs[0].starts_with("--- log.0000000000000001: ") && segs[0].contains(" entries 1..="));
    let entries: u64 = segs
        .iter()
        .map(|l| {
            let n = l.split(" records (").nth(1).unwrap();
            n.split(' ').next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(entries, 16, "{text}");

    // --from/--to select by Raft index.
    let (text, code) = inspect(&["log", dir_s, "--from", "3", "--to", "5"]);
    assert_eq!(code, 0, "{text}");
    let shown: Vec<&str> = text.lines().filter(|l| l.starts_with("entry ")).collect();
    assert_eq!(shown.len(), 3, "{text}");
    assert!(shown[0].starts_with("entry 3 ") && shown[2].starts_with("entry 5 "));

    // JSON: one object per record and per segment.
    let (json, code) = inspect(&["log", dir_s, "--json"]);
    assert_eq!(code, 0, "{json}");
    let objs: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let e5 = objs
        .iter()
        .find(|o| o["type"] == "raft_entry" && o["index"] == 5)
        .unwrap();
    assert_eq!(
        (e5["term"].as_u64(), e5["node"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(e5["payload"], "txn");
    assert_eq!(e5["txn"]["type"], "txn");
    assert_eq!(e5["txn"]["zxid"], format!("{:#x}", 3i64 << 32 | 5));
    let c = objs.iter().find(|o| o["type"] == "raft_committed").unwrap();
    assert_eq!(c["index"], 6);
    let seg = objs.iter().find(|o| o["type"] == "segment").unwrap();
    assert_eq!(
        (seg["format"].as_u64(), seg["end"].as_str()),
        (Some(3), Some("clean"))
    );
    assert_eq!(seg["first_index"], 1);

    // One segment file on its own.
    let last = written.last().unwrap().2;
    let (text, code) = inspect(&["log", seg_path(&dir, last).to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("entry 16 term=3 node=2"), "{text}");
    assert_eq!(segment_lines(&text).len(), 1, "{text}");
}

#[test]
fn a_torn_last_record_is_a_torn_tail_and_a_flipped_byte_is_corruption() {
    let tmp = temp_dir("raft-damage");
    let dir = tmp.path().join("raft");
    let written = write_raft_log(&dir);
    let dir_s = dir.to_str().unwrap().to_string();

    // Torn: the last record keeps its header and half its payload, then zeros.
    let (_, _, last, len) = *written.last().unwrap();
    let seg = seg_path(&dir, last);
    let clean = std::fs::read(&seg).unwrap();
    let mut torn = clean.clone();
    let from = last.offset as usize + 24 + len / 2;
    let to = last.offset as usize + palisade_wal::record_bytes(len) as usize;
    torn[from..to].fill(0);
    std::fs::write(&seg, &torn).unwrap();
    let (text, code) = inspect(&["log", &dir_s]);
    assert_eq!(code, 0, "a torn tail is not damage:\n{text}");
    assert!(!text.contains("entry 16 "), "{text}");
    assert!(text.contains("entry 15 "), "{text}");
    let segs = segment_lines(&text);
    assert!(
        segs.last()
            .unwrap()
            .contains(&format!("torn at offset {}", last.offset)),
        "{text}"
    );
    std::fs::write(&seg, &clean).unwrap();

    // Corrupt: one byte of entry 3's payload (a record written whole) flipped.
    let (_, _, pos, len) = written[2];
    assert_eq!((written[2].1, pos.segment_first_zxid), (3, 1));
    let seg = seg_path(&dir, pos);
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[pos.offset as usize + 24 + len / 2] ^= 0x01;
    std::fs::write(&seg, &bytes).unwrap();
    let (text, code) = inspect(&["log", &dir_s]);
    assert_eq!(code, 1, "corruption is damage:\n{text}");
    assert!(
        text.contains("entry 2 ") && !text.contains("entry 3 "),
        "{text}"
    );
    let segs = segment_lines(&text);
    let bad = segs
        .iter()
        .find(|l| l.contains("corrupt at offset"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        bad.contains(&format!("corrupt at offset {}", pos.offset)) && bad.contains("crc"),
        "{bad}"
    );
    assert!(
        segs.iter()
            .skip(1)
            .all(|l| l.contains("after earlier damage")),
        "{text}"
    );
    // The same segment alone says the same.
    let (text, code) = inspect(&["log", seg.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("corrupt at offset {}", pos.offset)),
        "{text}"
    );
}
