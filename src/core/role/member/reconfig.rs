//! Dynamic reconfiguration (`reconfig`, opcode 16, with `reconfigEnabled=true`), as ZooKeeper
//! 3.8's clients see it (docs/design/ENSEMBLE.md "Dynamic reconfiguration"):
//!
//! - `/zookeeper/config` holds the configuration (`server.N=...` lines, `version=<hex>`).
//!   Until a configuration is committed each member shows its zoo.cfg one, version 0, set
//!   locally as ZooKeeper does; with reconfigEnabled the first ready leader of term T commits
//!   it with version T << 32 (ZooKeeper's NEWLEADER zxid), a txn at that very zxid.
//! - The leader preps a reconfig in ZooKeeper's check order (disabled, in progress, version,
//!   arguments, voters, a synced quorum of the new voters, WRITE on /zookeeper/config) into a
//!   setData of /zookeeper/config with version -1 — ZooKeeper's own txn — whose data carries
//!   the txn's zxid as version. Committed, it is every member's configuration; Raft's
//!   membership is then brought to it by the leader (`ensemble/raft/reconfig.rs`), and the
//!   client is answered (data and Stat of /zookeeper/config) once this member sees that
//!   membership applied, as a ZooKeeper client is once the new configuration is in force.
//! - A plain setData of the node (a super user may) changes its data only, as in ZooKeeper:
//!   only a txn with version -1 is a configuration.

use crate::acl::{self, AuthId};
use crate::core::conn_id::ConnId;
use crate::core::conns::Slot;
use crate::core::pending::Waiter;
use crate::core::role::Role;
use crate::core::work::Work;
use crate::core::{reply, Core};
use crate::membership::dynamic::{ChangeError, DynConfig};
use bytes::Bytes;
use palisade_proto::*;
use std::sync::Arc;

pub use crate::state::CONFIG_NODE;

/// A reconfig answered once Raft's membership is the new configuration.
pub(crate) struct Parked {
    conn: ConnId,
    xid: i32,
    version: i64,
    frame: Bytes,
}

/// The setData txn of /zookeeper/config that a configuration is (ZooKeeper's reconfig txn
/// body): version -1, the data `config` with `zxid` as its version.
pub fn config_txn(config: &DynConfig, session: i64, cxid: i32, zxid: i64, time: i64) -> Txn {
    let mut c = config.clone();
    c.version = zxid;
    Txn {
        header: TxnHeader {
            client_id: session,
            cxid,
            zxid,
            time,
            type_: OpCode::SetData.code(),
        },
        body: TxnBody::SetData(SetDataTxn {
            path: JStr::from(CONFIG_NODE),
            data: Some(Bytes::from(c.text().into_bytes())),
            version: -1,
        }),
    }
}

/// Whether a committed txn sets the configuration (not a client's setData of the node).
fn sets_config(txn: &Txn) -> bool {
    matches!(&txn.body, TxnBody::SetData(s) if s.version == -1 && s.path.as_str() == Some(CONFIG_NODE))
}

impl Core {
    /// The configuration node's data and Stat.
    fn config_node(&self) -> Option<(Vec<u8>, Stat)> {
        let id = self.state.tree.lookup(CONFIG_NODE)?;
        let n = self.state.tree.node(id)?;
        Some((n.data().unwrap_or(&[]).to_vec(), self.state.tree.stat(id)))
    }

    /// After a join, an installed snapshot or a committed configuration: the member's
    /// configuration is the node's when one was committed (mzxid not 0), else zoo.cfg's,
    /// which the node then shows (set locally, as ZooKeeper's initConfigInZKDatabase).
    pub(in crate::core) fn reload_config(&mut self) {
        let fallback = DynConfig::from_static(&self.role.member().links.members);
        let committed = self
            .config_node()
            .filter(|(_, st)| st.mzxid != 0)
            .and_then(|(data, _)| std::str::from_utf8(&data).ok().and_then(DynConfig::parse));
        let config = match committed {
            Some(c) => c,
            None => {
                // mzxid 0: no configuration committed (see above).
                let text = fallback.text();
                self.state
                    .set_ensemble_config(text.as_bytes(), 0, self.now.wall_ms);
                fallback
            }
        };
        let Role::Member(m) = &mut self.role else {
            unreachable!("a configuration on a standalone server");
        };
        if *m.config != config {
            tracing::info!(
                version = format_args!("{:#x}", config.version),
                members = config.members.len(),
                voters = config.voters().len(),
                "configuration"
            );
        }
        m.config = Arc::new(config);
        self.outbox.push(Work::Desired(m.config.clone()));
    }

    /// A txn was applied: a configuration txn makes the new configuration this member's.
    pub(in crate::core) fn config_applied(&mut self, txn: &Txn) {
        if !sets_config(txn) {
            return;
        }
        if let Some(l) = self.role.member_mut().seat.leading_mut() {
            if l.config_pending.is_some_and(|z| z <= txn.header.zxid) {
                l.config_pending = None;
            }
        }
        self.reload_config();
        self.release_parked();
    }

    /// On a ready leader of `term`, with reconfigEnabled: the zoo.cfg configuration is
    /// committed with version term << 32 (ZooKeeper's first leader does the same with its
    /// NEWLEADER zxid), at that zxid when the log is below it.
    pub(super) fn commit_first_config(&mut self, term: u64) {
        if self.commit_alone_config() {
            return;
        }
        let m = self.role.member();
        let pending = m.seat.leading().is_some_and(|l| l.config_pending.is_some());
        if !self.cfg.reconfig_enabled || m.config.version != 0 || pending {
            return;
        }
        let config = (*m.config).clone();
        let epoch = (term.min(i32::MAX as u64) as i64) << 32;
        let txn = if self.state.zxid() < epoch && self.prep.last_zxid() == epoch {
            config_txn(&config, 0, 0, epoch, self.now.wall_ms)
        } else {
            self.prep
                .seal_built(|zxid| config_txn(&config, 0, 0, zxid, self.now.wall_ms))
        };
        self.config_prepped(txn.header.zxid);
        self.submit(txn, None);
    }

    /// After `--force-new-ensemble` (ensemble/raft/recovery.rs), on the first ready
    /// leadership: the configuration becomes this member alone, so that the membership the
    /// leader brings Raft to is the one recovery left (the old one has no quorum). True when
    /// it did so.
    fn commit_alone_config(&mut self) -> bool {
        let m = self.role.member_mut();
        if !std::mem::take(&mut m.links.alone) {
            return false;
        }
        let me = m.links.myid;
        let Some(line) = m.config.get(me).cloned() else {
            tracing::error!(
                "--force-new-ensemble: this member is not in the configuration; it stays as is"
            );
            return false;
        };
        let alone = DynConfig {
            members: vec![line],
            version: 0,
        };
        let txn = self
            .prep
            .seal_built(|zxid| config_txn(&alone, 0, 0, zxid, self.now.wall_ms));
        tracing::warn!(
            zxid = format_args!("{:#x}", txn.header.zxid),
            "--force-new-ensemble: the configuration is this member alone from here"
        );
        self.config_prepped(txn.header.zxid);
        self.submit(txn, None);
        true
    }

    /// A configuration txn at `zxid` is prepped: no other until it is applied.
    fn config_prepped(&mut self, zxid: i64) {
        let Some(lead) = self.role.member_mut().seat.leading_mut() else {
            unreachable!("only the member holding the lead preps a configuration");
        };
        lead.config_pending = Some(zxid);
    }

    /// The txn of a reconfig request, or its error txn, in ZooKeeper 3.8's check order.
    pub(in crate::core) fn prep_reconfig(
        &mut self,
        session: i64,
        cxid: i32,
        r: &ReconfigRequest,
        auth: &[AuthId],
    ) -> Txn {
        let time = self.now.wall_ms;
        let err = match self.check_reconfig(r, auth) {
            Ok(config) => {
                let txn = self
                    .prep
                    .seal_built(|zxid| config_txn(&config, session, cxid, zxid, time));
                self.config_prepped(txn.header.zxid);
                return txn;
            }
            Err(e) => e,
        };
        self.prep.error(session, cxid, err, time)
    }

    fn check_reconfig(&self, r: &ReconfigRequest, auth: &[AuthId]) -> Result<DynConfig, ErrorCode> {
        if !self.cfg.reconfig_enabled {
            return Err(ErrorCode::ReconfigDisabled);
        }
        // A standalone server cannot reconfigure (ZooKeeper: UnimplementedException).
        let m = self.role.as_member().ok_or(ErrorCode::Unimplemented)?;
        let pending = m.seat.leading().and_then(|l| l.config_pending);
        if pending.is_some() || m.view.config_version != m.config.version {
            tracing::info!(
                pending = ?pending,
                in_force = format_args!("{:#x}", m.view.config_version),
                committed = format_args!("{:#x}", m.config.version),
                "reconfig refused: another one is in progress"
            );
            return Err(ErrorCode::ReconfigInProgress);
        }
        if r.cur_config_id != -1 && r.cur_config_id != m.config.version {
            return Err(ErrorCode::BadVersion);
        }
        let next = match r.new_members.as_str() {
            Some(members) => DynConfig::replace(members),
            None => m
                .config
                .incremental(r.joining_servers.as_str(), r.leaving_servers.as_str()),
        }
        .and_then(|c| c.check_voters(self.cfg.standalone_enabled).map(|()| c))
        .map_err(|e| {
            tracing::warn!(error = ?e, "reconfig refused");
            match e {
                ChangeError::BadArguments(_) => ErrorCode::BadArguments,
                ChangeError::Marshalling(_) => ErrorCode::MarshallingError,
            }
        })?;
        // ZooKeeper's isQuorumSynced: the new voters this leader is in touch with and that
        // have its log (itself included) must be a quorum of the new configuration.
        let synced = m.links.info.lock().synced.clone();
        let voters = next.voters();
        let up = voters
            .iter()
            .filter(|id| **id == m.links.myid || synced.contains(id))
            .count();
        if up < voters.len() / 2 + 1 {
            tracing::warn!(
                ?voters,
                ?synced,
                "reconfig refused: no synced quorum in the new configuration"
            );
            return Err(ErrorCode::NewConfigNoQuorum);
        }
        let node_acl = self
            .state
            .tree
            .lookup(CONFIG_NODE)
            .map_or(&[][..], |id| self.state.tree.acl_of(id));
        if !acl::check(node_acl, acl::WRITE, auth) {
            return Err(ErrorCode::NoAuth);
        }
        Ok(next)
    }

    /// The reply to a committed reconfig: the node's data and Stat. It goes out once Raft's
    /// membership is that configuration (or at once, for an error).
    pub(in crate::core) fn answer_reconfig(&mut self, w: Waiter, txn: &Txn, err: i32) {
        let (xid, zxid) = (txn.header.cxid, txn.header.zxid);
        if err != 0 || !sets_config(txn) {
            self.write_answered(w.conn, xid, reply::header(xid, zxid, err), zxid);
            return;
        }
        self.record_update(w.at);
        let (data, stat) = self.config_node().unwrap_or_default();
        let frame = reply::record(
            xid,
            zxid,
            &GetDataResponse {
                data: Some(Bytes::from(data)),
                stat,
            },
        );
        let in_force = self
            .role
            .as_member()
            .is_none_or(|m| m.view.config_version >= zxid);
        if in_force {
            self.write_answered(w.conn, xid, frame, zxid);
            return;
        }
        // Its slot waits; the connection's later writes are answered behind it.
        if !self.first_write_is(w.conn, xid) {
            return;
        }
        let Some(conn) = self.conns.get_mut(&w.conn) else {
            return;
        };
        if let Some(slot) = conn.queue.iter_mut().find(|s| matches!(s, Slot::Write(_))) {
            *slot = Slot::Held(xid);
        }
        self.role.member_mut().parked.push(Parked {
            conn: w.conn,
            xid,
            version: zxid,
            frame,
        });
    }

    /// Answers the reconfigs whose configuration Raft now has in force.
    pub(super) fn release_parked(&mut self) {
        let m = self.role.member_mut();
        let in_force = m.view.config_version;
        let (ready, waiting): (Vec<Parked>, Vec<Parked>) =
            m.parked.drain(..).partition(|p| p.version <= in_force);
        m.parked = waiting;
        for p in ready {
            let Some(conn) = self.conns.get_mut(&p.conn) else {
                continue;
            };
            if let Some(slot) = conn
                .queue
                .iter_mut()
                .find(|s| matches!(s, Slot::Held(x) if *x == p.xid))
            {
                *slot = Slot::Answered {
                    frame: p.frame,
                    zxid: p.version,
                };
            }
            self.run_queue(p.conn);
        }
    }

    /// `conf`'s membership part: the configuration's text.
    pub(crate) fn config_text(&self) -> Option<String> {
        self.role.as_member().map(|m| m.config.text())
    }
}

#[cfg(test)]
#[path = "reconfig_test.rs"]
mod tests;
