//! A standalone server: it orders writes itself. What it preps goes to its local log (the
//! log thread, durability/) and commits when the log reports it durable (`CoreMsg::Durable`);
//! it runs the duties of the server that orders writes (duties.rs).

use super::Duties;
use crate::durability::Durability;

pub(in crate::core) struct Standalone {
    /// The local log: prepped txns are appended, flushed once per core turn.
    pub(super) log: Box<dyn Durability + Send>,
    pub(in crate::core) duties: Duties,
}

impl Standalone {
    pub(in crate::core) fn new(log: Box<dyn Durability + Send>, reap_every_ms: u64) -> Self {
        Standalone {
            log,
            duties: Duties::new(reap_every_ms),
        }
    }

    /// The log, handed to the member this server becomes (`Core::join`): a member's is its
    /// proposer. This role is dropped right after.
    pub(super) fn take_log(&mut self) -> Box<dyn Durability + Send> {
        std::mem::replace(&mut self.log, Box::new(Moved))
    }
}

/// Where a standalone role's log was, between `take_log` and the role's end: nothing reaches it.
struct Moved;

impl Durability for Moved {
    fn append(&mut self, _: &palisade_proto::Txn) {}
    fn digest(&mut self, _: i64, _: u64) {}
    fn flush(&mut self) {}
}
