//! The server's and its connections' statistics: srvr, stat, cons, mntr.

use super::VERSION;
use crate::core::{Conn, Core};
use crate::metrics::{java_double, monitor_fields, Field};
use ::core::net::SocketAddr;
use std::fmt::Write as _;

/// The line `stat` and `cons` print for the connection asking: ZooKeeper lists it like any
/// other, with interest ops 0 and the one request it received.
fn own_line(peer: SocketAddr) -> String {
    format!(" /{peer}[0](queued=0,recved=1,sent=0)")
}

/// A client connection's line as `stat` and `cons` begin it (each closes the parenthesis).
fn conn_line(c: &Conn) -> String {
    let (peer, queued, recved, sent) = (c.peer, c.queue.len(), c.received, c.sent);
    format!(" /{peer}[1](queued={queued},recved={recved},sent={sent}")
}

impl Core {
    pub(super) fn srvr(&self, out: &mut String, ro: bool) {
        self.version_lines(out, ro);
        self.srvr_stats(out);
    }

    pub(super) fn stat(&self, out: &mut String, ro: bool, peer: SocketAddr) {
        self.version_lines(out, ro);
        let _ = writeln!(out, "Clients:");
        for c in self.conns.values() {
            let _ = writeln!(out, "{})", conn_line(c));
        }
        let _ = writeln!(out, "{}", own_line(peer));
        out.push('\n');
        self.srvr_stats(out);
    }

    pub(super) fn cons(&self, out: &mut String, peer: SocketAddr) {
        for c in self.conns.values() {
            let (sid, lzxid, to) = (c.session, c.last_zxid, c.timeout);
            let _ = writeln!(
                out,
                "{},sid={sid:#x},lzxid={lzxid:#x},to={to})",
                conn_line(c)
            );
        }
        let _ = writeln!(out, "{}", own_line(peer));
        out.push('\n');
    }

    /// ZooKeeper 3.8's mntr dumps every metric of its provider, as `monitor` does; the same
    /// fields here, from the same sample (src/metrics/monitor.rs). Palisade's own are
    /// zk_palisade_*: parsers that expect zk_* keys take them.
    pub(super) fn mntr(&self, out: &mut String) {
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

    /// The lines srvr and stat start with.
    fn version_lines(&self, out: &mut String, ro: bool) {
        let _ = writeln!(out, "Zookeeper version: {VERSION}");
        if ro {
            let _ = writeln!(out, "READ-ONLY mode; serving only read-only clients");
        }
    }

    fn latency(&self) -> (u64, String, u64) {
        let s = &self.stats;
        (s.latency_min, java_double(s.latency_avg()), s.latency_max)
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

    /// Requests received and not answered yet, over all connections.
    pub(in crate::core) fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::round4;

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
