//! Shared by the inspector tests: the real server binary on a temp data dir (tiny snapCount
//! and segments, so snapshots, purges and segment rolls happen within a few hundred writes),
//! a small blocking client (copied from the server's tests/support/mod.rs, plus getData,
//! setData and multi), a seeded workload, and the inspector binary.
#![allow(dead_code)]

use bytes::{Buf, Bytes};
use palisade_proto::*;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const INSPECT: &str = env!("CARGO_BIN_EXE_palisade-inspect");

/// The server binary: `$PALISADE_BIN`, else `palisade` in this test's profile directory,
/// brought up to date first with the cargo running these tests (a no-op taking ~0.1 s when
/// `cargo test --workspace` already built it; without it a stale binary could be tested).
pub fn server_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
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
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args([
        "build",
        "--offline",
        "--bin",
        "palisade",
        "-p",
        "palisade",
        "--manifest-path",
    ])
    .arg(&manifest)
    .env("CARGO_TARGET_DIR", target);
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

/// A server process on `dir/data`; killed (SIGKILL) and reaped when dropped.
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

impl Server {
    /// Writes `dir/zoo.cfg` (data in `dir/data`, tiny snapCount and segments, `extra`
    /// lines appended) and starts the server on it, waiting until it answers ruok.
    pub fn start(dir: &Path, extra: &str) -> Server {
        let port = free_port();
        let cfg = dir.join("zoo.cfg");
        let text = format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\n4lw.commands.whitelist=*\n\
             maxClientCnxns=0\nsnapCount=40\npreAllocSize=4\n{extra}",
            dir.join("data").display()
        );
        std::fs::write(&cfg, text).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join("server.log");
        let err = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{e}"));
        let child = Command::new(server_bin())
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", server_bin().display()));
        let s = Server {
            child,
            port,
            dir: dir.to_path_buf(),
            log,
        };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if four_letter(port, b"ruok").as_deref() == Some("imok") {
                return s;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("server did not start; log:\n{}", s.log_text());
    }

    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Asks for a snapshot now and waits until one starting at or after `zxid` is on disk.
    pub fn snapshot_now(&self, zxid: i64) {
        let answer = four_letter(self.port, b"csnp").unwrap_or_default();
        assert!(answer.contains("zxid"), "csnp: {answer:?}");
        let snaps = self.data().join("snapshots");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            let done = palisade_snapshot::list(&snaps)
                .unwrap_or_default()
                .first()
                .is_some_and(|(start, _)| *start >= zxid);
            if done {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no snapshot at or after {zxid:#x}");
    }
}

pub fn four_letter(port: u16, word: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(word).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Runs the inspector; its output and exit code.
pub fn inspect(args: &[&str]) -> (String, i32) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(INSPECT)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{INSPECT}: {e}"));
    let mut text = String::from_utf8_lossy(&stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&stderr));
    (text, status.code().unwrap_or(-1))
}

pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("palisade-inspect-{name}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A blocking client: one request at a time, notifications skipped.
pub struct Client {
    stream: TcpStream,
    xid: i32,
    pub session: i64,
    /// The highest zxid seen in a reply.
    pub last_zxid: i64,
}

pub fn open_acl() -> Vec<ACL> {
    vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }]
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

pub const PERSISTENT: i32 = 0;
pub const EPHEMERAL: i32 = 1;
pub const SEQUENTIAL: i32 = 2;

impl Client {
    pub fn connect(port: u16) -> Client {
        Self::try_connect(port).unwrap_or_else(|e| panic!("connect: {e}"))
    }

    fn try_connect(port: u16) -> io::Result<Client> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 30_000,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
        };
        let body = req.encode();
        let mut msg = (body.len() as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        stream.write_all(&msg)?;
        let resp = ConnectResponse::decode(read_frame(&mut stream)?, usize::MAX).map_err(bad)?;
        Ok(Client {
            stream,
            xid: 0,
            session: resp.session_id,
            last_zxid: 0,
        })
    }

    /// Sends one request; returns its reply header and body.
    pub fn call(&mut self, req: &Request) -> (ReplyHeader, Bytes) {
        self.try_call(req)
            .unwrap_or_else(|e| panic!("{req:?}: {e}"))
    }

    fn try_call(&mut self, req: &Request) -> io::Result<(ReplyHeader, Bytes)> {
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
                continue;
            }
            if h.xid != self.xid {
                return Err(bad(format!("reply xid {} for request {}", h.xid, self.xid)));
            }
            self.last_zxid = self.last_zxid.max(h.zxid);
            return Ok((h, frame));
        }
    }

    /// create; Err(code) for a ZooKeeper error.
    pub fn create(&mut self, path: &str, data: &[u8], flags: i32) -> Result<String, i32> {
        let req = Request::Create(CreateRequest {
            path: JStr::from(path),
            data: Some(Bytes::copy_from_slice(data)),
            acl: Some(open_acl()),
            flags,
        });
        let (h, body) = self.call(&req);
        if h.err != 0 {
            return Err(h.err);
        }
        let r = CreateResponse::decode(body, usize::MAX).unwrap_or_else(|e| panic!("{e}"));
        Ok(r.path.as_str().unwrap_or("").to_string())
    }

    pub fn delete(&mut self, path: &str) -> Result<(), i32> {
        let req = Request::Delete(DeleteRequest {
            path: JStr::from(path),
            version: -1,
        });
        let (h, _) = self.call(&req);
        if h.err == 0 {
            Ok(())
        } else {
            Err(h.err)
        }
    }

    pub fn set_data(&mut self, path: &str, data: &[u8]) -> Result<(), i32> {
        let req = Request::SetData(SetDataRequest {
            path: JStr::from(path),
            data: Some(Bytes::copy_from_slice(data)),
            version: -1,
        });
        let (h, _) = self.call(&req);
        if h.err == 0 {
            Ok(())
        } else {
            Err(h.err)
        }
    }

    /// getData: the data and the stat.
    pub fn get_data(&mut self, path: &str) -> Result<(Option<Vec<u8>>, Stat), i32> {
        let req = Request::GetData(GetDataRequest {
            path: JStr::from(path),
            watch: false,
        });
        let (h, body) = self.call(&req);
        if h.err != 0 {
            return Err(h.err);
        }
        let r = GetDataResponse::decode(body, usize::MAX).unwrap_or_else(|e| panic!("{e}"));
        Ok((r.data.map(|d| d.to_vec()), r.stat))
    }

    pub fn children(&mut self, path: &str) -> Result<Vec<String>, i32> {
        let req = Request::GetChildren(GetChildrenRequest {
            path: JStr::from(path),
            watch: false,
        });
        let (h, body) = self.call(&req);
        if h.err != 0 {
            return Err(h.err);
        }
        let r = GetChildrenResponse::decode(body, usize::MAX).unwrap_or_else(|e| panic!("{e}"));
        Ok(r.children
            .unwrap_or_default()
            .iter()
            .map(|c| c.as_str().unwrap_or("").to_string())
            .collect())
    }

    /// A multi; Ok(()) when every op succeeded, Err(header err) otherwise.
    pub fn multi(&mut self, ops: Vec<Request>) -> Result<(), i32> {
        let (h, _) = self.call(&Request::Multi(MultiRequest::new(ops)));
        if h.err == 0 {
            Ok(())
        } else {
            Err(h.err)
        }
    }

    pub fn close_session(&mut self) {
        let (h, _) = self.call(&Request::CloseSession);
        assert_eq!(h.err, 0, "closeSession");
    }
}

pub fn create_req(path: &str, data: &[u8], flags: i32) -> Request {
    Request::Create(CreateRequest {
        path: JStr::from(path),
        data: Some(Bytes::copy_from_slice(data)),
        acl: Some(open_acl()),
        flags,
    })
}

pub fn delete_req(path: &str) -> Request {
    Request::Delete(DeleteRequest {
        path: JStr::from(path),
        version: -1,
    })
}

/// xorshift64*: deterministic from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

pub const PARENTS: [&str; 3] = ["/app", "/locks", "/queue"];

/// Creates the parents, then `steps` random writes from two sessions: sequential creates
/// and deletes under several parents (deletes often enough that the visible cversion runs
/// ahead of the child count), plain creates, setData, multi, and ephemerals of a second
/// session that is closed at the end (a closeSession that deletes them).
pub fn workload(port: u16, seed: u64, steps: usize) -> i64 {
    let mut c = Client::connect(port);
    let mut eph = Client::connect(port);
    for p in PARENTS {
        let _ = c.create(p, b"parent", PERSISTENT);
    }
    let mut rng = Rng::new(seed);
    let mut live: Vec<String> = Vec::new();
    for i in 0..steps {
        let parent = PARENTS[rng.below(3) as usize];
        match rng.below(10) {
            0..=3 => {
                let p = c
                    .create(
                        &format!("{parent}/s-"),
                        format!("v{i}").as_bytes(),
                        SEQUENTIAL,
                    )
                    .unwrap_or_else(|e| panic!("seq create: {e}"));
                live.push(p);
            }
            4..=5 if !live.is_empty() => {
                let p = live.swap_remove(rng.below(live.len() as u64) as usize);
                c.delete(&p).unwrap_or_else(|e| panic!("delete {p}: {e}"));
            }
            6 if !live.is_empty() => {
                let p = &live[rng.below(live.len() as u64) as usize];
                c.set_data(p, format!("set{i}").as_bytes())
                    .unwrap_or_else(|e| panic!("setData {p}: {e}"));
            }
            7 => {
                let name = format!("{parent}/plain-{i}");
                c.create(&name, b"", PERSISTENT)
                    .unwrap_or_else(|e| panic!("create {name}: {e}"));
                live.push(name);
            }
            8 => {
                let ops = vec![
                    create_req(&format!("{parent}/m-"), b"multi", SEQUENTIAL),
                    create_req(&format!("{parent}/m-"), b"multi", SEQUENTIAL),
                    create_req(&format!("{parent}/mx-{i}"), b"", PERSISTENT),
                    delete_req(&format!("{parent}/mx-{i}")),
                ];
                c.multi(ops).unwrap_or_else(|e| panic!("multi: {e}"));
            }
            _ => {
                eph.create(&format!("{parent}/e-"), b"eph", EPHEMERAL | SEQUENTIAL)
                    .unwrap_or_else(|e| panic!("ephemeral: {e}"));
            }
        }
    }
    // A failed write consumes a zxid too.
    assert!(c.create("/app", b"", PERSISTENT).is_err());
    eph.close_session();
    c.last_zxid.max(eph.last_zxid)
}

/// Builds logs txn by txn with the WAL writer itself, for logs no server would write.
pub struct LogBuilder {
    wal: palisade_wal::Wal,
    /// A replay of what was appended, for correct digest records.
    pub replayer: palisade::recovery::Replayer,
}

impl LogBuilder {
    /// A log in `data_dir/log` with 4 KiB segments.
    pub fn new(data_dir: &Path) -> LogBuilder {
        let opts = palisade_wal::Options {
            segment_bytes: 4096,
            sync: false,
            max_payload: palisade_inspect::datadir::MAX_PAYLOAD,
            ..palisade_wal::Options::new(data_dir.join("log"))
        };
        let (wal, _) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse)
            .unwrap_or_else(|e| panic!("{e}"));
        LogBuilder {
            wal,
            replayer: palisade::recovery::Replayer::new(),
        }
    }

    /// Appends the next txn (zxid = last + 1) from session 0x55.
    pub fn txn(&mut self, body: TxnBody) -> i64 {
        let zxid = self.replayer.zxid() + 1;
        let txn = Txn {
            header: TxnHeader {
                client_id: 0x55,
                cxid: zxid as i32,
                zxid,
                time: 1_798_804_800_000 + zxid,
                type_: body.op_code().code(),
            },
            body,
        };
        self.wal
            .append(palisade_wal::RecordKind::Txn, zxid, &txn.encode())
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = self.replayer.txn(&txn);
        zxid
    }

    /// A digest record for the last txn: the true digest, or `wrong`.
    pub fn digest(&mut self, wrong: Option<u64>) {
        let z = self.replayer.zxid();
        let d = wrong.unwrap_or_else(|| self.replayer.tree().digest());
        let rec = palisade::digest::encode_record(z, d);
        self.wal
            .append(palisade_wal::RecordKind::Meta, z, &rec)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn sync(&mut self) {
        self.wal.sync().unwrap_or_else(|e| panic!("{e}"));
    }
}

pub fn create_body(path: &str, parent_cversion: i32) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: JStr::from(path),
        data: Some(Bytes::from_static(b"d")),
        acl: Some(open_acl()),
        ephemeral: false,
        parent_c_version: parent_cversion,
    })
}

pub fn delete_body(path: &str) -> TxnBody {
    TxnBody::Delete(DeleteTxn {
        path: JStr::from(path),
    })
}
