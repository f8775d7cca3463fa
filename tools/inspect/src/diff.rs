//! `diff DATADIR_A DATADIR_B`: recovers both (read-only, as the server would) and compares
//! the results node by node — paths present on one side only (a missing subtree is reported
//! once, at its top), every stat field, C, data and ACL — plus the sessions and the zxid.

use crate::datadir::DataDir;
use crate::error::InspectError;
use crate::format;
use crate::nodes::{all_nodes, NodeView};
use crate::opview::acl_text;
use crate::replay::{recover_readonly, Replayed};
use palisade::state::tree::DataTree;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The states are at different zxids.
    Zxid { a: i64, b: i64 },
    /// A session alive on one side only, or with different timeouts.
    Session {
        id: i64,
        a: Option<i32>,
        b: Option<i32>,
    },
    /// A node (and `descendants` nodes below it) present on one side only.
    OnlyIn {
        side: Side,
        path: String,
        descendants: usize,
    },
    /// A field of a node present on both sides.
    Field {
        path: String,
        field: &'static str,
        a: String,
        b: String,
    },
}

impl Difference {
    pub fn text(&self) -> String {
        match self {
            Difference::Zxid { a, b } => {
                format!("zxid: A {} B {}", format::zxid(*a), format::zxid(*b))
            }
            Difference::Session { id, a, b } => format!(
                "session {}: A {} B {}",
                format::zxid(*id),
                timeout_text(*a),
                timeout_text(*b)
            ),
            Difference::OnlyIn {
                side,
                path,
                descendants,
            } => {
                let (label, other) = match side {
                    Side::A => ("only in A", "B"),
                    Side::B => ("only in B", "A"),
                };
                let below = match descendants {
                    0 => String::new(),
                    n => format!(" (and {n} nodes below it)"),
                };
                format!("{label}: {path}{below} (missing in {other})")
            }
            Difference::Field { path, field, a, b } => format!("{path}: {field} A {a} B {b}"),
        }
    }

    pub fn json(&self) -> Value {
        match self {
            Difference::Zxid { a, b } => {
                json!({"type": "difference", "what": "zxid", "a": format::zxid(*a), "b": format::zxid(*b)})
            }
            Difference::Session { id, a, b } => json!({"type": "difference", "what": "session",
                "id": format::zxid(*id), "a_timeout_ms": a, "b_timeout_ms": b}),
            Difference::OnlyIn {
                side,
                path,
                descendants,
            } => json!({"type": "difference", "what": "only_in",
                "side": match side { Side::A => "a", Side::B => "b" },
                "path": path, "descendants": descendants}),
            Difference::Field { path, field, a, b } => json!({"type": "difference",
                "what": "field", "path": path, "field": field, "a": a, "b": b}),
        }
    }
}

fn timeout_text(t: Option<i32>) -> String {
    t.map_or_else(|| "absent".into(), |t| format!("timeout={t}ms"))
}

/// Both sides' starting points and the differences.
pub struct DiffReport {
    pub a: String,
    pub b: String,
    pub differences: Vec<Difference>,
}

impl DiffReport {
    pub fn equal(&self) -> bool {
        self.differences.is_empty()
    }

    pub fn text(&self) -> String {
        let mut s = format!("A: {}\nB: {}\n", self.a, self.b);
        for d in &self.differences {
            s.push_str(&d.text());
            s.push('\n');
        }
        match self.differences.len() {
            0 => s.push_str("equal"),
            n => s.push_str(&format!("{n} differences")),
        }
        s
    }

    pub fn json_lines(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self.differences.iter().map(Difference::json).collect();
        out.push(json!({"type": "summary", "a": self.a, "b": self.b,
                        "equal": self.equal(), "differences": self.differences.len()}));
        out
    }
}

fn describe_side(r: &Replayed) -> String {
    format!(
        "recovered to {} from {} ({} txns replayed, {} znodes)",
        format::zxid(r.zxid),
        r.base.text(),
        r.replayed,
        r.tree.znode_count()
    )
}

/// Recovers both data dirs read-only and compares them.
pub fn diff(a: &DataDir, b: &DataDir) -> Result<DiffReport, InspectError> {
    let ra = recover_readonly(a)?;
    let rb = recover_readonly(b)?;
    Ok(DiffReport {
        a: describe_side(&ra),
        b: describe_side(&rb),
        differences: diff_states(&ra, &rb),
    })
}

/// Differences between two rebuilt states: zxid, sessions, then the trees.
pub fn diff_states(a: &Replayed, b: &Replayed) -> Vec<Difference> {
    let mut out = Vec::new();
    if a.zxid != b.zxid {
        out.push(Difference::Zxid {
            a: a.zxid,
            b: b.zxid,
        });
    }
    let mut ids: Vec<i64> = a
        .sessions
        .keys()
        .chain(b.sessions.keys())
        .copied()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let (ta, tb) = (a.sessions.get(&id).copied(), b.sessions.get(&id).copied());
        if ta != tb {
            out.push(Difference::Session { id, a: ta, b: tb });
        }
    }
    out.extend(diff_trees(&a.tree, &b.tree));
    out
}

/// Node-by-node differences between two trees, in path order.
pub fn diff_trees(a: &DataTree, b: &DataTree) -> Vec<Difference> {
    let (na, nb) = (all_nodes(a), all_nodes(b));
    let mut out = Vec::new();
    only_in(&na, &nb, Side::A, &mut out);
    only_in(&nb, &na, Side::B, &mut out);
    for (path, va) in &na {
        if let Some(vb) = nb.get(path) {
            fields(path, va, vb, &mut out);
        }
    }
    out
}

/// Paths of `ours` missing from `theirs`, each missing subtree reported at its top.
fn only_in(
    ours: &BTreeMap<String, NodeView>,
    theirs: &BTreeMap<String, NodeView>,
    side: Side,
    out: &mut Vec<Difference>,
) {
    let mut tops: HashMap<String, usize> = HashMap::new();
    for path in ours.keys().filter(|p| !theirs.contains_key(*p)) {
        let mut ancestor = palisade::path::parent(path);
        let mut counted = false;
        while let Some(a) = ancestor {
            if let Some(&i) = tops.get(a) {
                if let Some(Difference::OnlyIn { descendants, .. }) = out.get_mut(i) {
                    *descendants = descendants.saturating_add(1);
                }
                counted = true;
                break;
            }
            ancestor = if a == "/" {
                None
            } else {
                palisade::path::parent(a)
            };
        }
        if !counted {
            tops.insert(path.clone(), out.len());
            out.push(Difference::OnlyIn {
                side,
                path: path.clone(),
                descendants: 0,
            });
        }
    }
}

fn data_text(d: &Option<Vec<u8>>) -> String {
    match d {
        None => "null".into(),
        Some(d) => format!("{}B \"{}\"", d.len(), format::preview(d, 32)),
    }
}

fn fields(path: &str, a: &NodeView, b: &NodeView, out: &mut Vec<Difference>) {
    let z = |v: i64| format::zxid(v);
    let pairs: [(&'static str, String, String); 13] = [
        ("czxid", z(a.czxid), z(b.czxid)),
        ("mzxid", z(a.mzxid), z(b.mzxid)),
        ("pzxid", z(a.pzxid), z(b.pzxid)),
        ("ctime", a.ctime.to_string(), b.ctime.to_string()),
        ("mtime", a.mtime.to_string(), b.mtime.to_string()),
        ("version", a.version.to_string(), b.version.to_string()),
        ("C", a.c.to_string(), b.c.to_string()),
        ("cversion", a.cversion.to_string(), b.cversion.to_string()),
        ("aversion", a.aversion.to_string(), b.aversion.to_string()),
        (
            "numChildren",
            a.num_children.to_string(),
            b.num_children.to_string(),
        ),
        ("ephemeralOwner", a.owner_text(), b.owner_text()),
        ("data", data_text(&a.data), data_text(&b.data)),
        ("acl", acl_text(&a.acl), acl_text(&b.acl)),
    ];
    for (field, va, vb) in pairs {
        let differs = match field {
            // Previews can agree while the bytes differ.
            "data" => a.data != b.data,
            _ => va != vb,
        };
        if differs {
            out.push(Difference::Field {
                path: path.to_string(),
                field,
                a: va,
                b: vb,
            });
        }
    }
}
