//! `dump`, in ZooKeeper 3.8's layout: the session expiry queue (buckets by deadline, oldest
//! first), the ephemerals by session with a count line, then the connections.

use crate::core::Core;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Turns the core's deadlines (ms on its clock) into wall-clock ms, as of one instant.
struct Clock {
    wall_now: i64,
    now: u64,
}

impl Clock {
    /// The wall-clock time of `deadline`, as Java's `Date.toString()` prints it.
    fn date(&self, deadline: u64) -> String {
        let wall = self
            .wall_now
            .saturating_add(i64::try_from(deadline).unwrap_or(i64::MAX))
            .saturating_sub(i64::try_from(self.now).unwrap_or(0));
        java_date(wall)
    }
}

impl Core {
    pub(super) fn dump(&self, out: &mut String) {
        let clock = Clock {
            wall_now: self.now.wall_ms,
            now: self.now_ms(),
        };
        self.dump_sessions(out, &clock);
        self.dump_ephemerals(out);
        self.dump_connections(out, &clock);
    }

    fn dump_sessions(&self, out: &mut String, clock: &Clock) {
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
            let when = clock.date(*deadline);
            let _ = writeln!(out, "{} expire at {when}:", ids.len());
            for id in ids.iter() {
                let _ = writeln!(out, "\t{id:#x}");
            }
        }
    }

    fn dump_ephemerals(&self, out: &mut String) {
        let _ = writeln!(out, "ephemeral nodes dump:");
        let mut sessions: Vec<i64> = self.liveness.iter().map(|(id, _)| *id).collect();
        sessions.sort_unstable();
        let with_ephemerals: Vec<(i64, Vec<String>)> = sessions
            .into_iter()
            .map(|s| (s, self.state.tree.ephemeral_paths(s)))
            .filter(|(_, paths)| !paths.is_empty())
            .collect();
        let _ = writeln!(out, "Sessions with Ephemerals ({}):", with_ephemerals.len());
        for (s, paths) in with_ephemerals {
            let _ = writeln!(out, "{s:#x}:");
            for p in paths {
                let _ = writeln!(out, "\t{p}");
            }
        }
    }

    /// Connections by the deadline of their session (ZooKeeper keeps a second expiry queue
    /// for connections; here a connection lives as long as its session).
    fn dump_connections(&self, out: &mut String, clock: &Clock) {
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
            let when = clock.date(*deadline);
            let _ = writeln!(out, "{} expire at {when}:", conns.len());
            for (peer, session) in conns.iter() {
                let _ = writeln!(out, "\tip: /{peer} sessionId: {session:#x}");
            }
        }
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

#[cfg(test)]
mod tests {
    use super::java_date;

    #[test]
    fn dates_print_as_java_does_in_utc() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        // 2026-12-03T18:40:26Z, as ZooKeeper printed a session's expiry in its dump
        assert_eq!(java_date(1_796_323_226_000), "Thu Dec 03 18:40:26 UTC 2026");
        assert_eq!(java_date(951_782_400_000), "Tue Feb 29 00:00:00 UTC 2000");
    }
}
