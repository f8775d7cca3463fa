//! Connection shedding (ZooKeeper 3.10's `shed_connections` admin command): after a rolling
//! restart the members restarted last hold few clients; closing a share of a busy member's
//! connections sends those clients to reconnect, most of them elsewhere. Only connections
//! close: each session stays (its ephemerals, its timeout running), and its client resumes
//! it on any member within the timeout, restoring its watches with setWatches, as after a
//! leader change.

use super::Core;
use crate::core::conn_id::ConnId;

/// How many of `total` connections `percentage` closes: the share rounded down (ZooKeeper
/// closes each with that probability; a fixed count gives the operator the share asked for).
pub(crate) fn share(total: usize, percentage: u8) -> usize {
    total.saturating_mul(usize::from(percentage.min(100))) / 100
}

impl Core {
    /// Closes `percentage` % of the client connections, chosen at random; returns how many.
    pub(crate) fn shed_connections(&mut self, percentage: u8) -> usize {
        let mut conns: Vec<ConnId> = self.conns.keys().copied().collect();
        let total = conns.len();
        let n = share(total, percentage);
        self.rng.shuffle(&mut conns);
        for c in conns.into_iter().take(n) {
            self.drop_conn(c, true);
        }
        tracing::info!(
            shed = n,
            of = total,
            percentage,
            "shed client connections; their sessions stay"
        );
        n
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn share_is_rounded_down_and_bounded() {
        assert_eq!(share(0, 50), 0);
        assert_eq!(share(1, 1), 0);
        assert_eq!(share(3, 50), 1);
        assert_eq!(share(12, 50), 6);
        assert_eq!(share(7, 100), 7);
        assert_eq!(share(7, 200), 7);
        assert_eq!(share(10, 0), 0);
    }
}
