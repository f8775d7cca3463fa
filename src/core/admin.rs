//! What the AdminServer asks the core, and the core's answers: the commands that need the
//! core's data (connections, sessions, watches, the tree's digest, the metrics sample) are
//! built here on the core thread, between two messages, as a four-letter word is. The HTTP
//! side (src/admin/) sends a [`Query`] in `CoreMsg::Admin` and awaits the reply.

use super::fourlw::VERSION;
use super::token::{Ends, Tokens};
use super::Core;
use crate::metrics::{monitor_json, Sample};
use serde_json::{json, Map, Value};

/// A JSON object, in the shape ZooKeeper's CommandResponse serializes.
pub type Json = Map<String, Value>;

/// A command the core answers (the others need only the configuration or the files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreCmd {
    Connections,
    ConnectionStatReset,
    Dump,
    Hash,
    Monitor,
    ServerStats,
    Stats,
    StatReset,
    WatchSummary,
    Watches,
    WatchesByPath,
    IsReadOnly,
    /// `snapshot`: answered by the HTTP side through [`Query::Backup`].
    Backup,
}

/// What the HTTP side asks the core, its reply ends carried as `E` says (msg.rs `Ends`).
pub enum Query<E: Ends> {
    Command {
        cmd: CoreCmd,
        reply: E::End<Json>,
    },
    Metrics {
        reply: E::End<Sample>,
    },
    /// /ready: whether the core serves clients, in which role.
    Ready {
        reply: E::End<Readiness>,
    },
    /// shed_connections: close this share (1..=100 %) of the client connections, sessions
    /// kept (core/shed.rs); answered with how many were closed.
    Shed {
        percentage: u8,
        reply: E::End<usize>,
    },
    /// yield_leadership / request_leadership (`ydld`, `rqld` as admin commands): handed to
    /// the Raft side, or why not.
    Leadership {
        ask: super::member::LeadershipAsk,
        reply: E::End<Result<(), &'static str>>,
    },
    /// `restore`: the backup (decoded off the core) replaces the live state (restore.rs).
    Restore {
        state: Box<crate::state::State>,
        /// The snapshot stream it was decoded from and its last processed zxid: what an
        /// ensemble member sends through the Raft log.
        stream: (bytes::Bytes, i64),
        reply: E::End<Result<i64, String>>,
    },
    /// The root node's ACL: what authorizes an admin command with side effects
    /// (admin/auth.rs).
    RootAcl {
        reply: E::End<Vec<crate::acl::Entry>>,
    },
    /// A consistent image of the live state (a fuzzy capture and the txns applied while it
    /// was taken; core/backup.rs), for the `snapshot` command.
    Backup {
        reply: E::End<Vec<u8>>,
    },
}

/// What /ready reports: the serving state `srvr` reports (a member without a quorum, or in
/// read-only mode, does not serve read-write clients) and the role its Mode line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    /// Serving read-write clients (srvr answers, and not in read-only mode).
    pub serving: bool,
    /// srvr's Mode: standalone, leader, follower, observer or read-only.
    pub role: &'static str,
    /// A leader is known (standalone: its own).
    pub has_leader: bool,
}

impl Core {
    /// Answers an admin query (the runtime sends the answer; a receiver gone means the HTTP
    /// request went away).
    pub(crate) fn admin(&mut self, q: Query<Tokens>) {
        match q {
            Query::Command { cmd, reply } => {
                let answer = self.admin_command(cmd);
                self.outbox.answer(reply, answer);
            }
            Query::Metrics { reply } => {
                let answer = self.metrics_sample();
                self.outbox.answer(reply, answer);
            }
            Query::Ready { reply } => {
                let answer = self.readiness();
                self.outbox.answer(reply, answer);
            }
            Query::Shed { percentage, reply } => {
                let answer = self.shed_connections(percentage);
                self.outbox.answer(reply, answer);
            }
            Query::Leadership { ask, reply } => {
                let answer = self.leadership(ask);
                self.outbox.answer(reply, answer);
            }
            Query::Backup { reply } => self.backup(reply),
            Query::Restore {
                state,
                stream,
                reply,
            } => self.begin_restore(*state, stream, reply),
            Query::RootAcl { reply } => {
                let tree = &self.state.tree;
                let acl = tree.lookup("/").map(|id| tree.acl_of(id).to_vec());
                let answer = acl.unwrap_or_default();
                self.outbox.answer(reply, answer);
            }
        }
    }

    pub(crate) fn readiness(&self) -> Readiness {
        let read_only = self.read_only();
        Readiness {
            serving: self.serving() && !read_only,
            role: self.mode(),
            has_leader: !read_only && self.member_knows_leader().unwrap_or(true),
        }
    }
}

fn obj(v: Value) -> Json {
    match v {
        Value::Object(m) => m,
        _ => Json::new(),
    }
}

/// ZooKeeper's client_response_stats: reply sizes without the length prefix (-1: none yet).
fn response_sizes(c: &Core) -> Value {
    let (last, min, max) = c.stats.response_sizes();
    json!({ "last_buffer_size": last, "min_buffer_size": min, "max_buffer_size": max })
}

/// The fields `stats` and `connections` both give for a connection.
fn conn_brief(c: &super::Conn) -> Json {
    obj(json!({
        "remote_socket_address": c.peer.to_string(),
        "interest_ops": 1,
        "outstanding_requests": c.queue.len(),
        "packets_received": c.received,
        "packets_sent": c.sent,
    }))
}

impl Core {
    fn server_stats_json(&self) -> Json {
        let s = &self.stats;
        obj(json!({
            "version": VERSION,
            "read_only": self.read_only(),
            "server_stats": {
                "packets_sent": s.sent,
                "packets_received": s.received,
                "fsync_threshold_exceed_count": 0,
                "client_response_stats": response_sizes(self),
                "provider_null": false,
                // Filled in by the HTTP side (a directory walk is kept off the core).
                "data_dir_size": 0,
                "log_dir_size": 0,
                "server_state": self.mode(),
                "last_processed_zxid": self.state.zxid(),
                "outstanding_requests": self.outstanding(),
                "avg_latency": s.latency_avg(),
                "max_latency": s.latency_max,
                "min_latency": s.latency_min,
                "num_alive_client_connections": self.conns.len(),
                "uptime": self.uptime_ms(),
                "auth_failed_count": self.metrics.auth_failed,
                "non_mtlsremote_conn_count": 0,
                "non_mtlslocal_conn_count": 0,
            },
            "client_response": response_sizes(self),
            "node_count": self.state.tree.znode_count(),
        }))
    }

    /// Connections sorted by id, so answers are stable.
    fn sorted_conns(&self) -> Vec<&super::Conn> {
        let mut ids: Vec<_> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        ids.iter().filter_map(|id| self.conns.get(id)).collect()
    }

    /// A core command's fields.
    pub(crate) fn admin_command(&mut self, cmd: CoreCmd) -> Json {
        match cmd {
            CoreCmd::Connections => self.connections_json(),
            CoreCmd::ConnectionStatReset => {
                for c in self.conns.values_mut() {
                    c.received = 0;
                    c.sent = 0;
                }
                Json::new()
            }
            CoreCmd::Dump => self.dump_json(),
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
                    .map(|c| Value::Object(conn_brief(c)))
                    .collect();
                m.insert("connections".into(), json!(list));
                m.insert("secure_connections".into(), json!([]));
                m
            }
            CoreCmd::StatReset => {
                self.stats = Default::default();
                self.reset_namespace_stats();
                Json::new()
            }
            // The data-watch table, as wchs/wchc/wchp report it (see fourlw/watches.rs).
            CoreCmd::WatchSummary => {
                let (conns, paths, total) = self.watches.data_summary();
                obj(json!({
                    "num_connections": conns,
                    "num_paths": paths,
                    "num_total_watches": total,
                }))
            }
            CoreCmd::Watches => {
                let map = keyed(self.watched_paths_by_session(), |s| s.to_string());
                obj(json!({ "session_id_to_watched_paths": map }))
            }
            CoreCmd::WatchesByPath => {
                let map = keyed(self.watching_sessions_by_path(), str::to_string);
                obj(json!({ "path_to_session_ids": map }))
            }
            CoreCmd::IsReadOnly => obj(json!({ "read_only": self.read_only() })),
            // The HTTP side answers it (Query::Backup); never sent as a command.
            CoreCmd::Backup => Json::new(),
        }
    }

    /// `connections`: each connection's counters and its session's.
    fn connections_json(&self) -> Json {
        let list: Vec<Value> = self
            .sorted_conns()
            .into_iter()
            .map(|c| {
                let mut row = conn_brief(c);
                row.extend(obj(json!({
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
                })));
                Value::Object(row)
            })
            .collect();
        obj(json!({ "connections": list, "secure_connections": [] }))
    }

    /// `dump`: the sessions by expiry deadline, and each session's ephemeral nodes.
    fn dump_json(&self) -> Json {
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
            let paths = self.state.tree.ephemeral_paths(id);
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
}

/// Sorted rows as one JSON object, each row's key named by `key`.
fn keyed<K, V: serde::Serialize>(rows: Vec<(K, V)>, key: impl Fn(K) -> String) -> Json {
    rows.into_iter().map(|(k, v)| (key(k), json!(v))).collect()
}
