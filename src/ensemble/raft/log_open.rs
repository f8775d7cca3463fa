//! Opening the Raft log: the WAL's records read back into the live entries, each checked (it
//! decodes, carries the index its record says, and follows its predecessor in index and term
//! order), so that a damaged or foreign log fails the open, not a later read.

use super::log_live::{bad_data, Live, Slot};
use super::log_thread::decode_committed;
use super::types::{NodeId, TypeConfig};
use openraft::{Entry, LogId};
use palisade_wal::{RecordKind, RecordPos, Recovered};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// The live entries of the recovered log `dir`, after the purge point `purged`, and the last
/// committed id it recorded.
pub(super) fn live_entries(
    dir: &Path,
    recovered: &Recovered,
    purged: Option<LogId<NodeId>>,
) -> io::Result<Live> {
    let mut live = Live {
        purged,
        committed: None,
        entries: BTreeMap::new(),
    };
    let mut prev: Option<LogId<NodeId>> = None;
    let firsts: BTreeMap<&Path, i64> = recovered.segments().collect();
    for rec in recovered.all_records() {
        if rec.kind == RecordKind::Meta {
            // A committed id refers to an entry before it in the log.
            if let Some(id) = decode_committed(rec.payload) {
                if prev.is_some_and(|p| p.index >= id.index) {
                    live.committed = Some(id);
                }
            }
            continue;
        }
        let at = || format!("{}:{}", rec.segment.display(), rec.offset);
        let entry: Entry<TypeConfig> = postcard::from_bytes(rec.payload)
            .map_err(|e| bad_data(format!("{}: undecodable Raft entry: {e}", at())))?;
        if i64::try_from(entry.log_id.index).ok() != Some(rec.zxid) {
            return Err(bad_data(format!(
                "{}: entry {} in the record of index {}",
                at(),
                entry.log_id,
                rec.zxid
            )));
        }
        // The WAL lets a Raft log's indexes jump (see its docs); openraft never
        // writes a gap among live entries, so one there means a segment was lost. Behind
        // the purge point one may remain: a purge past the end empties the log oldest
        // segment first, and a crash midway leaves the rest, hidden, before new entries.
        let prev_live = prev.filter(|p| purged.is_none_or(|q| p.index > q.index));
        if prev_live.is_some_and(|p| p.index.checked_add(1) != Some(entry.log_id.index)) {
            return Err(bad_data(format!(
                "{}: entry {} after {:?}: entries are missing",
                at(),
                entry.log_id,
                prev
            )));
        }
        if prev.is_some_and(|p| p.leader_id > entry.log_id.leader_id) {
            return Err(bad_data(format!(
                "{}: entry {} after {:?}: terms go backwards",
                at(),
                entry.log_id,
                prev
            )));
        }
        prev = Some(entry.log_id);
        if purged.is_some_and(|p| entry.log_id.index <= p.index) {
            continue;
        }
        let Some(&segment_first_zxid) = firsts.get(rec.segment) else {
            return Err(bad_data(format!("{}: record of no listed segment", at())));
        };
        let pos = RecordPos {
            segment_first_zxid,
            offset: rec.offset,
        };
        live.entries
            .insert(entry.log_id.index, Slot::Disk(entry.log_id, pos));
    }
    // Segments go only after the purge point is saved, so the first live entry follows it.
    if let (Some(p), Some((&first, _))) = (purged, live.entries.first_key_value()) {
        if Some(first) != p.index.checked_add(1) {
            return Err(bad_data(format!(
                "{}: the log resumes at {first} after the purge point {p}: entries are missing",
                dir.display()
            )));
        }
    }
    Ok(live)
}
