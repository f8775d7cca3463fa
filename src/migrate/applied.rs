//! A ZooKeeper txn in the form the server applies: what older ZooKeepers left out of a logged
//! txn filled in from the tree, and a failed multi in its applied form. Shared by the importer
//! (txns from a data dir's logs) and the observer (txns from a leader's quorum link).

use crate::state::State;
use palisade_proto::{ErrorCode, ErrorTxn, Txn, TxnBody};
use palisade_zkdisk::Quirk;

/// Fills in `txn` as the server applies it, from `state` just before it.
pub fn as_applied(state: &State, txn: &mut Txn, quirk: Quirk) {
    match (&mut txn.body, quirk) {
        // zookeeper.closeSessionTxn.enabled=false: the session's ephemerals from the tree.
        (TxnBody::CloseSession(c), Quirk::CloseWithoutPaths) => {
            let tree = &state.tree;
            let paths = tree
                .ephemerals_of(txn.header.client_id)
                .map(|id| tree.path_of(id).into())
                .collect();
            c.paths2_delete = Some(paths);
        }
        // Before 3.5 a create carried no parent cversion: the parent's next one.
        (TxnBody::Create(c), Quirk::CreateV0) => {
            let p = c.path.as_str().unwrap_or("");
            let tree = &state.tree;
            let parent = crate::path::parent(p).and_then(|pp| tree.lookup(pp));
            c.parent_c_version = parent
                .and_then(|id| tree.node(id))
                .map_or(0, |n| n.child_creates.saturating_add(1));
        }
        (TxnBody::Multi(subs), _) => failed_multi(subs),
        _ => {}
    }
}

/// ZooKeeper logs a failed multi with the sub-txns before the failing op as they were
/// prepared, then ErrorTxns (PrepRequestProcessor), and applies it as nothing but errors
/// (DataTree.processTxn: once any sub-txn is an error, every other becomes ErrorTxn 0 before
/// the first error and RUNTIMEINCONSISTENCY after it). Palisade logs failed multis in that
/// applied form already; this turns ZooKeeper's form into it.
pub fn failed_multi(subs: &mut [TxnBody]) {
    if !subs.iter().any(|b| matches!(b, TxnBody::Error(_))) {
        return;
    }
    let mut post_failed = false;
    for b in subs.iter_mut() {
        if matches!(b, TxnBody::Error(_)) {
            post_failed = true;
            continue;
        }
        let err = if post_failed {
            ErrorCode::RuntimeInconsistency.code()
        } else {
            ErrorCode::Ok.code()
        };
        *b = TxnBody::Error(ErrorTxn { err });
    }
}
