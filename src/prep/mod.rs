//! Prep: what only the server that orders writes runs (standalone: this server; in an
//! ensemble: the leader). It turns a request into a complete txn — validated in ZooKeeper's
//! check order against the applied tree plus the overlay of txns prepped but not yet
//! applied, with sequential names and parentCVersion filled in, a zxid and a time — so that
//! applying it (state::apply) needs nothing but the txn. A write that fails becomes an error
//! txn: it still consumes its zxid, as in ZooKeeper.
//!
//! Owns: the overlay, the last zxid handed out. Reads: the applied tree (never changes it).
//! May not touch: connections, sessions' liveness, the log.

mod check;
mod overlay;

pub use overlay::{NodeView, Overlay};

use crate::acl::AuthId;
use crate::state::tree::DataTree;
use check::Check;
use palisade_proto::*;

/// Who a txn is prepped for: its session and the identities its connection holds.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub session: i64,
    pub auth: &'a [AuthId],
}

pub struct Prepper {
    overlay: Overlay,
    /// The zxid of the last txn prepped.
    last_zxid: i64,
    ttl_enabled: bool,
}

impl Prepper {
    /// Starts after `last_zxid`, the last txn applied (or logged) before.
    pub fn new(last_zxid: i64, ttl_enabled: bool) -> Self {
        Prepper {
            overlay: Overlay::default(),
            last_zxid,
            ttl_enabled,
        }
    }

    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Forgets the overlay's changes of txns up to `zxid`, now in the tree.
    pub fn applied(&mut self, zxid: i64) {
        self.overlay.applied(zxid);
    }

    /// Whether no prepped txn is still waiting to be applied.
    pub fn settled(&self) -> bool {
        self.overlay.is_empty()
    }

    fn check<'a>(&'a mut self, tree: &'a DataTree, caller: Caller<'a>) -> Check<'a> {
        Check {
            tree,
            overlay: &mut self.overlay,
            session: caller.session,
            auth: caller.auth,
            zxid: self.last_zxid + 1,
            ttl_enabled: self.ttl_enabled,
        }
    }

    /// The next txn: the next zxid, the header type (`error` for an error body).
    fn seal(&mut self, session: i64, cxid: i32, op: OpCode, body: TxnBody, time: i64) -> Txn {
        self.last_zxid += 1;
        let type_ = match body {
            TxnBody::Error(_) => OpCode::Error,
            _ => op,
        };
        Txn {
            header: TxnHeader {
                client_id: session,
                cxid,
                zxid: self.last_zxid,
                time,
                type_: type_.code(),
            },
            body,
        }
    }

    /// A write request (multi included) → its txn. `time` is the wall clock in ms: the
    /// node times every replica will store.
    pub fn write(
        &mut self,
        tree: &DataTree,
        caller: Caller<'_>,
        cxid: i32,
        req: &Request,
        time: i64,
    ) -> Txn {
        let body = match req {
            // A standalone server, as ZooKeeper's, has dynamic reconfiguration disabled.
            Request::Reconfig(_) => TxnBody::Error(ErrorTxn {
                err: ErrorCode::ReconfigDisabled.code(),
            }),
            Request::CloseSession => self.check(tree, caller).close_session(),
            _ => self.check(tree, caller).write(req),
        };
        self.seal(caller.session, cxid, req.op_code(), body, time)
    }

    /// The reaper's deleteContainer of `path`, prepped as the server (super), or `None` —
    /// consuming no zxid — if it no longer applies (a child is being created, say).
    pub fn delete_container(
        &mut self,
        tree: &DataTree,
        path: &str,
        auth: &[AuthId],
        time: i64,
    ) -> Option<Txn> {
        let req = Request::DeleteContainer(JStr::from(path));
        let caller = Caller { session: 0, auth };
        match self.check(tree, caller).write(&req) {
            TxnBody::Error(_) => None,
            body => Some(self.seal(0, 0, OpCode::DeleteContainer, body, time)),
        }
    }

    /// The closeSession txn of a session: every ephemeral it owns, applied or pending.
    pub fn close_session(&mut self, tree: &DataTree, session: i64, cxid: i32, time: i64) -> Txn {
        let caller = Caller { session, auth: &[] };
        let body = self.check(tree, caller).close_session();
        self.seal(session, cxid, OpCode::CloseSession, body, time)
    }

    /// A txn the caller builds for the next zxid, without checks (a configuration:
    /// core/role/member/reconfig.rs, which checks a reconfig itself).
    pub fn seal_built(&mut self, build: impl FnOnce(i64) -> Txn) -> Txn {
        self.last_zxid += 1;
        build(self.last_zxid)
    }

    /// The createSession txn of a new session with its negotiated timeout.
    pub fn create_session(&mut self, session: i64, timeout: i32, time: i64) -> Txn {
        let body = TxnBody::CreateSession(CreateSessionTxn { time_out: timeout });
        self.seal(session, 0, OpCode::CreateSession, body, time)
    }

    /// An error txn: a write refused before validation (its session is closing, its body
    /// did not decode) still consumes a zxid, as in ZooKeeper.
    pub fn error(&mut self, session: i64, cxid: i32, err: ErrorCode, time: i64) -> Txn {
        let body = TxnBody::Error(ErrorTxn { err: err.code() });
        self.seal(session, cxid, OpCode::Error, body, time)
    }
}

#[cfg(test)]
#[path = "prep_test.rs"]
mod tests;
