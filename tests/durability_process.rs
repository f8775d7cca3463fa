//! Durability as an operator sees it, through the binary: `csnp` takes a snapshot that the next
//! start recovers from; a log corrupt in the middle stops the server, naming file and offset,
//! until the operator passes --truncate-corrupt-log; two servers never share a data dir.

mod support;

use std::time::Duration;
use support::{four_letter, write_config, Client, Server};

fn snapshots(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("data/snapshots"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("snapshot.") && !n.ends_with(".tmp"))
        .collect();
    v.sort();
    v
}

#[test]
fn csnp_takes_a_snapshot_that_the_next_start_recovers_from() {
    let dir = support::temp_dir("csnp");
    let port = support::free_port();
    write_config(&dir, port, "");
    let mut server = Server::start(&dir, port);
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    c.create("/kept", b"v1", 0)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..5 {
        c.create("/kept/s-", b"", 2)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(snapshots(&dir).is_empty(), "no snapshot is due yet");
    let answer = four_letter(port, b"csnp").unwrap_or_default();
    assert!(
        answer.starts_with("Snapshot creation scheduled at zxid 0x"),
        "{answer:?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while snapshots(&dir).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(snapshots(&dir).len(), 1, "csnp wrote no snapshot");
    let hash = four_letter(port, b"hash").unwrap_or_default();
    server.kill9();

    let server = Server::start(&dir, port);
    let log = server.log_text();
    assert!(
        log.contains("recovered") && log.contains("snapshots/snapshot."),
        "{log}"
    );
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    let children = c
        .children("/kept")
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_default();
    assert_eq!(children.len(), 5);
    let next = c
        .create("/kept/s-", b"", 2)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next, "/kept/s-0000000005");
    // The same tree, down to the digest (the create above came after it).
    assert!(!hash.is_empty());
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_log_stops_the_server_until_the_operator_chooses_to_truncate() {
    let dir = support::temp_dir("corrupt");
    let port = support::free_port();
    write_config(&dir, port, "preAllocSize=4\n");
    let mut server = Server::start(&dir, port);
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..200 {
        c.create(&format!("/n{i}"), &[b'x'; 64], 0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    server.kill9();
    let mut segs: Vec<_> = std::fs::read_dir(dir.join("data/log"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("log."))
        })
        .collect();
    segs.sort();
    assert!(segs.len() >= 3, "expected several segments: {segs:?}");
    let victim = segs[1].clone();
    let mut bytes = std::fs::read(&victim).unwrap_or_default();
    bytes[200] ^= 0x04;
    std::fs::write(&victim, bytes).unwrap_or_else(|e| panic!("{e}"));

    let mut s = Server::spawn(&dir, port, &[], &[]);
    let status = s.wait_exit(Duration::from_secs(10));
    assert!(
        status.is_some_and(|st| !st.success()),
        "a corrupt log must stop the server"
    );
    let log = s.log_text();
    let name = victim
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    assert!(log.contains(&name), "the error names the file: {log}");
    assert!(log.contains("offset"), "the error names the offset: {log}");

    let s = Server::spawn(&dir, port, &[], &["--truncate-corrupt-log"]);
    s.wait_ready(Duration::from_secs(10));
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.exists("/n0").unwrap_or_else(|e| panic!("{e}")).is_ok());
    assert!(
        c.exists("/n199").unwrap_or_else(|e| panic!("{e}")).is_err(),
        "the log after the damage is gone"
    );
    assert!(
        dir.join("data/log/detached").is_dir(),
        "what was cut is kept"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_servers_never_share_a_data_dir() {
    let dir = support::temp_dir("lock");
    let port = support::free_port();
    write_config(&dir, port, "");
    let _first = Server::start(&dir, port);
    let other = support::free_port();
    write_config(&dir, other, "");
    let mut second = Server::spawn(&dir, other, &[], &[]);
    let status = second.wait_exit(Duration::from_secs(10));
    assert!(
        status.is_some_and(|st| !st.success()),
        "the second server must refuse"
    );
    assert!(second.log_text().contains("lock"), "{}", second.log_text());
}
