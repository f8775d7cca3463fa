//! `palisade import-zookeeper`: a ZooKeeper 3.8 data dir → a Palisade data dir.
//!
//! As ZooKeeper's own startup does (FileSnap.deserialize, FileTxnSnapLog.restore): the newest
//! snapshot whose seals check (falling back to older ones), then every logged txn after the
//! snapshot's zxid, each entry's Adler32 checked. The snapshot is fuzzy, so the txns are
//! replayed through `State::apply` with Palisade's raise-only rules: counters and zxids only
//! rise, so txns the capture already reflects change nothing and the suffix counters come out
//! as the live server had them. ZooKeeper's digest is checked where it recorded one: when the
//! replay reaches the snapshot's digest zxid, with the txns, and after the last txn. A
//! snapshot the logs cannot complete (or whose replay disagrees with a digest) gives way to
//! an older one, as a damaged one does. The server's own rules hold throughout (rules.rs):
//! a snapshot node or logged txn the server would never have written, or a tree it would refuse
//! to start on, is refused with its file and offset; a compressed snapshot may inflate only so
//! far (`--max-snapshot-bytes`). The result is written
//! with the snapshot and WAL crates' writers: one snapshot at the last zxid, an empty log.

use super::Summary;
use super::{rules, zktree};
use crate::config::Config;
use crate::state::State;
use palisade_proto::{TxnBody, TxnDigest};
use palisade_zkdisk::{self as zkdisk, LogEnd, ZkError, ZkSnapshot};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct ImportOpts {
    pub zk_data_dir: PathBuf,
    pub zk_log_dir: Option<PathBuf>,
    pub data_dir: PathBuf,
    pub dry_run: bool,
    /// `--max-snapshot-bytes`: what a compressed snapshot may inflate to (None: 100× its
    /// file's size, at least 64 MiB; `palisade_zkdisk::snap::inflation_bound`).
    pub max_snapshot_bytes: Option<u64>,
}

fn epoch(z: i64) -> i64 {
    z >> 32
}

/// The state rebuilt from one snapshot and the logs, with what was checked on the way.
struct Rebuilt {
    state: State,
    snapshot: Option<PathBuf>,
    snap_zxid: i64,
    replayed: u64,
    digests_checked: u64,
    notes: Vec<String>,
}

fn from_snapshot(snap: &ZkSnapshot, zxid: i64) -> Result<State, String> {
    let tree = zktree::load(snap)?;
    let sessions: BTreeMap<i64, i32> = snap.sessions.iter().map(|s| (s.id, s.timeout)).collect();
    Ok(State::from_parts(tree, sessions, zxid))
}

fn check_digest(state: &State, recorded: i64, what: &str) -> Result<(), String> {
    let ours = zktree::zk_digest(&state.tree);
    if ours != recorded {
        return Err(format!(
            "ZooKeeper's digest after zxid {:#x} ({what}) is {recorded:#x}, the replayed tree's is {ours:#x}: the replay diverged from what ZooKeeper acknowledged; refusing to import",
            state.zxid()
        ));
    }
    Ok(())
}

/// Replays the logs over `state` (at `snap_zxid`), checking order, gaps, digests and the
/// server's rules (each txn's, and the tree's at the end).
fn replay(
    state: State,
    logs: &[(i64, PathBuf)],
    snap_digest: Option<(i64, i64)>,
    notes: &mut Vec<String>,
) -> Result<(State, u64, u64), String> {
    let mut r = Replay::new(state, snap_digest);
    // Only the logs that can hold txns after the snapshot: a log's txns end where the next
    // log's name begins.
    let first = logs
        .iter()
        .rposition(|(start, _)| *start <= r.snap_zxid.saturating_add(1))
        .unwrap_or(0);
    let wanted = logs.get(first..).unwrap_or_default();
    for (i, (_, path)) in wanted.iter().enumerate() {
        let log = zkdisk::read_log(path).map_err(|e| e.to_string())?;
        for e in &log.entries {
            r.entry(path, e)?;
        }
        if let LogEnd::Torn { offset, reason } = &log.end {
            let last = i + 1 == wanted.len();
            notes.push(format!(
                "{}: torn entry at byte {offset} ({reason}){}",
                path.display(),
                if last {
                    ": a partial last write, never acknowledged; ignored as ZooKeeper does"
                } else {
                    "; the next log must continue the zxids (checked)"
                }
            ));
        }
    }
    r.finish(notes)
}

/// A replay of ZooKeeper's logs over a snapshot's state, and what it has checked.
struct Replay<'a> {
    state: State,
    snap_zxid: i64,
    replayed: u64,
    checked: u64,
    /// The snapshot's digest, to check once the replay reaches its zxid.
    pending_digest: Option<(i64, i64)>,
    /// The snapshot's digest when it stands at the snapshot's own zxid (see `new`).
    at_start: Option<i64>,
    last_digest: Option<TxnDigest>,
    /// Node visits left for checking the txns' digests.
    budget: u64,
    /// Where each create was logged (zxid → file, offset), to name the txn behind a node the
    /// tree's final check refuses.
    created: std::collections::HashMap<i64, (&'a Path, u64)>,
}

impl<'a> Replay<'a> {
    fn new(state: State, snap_digest: Option<(i64, i64)>) -> Self {
        let snap_zxid = state.zxid();
        let mut pending_digest = snap_digest.filter(|&(z, _)| z > 0 && z >= snap_zxid);
        // A digest at the snapshot's own zxid describes the tree before the first txn of the
        // fuzzy window, but ZooKeeper may have been applying that txn while it wrote the file,
        // so the file can hold part of it: the digest is comparable only if no txn follows.
        // ZooKeeper compares it only when it applies a txn of that zxid, which a replay never
        // does.
        let mut at_start = None;
        if let Some((z, d)) = pending_digest {
            if z == snap_zxid {
                at_start = Some(d);
                pending_digest = None;
            }
        }
        Replay {
            state,
            snap_zxid,
            replayed: 0,
            checked: 0,
            pending_digest,
            at_start,
            last_digest: None,
            budget: crate::limits::IMPORT_DIGEST_CHECK_NODE_VISITS,
            created: Default::default(),
        }
    }

    /// One logged txn: checked (order, gaps, the server's rules), brought to the form the
    /// server applies, applied, and its digests checked.
    fn entry(&mut self, path: &'a Path, e: &zkdisk::ZkEntry) -> Result<(), String> {
        let mut txn = e.txn.clone();
        let z = txn.header.zxid;
        if z <= self.snap_zxid {
            return Ok(());
        }
        self.check_order(z, path, e.offset)?;
        rules::txn(&txn.body).map_err(|why| {
            format!(
                "{}: at byte {}: zxid {z:#x}: {why}; the server would never have logged it, so the import refuses it",
                path.display(),
                e.offset
            )
        })?;
        if creates(&txn.body) {
            self.created.insert(z, (path, e.offset));
        }
        super::applied::as_applied(&self.state, &mut txn, e.quirk);
        self.state.apply(&txn);
        self.replayed += 1;
        self.check_digests(z, e)
    }

    /// Zxids rise by one, or start a later epoch.
    fn check_order(&self, z: i64, path: &Path, offset: u64) -> Result<(), String> {
        let cur = self.state.zxid();
        if z <= cur {
            return Err(format!(
                "{}: at byte {}: zxid {z:#x} after {cur:#x} (out of order)",
                path.display(),
                offset
            ));
        }
        let next_epoch = epoch(z) > epoch(cur) && z & 0xffff_ffff >= 1;
        if Some(z) != cur.checked_add(1) && !next_epoch {
            return Err(format!(
                "{}: at byte {}: the logs jump from zxid {cur:#x} to {z:#x}: txns {:#x}..{:#x} are missing (a log file is missing or damaged)",
                path.display(),
                offset,
                cur.saturating_add(1),
                z.saturating_sub(1)
            ));
        }
        Ok(())
    }

    /// The snapshot's digest once the replay reaches its zxid; past the fuzzy window every
    /// txn's recorded digest, while a budget of node visits lasts (each check walks the tree).
    fn check_digests(&mut self, z: i64, e: &zkdisk::ZkEntry) -> Result<(), String> {
        if let Some((dz, d)) = self.pending_digest {
            if z == dz {
                check_digest(&self.state, d, "recorded in the snapshot")?;
                self.checked += 1;
                self.pending_digest = None;
            }
        }
        if let Some(d) = e
            .digest
            .as_ref()
            .filter(|d| d.version == zkdisk::snap::DIGEST_VERSION)
        {
            let nodes = self.state.tree.znode_count() as u64;
            if self.pending_digest.is_none() && self.budget >= nodes {
                self.budget -= nodes;
                check_digest(&self.state, d.tree_digest, "recorded with its txn")?;
                self.checked += 1;
            }
        }
        self.last_digest = e.digest.clone();
        Ok(())
    }

    /// The checks at the end: the snapshot's digest reached, the last digests, and the tree's
    /// rules (a node under an ephemeral names the txn that created it).
    fn finish(mut self, notes: &mut Vec<String>) -> Result<(State, u64, u64), String> {
        let (state, snap_zxid) = (&self.state, self.snap_zxid);
        if let Some((dz, _)) = self.pending_digest {
            return Err(format!(
                "the snapshot's capture saw txns up to zxid {dz:#x} but the logs end at {:#x}: txns are missing",
                state.zxid()
            ));
        }
        if let Some(d) = self.at_start {
            if state.zxid() == snap_zxid {
                check_digest(state, d, "the snapshot's")?;
                self.checked += 1;
            } else {
                notes.push(format!(
                    "the snapshot's digest is at its own zxid {snap_zxid:#x}, before its fuzzy window; checked against the txns' digests instead"
                ));
            }
        }
        if let Some(d) = self
            .last_digest
            .as_ref()
            .filter(|d| d.version == zkdisk::snap::DIGEST_VERSION)
        {
            if state.zxid() > snap_zxid {
                check_digest(state, d.tree_digest, "recorded with the last txn")?;
                self.checked += 1;
            }
        }
        if let Some(bad) = rules::ephemeral_parent(&state.tree) {
            let what = format!(
                "{:?} is a child of the ephemeral node {:?} (session {:#x}); the server never creates one (NOCHILDRENFOREPHEMERALS) and the import refuses it",
                bad.child, bad.parent, bad.session
            );
            return Err(match self.created.get(&bad.child_czxid) {
                Some((log, offset)) => format!(
                    "{}: at byte {offset}: zxid {:#x}: {what}",
                    log.display(),
                    bad.child_czxid
                ),
                None => format!("the snapshot (czxid {:#x}): {what}", bad.child_czxid),
            });
        }
        Ok((self.state, self.replayed, self.checked))
    }
}

/// Whether a txn creates a node (a multi, if any of its ops does).
fn creates(body: &TxnBody) -> bool {
    match body {
        TxnBody::Create(_)
        | TxnBody::Create2(_)
        | TxnBody::CreateContainer(_)
        | TxnBody::CreateTtl(_) => true,
        TxnBody::Multi(ops) => ops.iter().any(creates),
        _ => false,
    }
}

/// Whether a snapshot older than `zxid` is listed (the list is newest first).
fn older_exists(snaps: &[zkdisk::SnapFile], zxid: i64) -> bool {
    snaps
        .iter()
        .take(crate::limits::IMPORT_SNAPSHOTS_TRIED)
        .any(|s| s.zxid < zxid)
}

fn rebuild(zk_snap_dir: &Path, zk_log_dir: &Path, bound: Option<u64>) -> Result<Rebuilt, String> {
    let snaps = zkdisk::list(zk_snap_dir).map_err(|e| e.to_string())?;
    let logs = zkdisk::list(zk_log_dir).map_err(|e| e.to_string())?.logs;
    if snaps.snapshots.is_empty() && logs.is_empty() {
        return Err(format!(
            "{}: no ZooKeeper snapshot or log (expected snapshot.<zxid> and log.<zxid> files)",
            zk_snap_dir.display()
        ));
    }
    let mut notes = Vec::new();
    // ZooKeeper tries up to 100 snapshots, newest first.
    for f in snaps
        .snapshots
        .iter()
        .take(crate::limits::IMPORT_SNAPSHOTS_TRIED)
    {
        let snap = match zkdisk::snap::read_snapshot_within(&f.path, bound) {
            Ok(s) => s,
            Err(e @ ZkError::Io { .. }) => return Err(e.to_string()),
            Err(e) => {
                notes.push(format!("skipped damaged snapshot: {e}"));
                continue;
            }
        };
        let state = from_snapshot(&snap, f.zxid).map_err(|e| {
            let stream = match f.compression {
                zkdisk::Compression::None => "",
                _ => " (its decompressed stream)",
            };
            format!("{}{stream}: {e}", f.path.display())
        })?;
        let digest = snap.digest.as_ref().map(|d| (d.zxid, d.digest));
        // A snapshot whose fuzzy window the logs cannot complete (a txn it saw is torn or
        // missing) or whose replay disagrees with ZooKeeper's digest is not a state ZooKeeper
        // had: an older snapshot may still reach every intact txn, and if it cannot, its
        // own error is the answer.
        let mut tried = Vec::new();
        let (state, replayed, checked) = match replay(state, &logs, digest, &mut tried) {
            Ok(r) => {
                notes.append(&mut tried);
                r
            }
            Err(e) if older_exists(&snaps.snapshots, f.zxid) => {
                notes.push(format!(
                    "skipped snapshot {}: {e}; trying an older one",
                    f.path.display()
                ));
                continue;
            }
            Err(e) => return Err(e),
        };
        return Ok(Rebuilt {
            state,
            snapshot: Some(f.path.clone()),
            snap_zxid: f.zxid,
            replayed,
            digests_checked: checked,
            notes,
        });
    }
    if !snaps.snapshots.is_empty() {
        return Err(format!(
            "{}: no valid snapshot ({})",
            zk_snap_dir.display(),
            notes.join("; ")
        ));
    }
    let (state, replayed, checked) = replay(State::new(), &logs, None, &mut notes)?;
    Ok(Rebuilt {
        state,
        snapshot: None,
        snap_zxid: 0,
        replayed,
        digests_checked: checked,
        notes,
    })
}

fn refuse_nonempty(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir).map(|mut rd| rd.next().is_some()) {
        Ok(true) => Err(format!(
            "{} already holds files; refusing to import over them (give an empty or new directory)",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// Rebuilds the tree a ZooKeeper data dir holds, as the import does, without writing
/// anything (`palisade-inspect validate` on a ZooKeeper data dir).
pub fn check(zk_data_dir: &Path, zk_log_dir: Option<&Path>) -> Result<Summary, String> {
    let (s, _) = read(zk_data_dir, zk_log_dir, None)?;
    Ok(s)
}

/// The state a ZooKeeper data dir holds; `bound`: what a compressed snapshot may inflate to.
pub(crate) fn read(
    zk_data_dir: &Path,
    zk_log_dir: Option<&Path>,
    bound: Option<u64>,
) -> Result<(Summary, State), String> {
    let t0 = std::time::Instant::now();
    let zk_snap_dir = zk_data_dir.join(zkdisk::VERSION_DIR);
    let zk_log_dir = zk_log_dir.unwrap_or(zk_data_dir).join(zkdisk::VERSION_DIR);
    let r = rebuild(&zk_snap_dir, &zk_log_dir, bound)?;
    let mut state = r.state;
    state.recount_quotas();
    let mut s = Summary::of(&state);
    s.source = format!(
        "snapshot {} + {} txns replayed from the logs",
        r.snapshot
            .as_ref()
            .map_or("none".into(), |p| p.display().to_string()),
        r.replayed
    );
    s.first_zxid = r.snap_zxid;
    s.digests_checked = r.digests_checked;
    s.notes = r.notes;
    s.read_ms = t0.elapsed().as_millis() as u64;
    Ok((s, state))
}

/// The state a snapshot stream in memory holds at `zxid` (the AdminServer's `restore`):
/// the same checks as a snapshot file's import, ZooKeeper's digest where it is recorded at
/// that zxid.
pub(crate) fn from_stream(bytes: bytes::Bytes, zxid: i64) -> Result<State, String> {
    let snap = zkdisk::snap::decode_snapshot(bytes, Path::new("the request body"))
        .map_err(|e| e.to_string())?;
    let mut state = from_snapshot(&snap, zxid)?;
    if let Some(d) = snap.digest.as_ref().filter(|d| d.zxid == zxid) {
        check_digest(&state, d.digest, "the stream's")?;
    }
    state.recount_quotas();
    Ok(state)
}

pub fn run(o: &ImportOpts) -> Result<Summary, String> {
    refuse_nonempty(&o.data_dir)?;
    let (mut s, state) = read(
        &o.zk_data_dir,
        o.zk_log_dir.as_deref(),
        o.max_snapshot_bytes,
    )?;
    if !o.dry_run {
        let t1 = std::time::Instant::now();
        write_palisade(&state, &o.data_dir)?;
        s.write_ms = t1.elapsed().as_millis() as u64;
    }
    Ok(s)
}

/// The file (in the data dir) listing the sessions an import brought from ZooKeeper, one hex
/// id a line: the server accepts ZooKeeper's password for them (see core/handshake.rs).
pub const SESSIONS_FILE: &str = "zookeeper-sessions";

/// The sessions listed in `data_dir`'s [`SESSIONS_FILE`] (none when there is no such file).
pub fn imported_sessions(data_dir: &Path) -> std::collections::HashSet<i64> {
    std::fs::read_to_string(data_dir.join(SESSIONS_FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim().trim_start_matches("0x"), 16).ok())
        .map(|z| z as i64)
        .collect()
}

/// Writes the state as a Palisade data dir through the snapshot and WAL crates' writers: a
/// complete (not fuzzy) snapshot at the state's zxid and an empty log after it.
pub fn write_palisade(state: &State, data_dir: &Path) -> Result<(), String> {
    let cfg = Config {
        data_dir: data_dir.to_path_buf(),
        ..Config::default()
    };
    let snap_dir = cfg.snap_dir();
    // The new data dir's identity, as the server would create it for an empty data dir.
    let identity =
        crate::durability::datadir::load_identity(data_dir, &[cfg.log_dir(), snap_dir.clone()])
            .map_err(|e| e.to_string())?;
    crate::durability::datadir::create_private_dir(&snap_dir)
        .map_err(|e| format!("{}: {e}", snap_dir.display()))?;
    let zxid = state.zxid();
    write_snapshot(state, &snap_dir, identity)?;
    write_sessions(state, data_dir)?;
    // A log that starts right after the snapshot: the server's first write is zxid + 1.
    let opts = palisade_wal::Options {
        identity: Some(identity),
        ..palisade_wal::Options::new(cfg.log_dir())
    };
    let (mut wal, _) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse)
        .map_err(|e| e.to_string())?;
    let next = zxid
        .checked_add(1)
        .ok_or_else(|| "the imported zxid is i64::MAX".to_string())?;
    wal.start_at(next).map_err(|e| e.to_string())?;
    Ok(())
}

/// A complete snapshot of `state` at its zxid in `snap_dir` (the capture with nothing applied
/// during it: its start and end zxid are the same).
pub fn write_snapshot(state: &State, snap_dir: &Path, identity: u64) -> Result<PathBuf, String> {
    use crate::durability::capture::Capture;
    let zxid = state.zxid();
    let mut w = palisade_snapshot::SnapshotWriter::create(snap_dir, zxid, identity)
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut c = Capture::begin(
        &state.tree,
        state.sessions().iter().map(|(&i, &t)| (i, t)),
        zxid,
        &mut buf,
    );
    loop {
        let done = c.step(&state.tree, crate::limits::IMPORT_CAPTURE_STEP, &mut buf);
        if done || buf.len() >= crate::limits::IMPORT_BLOCK {
            w.write_block(&buf).map_err(|e| e.to_string())?;
            buf.clear();
        }
        if done {
            break;
        }
    }
    w.finish(c.trailer(zxid, state.tree.digest()))
        .map_err(|e| e.to_string())
}

/// Lists `state`'s sessions in `data_dir`'s [`SESSIONS_FILE`] (ZooKeeper's sessions, whose
/// passwords the server accepts).
pub fn write_sessions(state: &State, data_dir: &Path) -> Result<(), String> {
    let ids: String = state
        .sessions()
        .keys()
        .map(|id| format!("{:#x}\n", *id as u64))
        .collect();
    palisade_zkdisk::snap::write_durably(&data_dir.join(SESSIONS_FILE), ids.as_bytes())
        .map_err(|e| e.to_string())
}
