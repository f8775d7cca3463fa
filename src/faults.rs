//! Fault switches for the Jepsen harness's negative controls (tools/jepsen, issue 15): bugs
//! put in on purpose, so the harness can show that its checkers catch them. Compiled only with
//! the `fault-injection` feature (off by default); without it every switch is a constant
//! `false` and the call sites compile away, so a release build carries none of it.
//!
//! `PALISADE_FAULT` (read once) names the fault; each call site is one line:
//! - `stale-read`: a follower answers a `sync` at once, from its own state, instead of waiting
//!   for the leader's point, so a read after `sync` may miss a write already acknowledged;
//! - `lower-counter`: the sequential-create counter is taken 3 lower than stored, as a replay
//!   that lost creates would leave it (the harness sets it on restarted members only);
//! - `early-ack`: the leader applies and answers a write as soon as it is prepped, before a
//!   quorum has logged it.

/// One fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    StaleRead,
    LowerCounter,
    EarlyAck,
}

#[cfg(feature = "fault-injection")]
mod switch {
    use super::Fault;
    use std::sync::OnceLock;

    static ON: OnceLock<Option<Fault>> = OnceLock::new();

    pub fn on(f: Fault) -> bool {
        let set = ON.get_or_init(|| {
            let v = std::env::var("PALISADE_FAULT").unwrap_or_default();
            let f = match v.as_str() {
                "stale-read" => Some(Fault::StaleRead),
                "lower-counter" => Some(Fault::LowerCounter),
                "early-ack" => Some(Fault::EarlyAck),
                _ => None,
            };
            if f.is_some() {
                tracing::warn!(fault = %v, "FAULT INJECTION ON: this server is wrong on purpose");
            }
            f
        });
        *set == Some(f)
    }
}

#[cfg(not(feature = "fault-injection"))]
mod switch {
    use super::Fault;

    #[inline(always)]
    pub fn on(_: Fault) -> bool {
        false
    }
}

pub use switch::on;

/// The sequential-create counter a prep uses (`lower-counter`: 3 lower).
#[inline(always)]
pub fn seq_counter(stored: i32) -> i32 {
    if on(Fault::LowerCounter) {
        stored.saturating_sub(3).max(0)
    } else {
        stored
    }
}
