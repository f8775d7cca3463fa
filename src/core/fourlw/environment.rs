//! The server's environment and settings: envi (the host's facts the runtime read, as the
//! JVM's properties), conf. (`dirs`, a walk of the data directories, is the runtime's:
//! runtime/host.rs.)

use super::VERSION;
use crate::core::host::{HostInfo, HostProbe};
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
}

/// Every key ZooKeeper 3.8's Environment.list prints, in its order (monitoring scripts look
/// keys up by name). The JVM's keys have no meaning here: `<NA>`, which is what ZooKeeper
/// prints for a property that is not set. os.memory.* describe this process: total = its
/// resident size, max = the machine's memory, free = the memory available on it (MB, as
/// ZooKeeper prints them).
pub(super) fn envi(host: &HostInfo, probe: &HostProbe, out: &mut String) {
    let (rss, mem_total, mem_avail) = probe.memory_mb;
    let kv: [(&str, String); 18] = [
        ("zookeeper.version", VERSION.to_string()),
        ("host.name", "localhost".into()),
        ("java.version", "<NA>".into()),
        ("java.vendor", "<NA>".into()),
        ("java.home", "<NA>".into()),
        ("java.class.path", "<NA>".into()),
        ("java.library.path", "<NA>".into()),
        ("java.io.tmpdir", host.tmp_dir.clone()),
        ("java.compiler", "<NA>".into()),
        ("os.name", java_os_name().into()),
        ("os.arch", java_os_arch().into()),
        ("os.version", host.os_release.clone()),
        ("user.name", host.user.clone()),
        ("user.home", host.home.clone()),
        ("user.dir", host.cwd.clone()),
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
