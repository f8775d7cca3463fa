//! `palisade-bench`: load for Palisade or Apache ZooKeeper over the wire protocol. One JSON
//! line per run on stdout.
//!
//!   palisade-bench populate --server 127.0.0.1:2181 --nodes 1000000 --parents 300
//!   palisade-bench wait-read --server 127.0.0.1:2181 --path /bench/p0/n0000000000

mod session;

use bytes::Bytes;
use clap::{Parser, Subcommand};
use palisade_proto::*;
use session::{create, Session};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Load generator for ZooKeeper-protocol servers")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Creates `nodes` persistent znodes of `data` bytes under `parents` parents of /bench.
    Populate {
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long, default_value_t = 1_000_000)]
        nodes: u64,
        #[arg(long, default_value_t = 300)]
        parents: u64,
        #[arg(long, default_value_t = 100)]
        data: usize,
        #[arg(long, default_value_t = 8)]
        sessions: u64,
        #[arg(long, default_value_t = 256)]
        inflight: usize,
    },
    /// Retries `exists(path)` until it succeeds; prints how long that took (restart time).
    WaitRead {
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 120)]
        timeout_s: u64,
    },
}

fn node_path(parents: u64, i: u64) -> String {
    format!("/bench/p{}/n{i:010}", i % parents.max(1))
}

async fn populate(
    server: String,
    nodes: u64,
    parents: u64,
    data: usize,
    sessions: u64,
    inflight: usize,
) -> Result<String, String> {
    let mut s = Session::connect(&server, 30_000)
        .await
        .map_err(|e| e.to_string())?;
    let setup: Vec<String> = std::iter::once("/bench".to_string())
        .chain((0..parents).map(|p| format!("/bench/p{p}")))
        .collect();
    let mut failed = 0;
    s.pipeline(
        setup.len() as u64,
        inflight,
        |i| create(setup[i as usize].clone(), Bytes::new(), 0),
        |_, r| failed += u64::from(r.header.err != 0 && r.header.err != -110),
    )
    .await
    .map_err(|e| e.to_string())?;
    if failed > 0 {
        return Err(format!("{failed} parents could not be created"));
    }
    let payload = Bytes::from(vec![b'x'; data]);
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    let sessions = sessions.max(1);
    for k in 0..sessions {
        let (server, payload) = (server.clone(), payload.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = Session::connect(&server, 30_000).await?;
            let share = nodes / sessions + u64::from(k < nodes % sessions);
            let mut errors = 0u64;
            s.pipeline(
                share,
                inflight,
                |j| create(node_path(parents, j * sessions + k), payload.clone(), 0),
                |_, r| errors += u64::from(r.header.err != 0),
            )
            .await?;
            Ok::<u64, std::io::Error>(errors)
        }));
    }
    let mut errors = 0;
    for t in tasks {
        errors += t
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    let secs = t0.elapsed().as_secs_f64();
    Ok(format!(
        "{{\"workload\":\"populate\",\"sessions\":{sessions},\"inflight\":{inflight},\"ops\":{nodes},\"seconds\":{secs:.3},\"ops_per_s\":{:.0},\"errors\":{errors},\"last_path\":\"{}\"}}",
        nodes as f64 / secs,
        node_path(parents, nodes.saturating_sub(1))
    ))
}

async fn wait_read(server: String, path: String, timeout_s: u64) -> Result<String, String> {
    let t0 = Instant::now();
    let limit = Duration::from_secs(timeout_s);
    while t0.elapsed() < limit {
        if let Ok(mut s) = Session::connect(&server, 30_000).await {
            let req = Request::Exists(ExistsRequest {
                path: JStr::from(path.as_str()),
                watch: false,
            });
            if let Ok(r) = s.call(req).await {
                if r.header.err == 0 {
                    return Ok(format!(
                        "{{\"workload\":\"wait-read\",\"path\":\"{path}\",\"seconds\":{:.3}}}",
                        t0.elapsed().as_secs_f64()
                    ));
                }
                return Err(format!("{path}: error {}", r.header.err));
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Err(format!("no answer from {server} within {timeout_s} s"))
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        match cli.cmd {
            Cmd::Populate {
                server,
                nodes,
                parents,
                data,
                sessions,
                inflight,
            } => populate(server, nodes, parents, data, sessions, inflight).await,
            Cmd::WaitRead {
                server,
                path,
                timeout_s,
            } => wait_read(server, path, timeout_s).await,
        }
    });
    match result {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("palisade-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
