//! Test support: a seeded workload that preps and applies random writes exactly as the core
//! does (the Prepper against tree + overlay, the txn encoded and decoded as the log stores it,
//! State::apply), recording the log, and a full dump of a tree to compare trees field by field.

use crate::acl::{AuthId, Entry};
use crate::ensemble::raft::state_machine::{StateApplier, StateMachine};
use crate::prep::{Caller, Prepper};
use crate::state::tree::{DataTree, NodeId, ROOT};
use crate::state::State;
use palisade_proto::*;
use std::collections::BTreeMap;

/// A seeded generator (fastrand's), with the helpers the workloads use.
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(fastrand::Rng::with_seed(seed))
    }
    /// Uniform in 0..n (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.u64(0..n)
        }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A node as a client could observe it, plus what only the server sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDump {
    pub stat: Stat,
    /// The stored create counter C (sequential suffixes come from it).
    pub c: i32,
    pub owner: i64,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Entry>,
}

/// Every node by path.
pub fn dump(tree: &DataTree) -> BTreeMap<String, NodeDump> {
    let mut out = BTreeMap::new();
    let mut stack = vec![ROOT];
    while let Some(id) = stack.pop() {
        stack.extend(tree.children(id));
        let Some(n) = tree.node(id) else { continue };
        out.insert(
            tree.path_of(id),
            NodeDump {
                stat: tree.stat(id),
                c: n.child_creates,
                owner: n.owner,
                data: n.data().map(|d| d.to_vec()),
                acl: tree.acl_of(id).to_vec(),
            },
        );
    }
    out
}

/// Asserts two trees are equal node by node, naming the first difference.
pub fn assert_same_tree(what: &str, got: &DataTree, want: &DataTree) {
    let (g, w) = (dump(got), dump(want));
    for (path, wn) in &w {
        match g.get(path) {
            None => panic!("{what}: {path} missing"),
            Some(gn) => assert_eq!(gn, wn, "{what}: {path} differs"),
        }
    }
    for path in g.keys() {
        assert!(w.contains_key(path), "{what}: {path} should not exist");
    }
    assert_eq!(got.digest(), want.digest(), "{what}: digests differ");
}

/// A create of `path` with no data and world:anyone's every permission, as clients send one.
pub fn open_create(path: &str, flags: i32) -> CreateRequest {
    CreateRequest {
        path: JStr::from(path),
        data: None,
        acl: open_acl(),
        flags,
    }
}

/// world:anyone with every permission.
pub fn open_acl() -> Option<Vec<ACL>> {
    Some(vec![acl(31, "world", "anyone")])
}

/// The txn of a create of `path` with data "d" and world:anyone's every permission, which
/// leaves its parent's child-creation counter at `parent_c_version`.
pub fn create_txn(path: &str, ephemeral: bool, parent_c_version: i32) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: JStr::from(path),
        data: Some(bytes::Bytes::from_static(b"d")),
        acl: open_acl(),
        ephemeral,
        parent_c_version,
    })
}

fn acl(perms: i32, scheme: &str, id: &str) -> ACL {
    ACL {
        perms,
        id: Id {
            scheme: JStr::from(scheme),
            id: JStr::from(id),
        },
    }
}

/// A seeded workload of sessions issuing creates (every kind), deletes, setData, setACL
/// with several distinct ACL lists, multi, and session closes.
pub struct Workload {
    pub state: State,
    prep: Prepper,
    pub log: Vec<Txn>,
    pub rng: Rng,
    next_session: i64,
    auth: Vec<AuthId>,
}

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

impl Workload {
    pub fn new(seed: u64) -> Self {
        let mut w = Workload {
            state: State::new(),
            prep: Prepper::new(0, true),
            log: Vec::new(),
            rng: Rng::new(seed),
            next_session: 0x100,
            auth: vec![AuthId {
                scheme: "super".into(),
                id: "".into(),
            }],
        };
        for _ in 0..2 {
            w.create_session();
        }
        w
    }

    /// A workload of `seed` after `steps` steps.
    pub fn run(seed: u64, steps: u64) -> Self {
        let mut w = Workload::new(seed);
        w.steps(steps);
        w
    }

    pub fn steps(&mut self, n: u64) {
        for _ in 0..n {
            self.step();
        }
    }

    /// Shorthands for what the tests read.
    pub fn tree(&self) -> &DataTree {
        &self.state.tree
    }
    pub fn zxid(&self) -> i64 {
        self.state.zxid()
    }
    pub fn sessions(&self) -> &BTreeMap<i64, i32> {
        self.state.sessions()
    }

    /// The txn's time: fixed per zxid, so that a seed always builds the same log.
    fn time(&self) -> i64 {
        1_700_000_000_000 + self.prep.last_zxid() + 1
    }

    /// Applies a prepped txn, through the codec as the log would store it.
    fn apply(&mut self, txn: Txn) {
        let txn = Txn::decode(txn.encode(), usize::MAX)
            .unwrap_or_else(|e| panic!("txn does not decode: {e}"));
        self.state.apply(&txn);
        self.prep.applied(txn.header.zxid);
        self.log.push(txn);
    }

    pub fn write(&mut self, session: i64, req: Request) {
        let time = self.time();
        let caller = Caller {
            session,
            auth: &self.auth,
        };
        let txn = self.prep.write(&self.state.tree, caller, 1, &req, time);
        self.apply(txn);
    }

    pub fn create_session(&mut self) -> i64 {
        let id = self.next_session;
        self.next_session += 1;
        let time = self.time();
        let txn = self.prep.create_session(id, 30_000, time);
        self.apply(txn);
        id
    }

    pub fn close_session(&mut self, id: i64) {
        let time = self.time();
        let txn = self.prep.close_session(&self.state.tree, id, 1, time);
        self.apply(txn);
    }

    fn random_session(&mut self) -> i64 {
        let n = self.sessions().len() as u64;
        let k = self.rng.below(n) as usize;
        self.sessions().keys().nth(k).copied().unwrap_or(0)
    }

    /// A path of depth 1..3 over a few names (so nodes collide and come back).
    fn random_path(&mut self) -> String {
        let depth = 1 + self.rng.below(3);
        let mut p = String::new();
        for _ in 0..depth {
            p.push('/');
            p.push_str(NAMES[self.rng.below(NAMES.len() as u64) as usize]);
        }
        p
    }

    /// A random existing node (never the root), often a sequential child.
    fn random_node(&mut self) -> Option<String> {
        let mut id: NodeId = ROOT;
        loop {
            let n = self.state.tree.node(id)?.num_children() as u64;
            if n == 0 || (id != ROOT && self.rng.chance(35)) {
                break;
            }
            let k = self.rng.below(n) as usize;
            id = self.state.tree.children(id).nth(k)?;
        }
        (id != ROOT).then(|| self.state.tree.path_of(id))
    }

    fn random_acl(&mut self) -> Vec<ACL> {
        match self.rng.below(4) {
            0 => vec![acl(31, "world", "anyone")],
            1 => vec![acl(1, "world", "anyone")],
            2 => vec![acl(31, "digest", "u:x"), acl(1, "world", "anyone")],
            _ => vec![acl(3, "ip", "10.0.0.0/8")],
        }
    }

    fn random_data(&mut self) -> Option<bytes::Bytes> {
        match self.rng.below(5) {
            0 => None,
            n => Some(bytes::Bytes::from(vec![b'x' + n as u8; n as usize * 3])),
        }
    }

    fn random_create(&mut self, in_multi: bool) -> Request {
        let parent = if self.rng.chance(50) {
            self.random_node().unwrap_or_else(|| "/".into())
        } else {
            self.random_path()
        };
        let base = if parent == "/" { String::new() } else { parent };
        let kind = self.rng.below(if in_multi { 4 } else { 6 });
        let name = if kind >= 2 && kind != 4 {
            "s-"
        } else {
            NAMES[self.rng.below(4) as usize]
        };
        let req = CreateRequest {
            path: JStr::from(format!("{base}/{name}")),
            data: self.random_data(),
            acl: Some(self.random_acl()),
            flags: match kind {
                0 | 4 => 0,
                1 => 1,
                2 => 2,
                3 => 3,
                _ => 6,
            },
        };
        match kind {
            4 => Request::CreateContainer(CreateRequest { flags: 4, ..req }),
            5 => Request::CreateTtl(CreateTTLRequest {
                path: req.path,
                data: req.data,
                acl: req.acl,
                flags: 6,
                ttl: 60_000,
            }),
            _ if self.rng.chance(50) => Request::Create2(req),
            _ => Request::Create(req),
        }
    }

    fn random_delete(&mut self) -> Request {
        let path = self.random_node().unwrap_or_else(|| self.random_path());
        Request::Delete(DeleteRequest {
            path: JStr::from(path),
            version: -1,
        })
    }

    fn random_set_data(&mut self) -> Request {
        let path = self.random_node().unwrap_or_else(|| self.random_path());
        Request::SetData(SetDataRequest {
            path: JStr::from(path),
            data: self.random_data(),
            version: -1,
        })
    }

    /// One random write (or session open/close).
    pub fn step(&mut self) {
        let session = self.random_session();
        match self.rng.below(20) {
            0..=6 => {
                let r = self.random_create(false);
                self.write(session, r)
            }
            7..=11 => {
                // Deletes often, so visible cversions run ahead of child counts.
                let r = self.random_delete();
                self.write(session, r)
            }
            12..=13 => {
                let r = self.random_set_data();
                self.write(session, r)
            }
            14 => {
                let path = self.random_node().unwrap_or_else(|| self.random_path());
                let acl = self.random_acl();
                self.write(
                    session,
                    Request::SetAcl(SetACLRequest {
                        path: JStr::from(path),
                        acl: Some(acl),
                        version: -1,
                    }),
                )
            }
            15..=17 => {
                let n = 2 + self.rng.below(3);
                let ops = (0..n)
                    .map(|_| match self.rng.below(3) {
                        0 => self.random_create(true),
                        1 => self.random_delete(),
                        _ => self.random_set_data(),
                    })
                    .collect();
                self.write(session, Request::Multi(MultiRequest::new(ops)))
            }
            18 if self.sessions().len() > 1 => self.close_session(session),
            _ => {
                if self.sessions().len() < 4 {
                    self.create_session();
                }
            }
        }
    }
}

/// A member's state at the end of a schedule (ensemble/raft/chaos_test.rs, sim/schedules_test.rs): the acknowledged
/// paths it lost, its zxid, digest and tree.
pub struct MemberState {
    id: u64,
    lost: Vec<String>,
    zxid: i64,
    digest: u64,
    nodes: BTreeMap<String, NodeDump>,
}

/// What member `id`'s state machine holds, and which of `acked` it lost.
pub async fn member_state(
    id: u64,
    sm: &StateMachine<StateApplier>,
    acked: Vec<String>,
) -> MemberState {
    sm.with_applier(move |a| MemberState {
        id,
        lost: acked
            .into_iter()
            .filter(|p| a.state.tree.lookup(p).is_none())
            .collect(),
        zxid: a.state.zxid(),
        digest: a.state.tree.digest(),
        nodes: dump(&a.state.tree),
    })
    .await
}

/// No member lost an acknowledged write, and all hold one state (zxid, digest, every node);
/// `run` names the schedule in the messages.
pub fn assert_one_state(states: &[MemberState], run: &str) {
    for s in states {
        assert!(
            s.lost.is_empty(),
            "{run}: member {} lost acknowledged writes {:?}",
            s.id,
            s.lost
        );
    }
    let Some((first, rest)) = states.split_first() else {
        return;
    };
    for s in rest {
        let what = format!("{run}: member {} vs member {}", s.id, first.id);
        assert_eq!(s.zxid, first.zxid, "{what}: zxid");
        assert_eq!(s.digest, first.digest, "{what}: digest");
        assert!(s.nodes == first.nodes, "{what}: trees differ");
    }
}
