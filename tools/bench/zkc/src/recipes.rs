//! mutex and rwlock: the classic lock recipes written by hand on the crate's primitives (create,
//! getChildren, exists with a watch, delete), one session per contender, each acquiring and
//! releasing in a loop. Unlike `lock` (the crate's own `Client::lock`), every request the recipe
//! makes is visible here:
//!
//! - acquire: create an ephemeral-sequential node in the lock dir, named as Curator 5 names its
//!   lock nodes (`_c_<uuid>-lock-` for InterProcessMutex; `_c_<uuid>-__READ__` / `__WRIT__` for
//!   InterProcessReadWriteLock, the names in its class constants); list the dir's children,
//!   ordered by their sequence number; if nothing blocks us, we hold; else set an exists watch
//!   on the blocker, wait for its deletion, and list again;
//! - blocked: a mutex's or a writer's node by its predecessor (any earlier node), a reader's by
//!   an earlier writer only — the earliest one, as Curator's read lock watches it;
//! - release: delete our node.
//!
//! Safety is checked in-process (holders.rs); any violation, error, or watch that never fires
//! fails the run. The sessions connect (and, on an ensemble, sync) before the timed part starts.

use crate::holders::Holders;
use crate::kv::Rng;
use crate::stages::Stages;
use crate::stats::Latencies;
use crate::{connect, ensure, Load, Result, ROOT};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper_client as zk;

/// A watch on a live blocker that has not fired by then is reported as a failure: the
/// holder's hold is one task yield, so even a loaded machine hands over well within this.
const WATCH_LIMIT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    /// The mutex: every node excludes every later one.
    Mutex,
    Read,
    Write,
}

impl Mode {
    /// The lock name in the node's name, after Curator's protection prefix.
    fn name(self) -> &'static str {
        match self {
            Mode::Mutex => "lock-",
            Mode::Read => "__READ__",
            Mode::Write => "__WRIT__",
        }
    }

    fn writes(self) -> bool {
        self != Mode::Read
    }
}

/// The node's sequence number and its mode, or None for a node that is not one of ours (a
/// mutex counts only `lock-` nodes, a read-write lock `__READ__` and `__WRIT__` ones). The
/// sequence is what follows the lock name, as Curator's `fixForSorting` takes it.
fn parse(child: &str, mutex: bool) -> Option<(i64, Mode)> {
    let modes: &[Mode] = if mutex {
        &[Mode::Mutex]
    } else {
        &[Mode::Read, Mode::Write]
    };
    modes.iter().find_map(|&m| {
        let (_, seq) = child.rsplit_once(m.name())?;
        let ok = !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit());
        Some((seq.parse().ok().filter(|_| ok)?, m))
    })
}

/// Whom `me` (a node name, in `mode`) waits for among the lock dir's `children`: None when it
/// holds. An error when `me` is not among them (our ephemeral node is gone).
fn blocker<'a>(children: &'a [String], me: &str, mode: Mode) -> Result<Option<&'a str>> {
    let mutex = mode == Mode::Mutex;
    let (my_seq, _) = parse(me, mutex).ok_or_else(|| format!("our node {me} has no sequence"))?;
    if !children.iter().any(|c| c == me) {
        return Err(format!("our node {me} is not among the lock's children"));
    }
    let mut earlier: Vec<(i64, Mode, &str)> = children
        .iter()
        .filter_map(|c| parse(c, mutex).map(|(s, m)| (s, m, c.as_str())))
        .filter(|&(s, _, _)| s < my_seq)
        .collect();
    earlier.sort_unstable_by_key(|&(s, _, _)| s);
    Ok(if mode.writes() {
        earlier.last().map(|&(_, _, c)| c)
    } else {
        earlier
            .iter()
            .find(|&&(_, m, _)| m == Mode::Write)
            .map(|&(_, _, c)| c)
    })
}

/// A Curator-style protection id: the 8-4-4-4-12 hex shape of a random UUID.
fn protection_id(rng: &mut Rng) -> String {
    let mut hex = String::with_capacity(32);
    while hex.len() < 32 {
        hex.push_str(&format!("{:016x}", rng.below(u64::MAX)));
    }
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// One acquisition: our node's path once we hold (with `fake`, at once after its creation).
async fn acquire(
    client: &zk::Client,
    dir: &str,
    mode: Mode,
    rng: &mut Rng,
    fake: bool,
    stages: &Stages,
) -> Result<String> {
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let prefix = format!("_c_{}-{}", protection_id(rng), mode.name());
    let sent = Instant::now();
    let (_, seq) = client
        .create(&format!("{dir}/{prefix}"), b"", &opts)
        .await
        .map_err(|e| format!("create: {e}"))?;
    stages.rtt("create_rtt", sent);
    let me = format!("{prefix}{seq}");
    let path = format!("{dir}/{me}");
    if fake {
        return Ok(path);
    }
    // The last wake-up: the blocker whose deletion let us list again.
    let mut woken = None;
    loop {
        let sent = Instant::now();
        let children = client
            .list_children(dir)
            .await
            .map_err(|e| format!("getChildren: {e}"))?;
        stages.rtt("list_rtt", sent);
        let listed = woken.as_ref().map(|w| stages.listed(w));
        let Some(b) = blocker(&children, &me, mode)? else {
            if let (Some(w), Some(listed)) = (&woken, listed) {
                stages.held(w, listed);
            }
            return Ok(path);
        };
        let b = format!("{dir}/{b}");
        let sent = Instant::now();
        let (stat, watcher) = client
            .check_and_watch_stat(&b)
            .await
            .map_err(|e| format!("exists {b}: {e}"))?;
        stages.rtt("exists_rtt", sent);
        if stat.is_none() {
            woken = None;
            continue; // gone between the listing and the exists: look again
        }
        let event = tokio::time::timeout(WATCH_LIMIT, watcher.changed())
            .await
            .map_err(|_| format!("no event for {b} within {WATCH_LIMIT:?}"))?;
        woken = Some(stages.woken(&b));
        if event.event_type == zk::EventType::Session {
            return Err(format!(
                "session event while waiting: {:?}",
                event.session_state
            ));
        }
    }
}

/// What one contender did over the run.
#[derive(Default)]
struct Tally {
    lat: Latencies,
    reads: u64,
    writes: u64,
}

async fn contender(
    client: zk::Client,
    k: u64,
    mutex: bool,
    load: Arc<RunLoad>,
    holders: Arc<Holders>,
    stages: Arc<Stages>,
) -> Result<(Tally, zk::Client)> {
    let mut rng = Rng::new(k + 101);
    let mut t = Tally::default();
    while Instant::now() < load.stop {
        let mode = match (mutex, rng.below(100) < load.readers_pct) {
            (true, _) => Mode::Mutex,
            (false, true) => Mode::Read,
            (false, false) => Mode::Write,
        };
        let t0 = Instant::now();
        let path = acquire(&client, &load.dir, mode, &mut rng, load.fake, &stages).await?;
        t.lat.record(t0.elapsed());
        *(if mode.writes() {
            &mut t.writes
        } else {
            &mut t.reads
        }) += 1;
        holders.enter(mode.writes());
        // The hold: every other task that is ready runs meanwhile (one client thread), so a
        // contender that believes it holds too is caught here.
        tokio::task::yield_now().await;
        holders.leave(mode.writes());
        let sent = stages.delete_sent(&path);
        client
            .delete(&path, None)
            .await
            .map_err(|e| format!("delete {path}: {e}"))?;
        stages.delete_replied(&path, sent);
    }
    Ok((t, client))
}

struct RunLoad {
    dir: String,
    stop: Instant,
    readers_pct: u64,
    fake: bool,
}

pub async fn run(workload: &str, load: &Load) -> Result<String> {
    let mutex = workload == "mutex";
    let dir = format!("{ROOT}/{workload}");
    let setup = connect(load.member(0)).await?;
    ensure(&setup, &[ROOT.to_string(), dir.clone()], b"").await?;
    drop(setup);
    // Every session connected (and synced) before the clock starts: a session's creation is
    // not a lock's cost.
    let joins: Vec<_> = (0..load.sessions)
        .map(|k| {
            let (server, dir, spread) = (load.member(k).to_string(), dir.clone(), load.spread());
            tokio::spawn(async move {
                let client = connect(&server).await?;
                if spread {
                    crate::sync(&client, &dir).await?;
                }
                Ok::<_, String>(client)
            })
        })
        .collect();
    let mut clients = Vec::new();
    for j in joins {
        clients.push(j.await.map_err(|e| e.to_string())??);
    }
    let holders = Arc::new(Holders::default());
    let stages = Arc::new(Stages::default());
    let meter = crate::cpu::Meter::start(&load.server_pid);
    let start = Instant::now();
    let run = Arc::new(RunLoad {
        dir,
        stop: start + load.duration,
        readers_pct: if mutex { 0 } else { load.readers_pct },
        fake: load.fake_lock,
    });
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(0..)
        .map(|(c, k)| {
            let (run, holders, stages) = (run.clone(), holders.clone(), stages.clone());
            tokio::spawn(contender(c, k, mutex, run, holders, stages))
        })
        .collect();
    let (mut all, mut reads, mut writes, mut clients) = (Latencies::default(), 0, 0, Vec::new());
    for t in tasks {
        let (tally, client) = t.await.map_err(|e| e.to_string())??;
        all.merge(tally.lat);
        (reads, writes) = (reads + tally.reads, writes + tally.writes);
        clients.push(client);
    }
    let secs = start.elapsed().as_secs_f64();
    let violations = holders.violations();
    let extra = format!(
        ",\"members\":{},\"readers_pct\":{},\"reads\":{reads},\"writes\":{writes},\"reader_overlaps\":{},\"violations\":{violations}{}{}",
        load.servers.len(),
        run.readers_pct,
        holders.reader_overlaps(),
        meter.json(all.count()),
        stages.json()
    );
    let line = all.report(workload, load.sessions, 1, secs, &extra);
    drop(clients);
    if violations > 0 {
        return Err(format!("{violations} lock safety violations: {line}"));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_mutex_waits_for_its_predecessor() {
        let c = kids(&[
            "_c_b-lock-0000000007",
            "_c_a-lock-0000000003",
            "_c_c-lock-0000000012",
            "foreign",
        ]);
        assert_eq!(blocker(&c, "_c_a-lock-0000000003", Mode::Mutex), Ok(None));
        assert_eq!(
            blocker(&c, "_c_c-lock-0000000012", Mode::Mutex),
            Ok(Some("_c_b-lock-0000000007"))
        );
        assert!(blocker(&c, "_c_d-lock-0000000013", Mode::Mutex).is_err());
    }

    #[test]
    fn a_reader_waits_only_for_the_earliest_earlier_writer() {
        let c = kids(&[
            "_c_1-__READ__0000000001",
            "_c_2-__WRIT__0000000002",
            "_c_3-__READ__0000000003",
            "_c_4-__WRIT__0000000004",
            "_c_5-__READ__0000000005",
        ]);
        // Readers before any writer share; a later reader waits for the first writer.
        assert_eq!(blocker(&c, "_c_1-__READ__0000000001", Mode::Read), Ok(None));
        assert_eq!(
            blocker(&c, "_c_5-__READ__0000000005", Mode::Read),
            Ok(Some("_c_2-__WRIT__0000000002"))
        );
        // A writer waits for whatever is just before it, reader or writer.
        assert_eq!(
            blocker(&c, "_c_2-__WRIT__0000000002", Mode::Write),
            Ok(Some("_c_1-__READ__0000000001"))
        );
        assert_eq!(
            blocker(&c, "_c_4-__WRIT__0000000004", Mode::Write),
            Ok(Some("_c_3-__READ__0000000003"))
        );
        let only_readers = kids(&["_c_1-__READ__0000000001", "_c_3-__READ__0000000003"]);
        assert_eq!(
            blocker(&only_readers, "_c_3-__READ__0000000003", Mode::Read),
            Ok(None)
        );
    }

    #[test]
    fn sequences_order_numerically_past_ten_digits() {
        let c = kids(&["_c_a-lock-9999999999", "_c_b-lock-0000000010000000000"]);
        assert_eq!(
            blocker(&c, "_c_b-lock-0000000010000000000", Mode::Mutex),
            Ok(Some("_c_a-lock-9999999999"))
        );
        assert_eq!(parse("_c_a-lock-12x", true), None);
        assert_eq!(parse("_c_a-__READ__", false), None);
        assert_eq!(parse("_c_a-__WRIT__0000000004", true), None);
    }

    #[test]
    fn protection_ids_have_curator_s_shape() {
        let mut rng = Rng::new(1);
        let (a, b) = (protection_id(&mut rng), protection_id(&mut rng));
        assert_ne!(a, b);
        let lens: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12]);
        assert!(a.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()));
    }
}
