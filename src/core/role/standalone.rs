//! A standalone server: it orders writes itself. What it preps goes to its local log (the
//! log thread, durability/, as `Work::Log` batches) and commits when the log reports it
//! durable (`CoreMsg::Durable`); it runs the duties of the server that orders writes
//! (duties.rs).

use super::Duties;
use crate::durability::LogQueue;

pub(in crate::core) struct Standalone {
    /// The local log's turn: prepped txns are appended, taken once per core turn.
    pub(super) log: LogQueue,
    pub(in crate::core) duties: Duties,
}

impl Standalone {
    pub(in crate::core) fn new(reap_every_ms: u64) -> Self {
        Standalone {
            log: LogQueue::default(),
            duties: Duties::new(reap_every_ms),
        }
    }
}
