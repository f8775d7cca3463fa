//! The checker behind [`crate::invariants()`]: fed every record of the log in order, it
//! checks each txn's creates against the tree before it (and the multi's own earlier ops),
//! applies the txn with the server's `Replayer`, then checks that no touched parent's
//! counters went down. See the rule table in `invariants.rs`.

use crate::describe::decode_txn;
use crate::format::{self, sequential_suffix};
use crate::invariants::{InvariantsReport, Violation};
use crate::replay::{feed, Base};
use palisade::durability::recovery::{RecoveryError, Replayer};
use palisade::path;
use palisade::state::tree::DataTree;
use palisade_proto::{Txn, TxnBody};
use palisade_wal::{RecordKind, RecordRef};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// A parent's counters at one moment: (czxid, C, pzxid).
type Counters = (i64, i32, i64);

pub(crate) struct Checker {
    pub(crate) r: Replayer,
    checked_from: i64,
    started: bool,
    /// Counters of every parent touched so far, as left by the last txn touching it.
    seen: HashMap<String, Counters>,
    /// (parent path, parent czxid) → (last suffix handed out, its zxid, its path).
    suffixes: HashMap<(String, i64), (i64, i64, String)>,
    pub(crate) report: InvariantsReport,
}

impl Checker {
    pub(crate) fn new(r: Replayer, base: Base, checked_from: i64) -> Checker {
        let zxid = r.zxid();
        Checker {
            r,
            checked_from,
            started: false,
            seen: HashMap::new(),
            suffixes: HashMap::new(),
            report: InvariantsReport {
                base,
                checked_from,
                last_zxid: zxid,
                txns: 0,
                creates: 0,
                sequential: 0,
                digests_checked: 0,
                violations: Vec::new(),
                stopped: None,
            },
        }
    }

    pub(crate) fn violate(&mut self, zxid: i64, rule: &'static str, path: &str, detail: String) {
        self.report.violations.push(Violation {
            zxid,
            rule,
            path: path.to_string(),
            detail,
        });
    }

    fn stop(&mut self, why: String) -> ControlFlow<()> {
        self.report.stopped = Some(why);
        ControlFlow::Break(())
    }

    pub(crate) fn record(&mut self, rec: &RecordRef<'_>) -> ControlFlow<()> {
        if rec.kind == RecordKind::Meta {
            if !self.started {
                return ControlFlow::Continue(());
            }
            return match self.r.meta(rec.payload) {
                Err(e) => self.replay_error(e),
                Ok(()) => ControlFlow::Continue(()),
            };
        }
        if rec.zxid <= self.r.zxid() {
            // Before the starting snapshot: already in it.
            return ControlFlow::Continue(());
        }
        self.started = true;
        let expected = self.r.zxid().saturating_add(1);
        if rec.zxid != expected {
            let detail = format!(
                "expected {}, found {}",
                format::zxid(expected),
                format::zxid(rec.zxid)
            );
            self.violate(rec.zxid, "zxid-continuity", "", detail);
            return self.stop("the log skips txns".into());
        }
        let txn = match decode_txn(rec.payload) {
            Ok(t) => t,
            Err(reason) => {
                self.violate(
                    rec.zxid,
                    "zxid-continuity",
                    "",
                    format!("txn does not decode: {reason}"),
                );
                return self.stop(format!(
                    "undecodable txn at {}:{}",
                    rec.segment.display(),
                    rec.offset
                ));
            }
        };
        let checking = rec.zxid >= self.checked_from;
        let before = if checking {
            self.before(&txn)
        } else {
            Vec::new()
        };
        let result = feed(&mut self.r, rec);
        self.report.txns = self.report.txns.saturating_add(1);
        self.report.last_zxid = self.r.zxid();
        if checking {
            self.after(&txn, before);
        }
        match result {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => self.replay_error(e),
        }
    }

    fn replay_error(&mut self, e: RecoveryError) -> ControlFlow<()> {
        match e {
            RecoveryError::Diverged { zxid, .. } => {
                self.violate(zxid, "digest", "", e.to_string());
                ControlFlow::Continue(())
            }
            RecoveryError::Gap { found, .. } => {
                self.violate(found, "zxid-continuity", "", e.to_string());
                self.stop(e.to_string())
            }
            other => {
                let z = self.r.zxid().saturating_add(1);
                self.violate(z, "zxid-continuity", "", other.to_string());
                self.stop(other.to_string())
            }
        }
    }

    /// Checks the creates of `txn` against the tree before it (and the multi's own earlier
    /// ops); returns the counters of every parent the txn touches.
    fn before(&mut self, txn: &Txn) -> Vec<(String, Option<Counters>)> {
        let z = txn.header.zxid;
        let ops = flatten(&txn.body);
        let mut parents: Vec<String> = Vec::new();
        for op in &ops {
            for p in touched_paths(op) {
                if let Some(parent) = path::parent(&p) {
                    if !parents.iter().any(|q| q == parent) {
                        parents.push(parent.to_string());
                    }
                }
            }
        }
        let tree = self.r.tree();
        let before: Vec<(String, Option<Counters>)> = parents
            .into_iter()
            .map(|p| {
                let c = counters(tree, &p);
                (p, c)
            })
            .collect();
        for (p, now) in &before {
            self.compare_with_seen(z, p, *now);
        }
        self.check_creates(z, &ops);
        before
    }

    /// Between two txns that touch a parent, nothing may lower its counters.
    fn compare_with_seen(&mut self, z: i64, p: &str, now: Option<Counters>) {
        let (Some(now), Some(seen)) = (now, self.seen.get(p).copied()) else {
            return;
        };
        if now.0 != seen.0 {
            return;
        }
        if now.1 < seen.1 {
            let detail = format!(
                "C was {} after its last change, is {} before this txn",
                seen.1, now.1
            );
            self.violate(z, "create-counter", p, detail);
        }
        if now.2 < seen.2 {
            let detail = format!(
                "pzxid was {} after its last change, is {} before this txn",
                format::zxid(seen.2),
                format::zxid(now.2)
            );
            self.violate(z, "pzxid", p, detail);
        }
    }

    /// Walks the creates in order, tracking each parent's C through the multi.
    fn check_creates(&mut self, z: i64, ops: &[&TxnBody]) {
        // Path → (czxid, C) as the txn's earlier ops left it; None = deleted by them.
        let mut overlay: HashMap<String, Option<(i64, i32)>> = HashMap::new();
        for op in ops {
            let Some((p, pcv)) = create_of(op) else {
                if let TxnBody::Delete(d) | TxnBody::DeleteContainer(d) = op {
                    overlay.insert(d.path.to_lossy().unwrap_or_default().into_owned(), None);
                }
                continue;
            };
            self.report.creates = self.report.creates.saturating_add(1);
            let Some(parent) = path::parent(&p).map(str::to_string) else {
                continue;
            };
            let state = match overlay.get(&parent) {
                Some(s) => *s,
                None => counters(self.r.tree(), &parent).map(|(cz, c, _)| (cz, c)),
            };
            let Some((pcz, c)) = state else {
                self.violate(
                    z,
                    "create-without-parent",
                    &p,
                    format!("no node at {parent}"),
                );
                continue;
            };
            if i64::from(pcv) != i64::from(c).saturating_add(1) {
                let detail = format!("parentCVersion {pcv}, but the parent's C before was {c}");
                self.violate(z, "parent-cversion", &p, detail);
            }
            if let Some(suffix) = sequential_suffix(path::name(&p)) {
                self.check_suffix(z, &p, &parent, pcz, c, suffix);
            }
            overlay.insert(parent, Some((pcz, c.max(pcv))));
            overlay.insert(p, Some((z, 0)));
        }
    }

    fn check_suffix(&mut self, z: i64, p: &str, parent: &str, pcz: i64, c: i32, suffix: i64) {
        self.report.sequential = self.report.sequential.saturating_add(1);
        if suffix != i64::from(c) {
            let detail = format!("suffix {suffix:010}, but the parent's C before was {c}");
            self.violate(z, "sequential-suffix", p, detail);
        }
        let key = (parent.to_string(), pcz);
        if let Some((last, at, last_path)) = self.suffixes.get(&key).cloned() {
            if suffix <= last {
                let detail = format!(
                    "suffix {suffix:010} after {last:010} was handed out at {} ({last_path})",
                    format::zxid(at)
                );
                self.violate(z, "suffix-reuse", p, detail);
            }
        }
        self.suffixes.insert(key, (suffix, z, p.to_string()));
    }

    /// After the txn: no touched parent's counters went down.
    fn after(&mut self, txn: &Txn, before: Vec<(String, Option<Counters>)>) {
        let z = txn.header.zxid;
        for (p, was) in before {
            let now = counters(self.r.tree(), &p);
            if let (Some(was), Some(now)) = (was, now) {
                if was.0 == now.0 {
                    if now.1 < was.1 {
                        let detail = format!("C {} before, {} after", was.1, now.1);
                        self.violate(z, "create-counter", &p, detail);
                    }
                    if now.2 < was.2 {
                        let detail = format!(
                            "pzxid {} before, {} after",
                            format::zxid(was.2),
                            format::zxid(now.2)
                        );
                        self.violate(z, "pzxid", &p, detail);
                    }
                }
            }
            match now {
                Some(c) => self.seen.insert(p, c),
                None => self.seen.remove(&p),
            };
        }
    }

    pub(crate) fn finish(self) -> InvariantsReport {
        let Checker { r, mut report, .. } = self;
        report.digests_checked = r.digests_checked();
        if report.stopped.is_none() {
            if let Err(e) = r.finish() {
                report.violations.push(Violation {
                    zxid: report.last_zxid,
                    rule: "zxid-continuity",
                    path: String::new(),
                    detail: e.to_string(),
                });
            }
        }
        report
    }
}

fn counters(tree: &DataTree, p: &str) -> Option<Counters> {
    let n = tree.node(tree.lookup(p)?)?;
    Some((n.czxid, n.child_creates, n.pzxid))
}

fn flatten(body: &TxnBody) -> Vec<&TxnBody> {
    match body {
        TxnBody::Multi(subs) => subs.iter().collect(),
        b => vec![b],
    }
}

/// A create's path and parentCVersion.
fn create_of(op: &TxnBody) -> Option<(String, i32)> {
    let (path, pcv) = match op {
        TxnBody::Create(c) | TxnBody::Create2(c) => (&c.path, c.parent_c_version),
        TxnBody::CreateContainer(c) => (&c.path, c.parent_c_version),
        TxnBody::CreateTtl(c) => (&c.path, c.parent_c_version),
        _ => return None,
    };
    Some((path.to_lossy().unwrap_or_default().into_owned(), pcv))
}

/// Paths whose parent's counters an op changes.
fn touched_paths(op: &TxnBody) -> Vec<String> {
    let lossy = |s: &palisade_proto::JStr| s.to_lossy().unwrap_or_default().into_owned();
    match op {
        TxnBody::Delete(d) | TxnBody::DeleteContainer(d) => vec![lossy(&d.path)],
        TxnBody::CloseSession(c) => c.paths2_delete.iter().flatten().map(lossy).collect(),
        other => create_of(other).map(|(p, _)| p).into_iter().collect(),
    }
}
