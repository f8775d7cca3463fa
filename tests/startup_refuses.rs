//! Start-up refuses data it cannot vouch for (issue 12 items 7, 9-13), through the release
//! binary: each test writes through a real server, stops it, damages the data dir the way an
//! operator or a disk could, and checks that the next start exits non-zero naming the file
//! (or, for retention, that the data survives). Loopback only; every wait is bounded.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{four_letter, write_config, Client, Server};

fn create_nodes(port: u16, prefix: &str, n: usize) {
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..n {
        c.create(&format!("/{prefix}{i}"), &[b'x'; 32], 0)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("create /{prefix}{i}: {e}"));
    }
}

/// SIGTERM, then wait for the clean exit.
fn stop(server: &mut Server) {
    let st = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(st.success());
    assert!(
        server.wait_exit(Duration::from_secs(20)).is_some(),
        "server did not stop on SIGTERM"
    );
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(prefix) && !n.ends_with(".tmp")
            })
        })
        .collect();
    v.sort();
    v
}

/// Asks for a snapshot and waits until `want` snapshot files exist.
fn snapshot(port: u16, snap_dir: &Path, want: usize) {
    let answer = four_letter(port, b"csnp").unwrap_or_default();
    assert!(
        answer.starts_with("Snapshot creation scheduled"),
        "{answer:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while files(snap_dir, "snapshot.").len() < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        files(snap_dir, "snapshot.").len(),
        want,
        "csnp wrote no snapshot"
    );
}

/// Starts on `dir` expecting a refusal: exit non-zero within the bound, log containing every
/// string in `names`. Returns the log.
fn expect_refusal(dir: &Path, port: u16, names: &[&str]) -> String {
    let mut s = Server::spawn(dir, port, &[], &[]);
    let status = s.wait_exit(Duration::from_secs(20));
    let log = s.log_text();
    assert!(
        status.is_some_and(|st| !st.success()),
        "the server must refuse to start; log:\n{log}"
    );
    for n in names {
        assert!(log.contains(n), "the refusal names {n:?}; log:\n{log}");
    }
    log
}

fn name(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Item 7: everything the server creates is owner-only, and a secret left readable by an
/// earlier build is made 0600 at start with a warning.
#[test]
fn data_dir_files_are_owner_only() {
    let dir = support::temp_dir("modes");
    let port = support::free_port();
    write_config(&dir, port, "");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(data.join("secret"), [7u8; 16]).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(data.join("secret"), std::fs::Permissions::from_mode(0o644))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut server = Server::start(&dir, port);
    create_nodes(port, "m", 5);
    snapshot(port, &data.join("snapshots"), 1);
    stop(&mut server);
    assert!(
        server.log_text().contains("made it 0600"),
        "the warning: {}",
        server.log_text()
    );
    let mut checked = vec![
        data.join("secret"),
        data.join("identity"),
        data.join("log/LOCK"),
    ];
    checked.extend(files(&data.join("log"), "log."));
    checked.extend(files(&data.join("snapshots"), "snapshot."));
    assert!(checked.len() >= 5, "{checked:?}");
    for f in &checked {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    for d in [data.join("log"), data.join("snapshots")] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 9: after 100 acknowledged creates and a clean stop, the only segment truncated to 0
/// or 20 bytes must not start an empty server; the operator flag still forces a start.
#[test]
fn a_truncated_log_refuses_to_start() {
    for len in [0u64, 20] {
        let dir = support::temp_dir(&format!("trunc{len}"));
        let port = support::free_port();
        write_config(&dir, port, "");
        let mut server = Server::start(&dir, port);
        create_nodes(port, "t", 100);
        stop(&mut server);
        let segs = files(&dir.join("data/log"), "log.");
        assert_eq!(segs.len(), 1, "{segs:?}");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&segs[0])
            .and_then(|f| f.set_len(len))
            .unwrap_or_else(|e| panic!("{e}"));
        expect_refusal(&dir, port, &[&name(&segs[0])]);

        let s = Server::spawn(&dir, port, &[], &["--truncate-corrupt-log"]);
        s.wait_ready(Duration::from_secs(20));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Item 10: a snapshot copied from another data dir is refused by name, even though it
/// validates on its own (and even though it is not the newest).
#[test]
fn another_data_dirs_snapshot_is_refused() {
    let a = support::temp_dir("ident-a");
    let b = support::temp_dir("ident-b");
    let (pa, pb) = (support::free_port(), support::free_port());
    write_config(&a, pa, "");
    write_config(&b, pb, "");
    let mut sa = Server::start(&a, pa);
    let mut sb = Server::start(&b, pb);
    create_nodes(pa, "a", 10);
    create_nodes(pb, "b", 30);
    snapshot(pa, &a.join("data/snapshots"), 1);
    snapshot(pb, &b.join("data/snapshots"), 1);
    stop(&mut sa);
    stop(&mut sb);
    let theirs = files(&b.join("data/snapshots"), "snapshot.");
    let copied = a.join("data/snapshots").join(name(&theirs[0]));
    std::fs::copy(&theirs[0], &copied).unwrap_or_else(|e| panic!("{e}"));
    expect_refusal(&a, pa, &[&copied.display().to_string(), "another data dir"]);
    // Taken away again, the server starts with its own tree.
    std::fs::remove_file(&copied).unwrap_or_else(|e| panic!("{e}"));
    let _s = Server::start(&a, pa);
    let mut c = Client::connect(pa, 10_000).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.exists("/a9").unwrap_or_else(|e| panic!("{e}")).is_ok());
    assert!(c.exists("/b0").unwrap_or_else(|e| panic!("{e}")).is_err());
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

/// Item 11: a snapshot newer than the log's end (here: the log put back to an older copy)
/// is refused at start, naming the snapshot and the zxids, instead of being served until
/// the first write stops the server.
#[test]
fn a_snapshot_newer_than_the_log_is_refused() {
    let dir = support::temp_dir("ahead");
    let port = support::free_port();
    write_config(&dir, port, "");
    let mut server = Server::start(&dir, port);
    create_nodes(port, "old", 10);
    stop(&mut server);
    let log_dir = dir.join("data/log");
    let old_log = dir.join("old-log");
    std::fs::create_dir_all(&old_log).unwrap_or_else(|e| panic!("{e}"));
    for seg in files(&log_dir, "log.") {
        std::fs::copy(&seg, old_log.join(name(&seg))).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut server = Server::start(&dir, port);
    create_nodes(port, "new", 20);
    snapshot(port, &dir.join("data/snapshots"), 1);
    stop(&mut server);
    for seg in files(&log_dir, "log.") {
        std::fs::remove_file(&seg).unwrap_or_else(|e| panic!("{e}"));
    }
    for seg in files(&old_log, "log.") {
        std::fs::copy(&seg, log_dir.join(name(&seg))).unwrap_or_else(|e| panic!("{e}"));
    }
    let snap = files(&dir.join("data/snapshots"), "snapshot.");
    let log = expect_refusal(&dir, port, &[&name(&snap[0]), "newer than the log's end"]);
    assert!(log.contains("last txn 0x"), "the log's end zxid: {log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 12: a flipped bit inside the last, complete record is corruption, not a torn tail:
/// refused naming file and offset, never cut silently.
#[test]
fn a_flipped_bit_in_the_last_record_is_refused() {
    let dir = support::temp_dir("lastflip");
    let port = support::free_port();
    write_config(&dir, port, "");
    let mut server = Server::start(&dir, port);
    create_nodes(port, "f", 100);
    stop(&mut server);
    let seg = files(&dir.join("data/log"), "log.")
        .pop()
        .unwrap_or_default();
    let scan = palisade_wal::scan_segment(&seg, u32::MAX).unwrap_or_else(|e| panic!("{e}"));
    let last = scan.records().last().map(|r| (r.offset, r.payload.len()));
    let (offset, len) = last.unwrap_or_else(|| panic!("no record in {}", seg.display()));
    let mut bytes = std::fs::read(&seg).unwrap_or_else(|e| panic!("{e}"));
    let at = offset as usize + 24 + len / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&seg, bytes).unwrap_or_else(|e| panic!("{e}"));
    expect_refusal(&dir, port, &[&name(&seg), &format!(":{offset}")]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 13: with snapRetainCount=3 and only two snapshots taken, the log from zxid 1 is kept:
/// both snapshots damaged, the server still recovers every node from the log alone. Then
/// with four snapshots the log before the oldest retained one is purged, by the log thread.
#[test]
fn retained_snapshots_are_independent_recovery_points() {
    let dir = support::temp_dir("retain");
    let port = support::free_port();
    write_config(&dir, port, "preAllocSize=4\nautopurge.snapRetainCount=3\n");
    let snaps = dir.join("data/snapshots");
    let log_dir = dir.join("data/log");
    let mut server = Server::start(&dir, port);
    create_nodes(port, "r", 100);
    snapshot(port, &snaps, 1);
    create_nodes(port, "s", 100);
    snapshot(port, &snaps, 2);
    create_nodes(port, "u", 10);
    stop(&mut server);
    assert!(
        log_dir.join("log.0000000000000001").exists(),
        "the log's first segment is kept while fewer than 3 snapshots exist: {:?}",
        files(&log_dir, "log.")
    );
    for s in files(&snaps, "snapshot.") {
        let mut b = std::fs::read(&s).unwrap_or_else(|e| panic!("{e}"));
        let mid = b.len() / 2;
        b[mid] ^= 0x01;
        std::fs::write(&s, b).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut server = Server::start(&dir, port);
    let mut c = Client::connect(port, 10_000).unwrap_or_else(|e| panic!("{e}"));
    for p in ["/r0", "/r99", "/s0", "/s99", "/u9"] {
        assert!(
            c.exists(p).unwrap_or_else(|e| panic!("{e}")).is_ok(),
            "{p} lost; log:\n{}",
            server.log_text()
        );
    }
    drop(c);
    // Without the damaged snapshots, three new ones: once three exist, the log before the
    // oldest of them is purged (by the log thread).
    stop(&mut server);
    for s in files(&snaps, "snapshot.") {
        std::fs::remove_file(&s).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut server = Server::start(&dir, port);
    for n in 1..=3 {
        create_nodes(port, &format!("v{n}-"), 60);
        assert!(
            log_dir.join("log.0000000000000001").exists(),
            "kept with {} snapshots",
            n - 1
        );
        snapshot(port, &snaps, n);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while log_dir.join("log.0000000000000001").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !log_dir.join("log.0000000000000001").exists(),
        "purged once 3 snapshots exist"
    );
    stop(&mut server);
    let _ = std::fs::remove_dir_all(&dir);
}
