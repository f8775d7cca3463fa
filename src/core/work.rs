//! What the engine hands to the log and to consensus, as outputs in its outbox
//! (`Outbox::push`): the runtime routes them, in the order they were pushed, to the log
//! thread and the consensus glue's channels at the turn's end (runtime/routes.rs).
//!
//! Bounds: the forwarder's and the snapshot asks' queues are bounded (limits.rs
//! `FORWARD_QUEUE`, `RAFT_SNAPSHOT_ASKS`). The engine reads a queue's free slots through a
//! [`Room`] and counts what it already pushed this turn against them, so a push it makes is
//! one the queue has room for when the runtime routes it: the engine is the queue's only
//! producer, and its consumer only frees slots in between. A full queue is the engine's
//! decision, made as it was when it sent itself (a follower keeps its forwards for the next
//! turn, a touch is skipped, an ask joins the one on its way).

use crate::durability::log::Batch;
use crate::membership::dynamic::DynConfig;
use crate::seam::{LeadershipAsk, Proposed, ToLeader};
use std::sync::Arc;

/// One piece of work for the log or for consensus.
pub enum Work {
    /// A standalone server's turn of txns and digest records, for its log thread.
    Log(Batch),
    /// What the leader proposes, as one batch (its turn's txns, a digest, the key, a part of
    /// a restore).
    Propose(Vec<Proposed>),
    /// A follower's forwards or its sessions' touches, for the forwarder (bounded).
    ToLeader(ToLeader),
    /// Asks Raft for a snapshot (bounded: a full queue means an ask is on its way).
    AskSnapshot,
    /// The configuration Raft's side must bring the membership to.
    Desired(Arc<DynConfig>),
    /// `ydld`, `rqld`: to the Raft side.
    Leadership(LeadershipAsk),
}

/// A queue the engine pushes work to, as the runtime's end of it looks from the engine:
/// how many items it has room for now, and whether its consumer is gone.
pub trait Room: Send {
    /// Free slots (`usize::MAX`: unbounded).
    fn free(&self) -> usize;
    /// The consumer is gone (the server is shutting down).
    fn closed(&self) -> bool;
}
