//! `palisade restore --config zoo.cfg` for an ensemble member: the data dir of the member that
//! zoo.cfg describes, holding the backup's state as the Raft snapshot a member would have
//! received from a leader, so that the member starts with it and with nothing else.
//!
//! What is written, through the member's own storage code (`ensemble/raft/storage.rs`), so the
//! files are those a running member writes: the identity file; in `<dataLogDir>/raft`, the
//! snapshot file (a whole-state image, kind 0, no ensemble key: the first leadership makes
//! one) standing at log id (term, myid, 1) with a membership of this member alone, the log
//! purged up to it, and the vote of that term. Term: the backup's zxid epoch (at least 1), so
//! that the ensemble's zxids go on above the backup's.
//!
//! Such a member is an ensemble that lost every other member: it starts with
//! `--force-new-ensemble` (recovery.rs), leads alone in a new term, and the others join with
//! empty data dirs and `reconfig -add`, as after a permanent loss of the quorum.

use crate::config::Config;
use crate::ensemble::raft::reconcile::peer_addr;
use crate::ensemble::raft::snapshot_buf::SnapshotBuf;
use crate::ensemble::raft::state_machine::InstallOnly;
use crate::ensemble::raft::storage;
use crate::state::State;
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::{BasicNode, CommittedLeaderId, LogId, Membership, SnapshotMeta, StoredMembership};
use std::collections::{BTreeMap, BTreeSet};

/// Where the member's files go, from its zoo.cfg: the data dir (holding `myid`), the log dir.
pub struct Target {
    pub myid: u64,
    pub addr: String,
    pub data_dir: std::path::PathBuf,
    pub raft_dir: std::path::PathBuf,
    pub segment_bytes: u64,
}

impl Target {
    /// The member `cfg` describes; refused unless its data dir holds only `myid` and its Raft
    /// log dir nothing (a restore never mixes with a member's own history).
    pub fn of(cfg: &Config) -> Result<Target, String> {
        let myid_file = cfg.data_dir.join("myid");
        let myid: u64 = std::fs::read_to_string(&myid_file)
            .map_err(|e| {
                format!(
                    "{}: {e} (write the member's id there first)",
                    myid_file.display()
                )
            })?
            .trim()
            .parse()
            .map_err(|_| format!("{}: not a member id", myid_file.display()))?;
        let me = cfg
            .members
            .iter()
            .find(|m| m.id == myid)
            .ok_or_else(|| format!("myid {myid} is not among the server.N lines"))?;
        let addr = peer_addr(me).ok_or("server.N without an address")?;
        let raft_dir = cfg.log_dir().join("raft");
        for dir in [&cfg.data_dir, &cfg.log_dir()] {
            let other = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .find(|e| e.file_name() != "myid");
            if let Some(e) = other {
                return Err(format!(
                    "{}: not empty ({} is there): a restore makes a new member's data dir",
                    dir.display(),
                    e.file_name().to_string_lossy()
                ));
            }
        }
        Ok(Target {
            myid,
            addr,
            data_dir: cfg.data_dir.clone(),
            raft_dir,
            segment_bytes: cfg
                .pre_alloc_size_kb
                .saturating_mul(1024)
                .max(crate::limits::RAFT_SEGMENT_MIN),
        })
    }
}

/// Writes `state` as member `t`'s Raft snapshot; returns the term it stands in.
pub fn write(state: &State, t: &Target) -> Result<u64, String> {
    let identity =
        crate::durability::datadir::load_identity(&t.data_dir, std::slice::from_ref(&t.raft_dir))
            .map_err(|e| e.to_string())?;
    let epoch = u64::try_from(state.zxid() >> 32).unwrap_or(0);
    let term = epoch.clamp(1, crate::limits::PEER_MAX_TERM);
    let at = LogId::new(CommittedLeaderId::new(term, t.myid), 1);
    let alone = Membership::new(
        vec![BTreeSet::from([t.myid])],
        BTreeMap::from([(t.myid, BasicNode::new(&t.addr))]),
    );
    let meta = SnapshotMeta {
        last_log_id: Some(at),
        last_membership: StoredMembership::new(Some(at), alone),
        snapshot_id: format!("restored-{:#x}", state.zxid()),
    };
    // Kind 0: a whole-state image without the ensemble key (core/role/member/raft_snapshot.rs).
    let mut image = vec![0u8];
    image.extend_from_slice(&crate::durability::image::encode(state));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        crate::durability::datadir::create_private_dir(&t.raft_dir).map_err(|e| e.to_string())?;
        let (mut log, mut sm) =
            storage::open_as(&t.raft_dir, t.segment_bytes, Some(identity), InstallOnly)
                .await
                .map_err(|e| e.to_string())?;
        sm.install_snapshot(&meta, Box::new(SnapshotBuf::memory(image)))
            .await
            .map_err(|e| e.to_string())?;
        log.purge(at).await.map_err(|e| e.to_string())?;
        log.save_vote(&openraft::Vote::new_committed(term, t.myid))
            .await
            .map_err(|e| e.to_string())?;
        if log.purged() != Some(at) {
            return Err("the Raft log did not take the snapshot's purge point".to_string());
        }
        Ok(term)
    })
}
