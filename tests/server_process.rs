//! The `palisade` binary as a process: configuration errors and warnings, the per-IP
//! connection limit, and a clean shutdown on SIGTERM.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{four_letter, free_port, temp_dir, Scratch};

const BIN: &str = env!("CARGO_BIN_EXE_palisade");

struct Server {
    child: Child,
    port: u16,
    _dir: Scratch,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(name: &str, extra: &str) -> Server {
    let dir = temp_dir(name);
    let port = free_port();
    let cfg = dir.join("zoo.cfg");
    let text = format!(
        "tickTime=2000\ndataDir={}\nclientPort={port}\n4lw.commands.whitelist=ruok\n{extra}",
        dir.join("data").display()
    );
    std::fs::write(&cfg, text).unwrap_or_else(|e| panic!("{e}"));
    let child = Command::new(BIN)
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{BIN}: {e}"));
    // Owned by Server from here on, so every exit path kills and reaps it.
    let srv = Server {
        child,
        port,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if four_letter(port, b"ruok").as_deref() == Some("imok") {
            return srv;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server did not answer ruok on {port}");
}

/// A 45-byte ConnectRequest for a new session; returns the connection once answered.
fn session(port: u16) -> Option<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut req = Vec::new();
    req.extend_from_slice(&45i32.to_be_bytes());
    req.extend_from_slice(&0i32.to_be_bytes()); // protocol version
    req.extend_from_slice(&0i64.to_be_bytes()); // last zxid seen
    req.extend_from_slice(&10_000i32.to_be_bytes()); // timeout
    req.extend_from_slice(&0i64.to_be_bytes()); // session id
    req.extend_from_slice(&16i32.to_be_bytes());
    req.extend_from_slice(&[0; 16]);
    req.push(0); // readOnly
    s.write_all(&req).ok()?;
    let mut resp = [0u8; 41];
    s.read_exact(&mut resp).ok()?;
    Some(s)
}

#[test]
fn invalid_config_value_stops_startup_naming_key_and_value() {
    let dir = temp_dir("badcfg");
    let cfg = dir.join("zoo.cfg");
    std::fs::write(&cfg, "clientPort=notaport\n").unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(BIN)
        .arg(&cfg)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("clientPort") && err.contains("notaport"),
        "{err}"
    );
}

#[test]
fn max_client_cnxns_limits_connections_per_address() {
    let srv = start("maxcnxns", "maxClientCnxns=2\n");
    let a = session(srv.port);
    let b = session(srv.port);
    assert!(a.is_some() && b.is_some(), "two connections are allowed");
    assert!(
        session(srv.port).is_none(),
        "the third from the same address is closed"
    );
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut again = None;
    while again.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        again = session(srv.port);
    }
    assert!(again.is_some(), "a slot frees up when a connection closes");
}

#[test]
fn sigterm_shuts_down_cleanly_and_unknown_keys_are_warned_about() {
    let mut srv = start("sigterm", "someUnknownKey=1\n");
    let conn = session(srv.port);
    assert!(conn.is_some());
    let pid = srv.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(st)) = srv.child.try_wait() {
            assert!(st.success(), "exit status {st}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut log = String::new();
    if let Some(mut e) = srv.child.stderr.take() {
        let _ = e.read_to_string(&mut log);
    }
    assert!(log.contains("shutting down"), "{log}");
    assert!(
        log.contains("unknown configuration key") && log.contains("someUnknownKey"),
        "{log}"
    );
}

/// Sends exists("/", watch) on a session connection and waits for the reply.
fn watch_root(s: &mut TcpStream) {
    let mut req = Vec::new();
    req.extend_from_slice(&14i32.to_be_bytes());
    req.extend_from_slice(&1i32.to_be_bytes()); // xid
    req.extend_from_slice(&3i32.to_be_bytes()); // exists
    req.extend_from_slice(&1i32.to_be_bytes());
    req.push(b'/');
    req.push(1); // watch
    s.write_all(&req).unwrap_or_else(|e| panic!("{e}"));
    let mut reply = [0u8; 4 + 16 + 68];
    s.read_exact(&mut reply).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn four_letter_words_in_zookeeper_formats() {
    let srv = start("4lw", "4lw.commands.whitelist=*\n");
    let word = |w: &[u8]| four_letter(srv.port, w).unwrap_or_default();
    let srvr = word(b"srvr");
    for line in [
        "Zookeeper version: 3.8.0-",
        "Latency min/avg/max: ",
        "Mode: standalone",
        "Node count: 5",
        "Zxid: 0x",
    ] {
        assert!(
            srvr.lines().any(|l| l.starts_with(line)),
            "srvr lacks {line:?}:\n{srvr}"
        );
    }
    let mntr = word(b"mntr");
    for kv in [
        "zk_version\t3.8.0-",
        "zk_server_state\tstandalone",
        "zk_znode_count\t5",
        "zk_watch_count\t0",
    ] {
        assert!(
            mntr.lines().any(|l| l.starts_with(kv)),
            "mntr lacks {kv:?}:\n{mntr}"
        );
    }
    assert!(word(b"envi")
        .lines()
        .any(|l| l.starts_with("zookeeper.version=3.8.0")));
    assert_eq!(word(b"isro"), "rw");

    let mut s = session(srv.port).unwrap_or_else(|| panic!("no session"));
    watch_root(&mut s);
    assert_eq!(
        word(b"wchs"),
        "1 connections watching 1 paths\nTotal watches:1\n"
    );
    // ZooKeeper 3.8 ends wchc and wchp with a blank line.
    let wchc = word(b"wchc");
    assert!(
        wchc.starts_with("0x") && wchc.ends_with("\n\t/\n\n"),
        "{wchc:?}"
    );
    let wchp = word(b"wchp");
    assert!(
        wchp.starts_with("/\n\t0x") && wchp.ends_with("\n\n"),
        "{wchp:?}"
    );
    assert!(word(b"dirs").starts_with("datadir_size: "));
}

#[test]
fn four_letter_words_outside_the_whitelist_are_refused() {
    let srv = start("4lw-deny", "4lw.commands.whitelist=ruok, srvr\n");
    assert_eq!(
        four_letter(srv.port, b"mntr").unwrap_or_default(),
        "mntr is not executed because it is not in the whitelist.\n"
    );
    assert!(four_letter(srv.port, b"srvr")
        .unwrap_or_default()
        .contains("Mode: standalone"));
}

/// `palisade --print-config-reference | head -1`: the reader is gone before the output is
/// written. The output ends there, with no panic (before: "failed printing to stdout").
#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    for args in [vec!["--print-config-reference"], vec!["--version"]] {
        let mut child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Closed at once: the process has not parsed its arguments yet.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !err.contains("panicked"),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
