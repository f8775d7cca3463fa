//! `palisade-bench-zkc`: the driver's independent-client load, from the third-party
//! `zookeeper-client` crate (kezhuw/zookeeper-client-rust 0.9) as an application would use
//! it — its own connection handling, request encoding and futures — on one client thread (a
//! tokio current-thread runtime; the crate's async-io reactor adds one thread of its own).
//! One JSON line per run on stdout, the fields of `palisade-bench` (tools/bench/src), so the
//! driver reads both the same way.
//!
//!   palisade-bench-zkc get --server 127.0.0.1:2181 --sessions 32 --inflight 64 --seconds 8 \
//!       --server-pid 1234
//!   palisade-bench-zkc set | create-seq | lock   (same options; lock runs one request at a time)
//!   palisade-bench-zkc mutex | rwlock [--readers PCT]   (the classic recipes, by hand: recipes.rs)
//!
//! `--server` takes one address or an ensemble's members, comma-separated: session i connects to
//! member i mod n only (a deterministic spread; the crate itself would pick one at random), and
//! `--server-pid` the members' pids (their CPU summed).

#[path = "../../src/cpu.rs"]
mod cpu;
mod holders;
mod kv;
mod lock;
mod recipes;
mod stages;
// Shared with palisade-bench, which also uses its timeline.
#[allow(dead_code)]
#[path = "../../src/stats.rs"]
mod stats;

use std::time::Duration;
use zookeeper_client as zk;

/// A run's parameters (the options of `palisade-bench run` that apply here).
pub struct Load {
    /// One server, or an ensemble's members: session i uses `member(i)`.
    pub servers: Vec<String>,
    pub sessions: u64,
    pub inflight: usize,
    pub duration: Duration,
    pub keys: u64,
    pub size: usize,
    pub server_pid: Vec<u32>,
    /// rwlock: the share of acquisitions that are reads, percent.
    pub readers_pct: u64,
    /// mutex and rwlock: hold as soon as the node is created, without the recipe's wait. A
    /// negative control: the safety check must then report violations and the run fail.
    pub fake_lock: bool,
}

impl Load {
    /// The server session `i` connects to: member i mod n.
    pub fn member(&self, i: u64) -> &str {
        let n = self.servers.len().max(1) as u64;
        self.servers
            .get((i % n) as usize)
            .map(String::as_str)
            .unwrap_or("127.0.0.1:2181")
    }

    /// True for an ensemble's members: a new session then syncs before it reads what the setup
    /// session wrote through member 0 (its member may not have applied it yet).
    pub fn spread(&self) -> bool {
        self.servers.len() > 1
    }
}

/// Every path this tool touches is under this root, apart from palisade-bench's `/bench`.
pub const ROOT: &str = "/bench-zkc";

pub type Result<T> = std::result::Result<T, String>;

/// A session as the crate makes one; 30 s timeout, as palisade-bench's sessions.
pub async fn connect(server: &str) -> Result<zk::Client> {
    zk::Client::connector()
        .session_timeout(Duration::from_secs(30))
        .connect(server)
        .await
        .map_err(|e| format!("connect {server}: {e}"))
}

/// A sync of `path` on this session's member, so that what another member committed is visible.
pub async fn sync(client: &zk::Client, path: &str) -> Result<()> {
    client
        .sync(path)
        .await
        .map_err(|e| format!("sync {path}: {e}"))
}

/// Creates `paths` (parents first) that are missing, up to 1024 at a time on one session.
pub async fn ensure(client: &zk::Client, paths: &[String], data: &[u8]) -> Result<()> {
    use futures::stream::{FuturesOrdered, StreamExt};
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for chunk in paths.chunks(1024) {
        let mut pending: FuturesOrdered<_> = chunk
            .iter()
            .map(|p| client.create(p, data, &opts))
            .collect();
        while let Some(r) = pending.next().await {
            match r {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(format!("setup create: {e}")),
            }
        }
    }
    Ok(())
}

fn usage() -> String {
    "usage: palisade-bench-zkc get|set|create-seq|lock|mutex|rwlock [--server H:P[,H:P...]] \
     [--sessions N] [--inflight N] [--seconds S] [--keys N] [--size B] [--server-pid PID[,PID...]] \
     [--readers PCT] [--fake-lock]"
        .into()
}

fn parse(args: &[String]) -> Result<(String, Load)> {
    let mut it = args.iter();
    let workload = it.next().ok_or_else(usage)?.clone();
    let mut load = Load {
        servers: vec!["127.0.0.1:2181".into()],
        sessions: 32,
        inflight: 64,
        duration: Duration::from_secs(10),
        keys: 10_000,
        size: 100,
        server_pid: Vec::new(),
        readers_pct: 80,
        fake_lock: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--fake-lock" {
            load.fake_lock = true;
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value; {}", usage()))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--server" => {
                load.servers = v
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(String::from)
                    .collect();
                if load.servers.is_empty() {
                    return Err(format!("--server {v}: no address"));
                }
            }
            "--sessions" => load.sessions = num(v)?.max(1),
            "--inflight" => load.inflight = num(v)?.max(1) as usize,
            "--seconds" => {
                let s: f64 = v.parse().map_err(|e| format!("--seconds {v}: {e}"))?;
                load.duration = Duration::try_from_secs_f64(s).map_err(|e| e.to_string())?;
            }
            "--readers" => {
                load.readers_pct = num(v)?;
                if load.readers_pct > 100 {
                    return Err(format!("--readers {v}: a percentage, 0 to 100"));
                }
            }
            "--keys" => load.keys = num(v)?.max(1),
            "--size" => load.size = num(v)? as usize,
            "--server-pid" => {
                load.server_pid = v
                    .split(',')
                    .map(|p| p.parse().map_err(|e| format!("--server-pid {p}: {e}")))
                    .collect::<Result<_>>()?
            }
            _ => return Err(format!("unknown option {flag}; {}", usage())),
        }
    }
    Ok((workload, load))
}

async fn run(workload: &str, load: Load) -> Result<String> {
    match workload {
        "get" | "set" | "create-seq" => kv::run(workload, &load).await,
        "lock" => lock::run(&load).await,
        "mutex" | "rwlock" => recipes::run(workload, &load).await,
        other => Err(format!("unknown workload {other}; {}", usage())),
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = parse(&args).and_then(|(workload, load)| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?
            .block_on(run(&workload, load))
    });
    match out {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("palisade-bench-zkc: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_the_driver_s_command_lines() {
        let (w, l) = parse(&args(
            "set --server 127.0.0.1:28001 --sessions 32 --inflight 64 --seconds 2.5 --server-pid 7",
        ))
        .unwrap();
        assert_eq!(w, "set");
        assert_eq!(l.servers, ["127.0.0.1:28001"]);
        assert!(!l.spread());
        assert_eq!(
            (l.member(0), l.member(5)),
            ("127.0.0.1:28001", "127.0.0.1:28001")
        );
        assert_eq!((l.readers_pct, l.fake_lock), (80, false));
        assert_eq!((l.sessions, l.inflight), (32, 64));
        assert_eq!(l.duration, Duration::from_millis(2500));
        assert_eq!(l.server_pid, [7]);
        assert!(parse(&args("get --seconds")).is_err());
        assert!(parse(&args("get --seconds -1")).is_err());
        assert!(parse(&args("get --bogus 1")).is_err());
        assert!(parse(&args("get --server-pid 1,x")).is_err());
        assert!(parse(&[]).is_err());
    }

    #[test]
    fn sessions_are_spread_over_the_members_in_turn() {
        let (w, l) = parse(&args(
            "rwlock --server 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3 --server-pid 7,8,9 \
             --readers 60 --fake-lock --sessions 8",
        ))
        .unwrap();
        assert_eq!(w, "rwlock");
        assert!(l.spread());
        let members: Vec<&str> = (0..l.sessions).map(|i| l.member(i)).collect();
        assert_eq!(
            members,
            [
                "127.0.0.1:1",
                "127.0.0.1:2",
                "127.0.0.1:3",
                "127.0.0.1:1",
                "127.0.0.1:2",
                "127.0.0.1:3",
                "127.0.0.1:1",
                "127.0.0.1:2"
            ]
        );
        assert_eq!(l.server_pid, [7, 8, 9]);
        assert_eq!((l.readers_pct, l.fake_lock), (60, true));
        assert!(parse(&args("mutex --server ,")).is_err());
        assert!(parse(&args("rwlock --readers 101")).is_err());
    }
}
