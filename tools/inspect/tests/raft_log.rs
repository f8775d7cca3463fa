//! `log` on a Raft log (WAL segment format 3, an ensemble member's): a log written with the
//! WAL's Raft API (`Wal::open_raft`, `append_at`) over several segments, whose entries are
//! openraft entries in postcard (encoded here by hand, as `raftlog`'s golden test checks
//! against openraft itself: blank, the ensemble key, single txns, batches of txns, a digest)
//! and whose metadata record is a committed log id, is printed record by record (Raft index,
//! log id, the txn carried, each txn of a batch in order, "ensemble key" without the key's
//! bytes, the digest; the committed id), as text and JSON, from the directory and from one
//! segment; a torn last record is reported as the torn tail recovery would cut (exit 0), a
//! flipped byte in a record written whole as corruption (exit 1).

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

/// The ensemble key of the log: its bytes must not be shown.
const KEY: [u8; 16] = *b"SECRET-KEY-BYTES";

/// What an entry carries (the server's `EntryPayload<TypeConfig>` with its `Proposal`).
enum Payload {
    Blank,
    Txn(Vec<u8>),
    Key([u8; 16]),
    Digest { zxid: i64, digest: u64 },
    Txns(Vec<Vec<u8>>),
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// `postcard::to_allocvec(&Entry<TypeConfig>)`: log id (term, node, index), then the payload
/// variant (0 = blank, 1 = normal), then a normal entry's `Proposal`: its variant (0 = Txn,
/// 1 = Key, 2 = Digest, 3 = Txns) and its fields.
fn entry(index: u64, payload: &Payload) -> Vec<u8> {
    let mut b = Vec::new();
    for w in [TERM, NODE, index] {
        varint(&mut b, w);
    }
    match payload {
        Payload::Blank => b.push(0),
        Payload::Txn(t) => {
            b.extend_from_slice(&[1, 0]);
            bytes(&mut b, t);
        }
        Payload::Key(k) => {
            b.extend_from_slice(&[1, 1]);
            b.extend_from_slice(k);
        }
        Payload::Digest { zxid, digest } => {
            b.extend_from_slice(&[1, 2]);
            varint(&mut b, ((zxid << 1) ^ (zxid >> 63)) as u64);
            varint(&mut b, *digest);
        }
        Payload::Txns(ts) => {
            b.extend_from_slice(&[1, 3]);
            varint(&mut b, ts.len() as u64);
            for t in ts {
                bytes(&mut b, t);
            }
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

fn zxid(counter: i64) -> i64 {
    (TERM as i64) << 32 | counter
}

/// Txn `counter` of the epoch: the first creates /p, the others its children.
fn txn(counter: i64) -> Vec<u8> {
    let path = if counter == 1 {
        "/p".to_string()
    } else {
        format!("/p/s-{counter:010}")
    };
    let body = create_body(&path, counter as i32);
    Txn {
        header: TxnHeader {
            client_id: 0x55,
            cxid: counter as i32,
            zxid: zxid(counter),
            time: 1_798_804_800_000 + counter,
            type_: body.op_code().code(),
        },
        body,
    }
    .encode()
    .to_vec()
}

const DIGEST: u64 = 0x0123_4567_89ab_cdef;

/// Entry `index` of the log [`write_raft_log`] writes: 1 blank, 2 the key, 3..=13 one txn
/// each (txns 1..=11), 14 a batch of txns 12..=14, 15 the digest after txn 14, 16 a batch
/// of txns 15 and 16.
fn payload(index: i64) -> Payload {
    match index {
        1 => Payload::Blank,
        2 => Payload::Key(KEY),
        3..=13 => Payload::Txn(txn(index - 2)),
        14 => Payload::Txns((12..=14).map(txn).collect()),
        15 => Payload::Digest {
            zxid: zxid(14),
            digest: DIGEST,
        },
        _ => Payload::Txns((15..=16).map(txn).collect()),
    }
}

/// Entries 1 to 16 ([`payload`]), a committed id (6) after entry 8, over 1 KiB segments.
/// Returns each record's (kind, index, position, length).
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
        let e = entry(i as u64, &payload(i));
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
    // The key: that it is there, never its bytes.
    assert!(
        text.lines()
            .any(|l| l.starts_with("entry 2 term=3 node=2 (21 bytes)")
                && l.ends_with(" ensemble key")),
        "{text}"
    );
    let hex_key: String = KEY.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        !text.contains("SECRET") && !text.contains(&hex_key[..8]),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("entry 3 "))
        .unwrap_or_else(|| panic!("no entry 3:\n{text}"));
    assert!(
        line.contains("term=3 node=2") && line.contains(" txn (") && line.contains("create /p "),
        "{line}"
    );
    assert!(line.contains(&format!("{:#x}", zxid(1))), "{line}");
    // A batch: a line per txn, in order, each with the batch's log id.
    let batch: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("entry 14 "))
        .collect();
    assert_eq!(batch.len(), 3, "{text}");
    for (i, (l, c)) in batch.iter().zip(12..).enumerate() {
        assert!(
            l.starts_with("entry 14 term=3 node=2 (")
                && l.contains(&format!(" txn {}/3 (", i + 1))
                && l.contains(&format!("{:#x}", zxid(c)))
                && l.contains(&format!("create /p/s-{c:010}")),
            "{l}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("entry 15 term=3 node=2 (")
                && l.ends_with(&format!(" digest after {:#x} = {DIGEST:#018x}", zxid(14)))),
        "{text}"
    );
    assert!(
        text.contains("txn 2/2 (") && text.contains("create /p/s-0000000016"),
        "the last entry's last txn:\n{text}"
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
    let at = |index: u64| {
        objs.iter()
            .find(|o| o["type"] == "raft_entry" && o["index"] == index)
            .unwrap_or_else(|| panic!("no entry {index}:\n{json}"))
    };
    let e5 = at(5);
    assert_eq!(
        (e5["term"].as_u64(), e5["node"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(e5["payload"], "txn");
    assert_eq!(e5["txn"]["type"], "txn");
    assert_eq!(e5["txn"]["zxid"], format!("{:#x}", zxid(3)));
    assert_eq!(at(2)["payload"], "key");
    assert!(
        !json.contains("SECRET") && !json.contains(&hex_key[..8]),
        "{json}"
    );
    let e14 = at(14);
    assert_eq!(
        (&e14["payload"], &e14["count"]),
        (&"txns".into(), &3.into())
    );
    let txns = e14["txns"].as_array().unwrap();
    for (t, c) in txns.iter().zip(12..) {
        assert_eq!(t["type"], "txn");
        assert_eq!(t["zxid"], format!("{:#x}", zxid(c)));
        assert_eq!(t["path"], format!("/p/s-{c:010}"), "{t}");
        assert_eq!(t["payload_len"].as_u64(), Some(txn(c).len() as u64));
    }
    let e15 = at(15);
    assert_eq!(e15["payload"], "digest");
    assert_eq!(e15["after"], format!("{:#x}", zxid(14)));
    assert_eq!(e15["digest"], format!("{DIGEST:#018x}"));
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
