//! watch-fanout: `sessions` sessions each hold a data watch on one node; one more session sets
//! its data; a round lasts from sending that setData to the moment the last watcher has its
//! notification. Each watcher re-arms its watch for the next round. Also: holding many
//! watches (sessions × paths) so the driver can read the server's memory per watch.

use crate::kv::{ensure, Load};
use crate::session::{get_data, set_data, Session};
use crate::stats::Latencies;
use bytes::Bytes;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Barrier};

const NODE: &str = "/bench/fan";

pub async fn run(load: &Load, rounds: u64) -> io::Result<(Latencies, f64)> {
    ensure(&load.server, &["/bench".into(), NODE.into()], Bytes::new()).await?;
    let watchers = load.sessions.max(1);
    let armed = Arc::new(Barrier::new(watchers as usize + 1));
    let (got_tx, mut got) = mpsc::unbounded_channel::<Instant>();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let (server, armed, got_tx) = (load.server.clone(), armed.clone(), got_tx.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = Session::connect(&server, 30_000).await?;
            for _ in 0..rounds {
                s.call(get_data(NODE, true)).await?;
                armed.wait().await;
                s.next_event(Duration::from_secs(30)).await?;
                let _ = got_tx.send(Instant::now());
            }
            Ok::<(), io::Error>(())
        }));
    }
    drop(got_tx);
    let mut writer = Session::connect(&load.server, 30_000).await?;
    let mut lat = Latencies::default();
    let start = Instant::now();
    for _ in 0..rounds {
        armed.wait().await;
        let t0 = Instant::now();
        writer
            .call(set_data(NODE, Bytes::from_static(b"x")))
            .await?;
        let mut last = t0;
        for _ in 0..watchers {
            match tokio::time::timeout(Duration::from_secs(30), got.recv()).await {
                Ok(Some(at)) => last = last.max(at),
                _ => return Err(crate::session::err("a watcher missed its notification")),
            }
        }
        lat.record(last.duration_since(t0));
    }
    let secs = start.elapsed().as_secs_f64();
    for t in tasks {
        t.await.map_err(crate::session::err)??;
    }
    Ok((lat, secs))
}

/// Sets `sessions × paths` data watches (on existing nodes), prints `ready`, and holds them
/// until stdin closes or `hold` passes.
pub async fn hold_watches(
    server: &str,
    sessions: u64,
    paths: u64,
    hold: Duration,
) -> io::Result<u64> {
    let mut nodes = vec!["/bench".to_string(), "/bench/w".to_string()];
    nodes.extend((0..paths).map(|i| format!("/bench/w/n{i}")));
    ensure(server, &nodes, Bytes::new()).await?;
    let mut held = Vec::new();
    let mut total = 0;
    for _ in 0..sessions {
        let mut s = Session::connect(server, 60_000).await?;
        s.pipeline(
            256,
            None,
            |i| (i < paths).then(|| get_data(format!("/bench/w/n{i}"), true)),
            |_, r| total += u64::from(r.header.err == 0),
        )
        .await?;
        held.push(s);
    }
    println!("ready {total}");
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut buf = String::new();
        while std::io::stdin().read_line(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let _ = tokio::time::timeout(hold, stdin_closed).await;
    drop(held);
    Ok(total)
}
