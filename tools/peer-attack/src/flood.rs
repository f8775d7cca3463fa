//! Resource attacks on a peer port: links that announce big frames and send part of each,
//! and many idle connections (more than one process may hold: this tool raises its own
//! RLIMIT_NOFILE to the hard limit, and past it runs itself again in worker processes).

use crate::dial::{open, Creds, Target};
use crate::raft_rpcs::first_words;
use crate::Attempts;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;

const MIB: u64 = 1 << 20;

/// `links` links per way each announce a frame of `mib` MiB and send `send_mib` MiB of it,
/// then stay open until `hold` has passed since the start.
pub async fn frames(
    target: &Target,
    at: &Attempts,
    creds: &Creds,
    links: usize,
    mib: u64,
    send_mib: u64,
    hold: Duration,
) -> Value {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (way, as_id) in at.pairs() {
        for _ in 0..links {
            let (target, creds) = (target.clone(), creds.clone());
            tasks.push(tokio::spawn(async move {
                let mut peer = match open(way, &target, as_id, None, &creds).await {
                    Ok(p) => p,
                    Err(e) => return (way, Err(first_words(&e)), 0u64, None),
                };
                let w = peer.io.get_mut();
                let len = u32::try_from(mib * MIB).unwrap_or(u32::MAX);
                let mut sent = 0u64;
                let mut ended = None;
                if let Err(e) = w.write_all(&len.to_be_bytes()).await {
                    ended = Some(format!("closed: {e}"));
                }
                let chunk = vec![0u8; 64 << 10];
                while ended.is_none() && sent < send_mib * MIB {
                    match tokio::time::timeout(Duration::from_secs(2), w.write_all(&chunk)).await {
                        Ok(Ok(())) => sent += chunk.len() as u64,
                        Ok(Err(e)) => ended = Some(first_words(&format!("closed: {e}"))),
                        Err(_) => ended = Some("stalled: the member stopped reading".into()),
                    }
                }
                let _ = w.flush().await;
                if let Some(left) = hold.checked_sub(start.elapsed()) {
                    tokio::time::sleep(left).await;
                }
                drop(peer);
                (way, Ok(()), sent, ended)
            }));
        }
    }
    let mut per: BTreeMap<&str, (u64, u64, BTreeMap<String, u64>)> = BTreeMap::new();
    for t in tasks {
        let Ok((way, linked, sent, ended)) = t.await else {
            continue;
        };
        let e = per.entry(way.name()).or_default();
        match linked {
            Ok(()) => {
                e.0 += 1;
                e.1 += sent;
                *e.2.entry(ended.unwrap_or_else(|| "sent all, held".into()))
                    .or_default() += 1;
            }
            Err(why) => *e.2.entry(why).or_default() += 1,
        }
    }
    let out: Vec<Value> = per
        .into_iter()
        .map(|(way, (opened, sent, how))| {
            json!({"way": way, "links": links, "opened": opened,
                   "bytes_sent": sent, "outcomes": how})
        })
        .collect();
    json!({"announced_mib": mib, "attempts": out})
}

/// Raises RLIMIT_NOFILE's soft limit to its hard one; the limit now.
fn raise_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write/read the struct passed, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
    }
    r.rlim_cur
}

/// Descriptors a process keeps for itself besides the connections.
const SPARE_FDS: u64 = 200;

pub struct Idle {
    pub target: String,
    pub count: u64,
    pub hold: Duration,
    /// Source addresses 127.0.0.2.. (0: the kernel's choice, 127.0.0.1).
    pub sources: u8,
    pub connect_within: Duration,
    pub worker: bool,
}

/// `count` TCP connections to `target` that send nothing, held for `hold` once made.
pub async fn idle(a: Idle) -> Value {
    let limit = raise_nofile();
    let room = limit.saturating_sub(SPARE_FDS).max(1);
    if !a.worker && a.count > room {
        return split(&a, room).await;
    }
    let start = Instant::now();
    let conns = Arc::new(Held::default());
    let gate = Arc::new(Semaphore::new(256));
    let mut tasks = Vec::new();
    let target: SocketAddr = match a.target.parse() {
        Ok(t) => t,
        Err(e) => return json!({"error": format!("{}: {e}", a.target)}),
    };
    for i in 0..a.count {
        if start.elapsed() > a.connect_within {
            break;
        }
        let Ok(permit) = gate.clone().acquire_owned().await else {
            break;
        };
        let conns = conns.clone();
        let source =
            (a.sources > 0).then(|| Ipv4Addr::new(127, 0, 0, 2 + (i % a.sources as u64) as u8));
        tasks.push(tokio::spawn(async move {
            let r = tokio::time::timeout(Duration::from_secs(3), connect(target, source)).await;
            drop(permit);
            match r {
                Ok(Ok(s)) => {
                    conns.push(s);
                    None
                }
                Ok(Err(e)) => Some(first_words(&format!("connect: {e}"))),
                Err(_) => Some("connect timed out".to_string()),
            }
        }));
    }
    let mut failed = BTreeMap::<String, u64>::new();
    for t in tasks {
        if let Ok(Some(why)) = t.await {
            *failed.entry(why).or_default() += 1;
        }
    }
    let opened_in = start.elapsed();
    tokio::time::sleep(a.hold).await;
    let held = conns.take();
    let mut open_at_end = 0u64;
    for s in &held {
        let mut b = [0u8; 1];
        if let Err(e) = s.try_read(&mut b) {
            if e.kind() == std::io::ErrorKind::WouldBlock {
                open_at_end += 1;
            }
        }
    }
    json!({"requested": a.count, "fd_limit": limit, "opened": held.len(),
           "opened_in_s": opened_in.as_secs_f64(), "failed": failed,
           "open_at_end": open_at_end, "closed_by_member": held.len() as u64 - open_at_end})
}

async fn connect(target: SocketAddr, source: Option<Ipv4Addr>) -> std::io::Result<TcpStream> {
    let s = TcpSocket::new_v4()?;
    if let Some(ip) = source {
        s.bind(SocketAddr::from((ip, 0)))?;
    }
    s.connect(target).await
}

/// Runs the connections in worker processes of `room` each, at once, and adds up.
async fn split(a: &Idle, room: u64) -> Value {
    let Ok(exe) = std::env::current_exe() else {
        return json!({"error": "no path to this program"});
    };
    let mut children = Vec::new();
    let mut left = a.count;
    while left > 0 {
        let n = left.min(room);
        left -= n;
        let child = tokio::process::Command::new(&exe)
            .args([
                "idle",
                "--target",
                &format!("0@{}", a.target),
                "--count",
                &n.to_string(),
                "--hold-s",
                &a.hold.as_secs_f64().to_string(),
                "--sources",
                &a.sources.to_string(),
                "--connect-within-s",
                &a.connect_within.as_secs_f64().to_string(),
                "--worker",
            ])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(e) => return json!({"error": format!("spawning a worker: {e}")}),
        }
    }
    let mut sum = json!({"requested": a.count, "workers": children.len(), "opened": 0,
                         "open_at_end": 0, "closed_by_member": 0, "opened_in_s": 0.0,
                         "failed": {}});
    for c in children {
        let Ok(out) = c.wait_with_output().await else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        for k in ["opened", "open_at_end", "closed_by_member"] {
            sum[k] = json!(sum[k].as_u64().unwrap_or(0) + v[k].as_u64().unwrap_or(0));
        }
        sum["fd_limit"] = v["fd_limit"].clone();
        let t = v["opened_in_s"].as_f64().unwrap_or(0.0);
        if t > sum["opened_in_s"].as_f64().unwrap_or(0.0) {
            sum["opened_in_s"] = json!(t);
        }
        if let Some(f) = v["failed"].as_object() {
            for (k, n) in f {
                let before = sum["failed"][k].as_u64().unwrap_or(0);
                sum["failed"][k] = json!(before + n.as_u64().unwrap_or(0));
            }
        }
    }
    sum
}

/// The connections made so far (tasks add theirs as they connect).
#[derive(Default)]
struct Held(std::sync::Mutex<Vec<TcpStream>>);

impl Held {
    fn push(&self, s: TcpStream) {
        if let Ok(mut v) = self.0.lock() {
            v.push(s);
        }
    }

    fn take(&self) -> Vec<TcpStream> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}
