//! The workload of a cycle: each worker is one session writing until told to stop — sequential
//! creates and deletes under several parents (deletes often enough that the visible cversion
//! runs ahead of the child count), Curator-style `__READ__`/`__WRIT__` lock-queue nodes,
//! non-sequential creates, multi, ephemerals, and stat reads. Every acknowledgement goes to the
//! ledger; a write whose connection broke before its reply makes its path uncertain. Within a
//! worker, each sequential suffix under a parent must be above the previous one acknowledged
//! to that worker — across crashes too (a rollback would hand out a suffix again).

use crate::ledger::{suffix, Ledger};
use palisade_client::{op, Client, CreateMode, Error};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const PARENTS: [&str; 3] = ["/failover/p0", "/failover/p1", "/failover/rw"];
pub const SETUP: [&str; 6] = [
    "/failover",
    "/failover/p0",
    "/failover/p1",
    "/failover/rw",
    "/failover/eph",
    "/failover/plain",
];

pub struct Worker {
    pub id: usize,
    pub client: Client,
    /// Nodes this worker may delete.
    own: Vec<String>,
    /// The last suffix acknowledged to this worker, per parent.
    last: BTreeMap<String, i64>,
    rng: u64,
    n: u64,
}

pub fn lock(l: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

impl Worker {
    pub fn new(id: usize, client: Client, seed: u64) -> Worker {
        Worker {
            id,
            client,
            own: Vec::new(),
            last: BTreeMap::new(),
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            n: 0,
        }
    }

    fn rand(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    /// Checks that a suffix acknowledged to this worker is above its previous one there.
    fn order(&mut self, path: &str, ledger: &Mutex<Ledger>) {
        if let Some((dir, n)) = suffix(path) {
            let last = self.last.entry(dir.to_string()).or_insert(-1);
            if n <= *last {
                lock(ledger).violations.push(format!(
                    "worker {} (session {:#x}) was given {path} after {:010} under {dir}: a suffix went back",
                    self.id,
                    self.client.session_id(),
                    *last
                ));
            }
            *last = (*last).max(n);
        }
    }

    /// Writes until `stop`, or until the session is gone.
    pub async fn run(&mut self, ledger: Arc<Mutex<Ledger>>, stop: Arc<AtomicBool>) {
        let data = [b'd'; 100];
        while !stop.load(Ordering::Relaxed) {
            self.n += 1;
            let parent = PARENTS[self.rand(PARENTS.len() as u64) as usize];
            let r = self.step(parent, &data, &ledger).await;
            let z = self.client.last_zxid();
            let mut l = lock(&ledger);
            l.max_zxid = l.max_zxid.max(z);
            match r {
                Ok(()) => {}
                Err(Error::ConnectionLoss) => {}
                Err(e) if e.is_terminal() => return,
                Err(_) => {}
            }
        }
    }

    async fn step(
        &mut self,
        parent: &str,
        data: &[u8],
        ledger: &Mutex<Ledger>,
    ) -> Result<(), Error> {
        match self.rand(12) {
            0..=2 => {
                let (name, mode) = if parent.ends_with("/rw") {
                    let n = if self.rand(5) == 0 {
                        "__WRIT__"
                    } else {
                        "__READ__"
                    };
                    (n, CreateMode::EphemeralSequential)
                } else {
                    ("n-", CreateMode::PersistentSequential)
                };
                let p = self
                    .client
                    .create2(&format!("{parent}/{name}"), data, mode)
                    .await?
                    .0;
                self.order(&p, ledger);
                let mut l = lock(ledger);
                l.created(&p);
                if mode == CreateMode::EphemeralSequential {
                    l.ephemerals
                        .entry(self.client.session_id())
                        .or_default()
                        .insert(p.clone());
                }
                self.own.push(p);
            }
            3..=5 if !self.own.is_empty() => {
                let k = self.rand(self.own.len() as u64) as usize;
                let p = self.own.swap_remove(k);
                lock(ledger).uncertain.insert(p.clone());
                match self.client.delete(&p, None).await {
                    Ok(()) => {
                        let mut l = lock(ledger);
                        l.deleted(&p);
                        if let Some(e) = l.ephemerals.get_mut(&self.client.session_id()) {
                            e.remove(&p);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            6 => {
                let p = format!("/failover/eph/w{}-", self.id);
                let p = self
                    .client
                    .create(&p, data, CreateMode::EphemeralSequential)
                    .await?;
                let mut l = lock(ledger);
                l.created(&p);
                l.ephemerals
                    .entry(self.client.session_id())
                    .or_default()
                    .insert(p);
            }
            7 => {
                let plain = format!("/failover/plain/s{:x}-{}", self.client.session_id(), self.n);
                lock(ledger).uncertain.insert(plain.clone());
                let ops = vec![
                    op::create(
                        &format!("{parent}/m-"),
                        b"m",
                        CreateMode::PersistentSequential,
                    )?,
                    op::create(&plain, b"m", CreateMode::Persistent)?,
                ];
                let results = self.client.multi(ops).await?;
                let mut l = lock(ledger);
                l.uncertain.remove(&plain);
                for r in results {
                    let path = match r {
                        palisade_client::OpResult::Create(c) => c.path.as_str().map(str::to_string),
                        palisade_client::OpResult::Create2(c) => {
                            c.path.as_str().map(str::to_string)
                        }
                        _ => None,
                    };
                    if let Some(p) = path {
                        l.created(&p);
                        drop(l);
                        self.order(&p, ledger);
                        l = lock(ledger);
                        if p.starts_with(parent) && !parent.ends_with("/rw") {
                            self.own.push(p);
                        }
                    }
                }
            }
            8 => {
                // A node with an ACL list of its own: every one is a new entry in the server's
                // ACL table, which a fuzzy snapshot must capture with the nodes using it
                // (ZOOKEEPER-4846/4689). The checks read it back with getData.
                let p = format!("/failover/plain/c{:x}-{}", self.client.session_id(), self.n);
                lock(ledger).uncertain.insert(p.clone());
                self.client
                    .request(own_acl_create(&p, self.id, self.n))
                    .await?;
                let mut l = lock(ledger);
                l.uncertain.remove(&p);
                l.created(&p);
                l.own_acl.insert(p);
            }
            _ => {
                if let Some(st) = self.client.exists(parent).await? {
                    lock(ledger).stat(parent, st.cversion, st.pzxid);
                }
            }
        }
        Ok(())
    }
}

/// A create whose ACL list is unique: world may read and write, and one digest id of its own.
fn own_acl_create(path: &str, worker: usize, n: u64) -> palisade_client::Request {
    use palisade_proto::{CreateRequest, Id, JStr, ACL};
    let acl = |perms, scheme: &str, id: String| ACL {
        perms,
        id: Id {
            scheme: JStr::from(scheme),
            id: JStr::from(id),
        },
    };
    palisade_client::Request::Create(CreateRequest {
        path: JStr::from(path),
        data: Some(palisade_client::Bytes::from_static(b"acl")),
        acl: Some(vec![
            acl(31, "digest", format!("w{worker}-{n}:x")),
            acl(3, "world", "anyone".into()),
        ]),
        flags: 0,
    })
}
