//! Live mode: cycles of load → kill -9 at a chosen or random moment → restart → checks.
//!
//! The moments, in turn: a random time; right after a burst of acknowledged writes; while a
//! snapshot is being written (a `snapshot*` file in the data dir that is a `.tmp` or still
//! growing; `--snapshot-word csnp` asks Palisade for one); at a named crash point of Palisade
//! (`--crash-points`: `log.before_sync`, `log.before_ack`, `snapshot.mid`); and during recovery
//! itself (killed again within milliseconds of the restart).

use crate::check;
use crate::ledger::Ledger;
use crate::server::{four, Server};
use crate::workload::{lock, Worker, SETUP};
use palisade_client::{Client, CreateMode, Error, SessionState};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The shell command that starts the server on its data dir (run with `sh -c`, in its
    /// own process group so kill -9 reaches every process it starts). Not with --ensemble.
    #[arg(long, required_unless_present = "ensemble")]
    start: Option<String>,
    /// Where the server listens (loopback).
    #[arg(long, default_value = "127.0.0.1:2181")]
    server: String,
    /// The server's data dir: watched for snapshots being written.
    #[arg(long, required_unless_present = "ensemble")]
    data_dir: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    #[arg(long, default_value_t = 10)]
    pub(crate) cycles: u64,
    /// Stop starting new cycles after this many seconds.
    #[arg(long, default_value_t = 300)]
    pub(crate) max_seconds: u64,
    #[arg(long, default_value_t = 4)]
    pub(crate) workers: usize,
    #[arg(long, default_value_t = 30_000)]
    pub(crate) session_timeout_ms: u64,
    /// Ensemble mode: lay out and start this many members on loopback ports under --work,
    /// and kill -9 or SIGSTOP the leader or a follower each cycle (docs/design/FAILOVER.md).
    #[arg(long)]
    ensemble: Option<usize>,
    /// Ensemble mode: which server the members run.
    #[arg(long, value_enum, default_value = "palisade")]
    pub(crate) kind: crate::ensemble::Kind,
    /// Ensemble mode: the server binary (Palisade; default target/release/palisade) or the
    /// java binary (ZooKeeper; default java).
    #[arg(long)]
    pub(crate) bin: Option<PathBuf>,
    /// Ensemble mode: where the members' dirs go (removed first).
    #[arg(long)]
    pub(crate) work: Option<PathBuf>,
    /// Ensemble mode: the members' tickTime (initLimit=10, syncLimit=5).
    #[arg(long, default_value_t = 200)]
    pub(crate) tick_ms: u64,
    /// A four-letter word that starts a snapshot (Palisade: csnp).
    #[arg(long)]
    snapshot_word: Option<String>,
    /// Also crash at Palisade's named crash points (PALISADE_CRASH_AT).
    #[arg(long)]
    crash_points: bool,
    /// After each cycle, run the offline checks on the data dir (Palisade data dirs).
    #[arg(long)]
    offline_checks: bool,
    /// Where the server's output goes.
    #[arg(long, default_value = "failover-server.log")]
    server_log: PathBuf,
}

#[derive(Debug, Clone, Copy)]
enum Moment {
    Random,
    AfterBurst,
    DuringSnapshot,
    CrashPoint(&'static str),
    DuringRecovery,
}

/// A snapshot being written: a `.tmp` snapshot file, or one whose size changed in 20 ms.
fn snapshot_in_progress(dir: &Path) -> bool {
    let files = |d: &Path| -> Vec<(PathBuf, u64)> {
        let mut v = Vec::new();
        let mut stack = vec![d.to_path_buf()];
        while let Some(x) = stack.pop() {
            for e in std::fs::read_dir(&x).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("snapshot"))
                {
                    v.push((p.clone(), e.metadata().map_or(0, |m| m.len())));
                }
            }
        }
        v
    };
    let before = files(dir);
    if before
        .iter()
        .any(|(p, _)| p.extension().is_some_and(|x| x == "tmp"))
    {
        return true;
    }
    std::thread::sleep(Duration::from_millis(20));
    let after = files(dir);
    after.iter().any(|(p, n)| {
        before
            .iter()
            .find(|(q, _)| q == p)
            .is_none_or(|(_, m)| m != n)
    })
}

fn block<F: std::future::Future>(rt: &tokio::runtime::Runtime, f: F) -> F::Output {
    rt.block_on(f)
}

pub fn run(a: Args) -> Result<bool, String> {
    if let Some(n) = a.ensemble {
        if n < 2 {
            return Err("--ensemble needs at least 2 members".into());
        }
        return crate::ensemble::run(a, n);
    }
    let start = a.start.clone().unwrap_or_default();
    let data_dir = a.data_dir.clone().unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let port: u16 = a
        .server
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or("--server must be HOST:PORT")?;
    let timeout = Duration::from_millis(a.session_timeout_ms);
    let mut server = Server::new(&start, port, &a.server_log);
    server.spawn(&[]).map_err(|e| e.to_string())?;
    server.wait_ready(Duration::from_secs(120))?;
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    block(&rt, async {
        let c = Client::connect(&a.server, timeout).await?;
        for p in SETUP {
            match c.create(p, b"", CreateMode::Persistent).await {
                Ok(_) | Err(Error::Zk(palisade_client::ErrorCode::NodeExists)) => {}
                Err(e) => return Err(e),
            }
        }
        c.close().await
    })
    .map_err(|e| format!("setup: {e}"))?;
    let mut workers = Vec::new();
    for i in 0..a.workers {
        let c = block(&rt, Client::connect(&a.server, timeout)).map_err(|e| e.to_string())?;
        workers.push(Worker::new(i, c, a.seed * 1000 + i as u64));
    }
    let mut rng = fastrand::Rng::with_seed(a.seed);
    let mut moments = vec![
        Moment::Random,
        Moment::AfterBurst,
        Moment::DuringSnapshot,
        Moment::DuringRecovery,
    ];
    if a.crash_points {
        moments.extend([
            Moment::CrashPoint("log.before_ack"),
            Moment::CrashPoint("snapshot.mid"),
            Moment::CrashPoint("log.before_sync"),
        ]);
    }
    let t_start = Instant::now();
    let mut all_ok = true;
    let mut cycles_run = 0;
    let mut restarts = Vec::new();
    for cycle in 0..a.cycles {
        if t_start.elapsed() > Duration::from_secs(a.max_seconds) {
            println!("time limit reached after {cycle} cycles");
            break;
        }
        let moment = moments[(cycle as usize) % moments.len()];
        if let Moment::CrashPoint(point) = moment {
            // Armed by restarting the server with the point set.
            server.kill9();
            let n = 1 + rng.u64(
                ..if point.starts_with("snapshot") {
                    2
                } else {
                    200
                },
            );
            server
                .spawn(&[("PALISADE_CRASH_AT".into(), format!("{point}:{n}"))])
                .map_err(|e| e.to_string())?;
            server.wait_ready(Duration::from_secs(120))?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writes_before = lock(&ledger).acked_writes;
        let handles: Vec<_> = workers
            .drain(..)
            .map(|mut w| {
                let (l, s) = (ledger.clone(), stop.clone());
                rt.spawn(async move {
                    w.run(l, s).await;
                    w
                })
            })
            .collect();
        let t_load = Instant::now();
        let what = match moment {
            Moment::Random => {
                std::thread::sleep(Duration::from_millis(100 + rng.u64(..900)));
                "random".to_string()
            }
            Moment::AfterBurst => {
                let burst = 50 + rng.u64(..400);
                while lock(&ledger).acked_writes < writes_before + burst
                    && t_load.elapsed() < Duration::from_secs(10)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                format!("after a burst of {burst} acknowledged writes")
            }
            Moment::DuringSnapshot => {
                std::thread::sleep(Duration::from_millis(50 + rng.u64(..200)));
                if let Some(w) = &a.snapshot_word {
                    four(port, w);
                }
                let mut caught = false;
                while t_load.elapsed() < Duration::from_secs(8) {
                    if snapshot_in_progress(&data_dir) {
                        caught = true;
                        break;
                    }
                }
                if caught {
                    "while a snapshot was being written".to_string()
                } else {
                    "no snapshot seen in 8 s: at the end of the wait".to_string()
                }
            }
            Moment::CrashPoint(point) => {
                while !server.exited() && t_load.elapsed() < Duration::from_secs(8) {
                    std::thread::sleep(Duration::from_millis(2));
                }
                if server.exited() {
                    format!("at crash point {point}")
                } else {
                    format!("crash point {point} not reached in 8 s: kill -9")
                }
            }
            Moment::DuringRecovery => {
                std::thread::sleep(Duration::from_millis(100 + rng.u64(..500)));
                "random, then again during recovery".to_string()
            }
        };
        let killed_after = t_load.elapsed();
        server.kill9();
        stop.store(true, Ordering::Relaxed);
        if let Moment::DuringRecovery = moment {
            server.spawn(&[]).map_err(|e| e.to_string())?;
            std::thread::sleep(Duration::from_millis(rng.u64(..40)));
            server.kill9();
        }
        server.spawn(&[]).map_err(|e| e.to_string())?;
        let restart = server.wait_ready(Duration::from_secs(120))?;
        restarts.push(restart);
        for h in handles {
            match block(&rt, h) {
                Ok(w) => workers.push(w),
                Err(e) => return Err(format!("a worker failed: {e}")),
            }
        }
        // The workers are stopped: the checks own the ledger until they are done.
        let mut l = std::mem::take(&mut *lock(&ledger));
        let mut found = Vec::new();
        block(&rt, async {
            // Every worker's session resumed across the restart and kept its ephemerals.
            for w in &workers {
                let state = *w.client.state().borrow();
                if state.is_terminal() {
                    found.push(format!(
                        "session {:#x} of worker {} did not survive the restart ({state:?})",
                        w.client.session_id(),
                        w.id
                    ));
                    continue;
                }
                found.extend(check::ephemerals(&w.client, &l).await?);
            }
            let c = Client::connect(&a.server, timeout).await?;
            found.extend(check::after_restart(&c, &mut l).await?);
            let _ = c.close().await;
            Ok::<(), Error>(())
        })
        .map_err(|e| format!("cycle {cycle}: checking: {e}"))?;
        *lock(&ledger) = l;
        // Now and then a worker closes its session (acknowledged): its ephemerals must go.
        if cycle % 3 == 2 {
            if let Some(w) = workers.first_mut() {
                let session = w.client.session_id();
                block(&rt, w.client.close()).map_err(|e| e.to_string())?;
                let mut l = lock(&ledger);
                let owned = l.ephemerals.remove(&session).unwrap_or_default();
                // The acknowledged close deleted them.
                for p in &owned {
                    l.present.remove(p);
                    l.deleted.insert(p.clone());
                }
                l.closed.push((session, owned));
                drop(l);
                w.client =
                    block(&rt, Client::connect(&a.server, timeout)).map_err(|e| e.to_string())?;
            }
        }
        if a.offline_checks {
            let d = palisade_inspect::DataDir::new(&data_dir);
            // Violations only: a replay cut short because the live server purged a snapshot
            // meanwhile is not one (damage in the log is, and is reported as a violation).
            match palisade_inspect::invariants(&d) {
                Ok(r) if r.violations.is_empty() => {}
                Ok(r) => found.push(format!("offline invariants:\n{}", r.text())),
                Err(e) => found.push(format!("offline invariants: {e}")),
            }
        }
        let mut l = lock(&ledger);
        found.append(&mut l.violations);
        cycles_run += 1;
        println!(
            "cycle {cycle}: killed {what} after {} ms; restarted in {} ms; {} writes acknowledged ({} in all), {} nodes tracked, {} deleted, {} uncertain; {}",
            killed_after.as_millis(),
            restart.as_millis(),
            l.acked_writes - writes_before,
            l.acked_writes,
            l.present.len(),
            l.deleted.len(),
            l.uncertain.len(),
            if found.is_empty() { "ok".to_string() } else { format!("{} VIOLATIONS", found.len()) }
        );
        for f in &found {
            println!("  VIOLATION: {f}");
        }
        if !found.is_empty() {
            all_ok = false;
        }
        if lock_state_expired(&workers) {
            return Err("every worker's session expired; the server restarts too slowly for --session-timeout-ms".into());
        }
    }
    let l = lock(&ledger);
    restarts.sort();
    println!(
        "summary: {cycles_run} cycles, {} writes acknowledged, {} nodes checked present, {} deletes checked, {} closed sessions checked; restart median {} ms, max {} ms; {}",
        l.acked_writes,
        l.present.len(),
        l.deleted.len(),
        l.closed.len(),
        restarts.get(restarts.len() / 2).map_or(0, |d| d.as_millis()),
        restarts.last().map_or(0, |d| d.as_millis()),
        if all_ok { "no violation" } else { "VIOLATIONS FOUND" }
    );
    Ok(all_ok)
}

fn lock_state_expired(workers: &[Worker]) -> bool {
    !workers.is_empty()
        && workers
            .iter()
            .all(|w| *w.client.state().borrow() == SessionState::Expired)
}
