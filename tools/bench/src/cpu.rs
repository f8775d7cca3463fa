//! The server's CPU time, read from /proc/<pid>/stat (utime + stime, every thread including
//! ones that have exited), so a run reports the server CPU it cost over its timed part only,
//! not over its setup. An ensemble's members are measured together: the sum over their pids.
//! The load generator's own CPU (this process, all its threads) is read over the same window:
//! client and server share the machine's cores, so together they show when a run is bound by
//! the machine rather than by the server.

/// Clock ticks per second of /proc's times: USER_HZ, fixed at 100 by the kernel ABI on the
/// architectures this runs on (sysconf(_SC_CLK_TCK) would say the same).
const USER_HZ: f64 = 100.0;

/// utime + stime of `pid` in seconds, or None if it cannot be read.
pub fn seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: fields after the last
    // ')' start at field 3 (state), so utime (14) and stime (15) are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime.saturating_add(stime) as f64 / USER_HZ)
}

/// The summed utime + stime of `pids`, or None if there are none or one cannot be read (a
/// member that exited would make the sum meaningless).
pub fn seconds_all(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| seconds(p)).sum()
}

/// Measures the CPU seconds of `pids` (a server, or every member of an ensemble) and of this
/// process over a stretch of work: `start()` before, `json()` after.
pub struct Meter {
    pids: Vec<u32>,
    server_at: Option<f64>,
    client_at: Option<f64>,
}

impl Meter {
    pub fn start(pids: &[u32]) -> Meter {
        Meter {
            pids: pids.to_vec(),
            server_at: seconds_all(pids),
            client_at: seconds(std::process::id()),
        }
    }

    /// `,"server_cpu_s":S,"server_cpu_us_per_op":U` (none without a pid), then
    /// `,"client_cpu_s":S,"client_cpu_us_per_op":U` for the JSON line.
    pub fn json(&self, ops: u64) -> String {
        let (server, client) = (seconds_all(&self.pids), seconds(std::process::id()));
        let field = |who: &str, at: Option<f64>, now: Option<f64>| {
            let (Some(at), Some(now)) = (at, now) else {
                return String::new();
            };
            let s = (now - at).max(0.0);
            let per_op = if ops > 0 { s * 1e6 / ops as f64 } else { 0.0 };
            format!(",\"{who}_cpu_s\":{s:.2},\"{who}_cpu_us_per_op\":{per_op:.2}")
        };
        field("server", self.server_at, server) + &field("client", self.client_at, client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        // Burn a little CPU so the figure is not just zero ticks rounded.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_add(1);
        }
        assert!(x > 0);
        let s = seconds(std::process::id());
        assert!(s.is_some_and(|s| s >= 0.0), "{s:?}");
        assert_eq!(seconds(u32::MAX), None);
        // Several pids: the sum; any unreadable one, or none at all: no figure.
        let me = std::process::id();
        let one = seconds(me).unwrap_or(0.0);
        assert!(seconds_all(&[me, me]).is_some_and(|s| s >= 2.0 * one));
        assert_eq!(seconds_all(&[me, u32::MAX]), None);
        assert_eq!(seconds_all(&[]), None);
        // Without a server pid: the client's figures only.
        let line = Meter::start(&[]).json(10);
        assert!(line.starts_with(",\"client_cpu_s\":"), "{line}");
        assert!(line.contains(",\"client_cpu_us_per_op\":"), "{line}");
        let line = Meter::start(&[me]).json(10);
        assert!(line.starts_with(",\"server_cpu_s\":"), "{line}");
        assert!(line.contains(",\"client_cpu_s\":"), "{line}");
    }
}
