//! `log` on the Raft log of real ensemble members: three members of the server binary on
//! loopback, pipelined creates through the leader (so its core proposes several txns as one
//! batch entry) past a digest point, then every member's log is printed: each entry decodes
//! (the leader's blank, the ensemble key named without its bytes, single txns, each txn of a
//! batch, the digests), and every create the client was answered for is there, once.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

const MEMBERS: usize = 3;
/// Enough txns for a digest entry (one after each zxid that is a multiple of 256).
const CREATES: usize = 300;

/// The member answering srvr with `Mode: leader`, once every member answers with a mode.
fn wait_for_leader(ports: &[u16], members: &[Server]) -> usize {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let modes: Vec<String> = ports
            .iter()
            .map(|&p| four_letter(p, b"srvr").unwrap_or_default())
            .collect();
        if modes.iter().all(|m| m.contains("Mode: ")) {
            if let Some(i) = modes.iter().position(|m| m.contains("Mode: leader")) {
                return i;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let logs: Vec<String> = members.iter().map(Server::log_text).collect();
    panic!("no leader elected; member logs:\n{}", logs.join("\n---\n"));
}

fn raft_dir(member: &Path) -> PathBuf {
    member.join("data").join("log").join("raft")
}

#[test]
fn an_ensemble_members_log_shows_its_batches_key_and_digests() {
    let tmp = temp_dir("raft-live");
    let client: Vec<u16> = (0..MEMBERS).map(|_| free_port()).collect();
    let peer: Vec<(u16, u16)> = (0..MEMBERS).map(|_| (free_port(), free_port())).collect();
    let servers: String = peer
        .iter()
        .enumerate()
        .map(|(i, (p, e))| format!("server.{}=127.0.0.1:{p}:{e}\n", i + 1))
        .collect();
    let dirs: Vec<PathBuf> = (1..=MEMBERS)
        .map(|i| tmp.path().join(format!("m{i}")))
        .collect();
    let mut members = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("data").join("myid"), format!("{}\n", i + 1)).unwrap();
        write_config(
            dir,
            client[i],
            &format!("initLimit=10\nsyncLimit=5\nadmin.enableServer=false\n{servers}"),
        );
        members.push(Server::spawn(dir, client[i], &[], &[]));
    }
    let leader = wait_for_leader(&client, &members);

    let mut c = connect(client[leader]);
    let _ = c.create("/e", b"", PERSISTENT).unwrap();
    let reqs: Vec<_> = (0..CREATES)
        .map(|i| create_req(&format!("/e/n-{i}"), b"d", PERSISTENT))
        .collect();
    let errs = c.pipeline(&reqs).unwrap();
    assert!(errs.iter().all(|&e| e == 0), "{errs:?}");
    c.close_session().unwrap();
    // A member has logged the writes once its tree holds the last one (it applies only what
    // is committed, and it logs before that). Then all are stopped with a kill: the logs are
    // what a crash leaves.
    let t0 = Instant::now();
    for &p in &client {
        while t0.elapsed() < Duration::from_secs(20) {
            let mut m = connect(p);
            let seen = m.exists(&format!("/e/n-{}", CREATES - 1)).unwrap().is_ok();
            let _ = m.close_session();
            if seen {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    drop(members);

    for (i, dir) in dirs.iter().enumerate() {
        let raft = raft_dir(dir);
        let (text, code) = inspect(&["log", raft.to_str().unwrap()]);
        assert_eq!(code, 0, "member {}:\n{text}", i + 1);
        assert!(!text.contains("UNDECODABLE"), "member {}:\n{text}", i + 1);
        let entries: Vec<&str> = text.lines().filter(|l| l.starts_with("entry ")).collect();
        assert!(
            entries.iter().any(|l| l.ends_with(" blank")),
            "member {}:\n{text}",
            i + 1
        );
        assert_eq!(
            entries
                .iter()
                .filter(|l| l.ends_with(" ensemble key"))
                .count(),
            1,
            "member {}:\n{text}",
            i + 1
        );
        assert!(
            entries.iter().any(|l| l.contains(" digest after 0x")),
            "member {}:\n{text}",
            i + 1
        );
        assert!(
            entries.iter().any(|l| l.contains(" txn 1/")),
            "no batch entry on member {}:\n{text}",
            i + 1
        );
        // Each create once, in order of its zxid.
        for n in 0..CREATES {
            let path = format!("create /e/n-{n} ");
            let at: Vec<usize> = entries
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(&path))
                .map(|(k, _)| k)
                .collect();
            assert_eq!(at.len(), 1, "{path}on member {}:\n{text}", i + 1);
        }
        let zxids: Vec<i64> = entries
            .iter()
            .filter_map(|l| l.split(" bytes): 0x").nth(1))
            .filter_map(|z| i64::from_str_radix(z.split(' ').next()?, 16).ok())
            .collect();
        assert!(zxids.len() > CREATES, "member {}:\n{text}", i + 1);
        assert!(
            zxids.windows(2).all(|w| w[0] < w[1]),
            "member {}: zxids out of order {zxids:x?}",
            i + 1
        );

        // JSON: the same entries, a batch's txns in one object.
        let (json, code) = inspect(&["log", raft.to_str().unwrap(), "--json"]);
        assert_eq!(code, 0, "{json}");
        let objs: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let payloads = |p: &str| objs.iter().filter(|o| o["payload"] == p).count();
        assert_eq!(payloads("key"), 1, "{json}");
        assert!(payloads("digest") >= 1 && payloads("txns") >= 1, "{json}");
        let creates = objs
            .iter()
            .flat_map(|o| match o["payload"].as_str() {
                Some("txn") => vec![&o["txn"]],
                Some("txns") => o["txns"].as_array().unwrap().iter().collect(),
                _ => vec![],
            })
            .filter(|t| {
                t["op"] == "create" && t["path"].as_str().is_some_and(|p| p.starts_with("/e/n-"))
            })
            .count();
        assert_eq!(creates, CREATES, "member {}", i + 1);
    }
}
