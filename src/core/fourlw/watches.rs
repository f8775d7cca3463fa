//! The watch reports: wchs, wchc, wchp. ZooKeeper 3.8 reports the data-watch table only.

use crate::core::watch::ConnId;
use crate::core::Core;
use std::fmt::Write as _;

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

    /// Each path with the sessions watching it, and a blank line at the end.
    pub(super) fn wchp(&self, out: &mut String) {
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
}
