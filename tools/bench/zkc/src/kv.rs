//! get, set and create-seq: every session keeps `inflight` requests outstanding until the
//! deadline, then collects the rest. The crate sends a request when its future is created (its
//! documented ordering rule), so a window of unawaited futures is a window on the wire.

use crate::stats::Latencies;
use crate::{connect, ensure, Load, Result, ROOT};
use futures::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::time::Instant;
use zookeeper_client as zk;

fn kv_path(i: u64) -> String {
    format!("{ROOT}/kv/k{i:06}")
}

/// Keeps `inflight` requests from `next` outstanding until `stop`, then drains.
async fn pipeline<F, Fut>(inflight: usize, stop: Instant, mut next: F) -> Latencies
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<(), zk::Error>>,
{
    let mut pending = FuturesUnordered::new();
    let mut lat = Latencies::default();
    loop {
        while pending.len() < inflight && Instant::now() < stop {
            let (t0, f) = (Instant::now(), next());
            pending.push(async move { (f.await, t0.elapsed()) });
        }
        let Some((r, took)) = pending.next().await else {
            return lat;
        };
        lat.record(took);
        lat.errors += u64::from(r.is_err());
    }
}

/// One session's share of a run: connects, then pipelines `workload` until `stop`.
async fn session(workload: String, k: u64, load: SessionLoad) -> Result<(Latencies, zk::Client)> {
    let client = connect(&load.server).await?;
    if load.spread {
        crate::sync(&client, ROOT).await?;
    }
    let mut rng = Rng::new(k + 1);
    let data = vec![b's'; load.size];
    let keys = load.keys;
    let lat = match workload.as_str() {
        "get" => {
            pipeline(load.inflight, load.stop, || {
                let f = client.get_data(&kv_path(rng.below(keys)));
                async move { f.await.map(drop) }
            })
            .await
        }
        "set" => {
            pipeline(load.inflight, load.stop, || {
                let f = client.set_data(&kv_path(rng.below(keys)), &data, None);
                async move { f.await.map(drop) }
            })
            .await
        }
        _ => {
            let path = format!("{ROOT}/seq/n-");
            let opts = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
            let (path, opts, data) = (&path, &opts, &data);
            pipeline(load.inflight, load.stop, || {
                let f = client.create(path, data, opts);
                async move { f.await.map(drop) }
            })
            .await
        }
    };
    Ok((lat, client))
}

struct SessionLoad {
    server: String,
    spread: bool,
    inflight: usize,
    stop: Instant,
    keys: u64,
    size: usize,
}

/// A small xorshift generator: the key choice needs no quality, and the crate is kept to the
/// dependencies zookeeper-client already brings.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

pub async fn run(workload: &str, load: &Load) -> Result<String> {
    let setup = connect(load.member(0)).await?;
    let mut paths = vec![
        ROOT.to_string(),
        format!("{ROOT}/kv"),
        format!("{ROOT}/seq"),
    ];
    if workload != "create-seq" {
        paths.extend((0..load.keys).map(kv_path));
    }
    ensure(&setup, &paths, &vec![b'v'; load.size]).await?;
    drop(setup);
    let meter = crate::cpu::Meter::start(&load.server_pid);
    let start = Instant::now();
    let stop = start + load.duration;
    let tasks: Vec<_> = (0..load.sessions)
        .map(|k| {
            let s = SessionLoad {
                server: load.member(k).to_string(),
                spread: load.spread(),
                inflight: load.inflight,
                stop,
                keys: load.keys,
                size: load.size,
            };
            tokio::spawn(session(workload.to_string(), k, s))
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
    // Measured before the sessions close, so the closes are not counted.
    let extra = meter.json(all.count());
    let line = all.report(workload, load.sessions, load.inflight, secs, &extra);
    drop(clients);
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cover_the_range() {
        let mut r = Rng::new(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            seen[r.below(10) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(kv_path(42), "/bench-zkc/kv/k000042");
    }
}
