//! `/zookeeper/config`, the ensemble's configuration node. A committed configuration reaches
//! it as a txn (a setData with version -1, through `State::apply`); until one is committed,
//! each member shows its zoo.cfg configuration there, set locally as ZooKeeper's
//! initConfigInZKDatabase does: that local write is the one change to the tree that is not a
//! txn, and it lives here under its own name (core/role/member/reconfig.rs decides when).

use super::tree::NewData;
use super::State;

/// The configuration node's path (ZooKeeper's fresh tree has it; see tree/mod.rs).
pub const CONFIG_NODE: &str = "/zookeeper/config";

impl State {
    /// Shows `text` as the ensemble configuration, with version -1, `zxid` as mzxid and
    /// `time` as mtime (the caller's clock: the state reads none). The node is under
    /// `/zookeeper/`, left out of the digest, so replicas may differ here.
    ///
    /// `zxid` may not be above the state's: a later apply would meet a zxid from its future
    /// (tree/mod.rs asserts it never does), so this stops the process instead.
    pub fn set_ensemble_config(&mut self, text: &[u8], zxid: i64, time: i64) {
        assert!(
            zxid <= self.zxid,
            "ensemble configuration set at zxid {zxid:#x}, past the state's {:#x}",
            self.zxid
        );
        if let Some(id) = self.tree.lookup(CONFIG_NODE) {
            self.tree.0.set_data_unchecked(
                id,
                NewData {
                    data: Some(text),
                    version: -1,
                    zxid,
                    time,
                },
            );
        }
    }
}
