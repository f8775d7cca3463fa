//! The observer's own durability: its data dir is a standalone Palisade data dir (the txns it
//! applied, in the form the server applies them, in a WAL; complete snapshots beside it; the
//! identity and ZooKeeper-sessions files), plus the epochs it accepted from ZooKeeper leaders
//! (ZooKeeper's acceptedEpoch and currentEpoch files) in [`EPOCHS_FILE`], which also marks the
//! directory as an observer's. A restarted observer recovers the tree as a server does and
//! tells the leader its last zxid, so the leader answers DIFF (or TRUNC) instead of SNAP.
//!
//! A standalone WAL takes txns whose zxids rise by exactly one; a ZooKeeper epoch change
//! jumps. So at a jump (and after a SNAP) the store writes a snapshot of the whole tree and
//! starts an empty log after it ([`Store::replace`]). Every order of its writes leaves, after a
//! crash, either a state recovery accepts or one it refuses (a snapshot without its log, a log
//! without its snapshot); the observer then starts over from nothing (SNAP): ZooKeeper holds
//! the truth, so what the observer loses is time, never data.

use crate::config::Config;
use crate::durability::{datadir, recovery};
use crate::migrate::import::{write_sessions, write_snapshot};
use crate::state::State;
use palisade_proto::Txn;
use palisade_wal::{Corruption, RecordKind, Wal};
use std::path::{Path, PathBuf};

use crate::limits::{MAX_TXN_BYTES, OBSERVER_SNAPSHOTS_KEPT, OBSERVER_SNAPSHOT_EVERY};

/// "acceptedEpoch currentEpoch\n", in the data dir: written before anything else.
pub const EPOCHS_FILE: &str = "zookeeper-epochs";

pub struct Store {
    data_dir: PathBuf,
    snap_dir: PathBuf,
    log_dir: PathBuf,
    identity: u64,
    /// None only inside `truncate`, between closing the log and opening it again.
    wal: Option<Wal>,
    epochs: (i64, i64),
    /// The zxid the log takes next (None: nothing held, any).
    next: Option<i64>,
    /// Txns logged since the last snapshot; a snapshot every `snapshot_every`.
    since_snapshot: u64,
    snapshot_every: u64,
    segment_bytes: u64,
    pub snapshots_written: u64,
}

/// How often the store snapshots, and its log's segment size.
#[derive(Debug, Clone, Copy)]
pub struct StoreConfig {
    pub snapshot_every: u64,
    pub segment_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            snapshot_every: OBSERVER_SNAPSHOT_EVERY,
            segment_bytes: palisade_wal::Options::new("").segment_bytes,
        }
    }
}

/// What opening the data dir found.
pub struct Opened {
    pub store: Store,
    /// The tree it held (None: nothing, or nothing recoverable).
    pub state: Option<State>,
}

type Res<T> = Result<T, String>;

fn io(what: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", what.display())
}

impl Store {
    /// Opens (or creates) the observer's data dir and recovers what it holds. A directory
    /// that holds something but is not an observer's is refused; one whose contents do not
    /// recover is emptied (with a warning): the next sync is a SNAP.
    pub fn open(data_dir: &Path, sc: StoreConfig) -> Res<Opened> {
        let cfg = Config {
            data_dir: data_dir.to_path_buf(),
            ..Config::default()
        };
        let (snap_dir, log_dir) = (cfg.snap_dir(), cfg.log_dir());
        let epochs_path = data_dir.join(EPOCHS_FILE);
        let epochs = if epochs_path.exists() {
            read_epochs(&epochs_path)?
        } else {
            refuse_foreign(data_dir)?;
            datadir::create_private_dir(data_dir).map_err(|e| io(data_dir, e))?;
            write_epochs(&epochs_path, (0, 0))?;
            (0, 0)
        };
        let identity = datadir::load_identity(data_dir, &[log_dir.clone(), snap_dir.clone()])
            .map_err(|e| io(data_dir, e))?;
        datadir::create_private_dir(&snap_dir).map_err(|e| io(&snap_dir, e))?;
        palisade_snapshot::check_identity(&snap_dir, identity).map_err(|e| e.to_string())?;
        let (wal, state) = recover_or_empty(&snap_dir, &log_dir, identity, sc.segment_bytes)?;
        let store = Store {
            data_dir: data_dir.to_path_buf(),
            snap_dir,
            log_dir,
            identity,
            wal: Some(wal),
            epochs,
            next: state.as_ref().and_then(|s| s.zxid().checked_add(1)),
            since_snapshot: 0,
            snapshot_every: sc.snapshot_every.max(1),
            segment_bytes: sc.segment_bytes,
            snapshots_written: 0,
        };
        Ok(Opened { store, state })
    }

    fn wal(&mut self) -> Res<&mut Wal> {
        self.wal
            .as_mut()
            .ok_or_else(|| "the log is not open (a truncation failed)".to_string())
    }

    /// (acceptedEpoch, currentEpoch) as last stored.
    pub fn epochs(&self) -> (i64, i64) {
        self.epochs
    }

    /// Stores the epochs (durably) if they changed.
    pub fn set_epochs(&mut self, epochs: (i64, i64)) -> Res<()> {
        if epochs != self.epochs {
            write_epochs(&self.data_dir.join(EPOCHS_FILE), epochs)?;
            self.epochs = epochs;
        }
        Ok(())
    }

    /// Whether the log takes `zxid` as its next txn (else: [`Store::replace`] after applying).
    pub fn continues(&self, zxid: i64) -> bool {
        self.next == Some(zxid)
    }

    /// Logs txn (applied to `state` just now); a snapshot every `snapshot_every` txns.
    pub fn append(&mut self, txn: &Txn, state: &State) -> Res<()> {
        let z = txn.header.zxid;
        self.wal()?
            .append(RecordKind::Txn, z, &txn.encode())
            .map_err(|e| io(&self.log_dir, e))?;
        self.next = z.checked_add(1);
        self.since_snapshot = self.since_snapshot.saturating_add(1);
        if self.since_snapshot >= self.snapshot_every {
            self.checkpoint(state)?;
        }
        Ok(())
    }

    /// Makes every logged txn durable (after each batch the leader sent).
    pub fn sync(&mut self) -> Res<()> {
        self.wal()?.sync().map_err(|e| io(&self.log_dir, e))
    }

    /// A snapshot of `state` (which the log reaches), older ones beyond
    /// `OBSERVER_SNAPSHOTS_KEPT` deleted and the log before the oldest kept purged.
    pub fn checkpoint(&mut self, state: &State) -> Res<()> {
        self.sync()?;
        if self.since_snapshot == 0 && self.snapshots_written > 0 {
            // Nothing logged since this process's last snapshot: it is this state already.
            return Ok(());
        }
        write_snapshot(state, &self.snap_dir, self.identity)?;
        self.snapshots_written += 1;
        self.since_snapshot = 0;
        let oldest = palisade_snapshot::retain(&self.snap_dir, OBSERVER_SNAPSHOTS_KEPT)
            .map_err(|e| e.to_string())?;
        if let Some(keep_from) = oldest.and_then(|z| z.checked_add(1)) {
            self.wal()?
                .purge_before(keep_from)
                .map_err(|e| io(&self.log_dir, e))?;
        }
        write_sessions(state, &self.data_dir)
    }

    /// Makes `state` the whole content: a snapshot of it and an empty log after it (after a
    /// SNAP, or at a zxid the log cannot continue to). The log goes first: a crash midway
    /// leaves a snapshot without its log or nothing, which recovery refuses or finds empty.
    pub fn replace(&mut self, state: &State) -> Res<()> {
        let z = state.zxid();
        self.wal()?.reset().map_err(|e| io(&self.log_dir, e))?;
        remove_snapshots(&self.snap_dir)?;
        write_snapshot(state, &self.snap_dir, self.identity)?;
        self.snapshots_written += 1;
        let next = z
            .checked_add(1)
            .ok_or_else(|| "the zxid is i64::MAX".to_string())?;
        self.wal()?
            .start_at(next)
            .map_err(|e| io(&self.log_dir, e))?;
        self.next = Some(next);
        self.since_snapshot = 0;
        write_sessions(state, &self.data_dir)
    }

    /// TRUNC: drops every txn after `zxid` and rebuilds the state there from the newest
    /// snapshot at or before it. None when the data dir cannot get back to exactly `zxid`
    /// (the snapshots before it were purged): it is emptied, and the caller syncs from
    /// nothing.
    pub fn truncate(&mut self, zxid: i64) -> Res<Option<State>> {
        let from = zxid
            .checked_add(1)
            .ok_or_else(|| "TRUNC to i64::MAX".to_string())?;
        let mut wal = self.wal.take().ok_or("the log is not open")?;
        wal.truncate_from(from).map_err(|e| io(&self.log_dir, e))?;
        drop(wal); // unlocks the log directory for the open below
        for (start, path) in palisade_snapshot::list(&self.snap_dir).map_err(|e| e.to_string())? {
            if start > zxid {
                std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
            }
        }
        let (wal, state) = recover_or_empty(
            &self.snap_dir,
            &self.log_dir,
            self.identity,
            self.segment_bytes,
        )?;
        self.wal = Some(wal);
        self.since_snapshot = 0;
        self.next = state.as_ref().and_then(|s| s.zxid().checked_add(1));
        match state {
            Some(s) if s.zxid() == zxid => Ok(Some(s)),
            other => {
                let at = other.map_or(0, |s| s.zxid());
                tracing::warn!(
                    trunc = format_args!("{zxid:#x}"),
                    recovered = format_args!("{at:#x}"),
                    "observer: cannot truncate the data dir to the leader's TRUNC zxid; syncing from nothing (SNAP)"
                );
                self.wipe()?;
                Ok(None)
            }
        }
    }

    /// Forgets everything (a divergence from the leader): the next sync is a SNAP.
    pub fn wipe(&mut self) -> Res<()> {
        self.wal()?.reset().map_err(|e| io(&self.log_dir, e))?;
        remove_snapshots(&self.snap_dir)?;
        self.since_snapshot = 0;
        self.next = None;
        Ok(())
    }

    /// At the end of a run: the log durable, a snapshot of the last state, the sessions file.
    pub fn finish(&mut self, state: Option<&State>) -> Res<()> {
        self.sync()?;
        match state {
            Some(s) => self
                .checkpoint(s)
                .and_then(|_| write_sessions(s, &self.data_dir)),
            None => Ok(()),
        }
    }
}

/// [`open_and_recover`]; a data dir that does not recover is emptied (with a warning) and
/// opened again, empty: the next sync is a SNAP.
fn recover_or_empty(
    snap_dir: &Path,
    log_dir: &Path,
    identity: u64,
    segment_bytes: u64,
) -> Res<(Wal, Option<State>)> {
    match open_and_recover(snap_dir, log_dir, identity, segment_bytes) {
        Ok(r) => Ok(r),
        Err(why) => {
            tracing::warn!(dir = %snap_dir.parent().unwrap_or(snap_dir).display(), why = %why, "observer: the data dir does not recover; emptying it and syncing from nothing (SNAP)");
            remove_all(snap_dir, log_dir)?;
            open_and_recover(snap_dir, log_dir, identity, segment_bytes)
        }
    }
}

/// The log opened (a torn tail cut) and the tree rebuilt from the newest snapshot plus the
/// log; None for an empty data dir.
fn open_and_recover(
    snap_dir: &Path,
    log_dir: &Path,
    identity: u64,
    segment_bytes: u64,
) -> Res<(Wal, Option<State>)> {
    let opts = palisade_wal::Options {
        segment_bytes,
        max_payload: MAX_TXN_BYTES,
        identity: Some(identity),
        ..palisade_wal::Options::new(log_dir)
    };
    let (wal, log) = Wal::open(opts, Corruption::Refuse).map_err(|e| io(log_dir, e))?;
    let restored = recovery::recover(snap_dir, &log).map_err(|e| e.to_string())?;
    if restored.snapshot.is_none() && restored.replayed == 0 {
        return Ok((wal, None));
    }
    tracing::info!(
        zxid = format_args!("{:#x}", restored.state.zxid()),
        replayed = restored.replayed,
        znodes = restored.state.tree.znode_count(),
        "observer: recovered the data dir"
    );
    Ok((wal, Some(restored.state)))
}

/// A data dir that holds files but no [`EPOCHS_FILE`] is someone else's (a server's, an
/// import's): the observer would fork its history.
fn refuse_foreign(data_dir: &Path) -> Res<()> {
    let holds_files = std::fs::read_dir(data_dir).is_ok_and(|mut d| d.next().is_some());
    match holds_files {
        true => Err(format!(
            "{}: holds files but no {EPOCHS_FILE}: not an observer's data dir (give an empty or new directory)",
            data_dir.display()
        )),
        false => Ok(()),
    }
}

fn remove_all(snap_dir: &Path, log_dir: &Path) -> Res<()> {
    remove_snapshots(snap_dir)?;
    if let Ok(entries) = std::fs::read_dir(log_dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            if palisade_wal::is_segment_file_name(&name.to_string_lossy()) {
                std::fs::remove_file(e.path()).map_err(|err| io(&e.path(), err))?;
            }
        }
    }
    Ok(())
}

fn remove_snapshots(snap_dir: &Path) -> Res<()> {
    for (_, path) in palisade_snapshot::list(snap_dir).map_err(|e| e.to_string())? {
        std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
    }
    Ok(())
}

fn read_epochs(path: &Path) -> Res<(i64, i64)> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let mut it = text.split_whitespace().map(str::parse::<i64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(a)), Some(Ok(c)), None) if a >= 0 && c >= 0 && c <= a => Ok((a, c)),
        _ => Err(format!(
            "{}: not \"acceptedEpoch currentEpoch\"",
            path.display()
        )),
    }
}

fn write_epochs(path: &Path, (accepted, current): (i64, i64)) -> Res<()> {
    palisade_zkdisk::snap::write_durably(path, format!("{accepted} {current}\n").as_bytes())
        .map_err(|e| io(path, e))
}

#[cfg(test)]
#[path = "store_test.rs"]
pub(super) mod tests;
