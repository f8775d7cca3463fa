//! Shared by the process tests: the server binary started on a data dir, four-letter words,
//! and a small blocking client speaking the wire protocol through palisade-proto.
//! The inspector's tests (tools/inspect/tests/support) include this file too, so it must
//! build in either package; each test binary uses only part of it.
#![allow(dead_code)]

mod scratch;

use bytes::{Buf, Bytes};
use palisade_proto::*;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The server binary. Cargo names it only to the palisade package's own tests; elsewhere
/// (the inspector's tests) it is `$PALISADE_BIN`, else `palisade` in this test's profile
/// directory, brought up to date first with the cargo running these tests (a no-op taking
/// ~0.1 s when `cargo test --workspace` already built it; without it a stale binary could
/// be tested).
pub fn server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = option_env!("CARGO_BIN_EXE_palisade") {
            return PathBuf::from(p);
        }
        if let Some(p) = std::env::var_os("PALISADE_BIN") {
            return PathBuf::from(p);
        }
        // target/<profile>/deps/<test> → target/<profile>/palisade
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .unwrap_or_else(|| panic!("{}: no profile dir", exe.display()));
        let bin = profile_dir.join("palisade");
        build_server(profile_dir);
        assert!(bin.is_file(), "{} missing", bin.display());
        bin
    })
    .clone()
}

fn build_server(profile_dir: &Path) {
    let target = profile_dir
        .parent()
        .unwrap_or_else(|| panic!("{}: no target dir", profile_dir.display()));
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    // Any member's manifest names the workspace. The whole workspace with its tests, as
    // `cargo test --workspace` selects it: features are unified over what is selected, so
    // `-p palisade` alone would build the server again with other features (minutes of CI,
    // in the middle of the tests), where this is a no-op after `cargo test --workspace`.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args([
        "build",
        "--offline",
        "--workspace",
        "--bins",
        "--tests",
        "--manifest-path",
    ])
    .arg(&manifest);
    // Without the variables cargo sets for a running test (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // OUT_DIR...): build scripts that watch them (ring's does) would run again, and rebuild
    // again in the next plain cargo command.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if (k.starts_with("CARGO_") && k != "CARGO_HOME") || k == "OUT_DIR" {
            cmd.env_remove(&key);
        }
    }
    cmd.env("CARGO_TARGET_DIR", target);
    if release {
        cmd.arg("--release");
    }
    let st = cmd.status().unwrap_or_else(|e| panic!("cargo build: {e}"));
    assert!(st.success(), "building the server failed");
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

pub use scratch::Scratch;

/// A fresh directory under the system temp dir, unique per process and name (a `Scratch`:
/// removed unless the test fails).
pub fn temp_dir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("palisade-{name}-{}", std::process::id()));
    Scratch::new(d)
}

/// A server process on a data dir; killed (SIGKILL) and reaped when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `dir/zoo.cfg` (dataDir `dir/data`) with `extra` lines appended.
pub fn write_config(dir: &Path, port: u16, extra: &str) -> PathBuf {
    let cfg = dir.join("zoo.cfg");
    let text = format!(
        "tickTime=500\ndataDir={}\nclientPort={port}\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n{extra}",
        dir.join("data").display()
    );
    std::fs::write(&cfg, text).unwrap_or_else(|e| panic!("{e}"));
    cfg
}

impl Server {
    /// Starts the binary on `dir/zoo.cfg` with extra environment and arguments; does not wait.
    pub fn spawn(dir: &Path, port: u16, env: &[(&str, &str)], args: &[&str]) -> Server {
        let log = dir.join(format!("server-{}.log", now_ns()));
        let err = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{e}"));
        let bin = server_bin();
        let mut cmd = Command::new(&bin);
        cmd.arg(dir.join("zoo.cfg"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(err);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        Server {
            child,
            port,
            dir: dir.to_path_buf(),
            log,
        }
    }

    /// Starts and waits until it answers ruok.
    pub fn start(dir: &Path, port: u16) -> Server {
        let s = Server::spawn(dir, port, &[], &[]);
        s.wait_ready(Duration::from_secs(20));
        s
    }

    pub fn wait_ready(&self, limit: Duration) -> Duration {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if four_letter(self.port, b"ruok").as_deref() == Some("imok") {
                return t0.elapsed();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!(
            "server did not answer ruok on {}; log:\n{}",
            self.port,
            self.log_text()
        );
    }

    /// Waits for the process to exit on its own; its status.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

pub fn four_letter(port: u16, word: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(word).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// A node as getData answers it: its data and its stat.
pub type NodeData = (Option<Vec<u8>>, Stat);

/// A blocking client: one request at a time, notifications skipped.
pub struct Client {
    stream: TcpStream,
    xid: i32,
    pub session: i64,
    pub passwd: Bytes,
    /// The highest zxid seen in a reply.
    pub last_zxid: i64,
}

pub const PERSISTENT: i32 = 0;
pub const EPHEMERAL: i32 = 1;
pub const SEQUENTIAL: i32 = 2;

pub fn open_acl() -> Vec<ACL> {
    vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }]
}

/// A create with the open ACL, for `Client::create` and for the ops of a multi.
pub fn create_req(path: &str, data: &[u8], flags: i32) -> Request {
    Request::Create(CreateRequest {
        path: JStr::from(path),
        data: Some(Bytes::copy_from_slice(data)),
        acl: Some(open_acl()),
        flags,
    })
}

/// A delete of any version.
pub fn delete_req(path: &str) -> Request {
    Request::Delete(DeleteRequest {
        path: JStr::from(path),
        version: -1,
    })
}

fn read_frame(s: &mut TcpStream) -> io::Result<Bytes> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = i32::from_be_bytes(len);
    if !(0..=16 << 20).contains(&n) {
        return Err(io::Error::other(format!("bad frame length {n}")));
    }
    let mut buf = vec![0u8; n as usize];
    s.read_exact(&mut buf)?;
    Ok(Bytes::from(buf))
}

fn bad(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Client {
    /// A new session.
    pub fn connect(port: u16, timeout_ms: i32) -> io::Result<Client> {
        Self::handshake(port, 0, Bytes::from_static(&[0; 16]), 0, timeout_ms)?
            .ok_or_else(|| bad("new session refused"))
    }

    /// Resumes a session; `None` if the server says it is expired or unknown.
    pub fn resume(
        port: u16,
        session: i64,
        passwd: Bytes,
        last_zxid: i64,
    ) -> io::Result<Option<Client>> {
        Self::handshake(port, session, passwd, last_zxid, 10_000)
    }

    fn handshake(
        port: u16,
        session: i64,
        passwd: Bytes,
        last_zxid: i64,
        timeout_ms: i32,
    ) -> io::Result<Option<Client>> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: last_zxid,
            time_out: timeout_ms,
            session_id: session,
            passwd: Some(passwd),
            read_only: Some(false),
        };
        let body = req.encode();
        let mut msg = (body.len() as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        stream.write_all(&msg)?;
        let resp = ConnectResponse::decode(read_frame(&mut stream)?, usize::MAX).map_err(bad)?;
        if resp.time_out <= 0 {
            return Ok(None);
        }
        Ok(Some(Client {
            stream,
            xid: 0,
            session: resp.session_id,
            passwd: resp.passwd.unwrap_or_default(),
            last_zxid,
        }))
    }

    /// Sends one request; returns its reply header and body.
    pub fn call(&mut self, req: &Request) -> io::Result<(ReplyHeader, Bytes)> {
        self.xid += 1;
        let body = req.encode(self.xid);
        let mut msg = (body.len() as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        self.stream.write_all(&msg)?;
        loop {
            let mut frame = read_frame(&mut self.stream)?;
            if frame.len() < 16 {
                return Err(bad("short reply"));
            }
            let h = ReplyHeader {
                xid: frame.get_i32(),
                zxid: frame.get_i64(),
                err: frame.get_i32(),
            };
            if h.xid == -1 {
                continue; // a watch notification
            }
            if h.xid != self.xid {
                return Err(bad(format!("reply xid {} for request {}", h.xid, self.xid)));
            }
            self.last_zxid = self.last_zxid.max(h.zxid);
            return Ok((h, frame));
        }
    }

    /// Sends every request before reading any reply (a pipelined client); returns each
    /// reply's error code, in order.
    pub fn pipeline(&mut self, reqs: &[Request]) -> io::Result<Vec<i32>> {
        let first = self.xid + 1;
        let mut msg = Vec::new();
        for r in reqs {
            self.xid += 1;
            let body = r.encode(self.xid);
            msg.extend_from_slice(&(body.len() as i32).to_be_bytes());
            msg.extend_from_slice(&body);
        }
        self.stream.write_all(&msg)?;
        let mut errs = Vec::with_capacity(reqs.len());
        let mut want = first;
        while want <= self.xid {
            let mut frame = read_frame(&mut self.stream)?;
            if frame.len() < 16 {
                return Err(bad("short reply"));
            }
            let (xid, zxid, err) = (frame.get_i32(), frame.get_i64(), frame.get_i32());
            if xid == -1 {
                continue;
            }
            if xid != want {
                return Err(bad(format!("reply xid {xid}, expected {want}")));
            }
            self.last_zxid = self.last_zxid.max(zxid);
            errs.push(err);
            want += 1;
        }
        Ok(errs)
    }

    /// addWatch (0 = PERSISTENT, 1 = PERSISTENT_RECURSIVE); the reply's error code.
    pub fn add_watch(&mut self, path: &str, mode: i32) -> io::Result<i32> {
        let req = Request::AddWatch(AddWatchRequest {
            path: JStr::from(path),
            mode,
        });
        Ok(self.call(&req)?.0.err)
    }

    /// Sends one request; Ok(Err(code)) for a ZooKeeper error, else the body decoded.
    fn call_ok<T>(
        &mut self,
        req: &Request,
        decode: impl FnOnce(Bytes) -> io::Result<T>,
    ) -> io::Result<Result<T, i32>> {
        let (h, body) = self.call(req)?;
        if h.err != 0 {
            return Ok(Err(h.err));
        }
        decode(body).map(Ok)
    }

    /// create; Ok(Err(code)) for a ZooKeeper error.
    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        flags: i32,
    ) -> io::Result<Result<String, i32>> {
        self.call_ok(&create_req(path, data, flags), |body| {
            let r = CreateResponse::decode(body, usize::MAX).map_err(bad)?;
            Ok(r.path.as_str().unwrap_or("").to_string())
        })
    }

    pub fn delete(&mut self, path: &str) -> io::Result<Result<(), i32>> {
        self.call_ok(&delete_req(path), |_| Ok(()))
    }

    pub fn set_data(&mut self, path: &str, data: &[u8]) -> io::Result<Result<(), i32>> {
        let req = Request::SetData(SetDataRequest {
            path: JStr::from(path),
            data: Some(Bytes::copy_from_slice(data)),
            version: -1,
        });
        self.call_ok(&req, |_| Ok(()))
    }

    pub fn exists(&mut self, path: &str) -> io::Result<Result<Stat, i32>> {
        let req = Request::Exists(ExistsRequest {
            path: JStr::from(path),
            watch: false,
        });
        self.call_ok(&req, |body| Stat::decode(body, usize::MAX).map_err(bad))
    }

    /// getData: the data and the stat.
    pub fn get_data(&mut self, path: &str) -> io::Result<Result<NodeData, i32>> {
        let req = Request::GetData(GetDataRequest {
            path: JStr::from(path),
            watch: false,
        });
        self.call_ok(&req, |body| {
            let r = GetDataResponse::decode(body, usize::MAX).map_err(bad)?;
            Ok((r.data.map(|d| d.to_vec()), r.stat))
        })
    }

    pub fn children(&mut self, path: &str) -> io::Result<Result<Vec<String>, i32>> {
        let req = Request::GetChildren(GetChildrenRequest {
            path: JStr::from(path),
            watch: false,
        });
        self.call_ok(&req, |body| {
            let r = GetChildrenResponse::decode(body, usize::MAX).map_err(bad)?;
            Ok(r.children
                .unwrap_or_default()
                .iter()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect())
        })
    }

    /// A multi; Ok(Ok(created paths)) when every op succeeded, Ok(Err(first error)) otherwise.
    pub fn multi(&mut self, ops: Vec<Request>) -> io::Result<Result<Vec<String>, i32>> {
        let (h, body) = self.call(&Request::Multi(MultiRequest::new(ops)))?;
        if h.err != 0 {
            return Ok(Err(h.err));
        }
        let m = Response::decode(OpCode::Multi, body, usize::MAX).map_err(bad)?;
        let Response::Multi(m) = m else {
            return Err(bad("not a multi response"));
        };
        let mut paths = Vec::new();
        for (_, r) in m.results {
            match r {
                OpResult::Create(c) => paths.push(c.path.as_str().unwrap_or("").to_string()),
                OpResult::Create2(c) => paths.push(c.path.as_str().unwrap_or("").to_string()),
                OpResult::Error(e) if e.err != 0 => return Ok(Err(e.err)),
                _ => {}
            }
        }
        Ok(Ok(paths))
    }

    pub fn close_session(&mut self) -> io::Result<()> {
        let (h, _) = self.call(&Request::CloseSession)?;
        if h.err != 0 {
            return Err(bad(format!("closeSession: {}", h.err)));
        }
        Ok(())
    }

    /// Drops the connection without closing the session.
    pub fn disconnect(self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
