//! How far this member's Raft log is on disk, and the two waits that let the leader's own
//! fsync run alongside replication.
//!
//! openraft 0.9 awaits the flush of the leader's own append before it runs the commands
//! after it (`RaftCore::append_to_log`), the replication to the followers among them: a write
//! paid the leader's fdatasync, then the follower's, one after the other. So the leader's log
//! store reports its own entries flushed as soon as they are queued
//! (`LogStore::append`), and commit still means "on disk on a quorum" because of two waits on
//! the mark kept here:
//! - a follower's acknowledgement reaches openraft only once the leader's log is on disk up to
//!   the entry it acknowledges (`PeerClient::append_entries`): every quorum of two or more
//!   counts a follower, so a commit counts only members whose copy is on disk;
//! - an entry is applied (and its client answered) only once it is on disk here
//!   (`StateMachine::apply`): that covers a single voter, whose quorum is itself.
//!
//! The log thread moves the mark after each sync, back after a truncation, and marks it
//! failed when a sync fails: every wait then fails, nothing more commits, and the error is
//! logged where it happened.

use super::types::NodeId;
use openraft::LogId;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mark {
    upto: Option<LogId<NodeId>>,
    failed: bool,
}

/// The mark: shared by the log store, its thread, the state machine and the peer links.
#[derive(Clone)]
pub struct Durable(Arc<watch::Sender<Mark>>);

impl Durable {
    /// The log on disk up to `upto` (what an open found).
    pub fn new(upto: Option<LogId<NodeId>>) -> Durable {
        Durable(Arc::new(watch::Sender::new(Mark {
            upto,
            failed: false,
        })))
    }

    /// Entries up to `to` are on disk; the log only grows between truncations, so the mark
    /// never moves back here.
    pub(super) fn advance(&self, to: LogId<NodeId>) {
        self.0.send_if_modified(|m| {
            let moved = m.upto < Some(to);
            if moved {
                m.upto = Some(to);
            }
            moved
        });
    }

    /// After a truncation or a reset: the log now ends at `to`, all of it on disk.
    pub(super) fn reset(&self, to: Option<LogId<NodeId>>) {
        self.0.send_if_modified(|m| {
            let moved = m.upto != to;
            m.upto = to;
            moved
        });
    }

    /// A sync failed: what was reported written may not be on disk, and nothing will be.
    pub(super) fn fail(&self) {
        self.0.send_modify(|m| m.failed = true);
    }

    /// Resolves once a write or sync of the log has failed (never, while it works).
    pub async fn failed(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|m| m.failed).await;
    }

    /// Whether the log is on disk up to `id` (log ids order by term, then index, so an
    /// entry of a newer term that replaced a durable one is not covered by it).
    pub fn covers(&self, id: Option<LogId<NodeId>>) -> bool {
        let m = *self.0.borrow();
        !m.failed && m.upto >= id
    }

    /// Waits until the log is on disk up to `id`; fails if a sync failed.
    pub async fn until(&self, id: Option<LogId<NodeId>>) -> io::Result<()> {
        if self.covers(id) {
            return Ok(());
        }
        let mut rx = self.0.subscribe();
        let failed = match rx.wait_for(|m| m.failed || m.upto >= id).await {
            Err(_) => return Err(io::Error::other("the Raft log is closed")),
            Ok(m) => m.failed,
        };
        if failed {
            return Err(io::Error::other(
                "a sync of the Raft log failed: nothing more is durable here",
            ));
        }
        Ok(())
    }

    /// [`Durable::until`], at most `limit`.
    pub async fn reach(&self, id: Option<LogId<NodeId>>, limit: Duration) -> io::Result<()> {
        match tokio::time::timeout(limit, self.until(id)).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the Raft log not on disk up to {id:?} within {limit:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn id(term: u64, index: u64) -> LogId<NodeId> {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_log_reaches_the_entry() {
        let d = Durable::new(Some(id(1, 3)));
        assert!(d.covers(Some(id(1, 3))));
        assert!(!d.covers(Some(id(1, 4))));
        let waiter = {
            let d = d.clone();
            tokio::spawn(async move { d.reach(Some(id(1, 5)), Duration::from_secs(5)).await })
        };
        tokio::task::yield_now().await;
        d.advance(id(1, 4));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        d.advance(id(1, 5));
        waiter.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_entry_of_a_newer_term_is_not_covered_by_a_longer_older_log() {
        let d = Durable::new(Some(id(1, 10)));
        assert!(!d.covers(Some(id(2, 8))));
        // A truncation back to 7, then the new term's entries written.
        d.reset(Some(id(1, 7)));
        assert!(!d.covers(Some(id(1, 9))));
        d.advance(id(2, 8));
        assert!(d.covers(Some(id(2, 8))));
    }

    #[tokio::test]
    async fn a_failed_sync_fails_every_wait() {
        let d = Durable::new(None);
        let waiter = {
            let d = d.clone();
            tokio::spawn(async move { d.reach(Some(id(1, 1)), Duration::from_secs(5)).await })
        };
        tokio::task::yield_now().await;
        d.fail();
        assert!(waiter.await.unwrap().is_err());
        d.advance(id(1, 1));
        assert!(!d.covers(Some(id(1, 1))));
        assert!(d.reach(None, Duration::from_secs(1)).await.is_err());
    }

    #[tokio::test]
    async fn a_wait_gives_up_after_its_limit() {
        let d = Durable::new(None);
        let e = d
            .reach(Some(id(1, 1)), Duration::from_millis(20))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
