//! What every member's storage saw in one schedule, checked as it happens: Raft's safety
//! properties that the end state alone would not show.
//!
//! - one leader a term: a committed vote (a leader's, or a follower's acceptance of one)
//!   names the same node for a term on every member. openraft 0.9 as Palisade builds it (no
//!   `single-term-leader` feature) does not promise this: its leader id is (term, node), a
//!   candidate with a higher node id may win a term another node already won, and log ids
//!   carry the node. Palisade's zxid epoch is the term alone, so it is recorded apart
//!   ([`Ledger::shared_terms`]) and fails a run only with `PALISADE_SIM_STRICT_TERMS=1`;
//! - log matching: entries with the same log id carry the same payload wherever appended;
//! - state-machine safety (committed entries never lost or replaced): every member applies,
//!   at each index, the same log id.

use crate::ensemble::raft::types::{NodeId, TypeConfig};
use openraft::{Entry, LogId, Vote};
use parking_lot::Mutex;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Ledger {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    leaders: BTreeMap<u64, NodeId>,
    entries: BTreeMap<LogId<NodeId>, Entry<TypeConfig>>,
    applied: BTreeMap<u64, LogId<NodeId>>,
    violations: Vec<String>,
    shared_terms: Vec<String>,
    installs: u64,
}

impl Ledger {
    pub fn vote(&self, me: NodeId, vote: &Vote<NodeId>) {
        if !vote.is_committed() {
            return;
        }
        let (term, node) = (vote.leader_id.term, vote.leader_id.node_id);
        let mut i = self.inner.lock();
        let first = *i.leaders.entry(term).or_insert(node);
        if first != node {
            i.shared_terms.push(format!(
                "two leaders in term {term}: {first} and {node} (member {me} saved {vote})"
            ));
        }
    }

    pub fn appended(&self, me: NodeId, entries: &[Entry<TypeConfig>]) {
        let mut i = self.inner.lock();
        for e in entries {
            match i.entries.get(&e.log_id) {
                Some(first) if first != e => {
                    let v = format!(
                        "member {me} appended entry {} unlike the one appended before: {:?} vs {:?}",
                        e.log_id, e.payload, first.payload
                    );
                    i.violations.push(v);
                }
                Some(_) => {}
                None => {
                    i.entries.insert(e.log_id, e.clone());
                }
            }
        }
    }

    pub fn applied(&self, me: NodeId, log_id: LogId<NodeId>) {
        let mut i = self.inner.lock();
        let first = *i.applied.entry(log_id.index).or_insert(log_id);
        if first != log_id {
            i.violations.push(format!(
                "member {me} applied {log_id} at index {} where {first} was applied",
                log_id.index
            ));
        }
    }

    pub fn installed(&self) {
        self.inner.lock().installs += 1;
    }

    pub fn violation(&self, v: String) {
        self.inner.lock().violations.push(v);
    }

    pub fn violations(&self) -> Vec<String> {
        self.inner.lock().violations.clone()
    }

    /// Terms that two nodes led (see the module's comment).
    pub fn shared_terms(&self) -> Vec<String> {
        self.inner.lock().shared_terms.clone()
    }

    pub fn installs(&self) -> u64 {
        self.inner.lock().installs
    }

    /// The highest term any leader had.
    pub fn terms(&self) -> u64 {
        self.inner
            .lock()
            .leaders
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
    }
}
