//! `palisade-bench`: load for Palisade or Apache ZooKeeper over the wire protocol, one JSON
//! line per run on stdout (workload, sessions, in-flight, ops, seconds, ops/s, p50/p99/p999
//! latency in µs, errors, and this process's own CPU over the timed part: `client_cpu_s`,
//! `client_cpu_us_per_op`). tools/bench/driver.py runs it against both servers side by side.
//!
//!   palisade-bench run get --server 127.0.0.1:2181 --sessions 32 --inflight 64 --seconds 10
//!   palisade-bench run get --sessions 4 --rate 1000 --seconds 10 --server-pid 1234
//!   palisade-bench run set --server 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 \
//!       --server-pid 101,102,103     (an ensemble: sessions round-robin, CPU of all members)
//!   palisade-bench populate --server 127.0.0.1:2181 --nodes 1000000 --parents 300
//!   palisade-bench wait-read --server 127.0.0.1:2181 --path /bench/pop/p99/n0000999999
//!   palisade-bench hold-watches --sessions 100 --paths 1000

mod cpu;
mod fanout;
mod kv;
mod lock;
mod paced;
mod session;
mod stats;

use clap::{Parser, Subcommand, ValueEnum};
use kv::Load;
use palisade_proto::*;
use session::Session;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Load generator for ZooKeeper-protocol servers")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Workload {
    Get,
    Set,
    Mixed,
    CreateSeq,
    CreateSeqEphemeral,
    Lock,
    Rwlock,
    WatchFanout,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs one workload for --seconds.
    Run {
        workload: Workload,
        /// host:port, or an ensemble's members as host:port,host:port,…
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long, default_value_t = 32)]
        sessions: u64,
        /// Requests in flight per session (kv workloads; the recipes run one at a time).
        #[arg(long, default_value_t = 64)]
        inflight: usize,
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Nodes of the key-value set (get, set, mixed).
        #[arg(long, default_value_t = 10_000)]
        keys: u64,
        /// Data bytes per node written.
        #[arg(long, default_value_t = 100)]
        size: usize,
        /// watch-fanout: rounds of setData → every watcher notified.
        #[arg(long, default_value_t = 20)]
        rounds: u64,
        /// get, set, mixed: send this many requests per second in total, on a fixed schedule
        /// spread over the sessions (open loop; --inflight is ignored) instead of as fast as
        /// replies come back.
        #[arg(long)]
        rate: Option<f64>,
        /// The server's process id (an ensemble: every member's, comma-separated): the JSON
        /// line then has the server CPU seconds of the timed part (setup excluded; summed over
        /// the pids) and the CPU µs per operation, beside the same figures of this process
        /// (the client), which it has without a pid too.
        #[arg(long, value_delimiter = ',')]
        server_pid: Vec<u32>,
        /// get, set, mixed, create-seq (closed loop): write every request's completion time
        /// (ms since the run's start) and latency (µs) to this file as little-endian u32 pairs;
        /// the JSON line then has the run's start as `start_unix_ms` (within a millisecond).
        #[arg(long)]
        timeline: Option<std::path::PathBuf>,
        /// lock, rwlock: each session waits this long after its release before it asks
        /// again. With more sessions than handoffs this leaves the rate alone but keeps the
        /// releasing session's next create out of the next holder's way (a stage
        /// measurement: see tools/bench/ensemble_stages.py).
        #[arg(long, default_value_t = 0)]
        rest_us: u64,
    },
    /// Creates --nodes persistent znodes of --size bytes under --parents parents, numbered from
    /// --start (a large population made in chunks: the next chunk starts where one ended).
    Populate {
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long, default_value_t = 1_000_000)]
        nodes: u64,
        #[arg(long, default_value_t = 0)]
        start: u64,
        #[arg(long, default_value_t = 300)]
        parents: u64,
        #[arg(long, default_value_t = 100)]
        size: usize,
        #[arg(long, default_value_t = 8)]
        sessions: u64,
        #[arg(long, default_value_t = 256)]
        inflight: usize,
    },
    /// Retries exists(path) until it succeeds; prints how long that took (restart time).
    WaitRead {
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 120)]
        timeout_s: u64,
    },
    /// Sets sessions × paths data watches, prints `ready N`, holds them until stdin closes.
    HoldWatches {
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long, default_value_t = 100)]
        sessions: u64,
        #[arg(long, default_value_t = 1000)]
        paths: u64,
        #[arg(long, default_value_t = 60)]
        hold_s: u64,
    },
}

async fn run(cmd: Cmd) -> std::io::Result<String> {
    match cmd {
        Cmd::Run {
            workload,
            server,
            sessions,
            inflight,
            seconds,
            keys,
            size,
            rounds,
            rate,
            server_pid,
            timeline,
            rest_us,
        } => {
            let load = Load {
                server,
                sessions,
                inflight,
                duration: Duration::from_secs_f64(seconds),
                timeline: timeline.is_some(),
            };
            if timeline.is_some()
                && (rate.is_some()
                    || !matches!(
                        workload,
                        Workload::Get
                            | Workload::Set
                            | Workload::Mixed
                            | Workload::CreateSeq
                            | Workload::CreateSeqEphemeral
                    ))
            {
                return Err(session::err(
                    "--timeline is for get, set, mixed and create-seq without --rate",
                ));
            }
            let name = workload
                .to_possible_value()
                .map_or("?".into(), |v| v.get_name().to_string());
            match workload {
                Workload::Get | Workload::Set | Workload::Mixed => {
                    kv::prepare_kv(&load.server, keys, size).await?;
                    let meter = cpu::Meter::start(&server_pid);
                    let started = unix_ms();
                    let (lat, secs) = match rate {
                        Some(rate) => {
                            let make = kv::maker(workload_kv(workload), keys, size);
                            tokio::task::spawn_blocking(move || {
                                paced::run(&load.server, sessions, rate, load.duration, make)
                            })
                            .await
                            .map_err(session::err)??
                        }
                        None => match workload {
                            Workload::Get => kv::get(&load, keys).await?,
                            Workload::Set => kv::set(&load, keys, size).await?,
                            _ => kv::mixed(&load, keys, size).await?,
                        },
                    };
                    let mut extra = meter.json(lat.count());
                    extra.push_str(&timeline_json(&lat, timeline.as_deref(), started)?);
                    let inflight = match rate {
                        Some(r) => {
                            extra.push_str(&format!(",\"rate\":{r}"));
                            0
                        }
                        None => inflight,
                    };
                    Ok(lat.report(&name, sessions, inflight, secs, &extra))
                }
                _ if rate.is_some() => Err(session::err("--rate is for get, set and mixed")),
                Workload::CreateSeq | Workload::CreateSeqEphemeral => {
                    let eph = matches!(workload, Workload::CreateSeqEphemeral);
                    let meter = cpu::Meter::start(&server_pid);
                    let started = unix_ms();
                    let (lat, secs) = kv::create_seq(&load, eph, size).await?;
                    let mut extra = meter.json(lat.count());
                    extra.push_str(&timeline_json(&lat, timeline.as_deref(), started)?);
                    Ok(lat.report(&name, sessions, inflight, secs, &extra))
                }
                Workload::Lock | Workload::Rwlock => {
                    let (readers, dir) = match workload {
                        Workload::Lock => (0, "/bench/lock"),
                        _ => (80, "/bench/rwlock"),
                    };
                    let meter = cpu::Meter::start(&server_pid);
                    let rest = Duration::from_micros(rest_us);
                    let (lat, secs, h) = lock::run(&load, readers, dir, rest).await?;
                    let extra = format!(
                        ",\"violations\":{},\"reader_overlaps\":{}{}",
                        h.violations.load(Ordering::SeqCst),
                        h.reader_overlaps.load(Ordering::SeqCst),
                        meter.json(lat.count())
                    );
                    Ok(lat.report(&name, sessions, 1, secs, &extra))
                }
                Workload::WatchFanout => {
                    let meter = cpu::Meter::start(&server_pid);
                    let (lat, secs) = fanout::run(&load, rounds).await?;
                    let extra = meter.json(lat.count());
                    Ok(lat.report(&name, sessions, 1, secs, &extra))
                }
            }
        }
        Cmd::Populate {
            server,
            nodes,
            start,
            parents,
            size,
            sessions,
            inflight,
        } => {
            let load = Load {
                server,
                sessions,
                inflight,
                duration: Duration::ZERO,
                timeline: false,
            };
            let (lat, secs, last) = kv::populate(&load, start, nodes, parents, size).await?;
            Ok(lat.report(
                "populate",
                sessions,
                inflight,
                secs,
                &format!(",\"last_path\":\"{last}\""),
            ))
        }
        Cmd::WaitRead {
            server,
            path,
            timeout_s,
        } => wait_read(&server, &path, timeout_s).await,
        Cmd::HoldWatches {
            server,
            sessions,
            paths,
            hold_s,
        } => {
            let n =
                fanout::hold_watches(&server, sessions, paths, Duration::from_secs(hold_s)).await?;
            Ok(format!("{{\"workload\":\"hold-watches\",\"watches\":{n}}}"))
        }
    }
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// Writes the run's timeline if one was asked for: `,"start_unix_ms":…,"timeline":…`.
fn timeline_json(
    lat: &stats::Latencies,
    path: Option<&std::path::Path>,
    started: u128,
) -> std::io::Result<String> {
    let Some(path) = path else {
        return Ok(String::new());
    };
    let n = lat.write_timeline(path)?;
    Ok(format!(
        ",\"start_unix_ms\":{started},\"timeline\":\"{}\",\"timeline_entries\":{n}",
        path.display()
    ))
}

/// The key-value request mix of a workload (get, set or mixed).
fn workload_kv(w: Workload) -> kv::Mix {
    match w {
        Workload::Get => kv::Mix::Get,
        Workload::Set => kv::Mix::Set,
        _ => kv::Mix::Mixed,
    }
}

async fn wait_read(server: &str, path: &str, timeout_s: u64) -> std::io::Result<String> {
    let t0 = Instant::now();
    let limit = Duration::from_secs(timeout_s);
    // A starting server may accept a connection and answer nothing until it has loaded its
    // data (ZooKeeper does), or close it: a new attempt starts every 10 ms while earlier ones
    // keep waiting, and the first answer ends the wait, so the figure is exact either way.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    loop {
        tokio::select! {
            r = rx.recv() => match r {
                Some(Ok(secs)) => {
                    return Ok(format!(
                        "{{\"workload\":\"wait-read\",\"path\":\"{path}\",\"seconds\":{secs:.3}}}"
                    ))
                }
                Some(Err(e)) => return Err(e),
                None => {}
            },
            _ = tick.tick() => {
                if t0.elapsed() > limit {
                    return Err(session::err(format!("no answer from {server} within {timeout_s} s")));
                }
                let (tx, server, path) = (tx.clone(), server.to_string(), path.to_string());
                tokio::spawn(async move {
                    let attempt = async {
                        let mut s = Session::connect(&server, 30_000).await?;
                        let req = Request::Exists(ExistsRequest {
                            path: JStr::from(path.as_str()),
                            watch: false,
                        });
                        s.call(req).await
                    };
                    if let Ok(Ok(r)) = tokio::time::timeout(Duration::from_secs(30), attempt).await {
                        let _ = tx.send(if r.header.err == 0 {
                            Ok(t0.elapsed().as_secs_f64())
                        } else {
                            Err(session::err(format!("{path}: error {}", r.header.err)))
                        });
                    }
                });
            }
        }
    }
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
    match rt.block_on(run(cli.cmd)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cmd {
        Cli::try_parse_from(["palisade-bench"].iter().chain(args))
            .map(|c| c.cmd)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn server_and_pid_lists() {
        let Cmd::Run {
            server, server_pid, ..
        } = parse(&[
            "run",
            "set",
            "--server",
            "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
            "--server-pid",
            "11,12,13",
        ])
        else {
            panic!("not a run");
        };
        assert_eq!(
            session::hosts(&server),
            ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
        );
        assert_eq!(server_pid, [11, 12, 13]);
        // The standalone forms driver.py uses: one pid, or none.
        let Cmd::Run { server_pid, .. } = parse(&["run", "get", "--server-pid", "1234"]) else {
            panic!("not a run");
        };
        assert_eq!(server_pid, [1234]);
        let Cmd::Run {
            server, server_pid, ..
        } = parse(&["run", "get"])
        else {
            panic!("not a run");
        };
        assert_eq!((server.as_str(), server_pid.len()), ("127.0.0.1:2181", 0));
        assert!(
            Cli::try_parse_from(["palisade-bench", "run", "get", "--server-pid", "1,x"]).is_err()
        );
    }
}
