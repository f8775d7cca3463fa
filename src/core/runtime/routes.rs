//! Where the engine's work for the log and consensus goes (core/work.rs): the log thread's
//! queue (standalone) or the consensus glue's channels (a member), routed at the turn's end
//! in the order the engine pushed it. The engine reads the bounded channels' room through
//! `Room`, implemented here for their senders.

use crate::core::work::{Room, Work};
use crate::core::Core;
use crate::durability::log::LogMsg;
use crate::membership::dynamic::DynConfig;
use crate::seam::{LeadershipAsk, Proposed, ToLeader};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// The channels to the consensus glue (ensemble/raft/wiring.rs takes their other ends).
pub struct ConsensusRoutes {
    pub propose: mpsc::UnboundedSender<Vec<Proposed>>,
    /// Bounded (limits.rs `FORWARD_QUEUE`).
    pub to_leader: mpsc::Sender<ToLeader>,
    /// Bounded (`RAFT_SNAPSHOT_ASKS`).
    pub snapshot: mpsc::Sender<()>,
    pub desired: watch::Sender<Arc<DynConfig>>,
    pub leadership: mpsc::UnboundedSender<LeadershipAsk>,
}

/// Where the runtime routes the engine's work.
pub enum Routes {
    /// A standalone server's log thread.
    Log(std::sync::mpsc::Sender<LogMsg>),
    /// An ensemble member's consensus glue.
    Consensus(ConsensusRoutes),
}

impl<T: Send> Room for mpsc::Sender<T> {
    fn free(&self) -> usize {
        self.capacity()
    }
    fn closed(&self) -> bool {
        self.is_closed()
    }
}

impl<T: Send> Room for mpsc::UnboundedSender<T> {
    fn free(&self) -> usize {
        usize::MAX
    }
    fn closed(&self) -> bool {
        self.is_closed()
    }
}

impl Routes {
    /// Sends one piece of work where it goes.
    pub(super) fn route(&self, core: &mut Core, w: Work) {
        match (self, w) {
            (Routes::Log(log), Work::Log(b)) => {
                if log.send(LogMsg::Batch(b)).is_err() {
                    tracing::error!("log writer is gone; writes cannot be acknowledged");
                }
            }
            (Routes::Consensus(c), Work::Propose(p)) => {
                if c.propose.send(p).is_err() {
                    tracing::error!("consensus is gone; writes cannot be committed");
                }
            }
            (Routes::Consensus(c), Work::ToLeader(t)) => match c.to_leader.try_send(t) {
                Ok(()) => {}
                // Not reached: the engine pushed only what the queue had room for, and
                // nothing else sends on it (work.rs). Forwards go back to their queue, as
                // a full queue returned them before.
                Err(mpsc::error::TrySendError::Full(ToLeader::Forward(ops))) => {
                    core.forwards_back(ops);
                }
                Err(_) => {}
            },
            (Routes::Consensus(c), Work::AskSnapshot) => {
                // Full: an ask is on its way already.
                let _ = c.snapshot.try_send(());
            }
            (Routes::Consensus(c), Work::Desired(config)) => {
                let _ = c.desired.send(config);
            }
            (Routes::Consensus(c), Work::Leadership(ask)) => {
                let _ = c.leadership.send(ask);
            }
            // The engine's role decides what it pushes: a standalone server only log batches,
            // a member never one.
            (Routes::Log(_), _) => unreachable!("consensus work on a standalone server"),
            (Routes::Consensus(_), Work::Log(_)) => unreachable!("a log batch on a member"),
        }
    }
}
