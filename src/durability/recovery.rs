//! Recovery: the newest snapshot that validates, then the log replayed over it from its start
//! zxid + 1 through `state::State::apply`, as the live server applies it. Replay is idempotent over the fuzzy
//! capture because applying is raise-only (see apply.rs and capture.rs); the digest proves it:
//! once the replay passes the capture's end, the tree digest must equal the one recorded
//! there, and every digest record in the log after it.

use crate::state::tree::{DataTree, TreeLoader};
use crate::state::State;
use bytes::Bytes;
use palisade_proto::Txn;
use palisade_snapshot::{Item, Snapshot, Trailer};
use palisade_wal::{RecordKind, Recovered};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("snapshot {path}: {reason}")]
    Snapshot { path: PathBuf, reason: String },
    #[error("snapshot directory: {0}")]
    SnapshotDir(#[from] palisade_snapshot::SnapError),
    #[error("log record at zxid {zxid:#x} does not decode: {reason}")]
    BadTxn { zxid: i64, reason: String },
    #[error("the log jumps from zxid {after:#x} to {found:#x}: the txns between are missing")]
    Gap { after: i64, found: i64 },
    #[error("txn zxid {found:#x} does not follow {after:#x}")]
    NotIncreasing { after: i64, found: i64 },
    #[error("the snapshot's capture ended at zxid {end:#x} but the log stops at {last:#x}: txns the snapshot saw are missing from the log")]
    LogShort { end: i64, last: i64 },
    /// A snapshot that saw txns the log does not hold: the log was cut or replaced after the
    /// snapshot was written (the WAL logs every txn before it is applied, so before any
    /// capture can see it; and a purge never removes the log's last txn).
    #[error("snapshot {} (start zxid {start:#x}, end zxid {end:#x}) is newer than the log's end ({}): refusing to start, since serving it would lose or fork the txns after the log's end (move the snapshot aside, or restore the log)", snapshot.display(), log_end)]
    SnapshotAheadOfLog {
        snapshot: PathBuf,
        start: i64,
        end: i64,
        log_end: String,
    },
    #[error("digest mismatch after zxid {zxid:#x}: the replayed tree has {ours:#018x}, the {recorded_in} recorded {recorded:#018x}; the tree diverged from what was acknowledged (refusing to start; inspect the data dir, or restore a backup)")]
    Diverged {
        zxid: i64,
        ours: u64,
        recorded: u64,
        recorded_in: &'static str,
    },
}

/// The state recovery hands to the core: the tree, every session alive at the end of the
/// log, and the last zxid applied (the next txn is zxid + 1).
pub struct Restored {
    pub state: State,
    pub snapshot: Option<PathBuf>,
    pub replayed: u64,
    pub digests_checked: u64,
}

/// Replays txns over a starting tree (fresh, or loaded from a snapshot).
pub struct Replayer {
    state: State,
    /// The capture's end (zxid, digest): before it the tree is fuzzy and digests can't match.
    end: Option<(i64, u64)>,
    recent: VecDeque<(i64, u64)>,
    replayed: u64,
    checked: u64,
    snapshot: Option<PathBuf>,
}

impl Default for Replayer {
    fn default() -> Self {
        Self::new()
    }
}

impl Replayer {
    /// Starts from ZooKeeper's fresh tree at zxid 0.
    pub fn new() -> Self {
        Replayer {
            state: State::new(),
            end: None,
            recent: VecDeque::new(),
            replayed: 0,
            checked: 0,
            snapshot: None,
        }
    }

    /// Starts from a validated snapshot.
    pub fn from_snapshot(snap: &Snapshot) -> Result<Self, RecoveryError> {
        Self::from_items(snap.items(), snap.start_zxid(), snap.trailer(), snap.path())
    }

    /// Starts from a capture's items, its start zxid and trailer (`path` names it in errors).
    pub fn from_items<'a>(
        items: impl Iterator<Item = Item<'a>>,
        start_zxid: i64,
        trailer: &Trailer,
        path: &Path,
    ) -> Result<Self, RecoveryError> {
        let bad = |reason: String| RecoveryError::Snapshot {
            path: path.to_path_buf(),
            reason,
        };
        let mut loader = TreeLoader::new();
        let mut sessions = BTreeMap::new();
        for item in items {
            match item {
                Item::Session { id, timeout_ms } => {
                    sessions.insert(id, timeout_ms);
                }
                Item::Acl { index, entries } => {
                    let list = entries
                        .iter()
                        .map(|e| crate::acl::Entry {
                            perms: e.perms,
                            scheme: String::from_utf8_lossy(e.scheme).into(),
                            id: String::from_utf8_lossy(e.id).into(),
                        })
                        .collect();
                    loader.acl(index, list).map_err(bad)?;
                }
                Item::Node(n) => loader.node(&n).map_err(bad)?,
            }
        }
        let t = trailer;
        if t.end_zxid < start_zxid {
            return Err(bad(format!(
                "capture ends at {:#x}, before its start {start_zxid:#x}",
                t.end_zxid
            )));
        }
        let tree = loader.finish().map_err(bad)?;
        let mut r = Replayer {
            state: State::from_parts(tree, sessions, start_zxid),
            end: Some((t.end_zxid, t.digest)),
            recent: VecDeque::new(),
            replayed: 0,
            checked: 0,
            snapshot: Some(path.to_path_buf()),
        };
        // Nothing was applied during the capture: the loaded tree is exact and checkable now.
        if t.end_zxid == start_zxid {
            r.check(t.end_zxid, t.digest, "snapshot")?;
        }
        Ok(r)
    }

    pub fn zxid(&self) -> i64 {
        self.state.zxid()
    }

    pub fn tree(&self) -> &DataTree {
        &self.state.tree
    }

    /// Digests checked so far (the capture's, and the log's digest records): lets an offline
    /// checker tell a digest record that was compared from one that was not.
    pub fn digests_checked(&self) -> u64 {
        self.checked
    }

    /// Applies the next txn of the log.
    pub fn txn(&mut self, txn: &Txn) -> Result<(), RecoveryError> {
        let z = txn.header.zxid;
        let after = self.state.zxid();
        if z != after + 1 {
            return Err(RecoveryError::Gap { after, found: z });
        }
        self.apply(txn)
    }

    /// Applies the next txn of an ensemble's log, whose zxids jump at each new epoch (and
    /// past a txn its term skipped): strictly increasing is what holds there.
    pub fn txn_increasing(&mut self, txn: &Txn) -> Result<(), RecoveryError> {
        let (z, after) = (txn.header.zxid, self.state.zxid());
        if z <= after {
            return Err(RecoveryError::NotIncreasing { after, found: z });
        }
        self.apply(txn)
    }

    fn apply(&mut self, txn: &Txn) -> Result<(), RecoveryError> {
        let z = txn.header.zxid;
        self.state.apply(txn);
        self.replayed += 1;
        let digest = self.state.digest_after(z);
        match self.end {
            Some((end, recorded)) if z == end => self.check(z, recorded, "snapshot")?,
            Some((end, _)) if z < end => return Ok(()),
            _ => {}
        }
        if self.recent.len() == crate::limits::RECOVERY_DIGESTS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back((z, digest));
        Ok(())
    }

    /// A digest record from the log: checked if it describes a zxid past the fuzzy window.
    pub fn meta(&mut self, payload: &[u8]) -> Result<(), RecoveryError> {
        let Some((z, recorded)) = crate::durability::digest_record::decode_record(payload) else {
            tracing::warn!("unknown meta record in the log (ignored)");
            return Ok(());
        };
        if self.end.is_some_and(|(end, _)| z < end) {
            return Ok(());
        }
        match self.recent.iter().rev().find(|(rz, _)| *rz == z) {
            Some(&(_, ours)) if ours != recorded => Err(RecoveryError::Diverged {
                zxid: z,
                ours,
                recorded,
                recorded_in: "log",
            }),
            Some(_) => {
                self.checked += 1;
                Ok(())
            }
            None => {
                tracing::warn!(
                    zxid = format_args!("{z:#x}"),
                    "digest record for a zxid not replayed here (unchecked)"
                );
                Ok(())
            }
        }
    }

    fn check(
        &mut self,
        z: i64,
        recorded: u64,
        recorded_in: &'static str,
    ) -> Result<(), RecoveryError> {
        let ours = self.state.tree.digest();
        if ours != recorded {
            return Err(RecoveryError::Diverged {
                zxid: z,
                ours,
                recorded,
                recorded_in,
            });
        }
        self.checked += 1;
        Ok(())
    }

    /// Ends the replay: the log must have reached the capture's end.
    pub fn finish(mut self) -> Result<Restored, RecoveryError> {
        let last = self.state.zxid();
        if let Some((end, _)) = self.end {
            if last < end {
                return Err(RecoveryError::LogShort { end, last });
            }
        }
        self.state.recount_quotas();
        Ok(Restored {
            state: self.state,
            snapshot: self.snapshot,
            replayed: self.replayed,
            digests_checked: self.checked,
        })
    }
}

/// Loads the newest valid snapshot in `snap_dir` (older ones if newer are damaged) and replays
/// the log over it.
pub fn recover(snap_dir: &Path, log: &Recovered) -> Result<Restored, RecoveryError> {
    recover_with_progress(snap_dir, log, &mut |_, _, _| {})
}

/// [`recover`], telling `progress` of each log record replayed: (the zxid replay started
/// after, the zxid reached, the record's payload bytes). The server logs progress from it.
pub fn recover_with_progress(
    snap_dir: &Path,
    log: &Recovered,
    progress: &mut dyn FnMut(i64, i64, usize),
) -> Result<Restored, RecoveryError> {
    let (snap, rejected) = palisade_snapshot::load_newest(snap_dir)?;
    for (path, e) in &rejected {
        tracing::warn!(path = %path.display(), error = %e, "damaged snapshot skipped; falling back to an older one");
    }
    if let Some(s) = &snap {
        check_log_reaches(s, log)?;
    }
    let mut r = match &snap {
        Some(s) => Replayer::from_snapshot(s)?,
        None => Replayer::new(),
    };
    drop(snap);
    let start = r.zxid();
    for rec in log.records(r.zxid() + 1) {
        progress(start, r.zxid(), rec.payload.len());
        match rec.kind {
            RecordKind::Txn => {
                let txn =
                    Txn::decode(Bytes::copy_from_slice(rec.payload), usize::MAX).map_err(|e| {
                        RecoveryError::BadTxn {
                            zxid: rec.zxid,
                            reason: e.to_string(),
                        }
                    })?;
                if txn.header.zxid != rec.zxid {
                    return Err(RecoveryError::BadTxn {
                        zxid: rec.zxid,
                        reason: format!("its header says zxid {:#x}", txn.header.zxid),
                    });
                }
                r.txn(&txn)?;
            }
            RecordKind::Meta => r.meta(rec.payload)?,
        }
    }
    r.finish()
}

/// The log must hold every txn the snapshot saw: its last txn is at least the capture's end.
/// (A snapshot at zxid 0 of an empty log is the one case with nothing to hold.)
fn check_log_reaches(s: &Snapshot, log: &Recovered) -> Result<(), RecoveryError> {
    let end = s.trailer().end_zxid;
    let report = log.report();
    let last = report.last_txn_zxid;
    if end <= 0 || last.is_some_and(|l| l >= end) {
        return Ok(());
    }
    // A log started right after the snapshot (`Wal::start_at`, as an import writes it) holds
    // no txn yet, but its first segment names the txn that must follow the snapshot's end.
    let first = log.segments().next().map(|(_, z)| z);
    if last.is_none() && first.is_some_and(|z| end.checked_add(1) == Some(z)) {
        return Ok(());
    }
    let segment = log.segments().last().map(|(p, _)| p.display().to_string());
    let log_end = match (last, segment) {
        (Some(l), Some(seg)) => format!("last txn {l:#x}, in {seg}"),
        (Some(l), None) => format!("last txn {l:#x}"),
        (None, _) => format!("{} holds no txn", report.dir.display()),
    };
    Err(RecoveryError::SnapshotAheadOfLog {
        snapshot: s.path().to_path_buf(),
        start: s.start_zxid(),
        end,
        log_end,
    })
}

#[cfg(test)]
#[path = "recovery_test.rs"]
mod tests;
