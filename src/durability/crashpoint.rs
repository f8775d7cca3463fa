//! Named crash points for the crash tests: `PALISADE_CRASH_AT=name[:n]` makes the process
//! abort (no cleanup, no flush — what kill -9 leaves) the n-th time (default 1st) execution
//! passes the point `name`. Unset, each point costs one relaxed atomic load.
//!
//! Points: `log.before_sync` (records written, not yet synced), `log.before_ack` (synced, not
//! yet reported durable), `snapshot.mid` (a snapshot block written, the file unfinished),
//! `snapshot.before_purge` (a snapshot finished, old files not yet purged), `restore.logged`
//! (a restore's no-op durable in the log, its snapshot not yet written: core/restore.rs),
//! `restore.spooling` (a member applying a restore's second or later chunk from the Raft
//! log, the commit not yet applied: core/role/member/ensemble_restore/), `restore.proposing` (the
//! leader about to propose a restore's second chunk: its commit is never proposed).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;

struct Armed {
    name: String,
    left: AtomicI64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let spec = std::env::var("PALISADE_CRASH_AT").ok()?;
            let (name, n) = match spec.split_once(':') {
                Some((name, n)) => (name.to_string(), n.parse().ok()?),
                None => (spec, 1),
            };
            Some(Armed {
                name,
                left: AtomicI64::new(n),
            })
        })
        .as_ref()
}

/// Aborts the process here if this point is armed and its count is reached.
pub fn hit(name: &str) {
    if let Some(a) = armed() {
        if a.name == name && a.left.fetch_sub(1, Ordering::Relaxed) == 1 {
            eprintln!("palisade: crash point {name} reached; aborting");
            std::process::abort();
        }
    }
}
