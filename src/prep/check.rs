//! Validation of one write against the tree plus the overlay, in ZooKeeper's check order:
//! each op either yields its txn body (recording its effect in the overlay) or fails with the
//! error code ZooKeeper would give, and a failed request's records are rolled back.

use super::overlay::{NodeView, Overlay, Undo};
use crate::acl::{self, AuthId, Entry};
use crate::path;
use crate::state::tree::{self, DataTree, NodeKind};
use palisade_proto::*;

/// One request's validation: the tree and overlay it is checked against, who asks, and the
/// zxid its txn will have.
pub(super) struct Check<'a> {
    pub tree: &'a DataTree,
    pub overlay: &'a mut Overlay,
    pub session: i64,
    pub auth: &'a [AuthId],
    pub zxid: i64,
    pub ttl_enabled: bool,
}

type PResult<T> = Result<T, ErrorCode>;

/// The fields of any create request.
struct Create<'r> {
    op: OpCode,
    path: Option<&'r str>,
    data: &'r Option<bytes::Bytes>,
    acl: Option<&'r [ACL]>,
    flags: i32,
    ttl: i64,
}

/// What a create's txn carries, whichever of the four creates it is.
struct Created {
    path: JStr,
    data: Option<bytes::Bytes>,
    acl: Vec<ACL>,
    ephemeral: bool,
    parent_c_version: i32,
    ttl: i64,
}

impl Created {
    fn into_txn(self, op: OpCode) -> TxnBody {
        let Created {
            path,
            data,
            acl,
            ephemeral,
            parent_c_version,
            ttl,
        } = self;
        let acl = Some(acl);
        match op {
            OpCode::CreateContainer => TxnBody::CreateContainer(CreateContainerTxn {
                path,
                data,
                acl,
                parent_c_version,
            }),
            OpCode::CreateTTL => TxnBody::CreateTtl(CreateTTLTxn {
                path,
                data,
                acl,
                parent_c_version,
                ttl,
            }),
            OpCode::Create2 => TxnBody::Create2(CreateTxn {
                path,
                data,
                acl,
                ephemeral,
                parent_c_version,
            }),
            _ => TxnBody::Create(CreateTxn {
                path,
                data,
                acl,
                ephemeral,
                parent_c_version,
            }),
        }
    }
}

impl Check<'_> {
    fn view(&self, p: &str) -> Option<NodeView> {
        if let Some(pending) = self.overlay.get(p) {
            return pending.cloned();
        }
        let id = self.tree.lookup(p)?;
        let n = self.tree.node(id)?;
        Some(NodeView {
            version: n.version,
            aversion: n.aversion,
            child_creates: n.child_creates,
            num_children: n.num_children() as i32,
            owner: n.owner,
            acl: self.tree.acls().shared(n.acl),
        })
    }

    fn record(&mut self, p: &str, node: Option<NodeView>, undo: &mut Undo) {
        self.overlay.record(self.zxid, p, node, undo);
    }

    /// One write request (multi included). Never fails: errors become error txns.
    pub fn write(&mut self, req: &Request) -> TxnBody {
        if let Request::Multi(m) = req {
            return self.multi(m);
        }
        let mut undo = Vec::new();
        match self.op(req, false, &mut undo) {
            Ok(body) => body,
            Err(code) => {
                self.overlay.rollback(undo);
                TxnBody::Error(ErrorTxn { err: code.code() })
            }
        }
    }

    /// A multi: every op's txn, or, if one fails, an error per op (0 before the failed one,
    /// its code, RUNTIMEINCONSISTENCY after), as ZooKeeper logs it.
    fn multi(&mut self, m: &MultiRequest) -> TxnBody {
        let mut undo = Vec::new();
        let mut bodies = Vec::with_capacity(m.ops.len());
        for (i, op) in m.ops.iter().enumerate() {
            match self.op(&op.op, true, &mut undo) {
                Ok(body) => bodies.push(body),
                Err(code) => {
                    self.overlay.rollback(undo);
                    let errs = (0..m.ops.len())
                        .map(|j| {
                            let err = match j.cmp(&i) {
                                std::cmp::Ordering::Less => 0,
                                std::cmp::Ordering::Equal => code.code(),
                                std::cmp::Ordering::Greater => {
                                    ErrorCode::RuntimeInconsistency.code()
                                }
                            };
                            TxnBody::Error(ErrorTxn { err })
                        })
                        .collect();
                    return TxnBody::Multi(errs);
                }
            }
        }
        TxnBody::Multi(bodies)
    }

    /// One op. Inside a multi, create2 is logged as create (its result has no stat).
    fn op(&mut self, req: &Request, in_multi: bool, undo: &mut Undo) -> PResult<TxnBody> {
        // A null path (string length -1): ZooKeeper's create and delete dereference it before
        // any path rule and answer MARSHALLINGERROR (setData validates it: BADARGUMENTS).
        let null_path = match req {
            Request::Create(c) | Request::Create2(c) | Request::CreateContainer(c) => {
                c.path.is_null()
            }
            Request::CreateTtl(c) => c.path.is_null(),
            Request::Delete(d) => d.path.is_null(),
            _ => false,
        };
        if null_path && !in_multi {
            return Err(ErrorCode::MarshallingError);
        }
        match req {
            Request::Create(c) | Request::Create2(c) | Request::CreateContainer(c) => {
                let op = match req.op_code() {
                    OpCode::Create2 if in_multi => OpCode::Create,
                    op => op,
                };
                self.create(
                    Create {
                        op,
                        path: c.path.as_str(),
                        data: &c.data,
                        acl: c.acl.as_deref(),
                        flags: c.flags,
                        ttl: -1,
                    },
                    undo,
                )
            }
            Request::CreateTtl(c) => self.create(
                Create {
                    op: OpCode::CreateTTL,
                    path: c.path.as_str(),
                    data: &c.data,
                    acl: c.acl.as_deref(),
                    flags: c.flags,
                    ttl: c.ttl,
                },
                undo,
            ),
            // delete only checks for '/' and NUL, so undecodable bytes make a missing node
            // (as ZooKeeper's decoding replaces them with U+FFFD), not a bad argument.
            Request::Delete(d) => self.delete(d.path.to_lossy().as_deref(), d.version, false, undo),
            Request::DeleteContainer(p) => self.delete(p.as_str(), -1, true, undo),
            Request::SetData(s) => self.set_data(s, undo),
            Request::SetAcl(s) => self.set_acl(s, undo),
            Request::Check(c) => self.check(c),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    fn check_perm(&self, acl: &[Entry], perm: i32) -> PResult<()> {
        if acl::check(acl, perm, self.auth) {
            Ok(())
        } else {
            Err(ErrorCode::NoAuth)
        }
    }

    fn create(&mut self, c: Create<'_>, undo: &mut Undo) -> PResult<TxnBody> {
        let Create {
            op,
            path: p,
            data,
            acl: acl_list,
            flags,
            ttl,
        } = c;
        let mode = self.create_mode(flags, ttl)?;
        let p = p.ok_or(ErrorCode::BadArguments)?;
        if p.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = path::parent(p).ok_or(ErrorCode::BadArguments)?;
        let acl = acl::fixup(acl_list, self.auth)?;
        let parent = self.view(parent_path).ok_or(ErrorCode::NoNode)?;
        self.check_perm(&parent.acl, acl::CREATE)?;
        let full = self.child_path(p, parent_path, &parent, mode)?;
        let new_c = parent.child_creates.saturating_add(1);
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        let owner = match op {
            OpCode::CreateContainer => tree::CONTAINER_OWNER,
            OpCode::CreateTTL => tree::ttl_owner(ttl),
            _ if ephemeral => self.session,
            _ => 0,
        };
        let wire_acl: Vec<ACL> = acl.iter().map(Entry::to_wire).collect();
        let mut parent_after = parent;
        parent_after.child_creates = new_c;
        parent_after.num_children += 1;
        self.record(parent_path, Some(parent_after), undo);
        let child = NodeView {
            version: 0,
            aversion: 0,
            child_creates: 0,
            num_children: 0,
            owner,
            acl: acl.into(),
        };
        self.record(&full, Some(child), undo);
        let created = Created {
            path: JStr::from(full),
            data: data.clone(),
            acl: wire_acl,
            ephemeral,
            parent_c_version: new_c,
            ttl,
        };
        Ok(created.into_txn(op))
    }

    /// The create's mode from its flags, and whether its TTL fits it (TTL nodes only when
    /// extended types are enabled).
    fn create_mode(&self, flags: i32, ttl: i64) -> PResult<CreateMode> {
        let mode = CreateMode::from_i32(flags).ok_or(ErrorCode::BadArguments)?;
        let is_ttl = matches!(
            mode,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        );
        if is_ttl && !self.ttl_enabled {
            return Err(ErrorCode::Unimplemented);
        }
        let ttl_ok = if is_ttl {
            (1..=tree::MAX_TTL).contains(&ttl)
        } else {
            ttl < 0
        };
        if !ttl_ok {
            return Err(ErrorCode::BadArguments);
        }
        Ok(mode)
    }

    /// The path the node gets (with its sequential suffix), checked: valid, not taken, and
    /// under a parent that may have children.
    fn child_path(
        &self,
        p: &str,
        parent_path: &str,
        parent: &NodeView,
        mode: CreateMode,
    ) -> PResult<String> {
        let sequential = matches!(
            mode,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        );
        let full = if sequential {
            // Palisade never reuses a suffix: at the end of the counter's range it refuses.
            if parent.child_creates == i32::MAX {
                tracing::warn!(
                    parent = parent_path,
                    "sequential counter exhausted; refusing sequential create"
                );
                return Err(ErrorCode::QuotaExceeded);
            }
            format!(
                "{p}{:010}",
                crate::faults::seq_counter(parent.child_creates, parent.num_children)
            )
        } else {
            p.to_string()
        };
        if !path::is_valid(&full) {
            return Err(ErrorCode::BadArguments);
        }
        if self.view(&full).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(tree::kind_of(parent.owner), NodeKind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        Ok(full)
    }

    fn delete(
        &mut self,
        p: Option<&str>,
        version: i32,
        container: bool,
        undo: &mut Undo,
    ) -> PResult<TxnBody> {
        let p = p.ok_or(ErrorCode::BadArguments)?;
        let parent_path = path::parent(p).ok_or(ErrorCode::BadArguments)?;
        if p.contains('\0') || path::is_special(p) {
            return Err(ErrorCode::BadArguments);
        }
        let parent = self.view(parent_path).ok_or(ErrorCode::NoNode)?;
        self.check_perm(&parent.acl, acl::DELETE)?;
        let node = self.view(p).ok_or_else(crate::faults::delete_missing)?;
        if container {
            // The reaper's delete: only a container or TTL node that is still empty.
            if !matches!(
                tree::kind_of(node.owner),
                NodeKind::Container | NodeKind::Ttl(_)
            ) {
                return Err(ErrorCode::BadArguments);
            }
        }
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        if node.num_children > 0 {
            return Err(ErrorCode::NotEmpty);
        }
        let mut parent_after = parent;
        parent_after.num_children -= 1;
        self.record(parent_path, Some(parent_after), undo);
        self.record(p, None, undo);
        let txn = DeleteTxn {
            path: JStr::from(p),
        };
        Ok(if container {
            TxnBody::DeleteContainer(txn)
        } else {
            TxnBody::Delete(txn)
        })
    }

    fn valid_path<'p>(&self, p: Option<&'p str>) -> PResult<&'p str> {
        p.filter(|p| path::is_valid(p))
            .ok_or(ErrorCode::BadArguments)
    }

    fn set_data(&mut self, s: &SetDataRequest, undo: &mut Undo) -> PResult<TxnBody> {
        let p = self.valid_path(s.path.as_str())?;
        let mut node = self.view(p).ok_or(ErrorCode::NoNode)?;
        self.check_perm(&node.acl, acl::WRITE)?;
        if crate::faults::version_refused(s.version, node.version) {
            return Err(ErrorCode::BadVersion);
        }
        node.version = node.version.wrapping_add(1);
        let version = node.version;
        self.record(p, Some(node), undo);
        Ok(TxnBody::SetData(SetDataTxn {
            path: JStr::from(p),
            data: s.data.clone(),
            version,
        }))
    }

    fn set_acl(&mut self, s: &SetACLRequest, undo: &mut Undo) -> PResult<TxnBody> {
        let p = self.valid_path(s.path.as_str())?;
        let acl = acl::fixup(s.acl.as_deref(), self.auth)?;
        let mut node = self.view(p).ok_or(ErrorCode::NoNode)?;
        self.check_perm(&node.acl, acl::ADMIN)?;
        if s.version != -1 && s.version != node.aversion {
            return Err(ErrorCode::BadVersion);
        }
        node.aversion = node.aversion.wrapping_add(1);
        let version = node.aversion;
        let wire: Vec<ACL> = acl.iter().map(Entry::to_wire).collect();
        node.acl = acl.into();
        self.record(p, Some(node), undo);
        Ok(TxnBody::SetAcl(SetACLTxn {
            path: JStr::from(p),
            acl: Some(wire),
            version,
        }))
    }

    fn check(&mut self, c: &CheckVersionRequest) -> PResult<TxnBody> {
        let p = self.valid_path(c.path.as_str())?;
        let node = self.view(p).ok_or(ErrorCode::NoNode)?;
        self.check_perm(&node.acl, acl::READ)?;
        if c.version != -1 && c.version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        Ok(TxnBody::Check(CheckVersionTxn {
            path: JStr::from(p),
            version: node.version.wrapping_add(1),
        }))
    }

    /// The closeSession txn: every ephemeral of the session, applied or pending.
    pub fn close_session(&mut self) -> TxnBody {
        let mut paths: Vec<String> = self
            .tree
            .ephemerals_of(self.session)
            .map(|id| self.tree.path_of(id))
            // not if a pending txn deletes it already
            .filter(|p| self.overlay.get(p).is_none_or(|n| n.is_some()))
            .collect();
        paths.extend(
            self.overlay
                .pending_owned_by(self.session)
                .map(str::to_string),
        );
        let mut paths = crate::faults::ephemerals_closed(paths);
        // Ephemerals have no children, so any order deletes them; sorted for determinism.
        paths.sort();
        paths.dedup();
        let mut undo = Vec::new();
        for p in &paths {
            if let Some(parent) = path::parent(p) {
                if let Some(mut v) = self.view(parent) {
                    v.num_children -= 1;
                    self.record(parent, Some(v), &mut undo);
                }
            }
            self.record(p, None, &mut undo);
        }
        TxnBody::CloseSession(CloseSessionTxn {
            paths2_delete: Some(paths.into_iter().map(JStr::from).collect()),
        })
    }
}
