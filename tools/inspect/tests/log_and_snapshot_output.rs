//! `log` and `snapshot` output, checked against what the server answered: a few writes with
//! known outcomes (a sequential create after a plain create and a delete, so the suffix and
//! parentCVersion differ from the child count), then the seeded workload; the log lines and
//! JSON records must carry those zxids, paths, parentCVersions and suffixes, and a snapshot
//! taken right after must show the parent's stored counter C, its visible cversion and pzxid.

mod support;

use serde_json::Value;
use support::*;

fn lines_json(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn log_and_snapshot_show_zxids_paths_and_counters() {
    let tmp = temp_dir("output");
    let mut server = Server::start_small(tmp.path(), "preAllocSize=1024\n");
    let mut c = connect(server.port);
    c.create("/t", b"top", PERSISTENT).unwrap().unwrap();
    c.create("/t/x", b"", PERSISTENT).unwrap().unwrap();
    let seq1 = c.create("/t/s-", b"one", SEQUENTIAL).unwrap().unwrap();
    let z_seq1 = c.last_zxid;
    c.delete("/t/x").unwrap().unwrap();
    let seq2 = c.create("/t/s-", b"two", SEQUENTIAL).unwrap().unwrap();
    let z_seq2 = c.last_zxid;
    assert_eq!(
        (seq1.as_str(), seq2.as_str()),
        ("/t/s-0000000001", "/t/s-0000000002")
    );
    server.snapshot_now(z_seq2);
    workload(server.port, 11, 150);
    server.kill9();
    let data = server.data();
    let data_s = data.to_str().unwrap();

    // Text: one line per txn, zxid in hex, the create with its parentCVersion and suffix.
    let (text, code) = inspect(&["log", data_s]);
    assert_eq!(code, 0, "{text}");
    let want = format!("{z_seq2:#x} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no line for {want}:\n{text}"));
    assert!(
        line.contains(&format!("session={:#x}", c.session))
            && line.contains("create /t/s-0000000002 parentCVersion=3 suffix=0000000002"),
        "{line}"
    );
    assert!(text.contains("delete /t/x"), "{text}");
    assert!(text.contains("closeSession deletes"), "{text}");
    assert!(text.contains("multi (4 ops)\n    [0] create /"), "{text}");
    assert!(text.contains("error err=-110 (NodeExists)"), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("--- log.0000000000000001: ") && last.contains("clean at offset"),
        "{last}"
    );

    // --from/--to keep exactly that range; JSON carries the same fields.
    let (json, code) = inspect(&[
        "log",
        data_s,
        "--from",
        &format!("{z_seq1:#x}"),
        "--to",
        &z_seq2.to_string(),
        "--json",
    ]);
    assert_eq!(code, 0, "{json}");
    let recs = lines_json(&json);
    let txns: Vec<&Value> = recs.iter().filter(|r| r["type"] == "txn").collect();
    assert_eq!(txns.len() as i64, z_seq2 - z_seq1 + 1, "{json}");
    let last_txn = txns.last().unwrap();
    assert_eq!(last_txn["zxid"], format!("{z_seq2:#x}"));
    assert_eq!(last_txn["op"], "create");
    assert_eq!(last_txn["path"], "/t/s-0000000002");
    assert_eq!(last_txn["parentCVersion"], 3);
    assert_eq!(last_txn["suffix"], 2);
    assert_eq!(last_txn["data"], "two");
    assert!(recs
        .iter()
        .any(|r| r["type"] == "segment" && r["end"] == "clean"));

    // A single segment file works too.
    let seg = data.join("log/log.0000000000000001");
    let (one, code) = inspect(&["log", seg.to_str().unwrap(), "--to", "0x3"]);
    assert_eq!(code, 0, "{one}");
    assert!(
        one.starts_with("0x1 ") && one.contains("createSession"),
        "{one}"
    );

    // The snapshot csnp took right after: C = 3 (three creates), 2 children, so the visible
    // cversion is 2·3 − 2 = 4, and pzxid is the last create's zxid.
    let snaps = palisade_snapshot::list(&data.join("snapshots")).unwrap();
    let (_, snap) = snaps
        .iter()
        .rev()
        .find(|(start, _)| *start >= z_seq2)
        .unwrap();
    let (text, code) = inspect(&["snapshot", snap.to_str().unwrap(), "--subtree", "/t"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "header: start zxid {:#x}",
            palisade_snapshot::Snapshot::open(snap)
                .unwrap()
                .start_zxid()
        )),
        "{text}"
    );
    assert!(text.contains("trailer: end zxid 0x"), "{text}");
    assert!(
        text.contains(&format!("  {:#x} timeout=", c.session)),
        "{text}"
    );
    let t_line = text
        .lines()
        .find(|l| l.starts_with("t "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        t_line.contains(&format!("pzxid={z_seq2:#x} version=0 C=3 cversion=4"))
            && t_line.contains("children=2")
            && t_line.contains("data=3B \"top\"")
            && t_line.contains("acl=world:anyone:cdrwa"),
        "{t_line}"
    );
    assert!(
        text.contains(&format!("  s-0000000001 czxid={z_seq1:#x}")),
        "{text}"
    );
    let (json, code) = inspect(&["snapshot", snap.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let recs = lines_json(&json);
    assert_eq!(recs[0]["type"], "snapshot");
    let t = recs.iter().find(|r| r["path"] == "/t").unwrap();
    assert_eq!(
        (t["C"].as_i64(), t["cversion"].as_i64()),
        (Some(3), Some(4))
    );
    assert_eq!(t["pzxid"], format!("{z_seq2:#x}"));
}
