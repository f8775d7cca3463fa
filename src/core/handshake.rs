//! The handshake: a ConnectRequest either creates a session (through a createSession txn,
//! answered when it commits) or moves an existing one to this connection (answered at once),
//! or is refused.

use super::conn_out::Out;
use super::conns::Conn;
use super::msg::Handshake;
use super::pending::Awaiting;
use super::{reply, Core};
use crate::acl::AuthId;
use ::core::net::SocketAddr;
use bytes::Bytes;
use palisade_proto::ConnectRequest;
use std::collections::VecDeque;

/// Compares two byte strings in time that depends on their lengths only, so that a wrong
/// password's timing tells nothing about the right one.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The cxid a revalidation's sync waits under: clients never use it (their xids are
/// positive, the special ones small negatives).
pub(crate) const REVALIDATE_CXID: i32 = i32::MIN;

impl Core {
    fn negotiate(&self, requested: i32) -> i32 {
        requested.clamp(
            self.cfg.min_session_timeout,
            self.cfg
                .max_session_timeout
                .max(self.cfg.min_session_timeout),
        )
    }

    /// A client's handshake.
    pub(super) fn connect(&mut self, h: Handshake) {
        self.connect_as(h, false)
    }

    /// A handshake that waited for this member to apply the leader's point for it.
    pub(super) fn revalidated(&mut self, h: Handshake) {
        self.connect_as(h, true)
    }

    /// `revalidated`: this member has since applied the leader's point for it.
    fn connect_as(&mut self, h: Handshake, revalidated: bool) {
        let ro = self.role.read_only();
        if self.refused(&h.req, h.peer, ro) {
            self.outbox.send(&h.out, Out::Close);
            self.outbox.answer(h.ready, false);
            return;
        }
        let id = h.req.session_id;
        // A wrong password for a session known here is refused at once (below), as ZooKeeper
        // checks it before revalidating: the leader's answer would also touch the session.
        let known_bad = self.liveness.get(id).is_some() && !self.password_ok(id, &h.req);
        if id != 0 && self.role.forwards_writes() && !revalidated && !ro && !known_bad {
            // A session moving here is revalidated with the leader (as ZooKeeper's learners
            // do): a sync to the leader, then the decision once its point is applied here,
            // where the session may not be created, or closed, yet. A follower still naming a
            // dead leader takes no client whose next write it would fail (two connection
            // losses in a row make Curator 5.4's protected create return a null path).
            let (conn, what) = (h.conn, super::member::Forwarded::Sync);
            let awaiting = Awaiting::Revalidate(Box::new(h));
            self.forward(conn, id, REVALIDATE_CXID, what, awaiting);
            return;
        }
        let timeout = self.negotiate(h.req.time_out);
        // readOnly is answered iff the request had it.
        let read_only = h.req.read_only.map(|_| ro);
        match id {
            0 if ro => self.local_session(h, timeout, read_only),
            0 => self.new_session(h, timeout, read_only),
            _ => self.resume_session(h, timeout, read_only),
        }
    }

    /// Whether this handshake is refused before its session is looked at (logged here).
    fn refused(&self, req: &ConnectRequest, peer: SocketAddr, ro: bool) -> bool {
        if !self.role.serving() && !ro {
            tracing::info!(%peer, "not serving: no leader yet; closing");
        } else if self.restoring() {
            tracing::info!(%peer, "not serving: a restore is in progress; closing");
        } else if ro && req.read_only != Some(true) {
            // Read-only mode (role/member/read_only.rs): only read-only clients, and only local sessions.
            tracing::info!(%peer, "read-only mode: refusing a client that is not read-only");
        } else if ro && self.state.sessions().contains_key(&req.session_id) {
            tracing::info!(%peer, session = format_args!("{:#x}", req.session_id), "read-only mode: refusing a session of the ensemble");
        } else if req.last_zxid_seen > self.state.zxid() {
            let ours = self.state.zxid();
            tracing::info!(%peer, seen = format_args!("{:#x}", req.last_zxid_seen), ours = format_args!("{ours:#x}"), "client has seen a later zxid; closing");
        } else {
            return false;
        }
        true
    }

    /// The connection's record once its session is known: as ZooKeeper, the ip identity,
    /// then the x509 one of a verified client certificate.
    fn conn_record(&self, h: &Handshake, session: i64, timeout: i32) -> Conn {
        let mut auth = vec![AuthId {
            scheme: "ip".into(),
            id: h.peer.ip().to_string().into(),
        }];
        if let Some(id) = &h.x509 {
            auth.push(AuthId {
                scheme: "x509".into(),
                id: id.clone(),
            });
        }
        Conn {
            out: h.out.clone(),
            session,
            auth,
            peer: h.peer,
            queue: VecDeque::new(),
            received: 1,
            sent: 0,
            last_zxid: 0,
            timeout,
            seen_written: 0,
            established: self.now.wall_ms,
            sasl: Default::default(),
            null_token_sent: false,
        }
    }

    /// Read-only mode: a local session, not replicated, gone once the member serves again.
    fn local_session(&mut self, h: Handshake, timeout: i32, read_only: Option<bool>) {
        let id = self.liveness.allocate_id();
        let now = self.now_ms();
        self.liveness.add(id, timeout, now);
        if let Some(s) = self.liveness.get_mut(id) {
            s.conn = Some(h.conn);
        }
        self.add_local_session(id);
        self.conns.insert(h.conn, self.conn_record(&h, id, timeout));
        let frame = self.connect_reply(Some((id, timeout)), read_only);
        self.outbox.send(&h.out, Out::Bytes(frame));
        self.outbox.answer(h.ready, true);
    }

    /// A new session: a createSession txn (prepped here, or forwarded to the leader),
    /// answered when it commits.
    fn new_session(&mut self, h: Handshake, timeout: i32, read_only: Option<bool>) {
        let id = self.liveness.allocate_id();
        self.conns.insert(h.conn, self.conn_record(&h, id, timeout));
        let conn = h.conn;
        let awaiting = Awaiting::NewSession {
            ready: h.ready,
            timeout,
            read_only,
        };
        if self.role.forwards_writes() {
            let what = super::member::Forwarded::CreateSession { timeout };
            self.forward(conn, id, 0, what, awaiting);
            return;
        }
        let txn = self.prep.create_session(id, timeout, self.now.wall_ms);
        self.submit_for(conn, txn, awaiting);
    }

    /// An existing session moves to this connection, answered at once; or the password is
    /// wrong, or the session gone.
    fn resume_session(&mut self, h: Handshake, timeout: i32, read_only: Option<bool>) {
        let id = h.req.session_id;
        // The password first: a handshake naming another client's session with a wrong one
        // must not disturb that client (ZooKeeper closes its connection before checking).
        let valid =
            self.liveness.get(id).is_some_and(|s| !s.closing) && self.password_ok(id, &h.req);
        if !valid {
            self.outbox
                .send(&h.out, Out::Bytes(self.connect_reply(None, read_only)));
            self.outbox.send(&h.out, Out::Close);
            self.outbox.answer(h.ready, false);
            return;
        }
        if let Some(old) = self.liveness.get(id).and_then(|s| s.conn) {
            self.drop_conn(old, true);
        }
        self.conns.insert(h.conn, self.conn_record(&h, id, timeout));
        let now = self.now_ms();
        if let Some(s) = self.liveness.get_mut(id) {
            s.conn = Some(h.conn);
            s.timeout_ms = timeout;
        }
        self.liveness.touch(id, now);
        self.outbox.send(
            &h.out,
            Out::Bytes(self.connect_reply(Some((id, timeout)), read_only)),
        );
        self.outbox.answer(h.ready, true);
    }

    /// Whether the handshake's password is the session's (or, for a session imported from
    /// ZooKeeper, ZooKeeper's for it).
    fn password_ok(&self, id: i64, req: &ConnectRequest) -> bool {
        let given = req.passwd.as_deref().unwrap_or(&[]);
        same_bytes(given, &self.liveness.password(id))
            || (self.cfg.zookeeper_sessions.contains(&id)
                && same_bytes(given, &palisade_zkdisk::session::zk_password(id)))
    }

    /// The ConnectResponse for a session (id, negotiated timeout), or for a refused one:
    /// timeout 0, session 0 and 16 zero bytes. readOnly is sent iff the request had it.
    pub(super) fn connect_reply(
        &self,
        session: Option<(i64, i32)>,
        read_only: Option<bool>,
    ) -> Bytes {
        let (session_id, time_out, passwd) = match session {
            Some((id, t)) => (id, t, self.liveness.password(id)),
            None => (0, 0, [0; 16]),
        };
        let passwd = Some(Bytes::copy_from_slice(&passwd));
        reply::bare(&palisade_proto::ConnectResponse {
            protocol_version: 0,
            time_out,
            session_id,
            passwd,
            read_only,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn password_comparison() {
        assert!(same_bytes(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same_bytes(b"0123456789abcdef", b"0123456789abcdeF"));
        assert!(!same_bytes(b"0123456789abcdef", b"0123456789abcde"));
        assert!(!same_bytes(b"", b"x"));
    }
}
