//! Key-value workloads: populate, get, set, mixed (90% get / 10% set) over a pre-populated
//! set of nodes, and create-seq (persistent or ephemeral sequential creates under one parent).

use crate::session::{create, get_data, set_data, Session};
use crate::stats::Latencies;
use bytes::Bytes;
use palisade_proto::Request;
use std::io;
use std::time::{Duration, Instant};

pub const KV_ROOT: &str = "/bench/kv";

pub struct Load {
    pub server: String,
    pub sessions: u64,
    pub inflight: usize,
    pub duration: Duration,
    /// Keep every request's completion time (see `Latencies::with_timeline`).
    pub timeline: bool,
}

/// The load generator's randomness, seeded per session.
pub type Rng = fastrand::Rng;

/// Creates `paths` (parents first) if missing, pipelined on one session.
pub async fn ensure(server: &str, paths: &[String], data: Bytes) -> io::Result<()> {
    let mut s = Session::connect(server, 30_000).await?;
    let mut bad = 0;
    s.pipeline(
        1024,
        None,
        |i| {
            paths
                .get(i as usize)
                .map(|p| create(p.clone(), data.clone(), 0))
        },
        // NODEEXISTS is fine: the set is shared by runs.
        |_, r| bad += u64::from(r.header.err != 0 && r.header.err != -110),
    )
    .await?;
    if bad > 0 {
        return Err(crate::session::err(format!("{bad} setup creates failed")));
    }
    Ok(())
}

pub fn kv_path(i: u64) -> String {
    format!("{KV_ROOT}/k{i:06}")
}

/// Makes sure the `keys` nodes of `size` bytes exist.
pub async fn prepare_kv(server: &str, keys: u64, size: usize) -> io::Result<()> {
    let mut paths = vec!["/bench".to_string(), KV_ROOT.to_string()];
    paths.extend((0..keys).map(kv_path));
    ensure(server, &paths, Bytes::from(vec![b'v'; size])).await
}

/// Runs `sessions` sessions until the deadline, each pipelining requests from `make`.
pub async fn run_sessions(
    load: &Load,
    make: impl Fn(u64, &mut Rng) -> palisade_proto::Request + Send + Sync + Clone + 'static,
) -> io::Result<(Latencies, f64)> {
    let start = Instant::now();
    let stop = start + load.duration;
    let mut tasks = Vec::new();
    for k in 0..load.sessions {
        let (server, inflight, make) = (load.server.clone(), load.inflight, make.clone());
        let timeline = load.timeline;
        tasks.push(tokio::spawn(async move {
            let mut s = Session::connect(&server, 30_000).await?;
            let mut rng = Rng::with_seed(k + 1);
            let mut lat = Latencies::with_timeline(timeline);
            s.pipeline(
                inflight,
                Some(stop),
                |i| Some(make(i, &mut rng)),
                |_, r| {
                    lat.record_at(r.latency, start);
                    lat.errors += u64::from(r.header.err != 0);
                },
            )
            .await?;
            Ok::<Latencies, io::Error>(lat)
        }));
    }
    let mut all = Latencies::default();
    for t in tasks {
        all.merge(t.await.map_err(crate::session::err)??);
    }
    Ok((all, start.elapsed().as_secs_f64()))
}

/// Which requests a key-value workload sends.
#[derive(Clone, Copy)]
pub enum Mix {
    Get,
    Set,
    /// 90% get, 10% set.
    Mixed,
}

/// The next request of `mix` on a random one of `keys` nodes.
pub fn maker(
    mix: Mix,
    keys: u64,
    size: usize,
) -> impl Fn(&mut Rng) -> Request + Send + Sync + Clone {
    let data = Bytes::from(vec![b's'; size]);
    move |rng| {
        let path = kv_path(rng.u64(..keys.max(1)));
        match mix {
            Mix::Get => get_data(path, false),
            Mix::Set => set_data(path, data.clone()),
            Mix::Mixed if rng.u64(..10) == 0 => set_data(path, data.clone()),
            Mix::Mixed => get_data(path, false),
        }
    }
}

pub async fn get(load: &Load, keys: u64) -> io::Result<(Latencies, f64)> {
    let make = maker(Mix::Get, keys, 0);
    run_sessions(load, move |_, rng| make(rng)).await
}

pub async fn set(load: &Load, keys: u64, size: usize) -> io::Result<(Latencies, f64)> {
    let make = maker(Mix::Set, keys, size);
    run_sessions(load, move |_, rng| make(rng)).await
}

pub async fn mixed(load: &Load, keys: u64, size: usize) -> io::Result<(Latencies, f64)> {
    let make = maker(Mix::Mixed, keys, size);
    run_sessions(load, move |_, rng| make(rng)).await
}

/// Sequential creates under one parent: persistent (flags 2) or ephemeral (flags 3).
pub async fn create_seq(load: &Load, ephemeral: bool, size: usize) -> io::Result<(Latencies, f64)> {
    let parent = if ephemeral {
        "/bench/seq-e"
    } else {
        "/bench/seq"
    };
    ensure(
        &load.server,
        &["/bench".into(), parent.into()],
        Bytes::new(),
    )
    .await?;
    let data = Bytes::from(vec![b'c'; size]);
    let path = format!("{parent}/n-");
    let flags = if ephemeral { 3 } else { 2 };
    run_sessions(load, move |_, _| create(path.clone(), data.clone(), flags)).await
}

/// `nodes` persistent znodes of `size` bytes under `parents` parents, numbered from `start`;
/// returns the last path.
pub async fn populate(
    load: &Load,
    start_at: u64,
    nodes: u64,
    parents: u64,
    size: usize,
) -> io::Result<(Latencies, f64, String)> {
    let parents = parents.max(1);
    let mut setup = vec!["/bench".to_string(), "/bench/pop".to_string()];
    setup.extend((0..parents).map(|p| format!("/bench/pop/p{p}")));
    ensure(&load.server, &setup, Bytes::new()).await?;
    let path = move |i: u64| format!("/bench/pop/p{}/n{i:010}", i % parents);
    let data = Bytes::from(vec![b'x'; size]);
    let start = Instant::now();
    let sessions = load.sessions.max(1);
    let mut tasks = Vec::new();
    for k in 0..sessions {
        let (server, inflight, data) = (load.server.clone(), load.inflight, data.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = Session::connect(&server, 30_000).await?;
            let mut lat = Latencies::default();
            s.pipeline(
                inflight,
                None,
                |j| {
                    let i = j * sessions + k;
                    (i < nodes).then(|| create(path(start_at + i), data.clone(), 0))
                },
                |_, r| {
                    lat.record(r.latency);
                    lat.errors += u64::from(r.header.err != 0);
                },
            )
            .await?;
            Ok::<Latencies, io::Error>(lat)
        }));
    }
    let mut all = Latencies::default();
    for t in tasks {
        all.merge(t.await.map_err(crate::session::err)??);
    }
    Ok((
        all,
        start.elapsed().as_secs_f64(),
        path((start_at + nodes).saturating_sub(1)),
    ))
}
