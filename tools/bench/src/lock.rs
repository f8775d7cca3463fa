//! Lock workloads, each session acquiring and releasing in a loop, safety checked in-process
//! (the sessions are independent ZooKeeper sessions, so an overlap here is a real violation):
//! - `lock`: the classic mutex recipe: ephemeral-sequential child, getChildren, watch the
//!   predecessor with exists, delete to release;
//! - `rwlock`: Curator's read-write lock shape: `__READ__`/`__WRIT__` children ordered by their
//!   suffix; a reader waits for the nearest writer before it, a writer for the node before it.

use crate::kv::{ensure, Load, Rng};
use crate::session::{children, create, created_path, delete, exists, get_children, Session};
use crate::stats::Latencies;
use bytes::Bytes;
use std::io;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NO_NODE: i32 = -101;

/// Who holds the lock right now: readers (> 0), a writer (−1), nobody (0). Violations counted.
#[derive(Default)]
pub struct Holders {
    state: AtomicI64,
    pub violations: AtomicU64,
    pub reader_overlaps: AtomicU64,
}

impl Holders {
    fn enter(&self, write: bool) {
        if write {
            if self
                .state
                .compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                self.violations.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            let prev = self.state.fetch_add(1, Ordering::SeqCst);
            if prev < 0 {
                self.violations.fetch_add(1, Ordering::SeqCst);
            } else if prev > 0 {
                self.reader_overlaps.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn leave(&self, write: bool) {
        if write {
            let _ = self
                .state
                .compare_exchange(-1, 0, Ordering::SeqCst, Ordering::SeqCst);
        } else {
            self.state.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn suffix(name: &str) -> u64 {
    name.get(name.len().saturating_sub(10)..)
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

/// One acquisition: create our node, wait until the recipe says it is ours; returns its name.
async fn acquire(s: &mut Session, dir: &str, prefix: &str, write: bool) -> io::Result<String> {
    let r = s
        .call(create(format!("{dir}/{prefix}"), Bytes::new(), 3))
        .await?;
    if r.header.err != 0 {
        return Err(crate::session::err(format!("create: {}", r.header.err)));
    }
    let me_path = created_path(&r)?;
    let me = me_path.rsplit('/').next().unwrap_or("").to_string();
    let my_seq = suffix(&me);
    loop {
        let mut kids = children(&s.call(get_children(dir)).await?)?;
        kids.sort_by_key(|k| suffix(k));
        let before: Vec<&String> = kids.iter().filter(|k| suffix(k) < my_seq).collect();
        // The node whose deletion we wait for, if any.
        let blocker = if write {
            before.last()
        } else {
            before.iter().rev().find(|k| k.starts_with("__WRIT__"))
        };
        let Some(blocker) = blocker else {
            return Ok(me_path);
        };
        let r = s.call(exists(format!("{dir}/{blocker}"), true)).await?;
        if r.header.err == NO_NODE {
            continue;
        }
        s.next_event(Duration::from_secs(30)).await?;
    }
}

/// Runs the recipe in every session until the deadline; latency = time to acquire. Each
/// session waits `rest` after a release before it asks again.
pub async fn run(
    load: &Load,
    readers_percent: u64,
    dir: &str,
    rest: Duration,
) -> io::Result<(Latencies, f64, Arc<Holders>)> {
    ensure(&load.server, &["/bench".into(), dir.into()], Bytes::new()).await?;
    let holders = Arc::new(Holders::default());
    let start = Instant::now();
    let stop = start + load.duration;
    let mut tasks = Vec::new();
    for k in 0..load.sessions {
        let (server, holders, dir) = (load.server.clone(), holders.clone(), dir.to_string());
        tasks.push(tokio::spawn(async move {
            let mut s = Session::connect(&server, 30_000).await?;
            let mut rng = Rng::with_seed(k + 101);
            let mut lat = Latencies::default();
            while Instant::now() < stop {
                let write = rng.u64(..100) >= readers_percent;
                let prefix = match (readers_percent, write) {
                    (0, _) => "lock-",
                    (_, true) => "__WRIT__",
                    (_, false) => "__READ__",
                };
                let t0 = Instant::now();
                let me = acquire(&mut s, &dir, prefix, write).await?;
                lat.record(t0.elapsed());
                holders.enter(write);
                tokio::task::yield_now().await;
                holders.leave(write);
                let r = s.call(delete(me)).await?;
                lat.errors += u64::from(r.header.err != 0);
                if !rest.is_zero() {
                    tokio::time::sleep(rest).await;
                }
            }
            Ok::<Latencies, io::Error>(lat)
        }));
    }
    let mut all = Latencies::default();
    for t in tasks {
        all.merge(t.await.map_err(crate::session::err)??);
    }
    Ok((all, start.elapsed().as_secs_f64(), holders))
}
