//! Kill -9 of the real server under load, at random moments and at chosen ones (a snapshot
//! half written, txns synced but not yet acknowledged, txns written but not synced, during
//! recovery itself), with snapshots every few dozen txns and tiny log segments so that
//! capture, rotation and purge run all the time. After every restart:
//! - every acknowledged create is there, unless its delete was in flight at the crash;
//! - no acknowledged delete came back;
//! - each parent's next sequential suffix is above every suffix ever acknowledged or seen;
//! - no parent's cversion or pzxid went down, nor the server's zxid;
//! - sessions that were alive resume and keep their ephemerals; closed ones stay closed and
//!   their ephemerals stay gone.
//!
//! PALISADE_CRASH_CYCLES=N runs N cycles (default 12).

mod support;

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{write_config, Client, Server};

const NO_NODE: i32 = -101;
const PARENTS: [&str; 3] = ["/p0", "/p1", "/locks/rw"];
const WORKERS: usize = 4;
const SESSION_MS: i32 = 10_000;

fn cycles() -> usize {
    std::env::var("PALISADE_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

/// What clients were told, across every crash.
#[derive(Default)]
struct Ledger {
    present: BTreeSet<String>,
    deleted: BTreeSet<String>,
    /// Paths whose create or delete was in flight at a crash: either outcome is right.
    uncertain: BTreeSet<String>,
    max_suffix: BTreeMap<String, i64>,
    max_cversion: BTreeMap<String, i32>,
    max_pzxid: BTreeMap<String, i64>,
    max_zxid: i64,
    /// Live sessions' acknowledged ephemerals.
    ephemerals: BTreeMap<i64, BTreeSet<String>>,
    /// Sessions closed with an acknowledged closeSession, and what they owned.
    closed: Vec<(i64, Bytes, BTreeSet<String>)>,
    acked_writes: u64,
}

fn suffix(path: &str) -> Option<(String, i64)> {
    let (dir, name) = path.rsplit_once('/')?;
    let digits = name.get(name.len().checked_sub(10)?..)?;
    Some((dir.to_string(), digits.parse().ok()?))
}

impl Ledger {
    fn created(&mut self, path: &str) {
        self.acked_writes += 1;
        self.present.insert(path.to_string());
        if let Some((dir, n)) = suffix(path) {
            let m = self.max_suffix.entry(dir).or_insert(-1);
            *m = (*m).max(n);
        }
    }
}

/// A worker's session and the nodes it may delete.
struct Worker {
    id: usize,
    client: Client,
    own: Vec<String>,
    rng: u64,
}

impl Worker {
    fn rand(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    /// Writes until the connection breaks (the crash). Everything in flight when it breaks is
    /// marked uncertain.
    fn run(&mut self, ledger: &Mutex<Ledger>, stop_at: Instant) {
        let data = [b'd'; 100];
        let mut n = 0u64;
        while Instant::now() < stop_at {
            n += 1;
            let parent = PARENTS[self.rand(PARENTS.len() as u64) as usize];
            let r: std::io::Result<()> = (|| {
                match self.rand(10) {
                    0..=2 => {
                        let name = if parent == "/locks/rw" {
                            if self.rand(5) == 0 {
                                "/__WRIT__"
                            } else {
                                "/__READ__"
                            }
                        } else {
                            "/n-"
                        };
                        if let Ok(p) = self.client.create(&format!("{parent}{name}"), &data, 2)? {
                            ledger_of(ledger).created(&p);
                            self.own.push(p);
                        }
                    }
                    3..=5 if !self.own.is_empty() => {
                        // Deletes keep the visible cversion running ahead of the child count.
                        let k = self.rand(self.own.len() as u64) as usize;
                        let p = self.own.swap_remove(k);
                        ledger_of(ledger).uncertain.insert(p.clone());
                        if self.client.delete(&p)?.is_ok() {
                            let mut l = ledger_of(ledger);
                            l.acked_writes += 1;
                            l.present.remove(&p);
                            l.uncertain.remove(&p);
                            l.deleted.insert(p);
                        }
                    }
                    6 => {
                        let p = format!("/eph/w{}-", self.id);
                        if let Ok(p) = self.client.create(&p, &data, 3)? {
                            let mut l = ledger_of(ledger);
                            l.acked_writes += 1;
                            l.ephemerals
                                .entry(self.client.session)
                                .or_default()
                                .insert(p);
                        }
                    }
                    7 => {
                        let plain = format!("/plain/w{}-{}-{n}", self.id, self.client.session);
                        let ops = vec![
                            create_req(&format!("{parent}/m-"), 2),
                            create_req(&plain, 0),
                        ];
                        if let Ok(paths) = self.client.multi(ops)? {
                            let mut l = ledger_of(ledger);
                            for p in &paths {
                                l.created(p);
                            }
                            self.own
                                .extend(paths.into_iter().filter(|p| p.starts_with(parent)));
                        }
                    }
                    _ => {
                        if let Ok(st) = self.client.exists(parent)? {
                            let mut l = ledger_of(ledger);
                            let c = l.max_cversion.entry(parent.to_string()).or_insert(i32::MIN);
                            *c = (*c).max(st.cversion);
                            let z = l.max_pzxid.entry(parent.to_string()).or_insert(0);
                            *z = (*z).max(st.pzxid);
                        }
                    }
                }
                Ok(())
            })();
            let z = self.client.last_zxid;
            let mut l = ledger_of(ledger);
            l.max_zxid = l.max_zxid.max(z);
            if r.is_err() {
                return;
            }
        }
    }
}

fn create_req(path: &str, flags: i32) -> palisade_proto::Request {
    palisade_proto::Request::Create(palisade_proto::CreateRequest {
        path: palisade_proto::JStr::from(path),
        data: Some(Bytes::from_static(b"m")),
        acl: Some(support::open_acl()),
        flags,
    })
}

fn ledger_of(l: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a cycle ends.
#[derive(Debug, Clone, Copy)]
enum Crash {
    Random,
    /// The server aborts itself at a named crash point (src/crashpoint.rs).
    At(&'static str, u64),
}

fn check(port: u16, ledger: &mut Ledger, cycle: usize) {
    let mut c =
        Client::connect(port, SESSION_MS).unwrap_or_else(|e| panic!("cycle {cycle}: connect: {e}"));
    for p in &ledger.present {
        if ledger.uncertain.contains(p) {
            continue;
        }
        let r = c.exists(p).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.is_ok(), "cycle {cycle}: acknowledged create {p} is gone");
    }
    for p in &ledger.deleted {
        let r = c.exists(p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.err(),
            Some(NO_NODE),
            "cycle {cycle}: acknowledged delete of {p} came back"
        );
    }
    for parent in PARENTS {
        let st = c
            .exists(parent)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("cycle {cycle}: {parent}: {e}"));
        let cv = ledger.max_cversion.get(parent).copied().unwrap_or(i32::MIN);
        assert!(
            st.cversion >= cv,
            "cycle {cycle}: {parent} cversion went down: {} < {cv}",
            st.cversion
        );
        let pz = ledger.max_pzxid.get(parent).copied().unwrap_or(0);
        assert!(
            st.pzxid >= pz,
            "cycle {cycle}: {parent} pzxid went down: {:#x} < {pz:#x}",
            st.pzxid
        );
        let mut highest = ledger.max_suffix.get(parent).copied().unwrap_or(-1);
        for child in c
            .children(parent)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_default()
        {
            if let Some((_, n)) = suffix(&format!("{parent}/{child}")) {
                highest = highest.max(n);
            }
        }
        let probe = c
            .create(&format!("{parent}/probe-"), b"", 2)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("cycle {cycle}: probe create under {parent}: {e}"));
        let (_, n) = suffix(&probe).unwrap_or_default();
        assert!(n > highest, "cycle {cycle}: suffix {n} under {parent} reused or rolled back (highest handed out {highest})");
        ledger.created(&probe);
    }
    assert!(
        c.last_zxid >= ledger.max_zxid,
        "cycle {cycle}: zxid went backwards: {:#x} < {:#x}",
        c.last_zxid,
        ledger.max_zxid
    );
    for (session, passwd, owned) in &ledger.closed {
        let r = Client::resume(port, *session, passwd.clone(), 0).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            r.is_none(),
            "cycle {cycle}: closed session {session:#x} came back"
        );
        for p in owned {
            let r = c.exists(p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                r.err(),
                Some(NO_NODE),
                "cycle {cycle}: ephemeral {p} of a closed session came back"
            );
        }
    }
    let _ = c.close_session();
}

#[test]
fn kill9_under_load_loses_nothing_acknowledged_and_reuses_no_suffix() {
    let dir = support::temp_dir("kill9");
    let port = support::free_port();
    write_config(
        &dir,
        port,
        "snapCount=50\npreAllocSize=16\nautopurge.snapRetainCount=3\nmaxSessionTimeout=20000\n",
    );
    let mut server = Server::start(&dir, port);
    {
        let mut c = Client::connect(port, SESSION_MS).unwrap_or_else(|e| panic!("{e}"));
        for p in ["/p0", "/p1", "/locks", "/locks/rw", "/eph", "/plain"] {
            c.create(p, b"", 0)
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|e| panic!("{p}: {e}"));
        }
        let _ = c.close_session();
    }
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut seed = 0x9e37_79b9u64 ^ u64::from(std::process::id());
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut sessions: Vec<(i64, Bytes)> = Vec::new();
    let mut restarts = Vec::new();
    let total = cycles();
    for cycle in 0..total {
        // (Re)attach one worker per live session, opening new sessions as needed.
        let mut workers = Vec::new();
        for i in 0..WORKERS {
            let client = match sessions.get(i) {
                Some((s, pw)) => {
                    let z = ledger_of(&ledger).max_zxid;
                    Client::resume(port, *s, pw.clone(), z)
                        .unwrap_or_else(|e| panic!("cycle {cycle}: resume: {e}"))
                        .unwrap_or_else(|| {
                            panic!("cycle {cycle}: live session {s:#x} expired across the restart")
                        })
                }
                None => Client::connect(port, SESSION_MS).unwrap_or_else(|e| panic!("{e}")),
            };
            workers.push(Worker {
                id: i,
                client,
                own: Vec::new(),
                rng: 0x2545_f491 + (cycle * WORKERS + i) as u64,
            });
        }
        // Their acknowledged ephemerals survived the restart.
        for w in &mut workers {
            let owned = ledger_of(&ledger)
                .ephemerals
                .get(&w.client.session)
                .cloned()
                .unwrap_or_default();
            for p in owned {
                let r = w.client.exists(&p).unwrap_or_else(|e| panic!("{e}"));
                assert!(
                    r.is_ok(),
                    "cycle {cycle}: ephemeral {p} of live session {:#x} is gone",
                    w.client.session
                );
            }
        }
        // One worker closes its session (acknowledged) and starts a fresh one.
        if cycle % 3 == 2 {
            let w = &mut workers[0];
            let mut l = ledger_of(&ledger);
            w.client.close_session().unwrap_or_else(|e| panic!("{e}"));
            let owned = l.ephemerals.remove(&w.client.session).unwrap_or_default();
            l.closed
                .push((w.client.session, w.client.passwd.clone(), owned));
            drop(l);
            w.client = Client::connect(port, SESSION_MS).unwrap_or_else(|e| panic!("{e}"));
        }
        sessions = workers
            .iter()
            .map(|w| (w.client.session, w.client.passwd.clone()))
            .collect();

        let crash = match cycle % 4 {
            1 => Crash::At("snapshot.mid", 1 + rand(2)),
            2 => Crash::At("log.before_ack", 20 + rand(200)),
            3 => Crash::At("log.before_sync", 20 + rand(200)),
            _ => Crash::Random,
        };
        // Crash points are armed by restarting the server with them.
        if let Crash::At(point, n) = crash {
            server.kill9();
            server = Server::spawn(
                &dir,
                port,
                &[("PALISADE_CRASH_AT", &format!("{point}:{n}"))],
                &[],
            );
            server.wait_ready(Duration::from_secs(20));
            for w in &mut workers {
                let z = ledger_of(&ledger).max_zxid;
                w.client = Client::resume(port, w.client.session, w.client.passwd.clone(), z)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .unwrap_or_else(|| {
                        panic!("cycle {cycle}: session expired across a clean restart")
                    });
            }
        }
        let stop_at = Instant::now() + Duration::from_millis(4000);
        let handles: Vec<_> = workers
            .into_iter()
            .map(|mut w| {
                let l = ledger.clone();
                std::thread::spawn(move || {
                    w.run(&l, stop_at);
                    w
                })
            })
            .collect();
        match crash {
            Crash::Random => {
                std::thread::sleep(Duration::from_millis(100 + rand(600)));
                server.kill9();
            }
            Crash::At(point, _) => {
                if server.wait_exit(Duration::from_secs(3)).is_none() {
                    eprintln!("cycle {cycle}: crash point {point} not reached in time; kill -9");
                }
                server.kill9();
            }
        }
        for h in handles {
            let _ = h.join();
        }
        // Sometimes kill the recovery itself before it finishes.
        if cycle % 5 == 4 {
            let mut s = Server::spawn(&dir, port, &[], &[]);
            std::thread::sleep(Duration::from_millis(rand(30)));
            s.kill9();
        }
        let t0 = Instant::now();
        server = Server::spawn(&dir, port, &[], &[]);
        server.wait_ready(Duration::from_secs(20));
        restarts.push(t0.elapsed());
        let mut l = ledger_of(&ledger);
        check(port, &mut l, cycle);
        eprintln!(
            "cycle {cycle}: {crash:?}; {} acked writes so far, {} present, {} deleted, restart {:?}",
            l.acked_writes,
            l.present.len(),
            l.deleted.len(),
            t0.elapsed()
        );
    }
    let l = ledger_of(&ledger);
    assert!(
        l.acked_writes > total as u64 * 20,
        "too little load to mean anything: {}",
        l.acked_writes
    );
    assert!(!l.deleted.is_empty() && !l.closed.is_empty());
    let snaps = std::fs::read_dir(dir.join("data/snapshots"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(snaps > 0, "no snapshot was ever written");
    drop(l);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
