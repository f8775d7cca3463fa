//! Limits and tuning: queues, the largest request, the output budgets, polling (the
//! "Limits and tuning" area of the reference, keys.rs).

use super::values::{parse, positive, Taken};
use super::Config;

impl Config {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the limits.
    pub(super) fn apply_limits(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "globalOutstandingLimit" => self.global_outstanding_limit = parse(name, v)?,
            "maxOutstandingPerConnection" => self.max_outstanding_per_connection = parse(name, v)?,
            "jute.maxbuffer" => self.jute_max_buffer = parse(name, v)?,
            "connectionOutputBudget" => self.connection_output_budget = Some(positive(name, v)?),
            "globalOutputBudget" => self.global_output_budget = Some(positive(name, v)?),
            "maxReplySize" => self.max_reply_size = Some(positive(name, v)?),
            "spinWaitMicros" => {
                self.spin_wait_micros = parse::<u64>(name, v).and_then(|n| {
                    if n <= 10_000 {
                        Ok(Some(n))
                    } else {
                        Err(format!("invalid value for {name}: {v:?} (0 to 10000)"))
                    }
                })?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Bytes of unsent output one connection may have queued before the server stops reading
    /// its requests (and, for notifications, closes it).
    pub fn connection_output_budget(&self) -> usize {
        self.connection_output_budget.unwrap_or_else(|| {
            self.jute_max_buffer
                .saturating_mul(crate::limits::CONNECTION_BUDGET_MAXBUFFERS)
        })
    }

    /// Bytes of unsent output all connections together may have queued.
    pub fn global_output_budget(&self) -> usize {
        self.global_output_budget.unwrap_or_else(|| {
            let quarter = mem_total().map_or(usize::MAX, |m| m / 4);
            crate::limits::GLOBAL_BUDGET_DEFAULT.min(quarter)
        })
    }

    /// The largest reply the server builds when `maxReplySize` is set (a request whose reply
    /// would be larger is answered with an error). Unset, none: ZooKeeper sends a reply of any
    /// size (go-zookeeper reads a 20 MB getChildren), so the output budgets bound replies
    /// instead (ARCHITECTURE.md, "Output budgets").
    pub fn max_reply_size(&self) -> Option<usize> {
        self.max_reply_size
    }

    /// The polling window: `spinWaitMicros` if set; else 300 µs standalone and none for an
    /// ensemble member. A member's waits are for its peers (a round trip and a follower's
    /// fdatasync), which a window mostly spans, so each member would keep a core busy per
    /// write in flight; with members sharing cores (3 on this 2-core machine) that polling
    /// took the CPU the others needed — lock handoffs 1.8x faster and a write's median 23%
    /// lower without it (docs/design/BENCHMARKS.md, 2026-12-06 ensemble section).
    pub fn spin_wait(&self) -> std::time::Duration {
        let default = if self.members.len() > 1 {
            0
        } else {
            crate::spin::DEFAULT_SPIN_MICROS
        };
        std::time::Duration::from_micros(self.spin_wait_micros.unwrap_or(default))
    }
}

/// The machine's memory (MemTotal), if /proc says.
fn mem_total() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_budgets_default_from_jute_maxbuffer_and_can_be_set() {
        let mut c = Config::default();
        assert_eq!(c.apply_zoo_cfg("jute.maxbuffer=1000\n"), Ok(vec![]));
        assert_eq!(c.connection_output_budget(), 4000);
        assert_eq!(c.max_reply_size(), None);
        assert!(c.global_output_budget() <= 1 << 30);
        let cfg = "connectionOutputBudget=123\nglobalOutputBudget=4567\nmaxReplySize=89\n";
        assert_eq!(c.apply_zoo_cfg(cfg), Ok(vec![]));
        assert_eq!(
            (
                c.connection_output_budget(),
                c.global_output_budget(),
                c.max_reply_size()
            ),
            (123, 4567, Some(89))
        );
        let e = c.refusal("maxReplySize=0\n");
        assert!(e.contains("maxReplySize"), "{e}");
    }

    #[test]
    fn spin_wait_is_bounded() {
        let mut c = Config::default();
        assert_eq!(
            c.spin_wait(),
            std::time::Duration::from_micros(crate::spin::DEFAULT_SPIN_MICROS)
        );
        assert_eq!(c.apply_zoo_cfg("spinWaitMicros=0\n"), Ok(vec![]));
        assert_eq!(c.spin_wait(), std::time::Duration::ZERO);
        let e = c.refusal("spinWaitMicros=20000\n");
        assert!(e.contains("spinWaitMicros") && e.contains("20000"), "{e}");
    }

    #[test]
    fn an_ensemble_member_parks_unless_told_to_poll() {
        let servers = "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n\
                       server.3=127.0.0.1:2890:3890\n";
        let mut c = Config::default();
        c.apply_zoo_cfg(servers).unwrap();
        assert_eq!(c.members.len(), 3);
        assert_eq!(c.spin_wait(), std::time::Duration::ZERO);
        c.apply_zoo_cfg("spinWaitMicros=300\n").unwrap();
        assert_eq!(c.spin_wait(), std::time::Duration::from_micros(300));
    }
}
