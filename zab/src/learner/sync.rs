//! The handshake and the sync (Learner.registerWithLeader, Learner.syncWithLeader): from
//! LEADERINFO to UPTODATE.

use super::steady::check_header;
use super::{Learner, Output, Phase, Step, SyncMode, SyncState};
use crate::packet::{epoch_of, make_zxid, Body, Packet, PacketType, PROTOCOL_VERSION};
use crate::stream::Frame;
use std::collections::VecDeque;

impl Learner {
    pub(super) fn leader_info(&mut self, p: Packet) -> Step {
        let Body::LeaderInfo { protocol_version } = p.body else {
            return Err(format!("{:?} where LEADERINFO was expected", p.kind()));
        };
        if protocol_version < PROTOCOL_VERSION {
            return Err(format!(
                "leader speaks protocol {protocol_version:#x}, before Zab 1.0 (0x10000)"
            ));
        }
        let epoch = epoch_of(p.zxid);
        // Learner.registerWithLeader: ack a newer epoch with our current one; an equal one
        // was acked before, so -1 ("not an ack", ZooKeeper's marker); an older one is refused.
        let current_epoch = if epoch > self.accepted_epoch {
            self.accepted_epoch = epoch;
            // ZooKeeper writes (int) currentEpoch.
            self.current_epoch as i32
        } else if epoch == self.accepted_epoch {
            -1
        } else {
            return Err(format!(
                "leader's epoch {epoch} is less than the accepted epoch {}",
                self.accepted_epoch
            ));
        };
        self.new_leader_zxid = p.zxid;
        self.send(Packet::new(
            self.last_zxid,
            Body::AckEpoch { current_epoch },
        ));
        self.phase = Phase::AwaitSyncMode;
        Ok(())
    }

    pub(super) fn sync_mode(&mut self, p: Packet) -> Step {
        let syncing = |snap_zxid| {
            Phase::Syncing(SyncState {
                snap_zxid,
                newleader: false,
                proposals: VecDeque::new(),
            })
        };
        let mode = match p.body {
            Body::Diff => SyncMode::Diff,
            Body::Snap => SyncMode::Snap,
            Body::Trunc => SyncMode::Trunc,
            _ => {
                return Err(format!(
                    "{:?} where DIFF, SNAP or TRUNC was expected",
                    p.kind()
                ))
            }
        };
        if mode == SyncMode::Trunc && p.zxid > self.last_zxid {
            return Err(format!(
                "TRUNC to {:#x}, after the last zxid {:#x}",
                p.zxid, self.last_zxid
            ));
        }
        self.out.push(Output::Syncing {
            mode,
            zxid: p.zxid,
            from: self.last_zxid,
        });
        match mode {
            SyncMode::Diff => self.phase = syncing(None),
            SyncMode::Snap => self.phase = Phase::AwaitSnapshot { zxid: p.zxid },
            SyncMode::Trunc => {
                self.last_zxid = p.zxid;
                self.out.push(Output::Truncate { zxid: p.zxid });
                self.phase = syncing(None);
            }
        }
        Ok(())
    }

    /// A part of the snapshot after SNAP (a frame of items, or its end).
    pub(super) fn snapshot(&mut self, f: Frame) -> Step {
        let Phase::AwaitSnapshot { zxid } = self.phase else {
            return Err("a snapshot without a SNAP before it".into());
        };
        match f {
            Frame::SnapshotItems(items) => self.out.push(Output::SnapshotItems(items)),
            Frame::SnapshotEnd(end) => {
                self.last_zxid = zxid;
                self.out.push(Output::SnapshotEnd { zxid, end });
                self.phase = Phase::Syncing(SyncState {
                    snap_zxid: Some(zxid),
                    newleader: false,
                    proposals: VecDeque::new(),
                });
            }
            Frame::Packet(p) => {
                return Err(format!(
                    "{:?} where the snapshot after SNAP was expected",
                    p.kind()
                ))
            }
        }
        Ok(())
    }

    pub(super) fn syncing(&mut self, mut s: SyncState, p: Packet) -> Step {
        let zxid = p.zxid;
        match p.body {
            Body::Proposal(e) => {
                check_header(&e, zxid)?;
                // After a SNAP, the first may be one the snapshot holds (skipped at COMMIT).
                let floor = match (s.proposals.back(), s.snap_zxid) {
                    (Some(b), _) => b.zxid(),
                    (None, Some(_)) => i64::MIN,
                    (None, None) => self.last_zxid,
                };
                if zxid <= floor {
                    return Err(format!("PROPOSAL {zxid:#x} after {floor:#x}"));
                }
                s.proposals.push_back(e);
            }
            Body::Commit | Body::CommitAndActivate { .. } => {
                let Some(head) = s.proposals.pop_front() else {
                    return Err(format!("COMMIT {zxid:#x} with no PROPOSAL waiting"));
                };
                if head.zxid() != zxid {
                    return Err(format!(
                        "COMMIT {zxid:#x}, but the next PROPOSAL is {:#x}",
                        head.zxid()
                    ));
                }
                self.accept(PacketType::Proposal, head, s.snap_zxid)?;
                if let Body::CommitAndActivate { leader_id } = p.body {
                    self.out.push(Output::Reconfigured { leader_id, zxid });
                }
            }
            Body::Inform(e) => {
                check_header(&e, zxid)?;
                self.accept(PacketType::Inform, e, s.snap_zxid)?;
            }
            Body::InformAndActivate { leader_id, entry } => {
                check_header(&entry, zxid)?;
                self.accept(PacketType::InformAndActivate, entry, s.snap_zxid)?;
                self.out.push(Output::Reconfigured { leader_id, zxid });
            }
            Body::NewLeader { .. } => {
                if s.newleader {
                    return Err("a second NEWLEADER".into());
                }
                if zxid != self.new_leader_zxid {
                    return Err(format!(
                        "NEWLEADER {zxid:#x}, LEADERINFO announced {:#x}",
                        self.new_leader_zxid
                    ));
                }
                s.newleader = true;
                self.current_epoch = epoch_of(zxid);
                self.send(Packet::new(zxid, Body::Ack));
            }
            Body::UpToDate => {
                if !s.newleader {
                    return Err("UPTODATE before NEWLEADER".into());
                }
                // Proposals never committed: ZooKeeper's observer drops them too.
                for e in &s.proposals {
                    self.out.push(Output::Ignored {
                        kind: PacketType::Proposal,
                        zxid: e.zxid(),
                        why: "never committed before UPTODATE",
                    });
                }
                let epoch = epoch_of(self.new_leader_zxid);
                self.send(Packet::new(make_zxid(epoch, 0), Body::Ack));
                self.out.push(Output::Synced {
                    zxid: self.last_zxid,
                });
                self.phase = Phase::Observing;
                return Ok(());
            }
            // syncWithLeader reads and drops it; the leader pings once it has queued NEWLEADER.
            Body::Ping => self.out.push(Output::Ignored {
                kind: PacketType::Ping,
                zxid,
                why: "PING during the sync",
            }),
            _ => return Err(format!("{:?} during the sync", p.kind())),
        }
        self.phase = Phase::Syncing(s);
        Ok(())
    }
}
