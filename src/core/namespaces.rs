//! Per-namespace accounting (read_per_namespace, write_per_namespace; src/metrics/namespace.rs
//! has the sizes and the bounds): writes counted here as each committed txn is applied, on
//! every member, as ZooKeeper's DataTree counts them — each create, delete and setData that
//! succeeded, a multi's ops one by one, a closed session's ephemerals; reads where
//! src/core/read/ answers them. Replays at start-up and installed snapshots are not counted
//! (ZooKeeper counts the txns it replays).

use super::Core;
use crate::metrics::NamespaceSet;
use crate::state::{Effects, Outcome};
use palisade_proto::{EventType, Txn, TxnBody};

fn len(data: &Option<bytes::Bytes>) -> usize {
    data.as_ref().map_or(0, |d| d.len())
}

/// One op of a txn, if it succeeded and ZooKeeper counts its kind (setACL and check are not).
fn count_op(set: &mut NamespaceSet, body: &TxnBody, outcome: &Outcome<'_>) {
    if outcome.err != 0 {
        return;
    }
    let data = match body {
        TxnBody::Create(c) | TxnBody::Create2(c) => len(&c.data),
        TxnBody::CreateContainer(c) => len(&c.data),
        TxnBody::CreateTtl(c) => len(&c.data),
        TxnBody::Delete(_) | TxnBody::DeleteContainer(_) => 0,
        TxnBody::SetData(s) => len(&s.data),
        _ => return,
    };
    set.write(outcome.path, data);
}

impl Core {
    /// The writes of a txn just applied.
    pub(super) fn count_writes(&mut self, txn: &Txn, effects: &Effects<'_>) {
        let set = &mut self.metrics.write_ns;
        match &txn.body {
            TxnBody::Multi(ops) => {
                for (op, outcome) in ops.iter().zip(&effects.outcomes) {
                    count_op(set, op, outcome);
                }
            }
            // The session's ephemerals, each deleted as a delete would be.
            TxnBody::CloseSession(_) => {
                for ch in &effects.changes {
                    if ch.event == EventType::NodeDeleted {
                        set.write(ch.path, 0);
                    }
                }
            }
            body => {
                if let Some(outcome) = effects.single() {
                    count_op(set, body, outcome);
                }
            }
        }
    }

    /// `srst`: every value back to zero, the keys kept, as ZooKeeper's ServerStats.reset.
    pub(super) fn reset_namespace_stats(&mut self) {
        self.metrics.read_ns.reset();
        self.metrics.write_ns.reset();
    }
}
