//! The AdminServer's commands: names and aliases as ZooKeeper 3.8.0's Commands.java, and the
//! JSON each answers. Those that need the core's data are built here on the core thread
//! (`Core::admin_command`); the rest from the configuration and the files (`local`).

use crate::core::admin::{CoreCmd, Json};
use crate::core::fourlw::VERSION;
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
    (&["is_read_only", "isro"], Kind::Core(CoreCmd::IsReadOnly)),
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
    // Answered by the HTTP side (http.rs `snapshot`): a backup of the live tree.
    (&["snapshot", "snap"], Kind::Core(CoreCmd::Backup)),
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

/// Commands answered to `POST` (ZooKeeper 3.10's PostCommands), the primary name first.
/// The leadership commands are Palisade's (ZooKeeper has no leader transfer; ClickHouse
/// Keeper has them as the four-letter words `ydld`/`rqld`, kept here as aliases).
pub const POST_COMMANDS: &[(&[&str], Post)] = &[
    (&["shed_connections", "shed"], Post::ShedConnections),
    (&["yield_leadership", "ydld"], Post::YieldLeadership),
    (&["request_leadership", "rqld"], Post::RequestLeadership),
    (&["restore", "rest"], Post::Restore),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Post {
    /// Close a share of the client connections, sessions kept (src/admin/shed.rs).
    ShedConnections,
    /// The leader hands over to the member furthest along (ensemble/raft/transfer.rs).
    YieldLeadership,
    /// This member asks the leader to hand over to it.
    RequestLeadership,
    /// A backup replaces the live state (ZooKeeper 3.9's RestoreCommand; core/restore.rs).
    Restore,
}

impl Post {
    /// Whether only an authenticated admin may run it (ZooKeeper: AuthRequest(ALL, "/")):
    /// every POST command has side effects.
    pub const fn needs_auth(self) -> bool {
        match self {
            Post::ShedConnections
            | Post::YieldLeadership
            | Post::RequestLeadership
            | Post::Restore => true,
        }
    }
}

/// The primary name and kind of a POST command called by any of its names.
pub fn find_post(name: &str) -> Option<(&'static str, Post)> {
    POST_COMMANDS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .and_then(|(names, cmd)| names.first().map(|n| (*n, *cmd)))
}

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
