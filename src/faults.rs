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
//!   quorum has logged it;
//! - `keep-ephemerals`: a closeSession deletes none of the session's ephemerals, so they
//!   outlive it (the ephemeral checker);
//! - `ignore-version`: a setData with a version succeeds whatever the node's version, so two
//!   read-modify-writes both apply and one update is lost (the counter checker);
//! - `delete-missing-ok`: a delete of a node that is not there answers OK, as if a replayed
//!   delete were acknowledged, so two clients both claim one queue element (the queue
//!   checker).
//!
//! - `seq-from-children`: the sequential suffix is the parent's number of children, which falls
//!   when children are deleted, instead of a counter that only grows: a lock contender can
//!   take the suffix of one that waits already and be served first, so a later holder has a
//!   lower fencing token than the one before it (the lock checker).
//! - `expire-without-quorum`: a leader left without a quorum keeps expiring sessions (it
//!   refuses every handshake meanwhile, so no client can keep its session), and one that a
//!   quorum acknowledges again does not re-arm them; the expiries commit when the quorum
//!   returns (the session checker; issue 34's bug).

/// One fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    StaleRead,
    LowerCounter,
    EarlyAck,
    KeepEphemerals,
    IgnoreVersion,
    DeleteMissingOk,
    SeqFromChildren,
    ExpireWithoutQuorum,
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
            "keep-ephemerals" => Some(Fault::KeepEphemerals),
            "ignore-version" => Some(Fault::IgnoreVersion),
            "delete-missing-ok" => Some(Fault::DeleteMissingOk),
            "seq-from-children" => Some(Fault::SeqFromChildren),
            "expire-without-quorum" => Some(Fault::ExpireWithoutQuorum),
            _ => None,
        };
        match f {
            Some(_) => tracing::error!(fault = %v, "FAULT INJECTION ON (PALISADE_FAULT): this server is wrong on purpose"),
            None => tracing::error!(fault = %v, "PALISADE_FAULT names no fault; none is on"),
        }
        f
    }) == Some(f)
}

/// The sequential-create counter a prep uses (`lower-counter`: 3 lower; `seq-from-children`:
/// the number of children).
#[inline]
pub fn seq_counter(stored: i32, children: i32) -> i32 {
    if on(Fault::LowerCounter) {
        stored.saturating_sub(3).max(0)
    } else if on(Fault::SeqFromChildren) {
        children
    } else {
        stored
    }
}

/// The ephemerals a closeSession deletes (`keep-ephemerals`: none).
#[inline]
pub fn ephemerals_closed(paths: Vec<String>) -> Vec<String> {
    if on(Fault::KeepEphemerals) {
        Vec::new()
    } else {
        paths
    }
}

/// Whether a setData's expected version refuses it (`ignore-version`: never).
#[inline]
pub fn version_refused(expected: i32, actual: i32) -> bool {
    expected != -1 && expected != actual && !on(Fault::IgnoreVersion)
}

/// The answer to a delete of a node that is not there (`delete-missing-ok`: OK).
#[inline]
pub fn delete_missing() -> palisade_proto::ErrorCode {
    if on(Fault::DeleteMissingOk) {
        palisade_proto::ErrorCode::Ok
    } else {
        palisade_proto::ErrorCode::NoNode
    }
}
