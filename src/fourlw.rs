//! Four-letter words, in ZooKeeper 3.8's output formats.

use crate::core::Core;
use palisade_proto::FourLetterWord;
use std::fmt::Write as _;
use std::net::SocketAddr;

/// The version string clients and monitoring parse (`zookeeper.version=3.8.0-...`).
pub const VERSION: &str = concat!("3.8.0-palisade-", env!("CARGO_PKG_VERSION"));

/// Bytes in the files of a directory tree (what `dirs` reports).
fn dir_size(dir: &str) -> u64 {
    let mut total = 0;
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

impl Core {
    fn allowed(&self, word: &str) -> bool {
        self.cfg
            .four_letter_words
            .iter()
            .any(|w| w == "*" || w == word)
    }

    fn latency(&self) -> (u64, String, u64) {
        let s = &self.stats;
        let avg = if s.latency_count == 0 {
            0.0
        } else {
            s.latency_sum as f64 / s.latency_count as f64
        };
        (s.latency_min, format!("{avg:.4}"), s.latency_max)
    }

    fn srvr_stats(&self, out: &mut String) {
        let (min, avg, max) = self.latency();
        let _ = writeln!(out, "Latency min/avg/max: {min}/{avg}/{max}");
        let _ = writeln!(out, "Received: {}", self.stats.received);
        let _ = writeln!(out, "Sent: {}", self.stats.sent);
        let _ = writeln!(out, "Connections: {}", self.conns.len());
        let _ = writeln!(out, "Outstanding: {}", self.outstanding());
        let _ = writeln!(out, "Zxid: {:#x}", self.applied_zxid);
        let _ = writeln!(out, "Mode: standalone");
        let _ = writeln!(out, "Node count: {}", self.tree.znode_count());
    }

    fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }

    pub(crate) fn four_letter(&mut self, word: FourLetterWord, _peer: SocketAddr) -> String {
        let name = word.name();
        if !self.allowed(name) {
            return format!("{name} is not executed because it is not in the whitelist.\n");
        }
        let mut out = String::new();
        match word {
            FourLetterWord::Ruok => out.push_str("imok"),
            FourLetterWord::Isro => out.push_str("rw"),
            FourLetterWord::Srvr => {
                let _ = writeln!(out, "Zookeeper version: {VERSION}");
                self.srvr_stats(&mut out);
            }
            FourLetterWord::Stat => {
                let _ = writeln!(out, "Zookeeper version: {VERSION}");
                let _ = writeln!(out, "Clients:");
                for c in self.conns.values() {
                    let _ = writeln!(
                        out,
                        " /{}[1](queued={},recved={},sent={})",
                        c.peer,
                        c.queue.len(),
                        c.received,
                        c.sent
                    );
                }
                out.push('\n');
                self.srvr_stats(&mut out);
            }
            FourLetterWord::Cons => {
                for c in self.conns.values() {
                    let _ = writeln!(
                        out,
                        " /{}[1](queued={},recved={},sent={},sid={:#x},lzxid={:#x},to={})",
                        c.peer,
                        c.queue.len(),
                        c.received,
                        c.sent,
                        c.session,
                        c.last_zxid,
                        c.timeout
                    );
                }
                out.push('\n');
            }
            FourLetterWord::Envi => {
                let _ = writeln!(out, "Environment:");
                let _ = writeln!(out, "zookeeper.version={VERSION}");
                let _ = writeln!(out, "host.name=localhost");
                let _ = writeln!(out, "os.name={}", std::env::consts::OS);
                let _ = writeln!(out, "os.arch={}", std::env::consts::ARCH);
                let _ = writeln!(
                    out,
                    "user.dir={}",
                    std::env::current_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default()
                );
            }
            FourLetterWord::Conf => {
                let _ = writeln!(out, "clientPort={}", self.cfg.client_port);
                let _ = writeln!(out, "dataDir={}", self.cfg.data_dir);
                let _ = writeln!(out, "dataLogDir={}", self.cfg.data_log_dir);
                let _ = writeln!(out, "tickTime={}", self.cfg.tick_ms);
                let _ = writeln!(out, "maxClientCnxns={}", self.cfg.max_client_cnxns);
                let _ = writeln!(out, "minSessionTimeout={}", self.cfg.min_session_timeout);
                let _ = writeln!(out, "maxSessionTimeout={}", self.cfg.max_session_timeout);
                let _ = writeln!(out, "serverId=0");
            }
            FourLetterWord::Mntr => {
                let (min, avg, max) = self.latency();
                let kv: [(&str, String); 17] = [
                    ("version", VERSION.to_string()),
                    ("server_state", "standalone".into()),
                    ("avg_latency", avg),
                    ("max_latency", max.to_string()),
                    ("min_latency", min.to_string()),
                    ("packets_received", self.stats.received.to_string()),
                    ("packets_sent", self.stats.sent.to_string()),
                    ("num_alive_connections", self.conns.len().to_string()),
                    ("outstanding_requests", self.outstanding().to_string()),
                    ("uptime", self.started.elapsed().as_millis().to_string()),
                    ("znode_count", self.tree.znode_count().to_string()),
                    ("watch_count", self.watches.count().to_string()),
                    ("ephemerals_count", self.tree.ephemeral_count().to_string()),
                    (
                        "approximate_data_size",
                        self.tree.approximate_data_size().to_string(),
                    ),
                    ("global_sessions", self.sessions.len().to_string()),
                    ("local_sessions", "0".into()),
                    ("connection_drop_probability", "0.0".into()),
                ];
                for (k, v) in kv {
                    let _ = writeln!(out, "zk_{k}\t{v}");
                }
            }
            FourLetterWord::Wchs => {
                let _ = writeln!(
                    out,
                    "{} connections watching {} paths",
                    self.watches.conns(),
                    self.watches.paths()
                );
                let _ = writeln!(out, "Total watches:{}", self.watches.count());
            }
            FourLetterWord::Dump => {
                let _ = writeln!(out, "SessionTracker dump:");
                let _ = writeln!(out, "Session Sets ({}):", self.sessions.len());
                let _ = writeln!(out, "ephemeral nodes dump:");
                let mut sessions: Vec<i64> = self.sessions.iter().map(|(id, _)| *id).collect();
                sessions.sort_unstable();
                for s in sessions {
                    let paths: Vec<String> = self
                        .tree
                        .ephemerals_of(s)
                        .map(|id| self.tree.path_of(id))
                        .collect();
                    if !paths.is_empty() {
                        let _ = writeln!(out, "{s:#x}:");
                        for p in paths {
                            let _ = writeln!(out, "\t{p}");
                        }
                    }
                }
            }
            // wchc: each session with the paths it watches; wchp: each path with its sessions.
            FourLetterWord::Wchc | FourLetterWord::Wchp => {
                let mut pairs: Vec<(i64, &str)> = Vec::new();
                for (_, path, conns) in self.watches.watchers() {
                    for c in conns {
                        if let Some(conn) = self.conns.get(c) {
                            pairs.push((conn.session, path));
                        }
                    }
                }
                pairs.sort_unstable();
                pairs.dedup();
                if word == FourLetterWord::Wchp {
                    pairs.sort_unstable_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
                }
                let mut last: Option<String> = None;
                for (session, path) in pairs {
                    let (head, item) = match word {
                        FourLetterWord::Wchc => (format!("{session:#x}"), path.to_string()),
                        _ => (path.to_string(), format!("{session:#x}")),
                    };
                    if last.as_deref() != Some(head.as_str()) {
                        let _ = writeln!(out, "{head}");
                        last = Some(head);
                    }
                    let _ = writeln!(out, "\t{item}");
                }
            }
            FourLetterWord::Crst => {
                for c in self.conns.values_mut() {
                    c.received = 0;
                    c.sent = 0;
                }
                out.push_str("Connection stats reset.\n");
            }
            FourLetterWord::Srst => {
                self.stats = Default::default();
                out.push_str("Server stats reset.\n");
            }
            FourLetterWord::Dirs => {
                let _ = writeln!(out, "datadir_size: {}", dir_size(&self.cfg.data_dir));
                let _ = writeln!(out, "logdir_size: {}", dir_size(&self.cfg.data_log_dir));
            }
            FourLetterWord::Csnp => match self.start_snapshot() {
                Some(z) => {
                    let _ = writeln!(out, "Snapshot creation scheduled at zxid {z:#x}.");
                }
                None => out.push_str("Failed to schedule snapshot creation: one is being taken, or snapshots are off.\n"),
            },
            // ZooKeeper's layout (`<zxid hex>: <digest>`), with Palisade's digest of the
            // current tree (see digest.rs; not the same function as ZooKeeper's).
            FourLetterWord::Hash => {
                let _ = writeln!(out, "{:x}: {}", self.applied_zxid, self.tree.digest());
            }
            // Not supported: answered with nothing, as ZooKeeper answers a word it does not run.
            FourLetterWord::Gtmk | FourLetterWord::Stmk => {}
        }
        out
    }
}
