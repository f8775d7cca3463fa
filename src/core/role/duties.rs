//! Duties of the server that orders writes (standalone: this one; in an ensemble: only the
//! leader, so that one closeSession or one reaper delete is logged, not one per member):
//! expiring sessions, reaping empty containers and expired TTL nodes, and deleting at restore
//! the ephemerals of sessions that no longer exist. Each becomes a txn like any other. The
//! role that runs them holds their state (standalone.rs, member/leader.rs); `tick` (mod.rs)
//! runs them when `Role::duties` has some.

use crate::core::Core;
use crate::state::tree::NodeKind;

pub(in crate::core) struct Duties {
    /// znode.container.checkIntervalMs.
    reap_every_ms: u64,
    last_reap_ms: u64,
}

impl Duties {
    pub(in crate::core) fn new(reap_every_ms: u64) -> Self {
        Duties {
            reap_every_ms,
            last_reap_ms: 0,
        }
    }
}

impl Core {
    pub(super) fn expire_sessions(&mut self) {
        let now = self.now_ms();
        for id in self.liveness.expired(now) {
            if self.role.is_local_session(id) {
                continue; // read-only mode's own (read_only.rs)
            }
            tracing::info!(session = format_args!("{id:#x}"), "session expired");
            self.close_session(id, 0, None);
        }
    }

    /// Ephemerals whose session is gone (it expired while the server was down, say) are
    /// deleted through a closeSession txn of that session.
    pub(in crate::core) fn close_orphans(&mut self) {
        if self.role.duties().is_none() {
            return;
        }
        let mut orphans: Vec<i64> = self
            .state
            .tree
            .ephemeral_owners()
            .filter(|s| self.liveness.get(*s).is_none())
            .collect();
        orphans.sort_unstable();
        for id in orphans {
            tracing::warn!(
                session = format_args!("{id:#x}"),
                "ephemerals of a session that no longer exists; deleting them"
            );
            self.close_session(id, 0, None);
        }
    }

    /// The container/TTL reaper: empty containers that once had a child, and childless TTL
    /// nodes not modified for their TTL, are deleted through a deleteContainer txn (their
    /// delete watches fire as for any delete).
    pub(super) fn reap(&mut self) {
        let now = self.now_ms();
        let Some(l) = self.role.duties() else {
            return;
        };
        if now < l.last_reap_ms.saturating_add(l.reap_every_ms) {
            return;
        }
        l.last_reap_ms = now;
        let wall = self.now.wall_ms;
        let tree = &self.state.tree;
        let mut doomed: Vec<String> = tree
            .reapable()
            .filter_map(|id| tree.node(id).map(|n| (id, n)))
            .filter(|(_, n)| {
                n.num_children() == 0
                    && match n.kind() {
                        NodeKind::Container => n.child_creates > 0,
                        NodeKind::Ttl(ttl) => wall.saturating_sub(n.mtime) > ttl,
                        _ => false,
                    }
            })
            .map(|(id, _)| tree.path_of(id))
            .collect();
        doomed.sort();
        let auth = Self::server_auth();
        for path in doomed {
            let Some(txn) = self
                .prep
                .delete_container(&self.state.tree, &path, &auth, wall)
            else {
                continue; // changed since the scan (e.g. a child is being created)
            };
            tracing::debug!(path, "reaping");
            self.submit(txn, None);
        }
    }
}
