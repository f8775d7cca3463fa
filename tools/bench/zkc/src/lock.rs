//! lock: the crate's own lock recipe (`Client::lock` with a Curator-compatible prefix: an
//! ephemeral-sequential `_c_<uuid>-lock-` node, the predecessor watched), each session
//! acquiring and releasing in a loop. Releasing is dropping the guard, which deletes the node in
//! the background, as the crate intends. Safety is checked in-process: the sessions are
//! independent ZooKeeper sessions, so two holders at once is a real violation.

use crate::stats::Latencies;
use crate::{connect, ensure, Load, Result, ROOT};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use zookeeper_client as zk;

#[derive(Default)]
struct Holders {
    held: AtomicBool,
    violations: AtomicU64,
}

async fn session(
    server: String,
    spread: bool,
    stop: Instant,
    holders: Arc<Holders>,
) -> Result<(Latencies, zk::Client)> {
    let client = connect(&server).await?;
    let dir = format!("{ROOT}/lock");
    if spread {
        crate::sync(&client, &dir).await?;
    }
    let mut lat = Latencies::default();
    while Instant::now() < stop {
        let t0 = Instant::now();
        let prefix = zk::LockPrefix::new_curator(&dir, "lock-").map_err(|e| e.to_string())?;
        let guard = client
            .lock(prefix, b"", zk::LockOptions::new(zk::Acls::anyone_all()))
            .await
            .map_err(|e| format!("lock: {e}"))?;
        lat.record(t0.elapsed());
        if holders.held.swap(true, Ordering::SeqCst) {
            holders.violations.fetch_add(1, Ordering::SeqCst);
        }
        tokio::task::yield_now().await;
        holders.held.store(false, Ordering::SeqCst);
        drop(guard);
    }
    Ok((lat, client))
}

pub async fn run(load: &Load) -> Result<String> {
    let setup = connect(load.member(0)).await?;
    ensure(&setup, &[ROOT.to_string(), format!("{ROOT}/lock")], b"").await?;
    drop(setup);
    let holders = Arc::new(Holders::default());
    let meter = crate::cpu::Meter::start(&load.server_pid);
    let start = Instant::now();
    let stop = start + load.duration;
    let tasks: Vec<_> = (0..load.sessions)
        .map(|k| {
            let server = load.member(k).to_string();
            tokio::spawn(session(server, load.spread(), stop, holders.clone()))
        })
        .collect();
    let mut all = Latencies::default();
    let mut clients = Vec::new();
    for t in tasks {
        let (lat, client) = t.await.map_err(|e| e.to_string())??;
        all.merge(lat);
        clients.push(client);
    }
    let secs = start.elapsed().as_secs_f64();
    let extra = format!(
        ",\"violations\":{}{}",
        holders.violations.load(Ordering::SeqCst),
        meter.json(all.count())
    );
    let line = all.report("lock", load.sessions, 1, secs, &extra);
    drop(clients);
    Ok(line)
}
