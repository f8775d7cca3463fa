//! `palisade observe-zookeeper`: Palisade as an observer of a running ZooKeeper 3.8 ensemble
//! (issue 35, first phase). It joins as `server.N=…:observer` (the ZooKeeper members must list
//! it so), syncs from the leader by SNAP or DIFF, applies every committed txn as the importer
//! applies a logged one, and at the end writes the tree it holds as a Palisade data dir: an
//! import from a live ensemble, without its data dir and without stopping it.
//!
//! The data dir is durable as it goes (store.rs): every txn applied is logged as a standalone
//! server logs it, with snapshots, so an observer restarted on the same data dir (after a stop
//! or a kill -9) recovers its tree and syncs by DIFF from its last zxid (TRUNC handled).
//!
//! The link is secured as the ensemble's zoo.cfg secures its own learners' (secure.rs):
//! `sslQuorum` and quorum SASL, with the JAAS file of `SERVER_JVMFLAGS`' or `JVMFLAGS`'
//! `-Djava.security.auth.login.config` (or zoo.cfg's `jaasLoginConfig`), as zkServer.sh
//! hands it to ZooKeeper.
//!
//! The codec and the learner's decisions are the `palisade_zab` crate's (sans-IO); this
//! module owns the sockets (link.rs, secure.rs), the tree (mirror.rs) and the data dir
//! (store.rs). It
//! serves no clients yet:
//! forwarding writes and taking sessions over come with the observer role in the engine.
//!
//! Owns: the observer's link, tree and data dir. May not touch: a running server's core or
//! its data dir (it writes only the data dir it was given); the ZooKeeper ensemble only
//! through the learner's packets.

mod link;
mod mirror;
mod secure;
mod store;

use crate::config::Config;
use crate::membership::members::Role;
use mirror::Mirror;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::limits::{OBSERVER_MAX_SNAPSHOT_BYTES, OBSERVER_SNAPSHOT_BATCH};

const USAGE: &str = "usage: palisade observe-zookeeper --config ZOO_CFG --id N --data-dir OUT \
[--until-zxid ZXID] [--until-path PATH] [--seconds S] [--max-snapshot-bytes B]\n  ZOO_CFG: the ZooKeeper ensemble's zoo.cfg (its server.N lines, \
tickTime, initLimit, syncLimit, and sslQuorum/ssl.quorum.*/quorum.auth.* if the ensemble \
secures its links: the JAAS file comes from SERVER_JVMFLAGS as for zkServer.sh); N: this \
observer's id, listed there as server.N=…:observer.\n  \
Stops once synced and at ZXID or later (hex with 0x), or holding the node PATH, or after S \
seconds, or on SIGINT/SIGTERM. OUT is a Palisade data dir kept durable as txns apply: started \
again on it, the observer recovers and syncs by DIFF from where it stopped. B: the largest \
snapshot taken from a leader (default 4 GiB).";

struct Opts {
    config: PathBuf,
    id: i64,
    data_dir: PathBuf,
    until_zxid: Option<i64>,
    until_path: Option<String>,
    seconds: Option<f64>,
    max_snapshot_bytes: u64,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Opts, String> {
    let (mut config, mut id, mut data_dir, mut until_zxid, mut seconds) =
        (None, None, None, None, None);
    let mut until_path = None;
    let mut max_snapshot_bytes = OBSERVER_MAX_SNAPSHOT_BYTES;
    while let Some(a) = args.next() {
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--config" => config = Some(PathBuf::from(v)),
            "--data-dir" => data_dir = Some(PathBuf::from(v)),
            "--id" => id = Some(v.parse::<i64>().map_err(|e| format!("--id {v}: {e}"))?),
            "--until-zxid" => {
                let z = match v.strip_prefix("0x") {
                    Some(h) => i64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                until_zxid = Some(z.map_err(|e| format!("--until-zxid {v}: {e}"))?);
            }
            "--until-path" => until_path = Some(v),
            "--max-snapshot-bytes" => {
                max_snapshot_bytes = v
                    .parse()
                    .map_err(|e| format!("--max-snapshot-bytes {v}: {e}"))?;
            }
            "--seconds" => {
                let s: f64 = v.parse().map_err(|e| format!("--seconds {v}: {e}"))?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(format!("--seconds {v}: a positive number"));
                }
                seconds = Some(s);
            }
            _ => return Err(format!("unknown option {a}")),
        }
    }
    match (config, id, data_dir) {
        (Some(config), Some(id), Some(data_dir)) => Ok(Opts {
            config,
            id,
            data_dir,
            until_zxid,
            until_path,
            seconds,
            max_snapshot_bytes,
        }),
        _ => Err("--config, --id and --data-dir are required".into()),
    }
}

/// The link's settings from the ZooKeeper ensemble's zoo.cfg (and the JVM flags' JAAS file).
fn link_config(
    o: &Opts,
    server_jvmflags: &str,
    jvmflags: &str,
) -> Result<link::LinkConfig, String> {
    let text =
        std::fs::read_to_string(&o.config).map_err(|e| format!("{}: {e}", o.config.display()))?;
    let mut c = Config::default();
    c.apply_jvm_flags(server_jvmflags, jvmflags)?;
    c.apply_zoo_cfg(&text)
        .map_err(|e| format!("{}: {e}", o.config.display()))?;
    let me = c.members.iter().find(|m| m.id as i64 == o.id);
    if me.is_none_or(|m| m.role != Role::Observer) {
        return Err(format!(
            "{}: no server.{}=…:observer line: the ZooKeeper members accept an observer only under its id",
            o.config.display(),
            o.id
        ));
    }
    let mut participants: Vec<link::Participant> = Vec::new();
    for m in c.members.iter().filter(|m| m.role == Role::Participant) {
        for a in &m.addrs {
            let found: Vec<SocketAddr> = (a.host.as_str(), a.peer_port)
                .to_socket_addrs()
                .map_err(|e| format!("server.{}: {}: {e}", m.id, a.host))?
                .collect();
            participants.extend(found.into_iter().map(|addr| link::Participant {
                addr,
                host: a.host.clone(),
            }));
        }
    }
    if participants.is_empty() {
        return Err(format!("{}: no participant to observe", o.config.display()));
    }
    let security = secure::LinkSecurity::open(&c.quorum, c.sasl.jaas_file.as_deref())
        .map_err(|e| format!("{}: {e}", o.config.display()))?;
    Ok(link::LinkConfig {
        server_id: o.id,
        participants,
        security,
        tick_ms: c.tick_time,
        init_limit: c.init_limit,
        sync_limit: c.sync_limit,
        limits: palisade_zab::Limits {
            max_snapshot: o.max_snapshot_bytes,
            snapshot_batch: OBSERVER_SNAPSHOT_BATCH,
            ..palisade_zab::Limits::default()
        },
        marker: o.until_path.clone(),
    })
}

/// Runs `palisade observe-zookeeper ARGS`; the exit code.
pub fn main(args: impl Iterator<Item = String>) -> u8 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return 2;
        }
    };
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let cfg = match link_config(&o, &env("SERVER_JVMFLAGS"), &env("JVMFLAGS")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return 1;
        }
    };
    let security = cfg.security.describe();
    let t0 = Instant::now();
    let opened = match store::Store::open(&o.data_dir, store::StoreConfig::default()) {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("observe-zookeeper: {e}");
            return 1;
        }
    };
    let recovered = opened.state.as_ref().map(|s| s.zxid());
    let mut mirror = Mirror::durable(opened.store, opened.state);
    let progress = rt.block_on(observe(cfg, &mut mirror, &o));
    if let Some(why) = &progress.fatal {
        eprintln!("observe-zookeeper: {why}");
        return 1;
    }
    if let Err(e) = mirror.finish() {
        eprintln!("observe-zookeeper: {e}");
        return 1;
    }
    let Some(state) = mirror.state() else {
        eprintln!(
            "observe-zookeeper: nothing synced from the leader (resyncs: {:?}; refused: {:?})",
            progress.resyncs, progress.refused
        );
        return 1;
    };
    print_summary(
        recovered,
        &progress,
        &mirror,
        state,
        t0.elapsed(),
        &o,
        security,
    );
    0
}

/// What the run did, for the operator.
fn print_summary(
    recovered: Option<i64>,
    progress: &link::Progress,
    mirror: &Mirror,
    state: &crate::state::State,
    elapsed: Duration,
    o: &Opts,
    security: &str,
) {
    let syncs: Vec<String> = progress
        .syncs
        .iter()
        .map(|m| format!("{m:?}").to_uppercase())
        .collect();
    println!(
        "observed a ZooKeeper ensemble\n  recovered:  {}\n  synced:     {}\n  syncs:      {}\n  nodes:      {}, {} sessions\n  zxid:       {:#x}\n  applied:    {} txns after {} snapshot(s), {} ZooKeeper digest(s) checked\n  links:      {} connection(s), {} resync(s), {} refused (TLS or SASL); {}\n  time:       {:.1} s\n  data dir:   {} ({} snapshot(s) written)",
        recovered.map_or("nothing (a new data dir)".into(), |z| format!("at {z:#x}")),
        match (progress.synced_at, progress.sync_ms) {
            (Some(z), Some(ms)) => format!("at {z:#x}, {ms} ms after connecting"),
            (Some(z), None) => format!("at {z:#x}"),
            _ => "no (stopped before UPTODATE)".into(),
        },
        if syncs.is_empty() { "none".into() } else { syncs.join(", ") },
        state.tree.znode_count(),
        state.sessions().len(),
        state.zxid(),
        mirror.applied,
        mirror.snapshots_loaded,
        mirror.digests_checked,
        progress.connections,
        progress.resyncs.len(),
        progress.refused.len(),
        security,
        elapsed.as_secs_f64(),
        o.data_dir.display(),
        mirror.snapshots_written()
    );
}

/// The link until the stopping rule holds; what it saw last.
async fn observe(cfg: link::LinkConfig, mirror: &mut Mirror, o: &Opts) -> link::Progress {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (progress_tx, mut progress_rx) = tokio::sync::watch::channel(link::Progress::default());
    let until = o.until_zxid;
    let deadline = o.seconds.map(Duration::from_secs_f64);
    let watcher = async move {
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => break,
                _ = tokio::signal::ctrl_c() => break,
                _ = terminated() => break,
                r = progress_rx.changed() => {
                    if r.is_err() {
                        break;
                    }
                    let p = progress_rx.borrow().clone();
                    if p.fatal.is_some() {
                        break;
                    }
                    let synced = p.synced_at.is_some();
                    if synced && (until.is_some_and(|z| p.last_zxid >= z) || p.marker) {
                        break;
                    }
                }
            }
        }
        let _ = stop_tx.send(true);
    };
    tokio::join!(link::run(cfg, mirror, stop_rx, &progress_tx), watcher);
    let p = progress_tx.borrow().clone();
    p
}

async fn terminated() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}
