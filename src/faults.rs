//! Fault switches for the Jepsen harness's negative controls (tools/jepsen, issue 15): bugs
//! put in on purpose, so the harness can show that its checkers catch them. Off unless the
//! process starts with `PALISADE_FAULT` naming one (read once; the server then logs at error
//! level that it is wrong on purpose); off, each call site costs one load of a set-once cell —
//! as the crash points (`durability/crashpoint.rs`), so the tests run the binary users run
//! rather than a second build of the server.
//!
//! Each call site is one line:
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

use std::sync::OnceLock;

/// Whether fault `f` is switched on in this process.
pub fn on(f: Fault) -> bool {
    static ON: OnceLock<Option<Fault>> = OnceLock::new();
    *ON.get_or_init(|| {
        let v = std::env::var("PALISADE_FAULT").ok()?;
        let f = match v.as_str() {
            "stale-read" => Some(Fault::StaleRead),
            "lower-counter" => Some(Fault::LowerCounter),
            "early-ack" => Some(Fault::EarlyAck),
            _ => None,
        };
        match f {
            Some(_) => tracing::error!(fault = %v, "FAULT INJECTION ON (PALISADE_FAULT): this server is wrong on purpose"),
            None => tracing::error!(fault = %v, "PALISADE_FAULT names no fault; none is on"),
        }
        f
    }) == Some(f)
}

/// The sequential-create counter a prep uses (`lower-counter`: 3 lower).
#[inline]
pub fn seq_counter(stored: i32) -> i32 {
    if on(Fault::LowerCounter) {
        stored.saturating_sub(3).max(0)
    } else {
        stored
    }
}
