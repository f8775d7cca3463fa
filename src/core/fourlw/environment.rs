//! The server's environment and settings: envi (from the OS, as the JVM's properties), conf,
//! dirs (the bytes in the data directories).

use super::VERSION;
use crate::core::Core;
use std::fmt::Write as _;

impl Core {
    pub(super) fn conf(&self, out: &mut String) {
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

    /// On the core thread only when asked without a connection (`answer_four_letter` runs
    /// it on a thread of its own).
    pub(super) fn dirs(&self, out: &mut String) {
        out.push_str(&dirs_text(&self.cfg.data_dir, &self.cfg.data_log_dir));
    }
}

/// What `dirs` prints for these directories.
pub(super) fn dirs_text(data: &str, log: &str) -> String {
    format!(
        "datadir_size: {}\nlogdir_size: {}\n",
        dir_size(data),
        dir_size(log)
    )
}

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

/// Every key ZooKeeper 3.8's Environment.list prints, in its order (monitoring scripts look
/// keys up by name). The JVM's keys have no meaning here: `<NA>`, which is what ZooKeeper
/// prints for a property that is not set. os.memory.* describe this process: total = its
/// resident size, max = the machine's memory, free = the memory available on it (MB, as
/// ZooKeeper prints them).
pub(super) fn envi(out: &mut String) {
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
        ("java.io.tmpdir", std::env::temp_dir().display().to_string()),
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
