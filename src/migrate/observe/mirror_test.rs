//! The mirror fed by the learner from what real ZooKeeper 3.8.0 leaders sent
//! (zab/testdata: a fresh observer's SNAP and steady state; a restarted one's DIFF): every
//! txn applies, and every digest ZooKeeper recorded after the fuzzy window matches the tree.

use super::*;
use palisade_zab::{Decoder, Direction, Input, Learner, LearnerConfig, Limits, Output};
use std::path::Path;

/// The leader's bytes of a golden stream (`< hex` lines, concatenated).
fn leader_bytes(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("zab/testdata")
        .join(format!("{name}.stream"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for line in text.lines().filter_map(|l| l.strip_prefix("< ")) {
        let hex = line.trim().as_bytes();
        for pair in hex.chunks(2) {
            let s = std::str::from_utf8(pair).unwrap_or("zz");
            out.push(u8::from_str_radix(s, 16).unwrap_or_else(|e| panic!("{name}: {e}")));
        }
    }
    out
}

/// Feeds a stream through a learner into `m`; the outputs other than Send, in order.
fn feed(m: &mut Mirror, name: &str) -> Vec<String> {
    let mut learner = Learner::new(LearnerConfig {
        server_id: 4,
        config_version: 0,
        accepted_epoch: 0,
        current_epoch: 0,
        last_zxid: m.last_zxid(),
        tick_ms: 2000,
        init_limit: 10,
        sync_limit: 5,
    });
    let mut seen = Vec::new();
    let mut outs = learner.step(Input::Connected);
    let mut dec = Decoder::new(Direction::FromLeader, Limits::default());
    dec.push(&leader_bytes(name));
    loop {
        for o in outs.drain(..) {
            match o {
                Output::Send(_) => {}
                Output::Syncing {
                    mode: palisade_zab::SyncMode::Snap,
                    ..
                } => m.begin_snapshot(),
                Output::SnapshotItems(items) => m
                    .snapshot_items(items)
                    .unwrap_or_else(|e| panic!("{name}: {e}")),
                Output::SnapshotEnd { zxid, .. } => {
                    m.end_snapshot(zxid)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    seen.push("snapshot".into());
                }
                Output::Apply { entry } => {
                    let z = entry.zxid();
                    m.apply(entry)
                        .unwrap_or_else(|e| panic!("{name}: txn {z:#x}: {e}"));
                }
                Output::Truncate { zxid } => m
                    .truncate(zxid)
                    .unwrap_or_else(|e| panic!("{name}: TRUNC {zxid:#x}: {e}")),
                Output::Synced { .. } => seen.push("synced".into()),
                Output::Resync(why) => seen.push(format!("resync {why:?}")),
                _ => {}
            }
        }
        match dec.next_frame() {
            Ok(Some(f)) => outs = learner.step(Input::Frame(f)),
            Ok(None) | Err(_) => break,
        }
    }
    seen
}

#[test]
fn a_fresh_observer_s_snap_and_informs_apply_and_every_digest_matches() {
    let mut m = Mirror::default();
    let seen = feed(&mut m, "observer-snap-1");
    assert_eq!(
        seen.first().map(String::as_str),
        Some("snapshot"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s == "synced"), "{seen:?}");
    assert!(m.applied > 20, "applied {}", m.applied);
    // The digests after the fuzzy window were checked and matched (a mismatch after one
    // matched is an error, which `feed` would have panicked on).
    assert!(
        m.matched && m.digests_checked > 10,
        "checked {}",
        m.digests_checked
    );
    let state = m.state().unwrap_or_else(|| panic!("no state"));
    assert!(state.tree.znode_count() > 5);
}

#[test]
fn a_digest_that_disagrees_after_one_agreed_is_a_divergence() {
    let mut m = Mirror::default();
    feed(&mut m, "observer-snap-1");
    assert!(m.matched);
    // The tree changed behind the txns' back: the next recorded digest cannot match.
    let bytes = leader_bytes("observer-snap-1");
    let mut dec = Decoder::new(Direction::FromLeader, Limits::default());
    dec.push(&bytes);
    let mut last = None;
    while let Ok(Some(f)) = dec.next_frame() {
        if let palisade_zab::Frame::Packet(p) = f {
            if let Some(e) = inform_entry(&p) {
                last = Some(e);
            }
        }
    }
    let mut entry = last.unwrap_or_else(|| panic!("no INFORM with a digest"));
    entry.txn.header.zxid = m.last_zxid() + 1;
    let Some(d) = entry.digest.as_mut() else {
        panic!("the last INFORM has no digest")
    };
    d.tree_digest ^= 1;
    let err = m.apply(entry).err();
    assert!(
        matches!(&err, Some(Failure::Diverged(why)) if why.contains("diverged")),
        "{err:?}"
    );
}

/// The txn an INFORM carries, if it has a digest.
fn inform_entry(p: &palisade_zab::Packet) -> Option<TxnEntry> {
    match &p.body {
        palisade_zab::Body::Inform(e) if e.digest.is_some() => Some(e.clone()),
        _ => None,
    }
}

#[test]
fn a_restarted_observer_catches_up_by_diff() {
    let mut m = Mirror::default();
    feed(&mut m, "observer-snap-1");
    let before = (m.last_zxid(), m.applied);
    let seen = feed(&mut m, "observer-diff-1");
    assert!(!seen.iter().any(|s| s == "snapshot"), "{seen:?}");
    assert!(m.last_zxid() > before.0 && m.applied > before.1, "{seen:?}");
}
