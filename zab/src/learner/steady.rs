//! After UPTODATE (Observer.processPacket), and the rule every applied txn passes.

use super::{Learner, Output, Step};
use crate::packet::{epoch_of, Body, Packet, PacketType};
use crate::txn::TxnEntry;

impl Learner {
    pub(super) fn observing(&mut self, p: Packet) -> Step {
        let zxid = p.zxid;
        let kind = p.kind();
        let ignore = |why| Output::Ignored { kind, zxid, why };
        match p.body {
            Body::Ping => {
                self.touched.clear();
                let touches = std::mem::take(&mut self.touches);
                self.send(Packet {
                    zxid,
                    body: Body::PingReply(touches),
                    authinfo: p.authinfo,
                });
            }
            Body::Inform(e) => {
                check_header(&e, zxid)?;
                self.accept(PacketType::Inform, e, None)?;
            }
            Body::InformAndActivate { leader_id, entry } => {
                check_header(&entry, zxid)?;
                self.accept(PacketType::InformAndActivate, entry, None)?;
                self.out.push(Output::Reconfigured { leader_id, zxid });
            }
            Body::RevalidateReply(r) => {
                if self.revalidations.remove(&r.session_id) {
                    self.out.push(Output::Revalidated {
                        session_id: r.session_id,
                        valid: r.valid,
                    });
                } else {
                    self.out
                        .push(ignore("no revalidation pending for the session"));
                }
            }
            Body::Sync => match self.syncs.pop_front() {
                Some((session_id, cxid)) => self.out.push(Output::SyncDone { session_id, cxid }),
                None => self.out.push(ignore("no sync pending")),
            },
            // Observer.processPacket logs these and carries on.
            Body::Proposal(_) | Body::Commit | Body::UpToDate | Body::CommitAndActivate { .. } => {
                self.out.push(ignore("not for an observer after UPTODATE"))
            }
            _ => return Err(format!("{kind:?} after UPTODATE")),
        }
        Ok(())
    }

    /// Checks a committed txn against the last one and outputs it. `snap_zxid`: during a
    /// sync after SNAP, txns up to it are already in the snapshot (the leader started
    /// forwarding before it read the snapshot's zxid) and are skipped.
    pub(super) fn accept(&mut self, kind: PacketType, e: TxnEntry, snap_zxid: Option<i64>) -> Step {
        let zxid = e.zxid();
        if snap_zxid.is_some_and(|s| zxid <= s) {
            self.out.push(Output::Ignored {
                kind,
                zxid,
                why: "already in the snapshot",
            });
            return Ok(());
        }
        let last = self.last_zxid;
        if zxid <= last {
            return Err(format!("txn {zxid:#x} after {last:#x}: zxids go backwards"));
        }
        // Within an epoch every committed txn takes the next zxid: a gap is a lost txn.
        if epoch_of(zxid) == epoch_of(last) && zxid != last.wrapping_add(1) {
            return Err(format!("txn {zxid:#x} after {last:#x}: a txn is missing"));
        }
        self.last_zxid = zxid;
        let key = (e.txn.header.client_id, e.txn.header.cxid);
        self.out.push(Output::Apply { entry: e });
        if self.writes.remove(&key) {
            self.out.push(Output::WriteDone {
                session_id: key.0,
                cxid: key.1,
                zxid,
            });
        }
        Ok(())
    }
}

pub(super) fn check_header(e: &TxnEntry, zxid: i64) -> Step {
    if e.zxid() != zxid {
        return Err(format!(
            "packet zxid {zxid:#x} carries a txn of zxid {:#x}",
            e.zxid()
        ));
    }
    Ok(())
}
