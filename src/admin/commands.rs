//! The AdminServer's commands: names and aliases as ZooKeeper 3.8.0's Commands.java, and the
//! JSON each answers. Those that need the core's data are built here on the core thread
//! (`Core::admin_command`); the rest from the configuration and the files (`local`).

use super::{CoreCmd, Json};
use crate::core::fourlw::VERSION;
use crate::core::Core;
use crate::metrics::sample::{Detail, Value as MValue};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Where a command is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Core(CoreCmd),
    Local(Local),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    Configuration,
    Dirs,
    Environment,
    InitialConfiguration,
    IsReadOnly,
    LastSnapshot,
    Leader,
    ObserverConnectionStatReset,
    Observers,
    Ruok,
    VotingView,
    ZabState,
}

/// Every command: its names (the primary one first, as `/commands` lists it) and kind.
/// Left out (JVM-only or not in Palisade): get_trace_mask/gtmk, set_trace_mask/stmk,
/// system_properties/sysp.
pub const COMMANDS: &[(&[&str], Kind)] = &[
    (
        &["configuration", "conf", "config"],
        Kind::Local(Local::Configuration),
    ),
    (
        &["connection_stat_reset", "crst"],
        Kind::Core(CoreCmd::ConnectionStatReset),
    ),
    (&["connections", "cons"], Kind::Core(CoreCmd::Connections)),
    (&["dirs"], Kind::Local(Local::Dirs)),
    (&["dump"], Kind::Core(CoreCmd::Dump)),
    (
        &["environment", "env", "envi"],
        Kind::Local(Local::Environment),
    ),
    (&["hash"], Kind::Core(CoreCmd::Hash)),
    (
        &["initial_configuration", "icfg"],
        Kind::Local(Local::InitialConfiguration),
    ),
    (&["is_read_only", "isro"], Kind::Local(Local::IsReadOnly)),
    (&["last_snapshot", "lsnp"], Kind::Local(Local::LastSnapshot)),
    (&["leader", "lead"], Kind::Local(Local::Leader)),
    (&["monitor", "mntr"], Kind::Core(CoreCmd::Monitor)),
    (
        &["observer_connection_stat_reset", "orst"],
        Kind::Local(Local::ObserverConnectionStatReset),
    ),
    (&["observers", "obsr"], Kind::Local(Local::Observers)),
    (&["ruok"], Kind::Local(Local::Ruok)),
    (&["server_stats", "srvr"], Kind::Core(CoreCmd::ServerStats)),
    (&["stat_reset", "srst"], Kind::Core(CoreCmd::StatReset)),
    (&["stats", "stat"], Kind::Core(CoreCmd::Stats)),
    (&["voting_view"], Kind::Local(Local::VotingView)),
    (
        &["watch_summary", "wchs"],
        Kind::Core(CoreCmd::WatchSummary),
    ),
    (&["watches", "wchc"], Kind::Core(CoreCmd::Watches)),
    (
        &["watches_by_path", "wchp"],
        Kind::Core(CoreCmd::WatchesByPath),
    ),
    (&["zabstate"], Kind::Local(Local::ZabState)),
];

/// The primary name and kind of a command called by any of its names.
pub fn find(name: &str) -> Option<(&'static str, Kind)> {
    COMMANDS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .and_then(|(names, kind)| names.first().map(|n| (*n, *kind)))
}

/// What the local commands report: taken from the configuration at start-up.
#[derive(Clone, Debug, Default)]
pub struct Info {
    pub client_port: u16,
    pub data_dir: PathBuf,
    pub data_log_dir: PathBuf,
    pub snap_dir: PathBuf,
    pub tick_time: u64,
    pub max_client_cnxns: usize,
    pub min_session_timeout: i32,
    pub max_session_timeout: i32,
    pub initial_configuration: String,
}

/// Bytes in the files of a directory tree.
pub fn dir_size(dir: &std::path::Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total = total.saturating_add(m.len()),
                Err(_) => {}
            }
        }
    }
    total
}

fn uname_release() -> String {
    // SAFETY: uname fills the struct it is given; a zeroed utsname is a valid argument.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(buf.get(..end).unwrap_or(&[])).into_owned()
}

fn obj(v: Value) -> Json {
    match v {
        Value::Object(m) => m,
        _ => Json::new(),
    }
}

/// A local command's fields (blocking: some read the data dir; run off the runtime's
/// workers).
pub fn local(cmd: Local, info: &Info) -> Json {
    match cmd {
        Local::Configuration => obj(json!({
            "client_port": info.client_port,
            "data_dir": info.data_dir.display().to_string(),
            "data_log_dir": info.data_log_dir.display().to_string(),
            "tick_time": info.tick_time,
            "max_client_cnxns": info.max_client_cnxns,
            "min_session_timeout": info.min_session_timeout,
            "max_session_timeout": info.max_session_timeout,
            "server_id": 0,
            "client_port_listen_backlog": -1,
        })),
        Local::Dirs => obj(json!({
            "datadir_size": dir_size(&info.data_dir),
            "logdir_size": dir_size(&info.data_log_dir),
        })),
        // ZooKeeper's java.* entries and its JVM heap figures (os.memory.*) are left out.
        Local::Environment => obj(json!({
            "zookeeper.version": VERSION,
            "host.name": host_name(),
            "os.name": std::env::consts::OS,
            "os.arch": std::env::consts::ARCH,
            "os.version": uname_release(),
            "user.name": std::env::var("USER").unwrap_or_default(),
            "user.home": std::env::var("HOME").unwrap_or_default(),
            "user.dir": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
        })),
        Local::InitialConfiguration => obj(json!({
            "initial_configuration": info.initial_configuration,
        })),
        Local::IsReadOnly => obj(json!({ "read_only": false })),
        Local::LastSnapshot => {
            let newest = palisade_snapshot::list(&info.snap_dir)
                .ok()
                .and_then(|l| l.into_iter().max_by_key(|(z, _)| *z));
            match newest {
                Some((zxid, path)) => {
                    let ts = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(-1, |d| i64::try_from(d.as_secs()).unwrap_or(-1));
                    obj(json!({ "zxid": format!("{zxid:x}"), "timestamp": ts }))
                }
                // ZooKeeper's answer before its first snapshot: Long.toHexString(-1), -1.
                None => obj(json!({ "zxid": "ffffffffffffffff", "timestamp": -1 })),
            }
        }
        // A standalone server, as ZooKeeper answers it.
        Local::Leader => obj(json!({ "error": "server is not initialized" })),
        Local::ObserverConnectionStatReset | Local::Ruok => Json::new(),
        Local::Observers => obj(json!({ "synced_observers": 0, "observers": [] })),
        Local::VotingView => obj(json!({ "current_config": {} })),
        Local::ZabState => obj(json!({ "voting": false, "zabstate": "" })),
    }
}

fn latency_avg(c: &Core) -> f64 {
    let s = &c.stats;
    if s.latency_count == 0 {
        0.0
    } else {
        ((s.latency_sum as f64 / s.latency_count as f64) * 10_000.0).round() / 10_000.0
    }
}

/// ZooKeeper's client_response_stats: reply sizes without the length prefix (-1: none yet).
fn response_sizes(c: &Core) -> Value {
    let (last, min, max) = c.stats.response_sizes();
    json!({ "last_buffer_size": last, "min_buffer_size": min, "max_buffer_size": max })
}

impl Core {
    fn server_stats_json(&self) -> Json {
        let s = &self.stats;
        let outstanding: usize = self.conns.values().map(|c| c.queue.len()).sum();
        obj(json!({
            "version": VERSION,
            "read_only": false,
            "server_stats": {
                "packets_sent": s.sent,
                "packets_received": s.received,
                "fsync_threshold_exceed_count": 0,
                "client_response_stats": response_sizes(self),
                "provider_null": false,
                // Filled in by the HTTP side (a directory walk is kept off the core).
                "data_dir_size": 0,
                "log_dir_size": 0,
                "server_state": "standalone",
                "last_processed_zxid": self.state.zxid(),
                "outstanding_requests": outstanding,
                "avg_latency": latency_avg(self),
                "max_latency": s.latency_max,
                "min_latency": s.latency_min,
                "num_alive_client_connections": self.conns.len(),
                "uptime": self.started.elapsed().as_millis() as u64,
                "auth_failed_count": 0,
                "non_mtlsremote_conn_count": 0,
                "non_mtlslocal_conn_count": 0,
            },
            "client_response": response_sizes(self),
            "node_count": self.state.tree.znode_count(),
        }))
    }

    /// Connections sorted by id, so answers are stable.
    fn sorted_conns(&self) -> Vec<&crate::core::Conn> {
        let mut ids: Vec<_> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        ids.iter().filter_map(|id| self.conns.get(id)).collect()
    }

    /// A core command's fields.
    pub(crate) fn admin_command(&mut self, cmd: CoreCmd) -> Json {
        match cmd {
            CoreCmd::Connections => {
                let list: Vec<Value> = self
                    .sorted_conns()
                    .into_iter()
                    .map(|c| {
                        json!({
                            "remote_socket_address": c.peer.to_string(),
                            "interest_ops": 1,
                            "outstanding_requests": c.queue.len(),
                            "packets_received": c.received,
                            "packets_sent": c.sent,
                            "session_id": c.session,
                            // Not tracked per connection: ZooKeeper's values before the first
                            // request completes.
                            "last_operation": "NA",
                            "established": c.established,
                            "session_timeout": c.timeout,
                            "last_cxid": -1,
                            "last_zxid": c.last_zxid,
                            "last_response_time": 0,
                            "last_latency": 0,
                            "min_latency": 0,
                            "avg_latency": 0,
                            "max_latency": 0,
                        })
                    })
                    .collect();
                obj(json!({ "connections": list, "secure_connections": [] }))
            }
            CoreCmd::ConnectionStatReset => {
                for c in self.conns.values_mut() {
                    c.received = 0;
                    c.sent = 0;
                }
                Json::new()
            }
            CoreCmd::Dump => {
                let mut expiry: std::collections::BTreeMap<u64, Vec<i64>> = Default::default();
                let mut ephemerals = Json::new();
                let mut sessions: Vec<(i64, u64)> = self
                    .liveness
                    .iter()
                    .map(|(id, s)| (*id, s.deadline_ms))
                    .collect();
                sessions.sort_unstable();
                for (id, deadline) in sessions {
                    expiry.entry(deadline).or_default().push(id);
                    let paths: Vec<String> = self
                        .state
                        .tree
                        .ephemerals_of(id)
                        .map(|n| self.state.tree.path_of(n))
                        .collect();
                    if !paths.is_empty() {
                        ephemerals.insert(id.to_string(), json!(paths));
                    }
                }
                let expiry: Json = expiry
                    .into_iter()
                    .map(|(t, ids)| (t.to_string(), json!(ids)))
                    .collect();
                obj(json!({
                    "expiry_time_to_session_ids": expiry,
                    "session_id_to_ephemeral_paths": ephemerals,
                }))
            }
            // Palisade's digest of the current tree (not ZooKeeper's digest function).
            CoreCmd::Hash => obj(json!({
                "digests": [{ "zxid": self.state.zxid(), "digest": self.state.tree.digest() }],
            })),
            CoreCmd::Monitor => monitor_json(&self.metrics_sample()),
            CoreCmd::ServerStats => self.server_stats_json(),
            CoreCmd::Stats => {
                let mut m = self.server_stats_json();
                let list: Vec<Value> = self
                    .sorted_conns()
                    .into_iter()
                    .map(|c| {
                        json!({
                            "remote_socket_address": c.peer.to_string(),
                            "interest_ops": 1,
                            "outstanding_requests": c.queue.len(),
                            "packets_received": c.received,
                            "packets_sent": c.sent,
                        })
                    })
                    .collect();
                m.insert("connections".into(), json!(list));
                m.insert("secure_connections".into(), json!([]));
                m
            }
            CoreCmd::StatReset => {
                self.stats = Default::default();
                Json::new()
            }
            // The data-watch table, as wchs/wchc/wchp report it (see fourlw.rs).
            CoreCmd::WatchSummary => {
                let (conns, paths, total) = self.watches.data_summary();
                obj(json!({
                    "num_connections": conns,
                    "num_paths": paths,
                    "num_total_watches": total,
                }))
            }
            CoreCmd::Watches => {
                let mut rows: Vec<(i64, Vec<String>)> = self
                    .watches
                    .data_by_conn()
                    .filter_map(|(c, paths)| {
                        let mut paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
                        paths.sort_unstable();
                        self.conns.get(&c).map(|conn| (conn.session, paths))
                    })
                    .collect();
                rows.sort_unstable();
                let map: Json = rows
                    .into_iter()
                    .map(|(s, p)| (s.to_string(), json!(p)))
                    .collect();
                obj(json!({ "session_id_to_watched_paths": map }))
            }
            CoreCmd::WatchesByPath => {
                let mut map = Json::new();
                let mut rows: Vec<(String, Vec<i64>)> = self
                    .watches
                    .data_by_path()
                    .map(|(p, conns)| {
                        let mut s: Vec<i64> = conns
                            .iter()
                            .filter_map(|c| self.conns.get(c).map(|conn| conn.session))
                            .collect();
                        s.sort_unstable();
                        (p.to_string(), s)
                    })
                    .collect();
                rows.sort_unstable();
                for (p, s) in rows {
                    map.insert(p, json!(s));
                }
                obj(json!({ "path_to_session_ids": map }))
            }
        }
    }
}

/// A sample as the `monitor` command reports it: each summary as avg_/min_/max_/cnt_/sum_
/// (and p50_/p95_/p99_/p999_ for the detailed ones).
pub fn monitor_json(sample: &crate::metrics::Sample) -> Json {
    let mut m = Json::new();
    for e in &sample.entries {
        let n = &e.name;
        match &e.value {
            MValue::Text(t) => {
                m.insert(n.clone(), json!(t));
            }
            MValue::Gauge(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::GaugeF(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::Counter(v) => {
                m.insert(n.clone(), json!(v));
            }
            MValue::Summary(s, detail) => {
                m.insert(format!("avg_{n}"), json!(s.avg()));
                m.insert(format!("min_{n}"), json!(s.min()));
                m.insert(format!("max_{n}"), json!(s.max()));
                m.insert(format!("cnt_{n}"), json!(s.count()));
                m.insert(format!("sum_{n}"), json!(s.sum()));
                if *detail == Detail::Advanced {
                    for (p, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)] {
                        m.insert(format!("{p}_{n}"), json!(s.quantile(q)));
                    }
                }
            }
        }
    }
    m
}
