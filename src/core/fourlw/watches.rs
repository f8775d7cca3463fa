//! The watch reports: wchs, wchc, wchp (and their rows, which the admin commands `watches`
//! and `watches_by_path` give as JSON). ZooKeeper 3.8 reports the data-watch table only.

use crate::core::Core;
use std::fmt::{self, Display, Write as _};

impl Core {
    /// ZooKeeper 3.8 counts every connection that registered a data watch and is still open,
    /// even if its watches all fired.
    pub(super) fn wchs(&self, out: &mut String) {
        let (conns, paths, total) = self.watches.data_summary();
        let _ = writeln!(out, "{conns} connections watching {paths} paths");
        let _ = writeln!(out, "Total watches:{total}");
    }

    /// Each session with the paths it watches (a session whose data watches all went is
    /// listed with none), and a blank line at the end, as in ZooKeeper 3.8.
    pub(super) fn wchc(&self, out: &mut String) {
        let rows = self.watched_paths_by_session();
        write_groups(out, rows.into_iter().map(|(s, paths)| (Hex(s), paths)));
    }

    /// Each path with the sessions watching it, and a blank line at the end.
    pub(super) fn wchp(&self, out: &mut String) {
        let rows = self.watching_sessions_by_path();
        write_groups(
            out,
            rows.into_iter().map(|(p, s)| (p, s.into_iter().map(Hex))),
        );
    }

    /// Each session with a data watch, and the paths it watches; both sorted.
    pub(in crate::core) fn watched_paths_by_session(&self) -> Vec<(i64, Vec<&str>)> {
        let mut rows: Vec<(i64, Vec<&str>)> = self
            .watches
            .data_by_conn()
            .filter_map(|(c, paths)| {
                let mut paths: Vec<&str> = paths.iter().map(|p| &**p).collect();
                paths.sort_unstable();
                self.conns.get(&c).map(|conn| (conn.session, paths))
            })
            .collect();
        rows.sort_unstable();
        rows
    }

    /// Each watched path, and the sessions watching it; both sorted.
    pub(in crate::core) fn watching_sessions_by_path(&self) -> Vec<(&str, Vec<i64>)> {
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
        rows
    }
}

/// A session id as the watch reports print it.
struct Hex(i64);

impl Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Each group's head on a line, its items below it indented by a tab, then a blank line.
fn write_groups<H: Display, I: IntoIterator<Item: Display>>(
    out: &mut String,
    groups: impl Iterator<Item = (H, I)>,
) {
    for (head, items) in groups {
        let _ = writeln!(out, "{head}");
        for i in items {
            let _ = writeln!(out, "\t{i}");
        }
    }
    out.push('\n');
}
