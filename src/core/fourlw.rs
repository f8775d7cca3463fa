//! Four-letter words, in ZooKeeper 3.8's output formats.

use crate::core::watch::ConnId;
use crate::core::{Core, Out, OutTx};
use crate::metrics::{java_double, monitor_fields, round4, Field};
use palisade_proto::FourLetterWord;
use std::collections::BTreeMap;
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

/// The line `stat` and `cons` print for the connection asking: ZooKeeper lists it like any
/// other, with interest ops 0 and the one request it received.
fn own_line(peer: SocketAddr) -> String {
    format!(" /{peer}[0](queued=0,recved=1,sent=0)")
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
        (s.latency_min, java_double(round4(avg)), s.latency_max)
    }

    fn srvr_stats(&self, out: &mut String) {
        let (min, avg, max) = self.latency();
        let _ = writeln!(out, "Latency min/avg/max: {min}/{avg}/{max}");
        let _ = writeln!(out, "Received: {}", self.stats.received);
        let _ = writeln!(out, "Sent: {}", self.stats.sent);
        let _ = writeln!(out, "Connections: {}", self.alive_connections());
        let _ = writeln!(out, "Outstanding: {}", self.outstanding());
        let _ = writeln!(out, "Zxid: {:#x}", self.state.zxid());
        let _ = writeln!(out, "Mode: {}", self.mode());
        let _ = writeln!(out, "Node count: {}", self.state.tree.znode_count());
    }

    /// Open client connections, counting the one asking (ZooKeeper counts every connection
    /// its factory holds, the four-letter-word one included).
    fn alive_connections(&self) -> usize {
        self.conns.len() + 1
    }

    fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }

    /// Answers a four-letter word and closes. `dirs` walks the file system, so it runs on a
    /// thread of its own, not on the core thread (a data dir of many files took the core
    /// away from every client for as long as the walk took).
    pub(crate) fn answer_four_letter(
        &mut self,
        word: FourLetterWord,
        out: OutTx,
        peer: SocketAddr,
    ) {
        if matches!(word, FourLetterWord::Dirs) && self.allowed(word.name()) {
            let (data, log) = (self.cfg.data_dir.clone(), self.cfg.data_log_dir.clone());
            let spawned = std::thread::Builder::new()
                .name("palisade-dirs".into())
                .spawn(move || {
                    let text = format!(
                        "datadir_size: {}\nlogdir_size: {}\n",
                        dir_size(&data),
                        dir_size(&log)
                    );
                    let _ = out.send(Out::Bytes(bytes::Bytes::from(text)));
                    let _ = out.send(Out::Close);
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start a thread for dirs");
            }
            return;
        }
        let text = self.four_letter(word, peer);
        let _ = out.send(Out::Bytes(bytes::Bytes::from(text)));
        let _ = out.send(Out::Close);
    }

    pub(crate) fn four_letter(&mut self, word: FourLetterWord, peer: SocketAddr) -> String {
        let name = word.name();
        if !self.allowed(name) {
            return format!("{name} is not executed because it is not in the whitelist.\n");
        }
        let mut out = String::new();
        let needs_server = !matches!(
            word,
            FourLetterWord::Ruok
                | FourLetterWord::Isro
                | FourLetterWord::Conf
                | FourLetterWord::Envi
                | FourLetterWord::Lgif
        );
        let ro = self.read_only();
        if needs_server && !self.serving() && !ro {
            // An ensemble member without a leader, as ZooKeeper answers it.
            return "This ZooKeeper instance is not currently serving requests\n".into();
        }
        match word {
            FourLetterWord::Ruok => out.push_str("imok"),
            FourLetterWord::Lgif => match self.raft_info() {
                Some(t) => out.push_str(&t),
                None => out.push_str("This server is standalone: it has no Raft log.\n"),
            },
            // ZooKeeper's: "null" while no server runs (a member without a quorum), which
            // kazoo and the Java client's search for a read-write server rely on.
            FourLetterWord::Isro => out.push_str(if ro {
                "ro"
            } else if self.serving() {
                "rw"
            } else {
                "null"
            }),
            FourLetterWord::Srvr => {
                let _ = writeln!(out, "Zookeeper version: {VERSION}");
                if ro {
                    let _ = writeln!(out, "READ-ONLY mode; serving only read-only clients");
                }
                self.srvr_stats(&mut out);
            }
            FourLetterWord::Stat => {
                let _ = writeln!(out, "Zookeeper version: {VERSION}");
                if ro {
                    let _ = writeln!(out, "READ-ONLY mode; serving only read-only clients");
                }
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
                let _ = writeln!(out, "{}", own_line(peer));
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
                let _ = writeln!(out, "{}", own_line(peer));
                out.push('\n');
            }
            // Every key ZooKeeper 3.8's Environment.list prints, in its order (monitoring
            // scripts look keys up by name). The JVM's keys have no meaning here: `<NA>`, which
            // is what ZooKeeper prints for a property that is not set. os.memory.* describe
            // this process: total = its resident size, max = the machine's memory, free = the
            // memory available on it (MB, as ZooKeeper prints them).
            FourLetterWord::Envi => {
                let (user, home) = user_and_home();
                let (rss, mem_total, mem_avail) = memory_mb();
                let kv: [(&str, String); 18] = [
                    ("zookeeper.version", VERSION.to_string()),
                    ("host.name", "localhost".into()),
                    ("java.version", "<NA>".into()),
                    ("java.vendor", "<NA>".into()),
                    ("java.home", "<NA>".into()),
                    ("java.class.path", "<NA>".into()),
                    ("java.library.path", "<NA>".into()),
                    (
                        "java.io.tmpdir",
                        std::env::temp_dir().display().to_string(),
                    ),
                    ("java.compiler", "<NA>".into()),
                    ("os.name", java_os_name().into()),
                    ("os.arch", java_os_arch().into()),
                    ("os.version", os_release()),
                    ("user.name", user),
                    ("user.home", home),
                    (
                        "user.dir",
                        std::env::current_dir()
                            .map(|d| d.display().to_string())
                            .unwrap_or_default(),
                    ),
                    ("os.memory.free", format!("{mem_avail}MB")),
                    ("os.memory.max", format!("{mem_total}MB")),
                    ("os.memory.total", format!("{rss}MB")),
                ];
                let _ = writeln!(out, "Environment:");
                for (k, v) in kv {
                    let _ = writeln!(out, "{k}={v}");
                }
            }
            FourLetterWord::Conf => {
                let _ = writeln!(out, "clientPort={}", self.cfg.client_port);
                let _ = writeln!(out, "dataDir={}", self.cfg.data_dir);
                let _ = writeln!(out, "dataLogDir={}", self.cfg.data_log_dir);
                let _ = writeln!(out, "tickTime={}", self.cfg.tick_ms);
                let _ = writeln!(out, "maxClientCnxns={}", self.cfg.max_client_cnxns);
                let _ = writeln!(out, "minSessionTimeout={}", self.cfg.min_session_timeout);
                let _ = writeln!(out, "maxSessionTimeout={}", self.cfg.max_session_timeout);
                match self.member_conf() {
                    Some(lines) => {
                        out.push_str(lines);
                        // ZooKeeper ends with the version, no newline after it.
                        out.push_str(&self.config_text().unwrap_or_default());
                    }
                    None => {
                        let _ = writeln!(out, "serverId=0");
                    }
                }
            }
            // ZooKeeper 3.8's mntr dumps every metric of its provider, as `monitor` does; the
            // same fields here, from the same sample (src/metrics/monitor.rs). Palisade's own
            // are zk_palisade_*: parsers that expect zk_* keys take them.
            FourLetterWord::Mntr => {
                for (k, v) in monitor_fields(&self.metrics_sample()) {
                    let v = match (k.as_str(), v) {
                        // mntr counts the connection asking, as ZooKeeper's does.
                        ("num_alive_connections", _) => Field::UInt(self.alive_connections() as u64),
                        (_, v) => v,
                    };
                    let _ = writeln!(out, "zk_{k}\t{v}");
                }
                let _ = writeln!(
                    out,
                    "zk_palisade_connections_closed_output_budget\t{}",
                    self.stats.closed_output_budget
                );
                // Unsent output queued to the open connections (what the output budgets count).
                let queued: usize = self.conns.values().map(|c| c.out.budget.queued()).sum();
                let _ = writeln!(out, "zk_palisade_output_queued_bytes\t{queued}");
            }
            // ZooKeeper 3.8 reports the data-watch table only, and counts every connection
            // that registered a data watch and is still open, even if its watches all fired.
            FourLetterWord::Wchs => {
                let (conns, paths, total) = self.watches.data_summary();
                let _ = writeln!(out, "{conns} connections watching {paths} paths");
                let _ = writeln!(out, "Total watches:{total}");
            }
            // ZooKeeper 3.8's layout: the session expiry queue (buckets by deadline, oldest
            // first), the ephemerals by session with a count line, then the connections.
            FourLetterWord::Dump => {
                let wall_now = super::wall_ms();
                let now = self.now_ms();
                let to_wall = |deadline: u64| {
                    wall_now.saturating_add(i64::try_from(deadline).unwrap_or(i64::MAX))
                        .saturating_sub(i64::try_from(now).unwrap_or(0))
                };
                let mut buckets: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
                for (id, s) in self.liveness.iter() {
                    buckets.entry(s.deadline_ms).or_default().push(*id);
                }
                let _ = writeln!(out, "SessionTracker dump:");
                let _ = writeln!(
                    out,
                    "Session Sets ({})/({}):",
                    buckets.len(),
                    self.liveness.len()
                );
                for (deadline, ids) in &mut buckets {
                    ids.sort_unstable();
                    let when = java_date(to_wall(*deadline));
                    let _ = writeln!(out, "{} expire at {when}:", ids.len());
                    for id in ids.iter() {
                        let _ = writeln!(out, "\t{id:#x}");
                    }
                }
                let _ = writeln!(out, "ephemeral nodes dump:");
                let mut sessions: Vec<i64> = self.liveness.iter().map(|(id, _)| *id).collect();
                sessions.sort_unstable();
                let with_ephemerals: Vec<(i64, Vec<String>)> = sessions
                    .into_iter()
                    .map(|s| {
                        let mut paths: Vec<String> = self
                            .state
                            .tree
                            .ephemerals_of(s)
                            .map(|id| self.state.tree.path_of(id))
                            .collect();
                        paths.sort_unstable();
                        (s, paths)
                    })
                    .filter(|(_, paths)| !paths.is_empty())
                    .collect();
                let _ = writeln!(out, "Sessions with Ephemerals ({}):", with_ephemerals.len());
                for (s, paths) in with_ephemerals {
                    let _ = writeln!(out, "{s:#x}:");
                    for p in paths {
                        let _ = writeln!(out, "\t{p}");
                    }
                }
                // Connections by the deadline of their session (ZooKeeper keeps a second
                // expiry queue for connections; here a connection lives as long as its session).
                let mut by_deadline: BTreeMap<u64, Vec<(String, i64)>> = BTreeMap::new();
                for c in self.conns.values().filter(|c| c.session != 0) {
                    if let Some(s) = self.liveness.get(c.session) {
                        by_deadline
                            .entry(s.deadline_ms)
                            .or_default()
                            .push((c.peer.to_string(), c.session));
                    }
                }
                let _ = writeln!(out, "Connections dump:");
                let _ = writeln!(
                    out,
                    "Connections Sets ({})/({}):",
                    by_deadline.len(),
                    by_deadline.values().map(Vec::len).sum::<usize>()
                );
                for (deadline, conns) in &mut by_deadline {
                    conns.sort_unstable();
                    let when = java_date(to_wall(*deadline));
                    let _ = writeln!(out, "{} expire at {when}:", conns.len());
                    for (peer, session) in conns.iter() {
                        let _ = writeln!(out, "\tip: /{peer} sessionId: {session:#x}");
                    }
                }
            }
            // wchc: each session with the paths it watches (a session whose data watches all
            // went is listed with none); wchp: each path with its sessions. Data watches only,
            // and a blank line at the end, as in ZooKeeper 3.8.
            FourLetterWord::Wchc => {
                let session = |c: ConnId| self.conns.get(&c).map(|conn| conn.session);
                let mut rows: Vec<(i64, Vec<&str>)> = self
                    .watches
                    .data_by_conn()
                    .filter_map(|(c, paths)| {
                        let mut paths: Vec<&str> = paths.iter().map(|p| &**p).collect();
                        paths.sort_unstable();
                        session(c).map(|s| (s, paths))
                    })
                    .collect();
                rows.sort_unstable();
                for (s, paths) in rows {
                    let _ = writeln!(out, "{s:#x}");
                    for p in paths {
                        let _ = writeln!(out, "\t{p}");
                    }
                }
                out.push('\n');
            }
            FourLetterWord::Wchp => {
                let mut rows: Vec<(&str, Vec<i64>)> = self
                    .watches
                    .data_by_path()
                    .map(|(p, conns)| {
                        let mut sessions: Vec<i64> = conns
                            .iter()
                            .filter_map(|c| self.conns.get(c).map(|conn| conn.session))
                            .collect();
                        sessions.sort_unstable();
                        (&**p, sessions)
                    })
                    .collect();
                rows.sort_unstable();
                for (p, sessions) in rows {
                    let _ = writeln!(out, "{p}");
                    for s in sessions {
                        let _ = writeln!(out, "\t{s:#x}");
                    }
                }
                out.push('\n');
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
                self.reset_namespace_stats();
                out.push_str("Server stats reset.\n");
            }
            FourLetterWord::Dirs => {
                let _ = writeln!(out, "datadir_size: {}", dir_size(&self.cfg.data_dir));
                let _ = writeln!(out, "logdir_size: {}", dir_size(&self.cfg.data_log_dir));
            }
            FourLetterWord::Csnp => match self.request_snapshot().or_else(|| self.ask_raft_snapshot()) {
                Some(z) => {
                    let _ = writeln!(out, "Snapshot creation scheduled at zxid {z:#x}.");
                }
                None => out.push_str("Failed to schedule snapshot creation: one is being taken, or snapshots are off.\n"),
            },
            // ZooKeeper's layout (`<zxid hex>: <digest>`), with Palisade's digest of the
            // current tree (see digest.rs; not the same function as ZooKeeper's).
            FourLetterWord::Hash => {
                let _ = writeln!(out, "{:x}: {}", self.state.zxid(), self.state.tree.digest());
            }
            // ClickHouse Keeper's: the Raft side hands leadership over (ensemble/raft/
            // transfer.rs); `srvr` shows the outcome.
            FourLetterWord::Ydld | FourLetterWord::Rqld => {
                let ask = if word == FourLetterWord::Ydld {
                    super::member::LeadershipAsk::Yield
                } else {
                    super::member::LeadershipAsk::Request
                };
                let leads = self.member.as_ref().is_some_and(|m| m.view.ready);
                if self.member.is_none() {
                    out.push_str("Failed to send request: this server is standalone.\n");
                } else if ask == super::member::LeadershipAsk::Yield && !leads {
                    out.push_str("Failed to send request: this server is not the leader.\n");
                } else if self.ask_leadership(ask) {
                    out.push_str("Sent.\n");
                } else {
                    out.push_str("Failed to send request.\n");
                }
            }
            // Not supported: answered with nothing, as ZooKeeper answers a word it does not run.
            FourLetterWord::Gtmk | FourLetterWord::Stmk => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_print_as_java_doubles() {
        assert_eq!(java_double(round4(0.0)), "0.0");
        assert_eq!(java_double(round4(1.0)), "1.0");
        assert_eq!(java_double(round4(12.5)), "12.5");
        assert_eq!(java_double(round4(2.0 / 3.0)), "0.6667");
        assert_eq!(java_double(round4(0.47543)), "0.4754");
        assert_eq!(java_double(round4(0.00005)), "1.0E-4");
        assert_eq!(java_double(12_345_678.0), "1.2345678E7");
    }

    #[test]
    fn own_connection_line_is_zookeepers() {
        let peer: SocketAddr = "127.0.0.1:4321".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            own_line(peer),
            " /127.0.0.1:4321[0](queued=0,recved=1,sent=0)"
        );
    }
}

/// `ms` since the epoch as Java's `Date.toString()` prints it in UTC
/// (`Thu Dec 03 18:40:26 UTC 2026`).
fn java_date(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = DAYS
        .get(usize::try_from(days.rem_euclid(7)).unwrap_or(0))
        .unwrap_or(&"Thu");
    let mon = MONTHS
        .get(usize::try_from(month - 1).unwrap_or(0))
        .unwrap_or(&"Jan");
    format!(
        "{weekday} {mon} {day:02} {:02}:{:02}:{:02} UTC {year}",
        tod / 3600,
        tod % 3600 / 60,
        tod % 60
    )
}

/// Java's `os.name` for this OS.
fn java_os_name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Mac OS X",
        "freebsd" => "FreeBSD",
        other => other,
    }
}

/// Java's `os.arch` for this CPU (the JVM says amd64 for x86_64).
fn java_os_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "x86",
        other => other,
    }
}

/// The kernel release (`uname -r`), as Java's `os.version`.
fn os_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "<NA>".into())
}

/// The effective user's name and home directory (Java's user.name, user.home): from
/// /etc/passwd for this process's uid, else $USER and $HOME, else `<NA>`.
fn user_and_home() -> (String, String) {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "<NA>".into());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .map(str::to_string);
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let entry = uid.and_then(|uid| {
        passwd.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            match (f.first(), f.get(2), f.get(5)) {
                (Some(name), Some(u), Some(home)) if *u == uid => {
                    Some((name.to_string(), home.to_string()))
                }
                _ => None,
            }
        })
    });
    entry.unwrap_or_else(|| (env("USER"), env("HOME")))
}

/// (this process's resident size, the machine's memory, the memory available), in MB, from
/// /proc (zeros where it cannot be read).
fn memory_mb() -> (u64, u64, u64) {
    let field = |text: &str, key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    (
        field(&status, "VmRSS:"),
        field(&meminfo, "MemTotal:"),
        field(&meminfo, "MemAvailable:"),
    )
}

#[cfg(test)]
mod date_tests {
    use super::java_date;

    #[test]
    fn dates_print_as_java_does_in_utc() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        // 2026-12-03T18:40:26Z, as ZooKeeper printed a session's expiry in its dump
        assert_eq!(java_date(1_796_323_226_000), "Thu Dec 03 18:40:26 UTC 2026");
        assert_eq!(java_date(951_782_400_000), "Tue Feb 29 00:00:00 UTC 2000");
    }
}
