//! The runtime's readings of the host for the engine (core/host.rs): from /proc, /etc/passwd
//! and the process environment (Linux; unknown elsewhere), and the `dirs` walk of the data
//! directories, on a thread of its own.

use crate::core::host::{HostInfo, HostProbe, HostTask};
use crate::core::Out;

/// The facts that do not change while the server runs.
pub(super) fn info() -> HostInfo {
    let (user, home) = user_and_home();
    HostInfo {
        os_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "<NA>".into()),
        user,
        home,
        tmp_dir: std::env::temp_dir().display().to_string(),
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
    }
}

/// The facts read afresh for an input that reports them.
pub(super) fn probe() -> HostProbe {
    HostProbe {
        fds: file_descriptors(),
        memory_mb: memory_mb(),
    }
}

/// Runs a task the engine asked for, on a thread of its own.
pub(super) fn run(task: HostTask) {
    match task {
        HostTask::DirSizes {
            out,
            data_dir,
            log_dir,
        } => {
            let spawned = std::thread::Builder::new()
                .name("palisade-dirs".into())
                .spawn(move || {
                    let text = format!(
                        "datadir_size: {}\nlogdir_size: {}\n",
                        dir_size(&data_dir),
                        dir_size(&log_dir)
                    );
                    let _ = out.send(Out::Bytes(bytes::Bytes::from(text)));
                    let _ = out.send(Out::Close);
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start a thread for dirs");
            }
        }
    }
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

/// (open, maximum) file descriptors of this process, from /proc (Linux); None elsewhere.
fn file_descriptors() -> Option<(i64, i64)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count();
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let max = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some((i64::try_from(open).unwrap_or(i64::MAX), max))
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
