//! Shared by the inspector tests: the server's own test support (the real server binary on a
//! temp data dir, four-letter words, a small blocking client), plus what only these tests
//! need: a server with tiny snapCount and segments (so snapshots, purges and segment rolls
//! happen within a few hundred writes), a seeded workload, the inspector binary, and a log
//! builder for logs no server would write.
#![allow(dead_code)]

// One copy of the client and server helpers serves both packages' tests.
#[path = "../../../../tests/support/mod.rs"]
mod server_support;

pub use server_support::*;

use bytes::Bytes;
use palisade_proto::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const INSPECT: &str = env!("CARGO_BIN_EXE_palisade-inspect");

/// The session timeout of the inspector tests' clients.
pub const SESSION_MS: i32 = 30_000;

impl Server {
    /// Writes `dir/zoo.cfg` (data in `dir/data`, tiny snapCount and segments, `extra` lines
    /// appended, so they win) and starts the server on a free port, waiting until it
    /// answers ruok.
    pub fn start_small(dir: &Path, extra: &str) -> Server {
        let port = free_port();
        write_config(dir, port, &format!("snapCount=40\npreAllocSize=4\n{extra}"));
        Server::start(dir, port)
    }

    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
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

/// A new session; a connection failure fails the test.
pub fn connect(port: u16) -> Client {
    Client::connect(port, SESSION_MS).unwrap_or_else(|e| panic!("connect: {e}"))
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

/// A self-removing temp dir; shadows the server tests' `temp_dir`, which keeps its dir.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("palisade-inspect-{name}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Seeded randomness for the workloads (fastrand's generator).
pub type Rng = fastrand::Rng;

pub const PARENTS: [&str; 3] = ["/app", "/locks", "/queue"];

/// Creates the parents, then `steps` random writes from two sessions: sequential creates
/// and deletes under several parents (deletes often enough that the visible cversion runs
/// ahead of the child count), plain creates, setData, multi, and ephemerals of a second
/// session that is closed at the end (a closeSession that deletes them).
pub fn workload(port: u16, seed: u64, steps: usize) -> i64 {
    let mut c = connect(port);
    let mut eph = connect(port);
    for p in PARENTS {
        let _ = c.create(p, b"parent", PERSISTENT).unwrap();
    }
    let mut rng = Rng::with_seed(seed);
    let mut live: Vec<String> = Vec::new();
    for i in 0..steps {
        let parent = PARENTS[rng.u64(..3) as usize];
        match rng.u64(..10) {
            0..=3 => {
                let p = c
                    .create(
                        &format!("{parent}/s-"),
                        format!("v{i}").as_bytes(),
                        SEQUENTIAL,
                    )
                    .unwrap()
                    .unwrap_or_else(|e| panic!("seq create: {e}"));
                live.push(p);
            }
            4..=5 if !live.is_empty() => {
                let p = live.swap_remove(rng.u64(..live.len() as u64) as usize);
                c.delete(&p)
                    .unwrap()
                    .unwrap_or_else(|e| panic!("delete {p}: {e}"));
            }
            6 if !live.is_empty() => {
                let p = &live[rng.u64(..live.len() as u64) as usize];
                c.set_data(p, format!("set{i}").as_bytes())
                    .unwrap()
                    .unwrap_or_else(|e| panic!("setData {p}: {e}"));
            }
            7 => {
                let name = format!("{parent}/plain-{i}");
                c.create(&name, b"", PERSISTENT)
                    .unwrap()
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
                c.multi(ops)
                    .unwrap()
                    .unwrap_or_else(|e| panic!("multi: {e}"));
            }
            _ => {
                eph.create(&format!("{parent}/e-"), b"eph", EPHEMERAL | SEQUENTIAL)
                    .unwrap()
                    .unwrap_or_else(|e| panic!("ephemeral: {e}"));
            }
        }
    }
    // A failed write consumes a zxid too.
    assert!(c.create("/app", b"", PERSISTENT).unwrap().is_err());
    eph.close_session().unwrap();
    c.last_zxid.max(eph.last_zxid)
}

/// The identity of data dirs built by hand here (and of their hand-written snapshots).
pub const TEST_IDENTITY: u64 = 0x5a;

/// Builds logs txn by txn with the WAL writer itself, for logs no server would write.
pub struct LogBuilder {
    wal: palisade_wal::Wal,
    /// A replay of what was appended, for correct digest records.
    pub replayer: palisade::durability::recovery::Replayer,
}

impl LogBuilder {
    /// A log in `data_dir/log` with 4 KiB segments, of identity [`TEST_IDENTITY`] (written
    /// to `data_dir/identity` too, as the server would).
    pub fn new(data_dir: &Path) -> LogBuilder {
        std::fs::create_dir_all(data_dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            data_dir.join("identity"),
            palisade::durability::datadir::encode_identity(TEST_IDENTITY),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let opts = palisade_wal::Options {
            segment_bytes: 4096,
            sync: false,
            max_payload: palisade_inspect::datadir::MAX_PAYLOAD,
            identity: Some(TEST_IDENTITY),
            ..palisade_wal::Options::new(data_dir.join("log"))
        };
        let (wal, _) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse)
            .unwrap_or_else(|e| panic!("{e}"));
        LogBuilder {
            wal,
            replayer: palisade::durability::recovery::Replayer::new(),
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
        let rec = palisade::durability::digest_record::encode_record(z, d);
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
