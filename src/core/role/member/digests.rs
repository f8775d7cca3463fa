//! Digest checks across members: after each txn the digest rule picks (`DIGEST_EVERY`), every
//! member keeps its tree's digest and the leader proposes its own; a member whose digest
//! differs from the leader's at the same zxid stops rather than serve a diverged tree.

use super::{Member, Proposed};
use crate::core::outbox::Outbox;
use crate::core::work::Work;
use crate::limits::DIGESTS_KEPT;
use std::collections::VecDeque;

/// This member's digests after the txns the digest rule picks, oldest first.
#[derive(Default)]
pub(super) struct Digests(VecDeque<(i64, u64)>);

impl Digests {
    fn keep(&mut self, zxid: i64, digest: u64) {
        if self.0.len() == DIGESTS_KEPT {
            self.0.pop_front();
        }
        self.0.push_back((zxid, digest));
    }

    fn at(&self, zxid: i64) -> Option<u64> {
        self.0.iter().find(|(z, _)| *z == zxid).map(|(_, d)| *d)
    }
}

impl Member {
    /// After txn `zxid` (one the digest rule picks): kept to compare with the leader's, and
    /// proposed by the leader.
    pub(in crate::core) fn record_digest(&mut self, outbox: &mut Outbox, zxid: i64, digest: u64) {
        self.digests.keep(zxid, digest);
        if self.seat.leading().is_some() {
            outbox.push(Work::Propose(vec![Proposed::Digest { zxid, digest }]));
        }
    }

    /// The leader's digest after `zxid` against this member's: a member whose tree differs
    /// stops rather than serve it.
    pub(super) fn digest_agrees(&self, zxid: i64, digest: u64) -> bool {
        match self.digests.at(zxid) {
            Some(d) if d != digest => {
                tracing::error!(
                    zxid = format_args!("{zxid:#x}"),
                    leader = format_args!("{digest:#x}"),
                    own = format_args!("{d:#x}"),
                    "this member's tree differs from the leader's: stopping"
                );
                false
            }
            _ => true,
        }
    }
}
