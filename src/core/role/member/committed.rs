//! What every member applies: the entries the quorum committed (`CoreMsg::Committed`), in
//! log order, through the same `commit` as standalone. The ensemble's key, the leader's
//! digests and online restores' steps come the same way.

use super::{Committed, LogPos};
use crate::core::role::Role;
use crate::core::Core;

impl Core {
    /// Committed entries, in log order. Returns false when this member's state diverged
    /// from the log (a txn at or below the applied zxid): it stops rather than serve.
    /// `log_bytes`: the size of the txns' entries in the log.
    pub(in crate::core) fn committed(
        &mut self,
        items: Vec<Committed>,
        at: Option<LogPos>,
        log_bytes: u64,
    ) -> bool {
        let m = self.role.member_mut();
        m.snapshots.log_bytes = m.snapshots.log_bytes.saturating_add(log_bytes);
        for item in items {
            let txn = match item {
                Committed::Key(k) => {
                    let m = self.role.member_mut();
                    if m.key.is_none() {
                        m.key = Some(k);
                        self.liveness.set_secret(k);
                    }
                    continue;
                }
                Committed::Digest { zxid, digest } => {
                    if !self.role.member().digest_agrees(zxid, digest) {
                        return false;
                    }
                    continue;
                }
                Committed::Restore { part, term } => {
                    self.restore_committed(part, term);
                    continue;
                }
                Committed::Txn(t) => t,
            };
            let zxid = txn.header.zxid;
            if zxid <= self.state.zxid() && crate::faults::on(crate::faults::Fault::EarlyAck) {
                self.inflight.retain(|t| t.header.zxid != zxid); // applied at its prep
                continue;
            }
            if zxid <= self.state.zxid() {
                tracing::error!(
                    zxid = format_args!("{zxid:#x}"),
                    applied = format_args!("{:#x}", self.state.zxid()),
                    "a committed txn does not follow the applied state: stopping"
                );
                return false;
            }
            match self.inflight.front() {
                Some(t) if t.header.zxid == zxid => {
                    self.inflight.pop_front();
                }
                // Another leader's txn: what this one proposed will not commit.
                Some(_) => self.abandon_proposals(),
                None => {}
            }
            self.raft_snapshot_txn(&txn);
            self.commit(txn);
            self.role.member_mut().snapshots.since += 1;
        }
        let Role::Member(m) = &mut self.role else {
            unreachable!("a committed batch on a standalone server");
        };
        if at.is_some() {
            m.applied_at = at;
        }
        m.ask_snapshot_if_due(&mut self.outbox, &mut self.rng);
        self.answer_syncs();
        self.leave_read_only();
        true
    }
}
