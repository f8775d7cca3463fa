//! The core's side of SASL (opcode 102) and of enforced authentication, as ZooKeeper 3.8's
//! ZooKeeperServer.processSasl and AuthenticationHelper do it. The mechanism is in
//! `crate::auth`; here: its result becomes a reply, an identity or a closed connection.
//!
//! An exchange does bounded work (tokens are at most 4096 bytes, parsed once, four MD5s) and
//! each connection gets one: after success or failure every further token fails, so a client
//! cannot make the core work more than twice per connection.
//!
//! A null token (OK with no challenge: no SASL configured, or a failure kept by
//! `allowSaslFailedClients`) is answered once per connection. A client that answers it with
//! another token is in a loop (pure-sasl's DIGEST-MD5, under kazoo, sends an empty token for a
//! null challenge, forever): the connection is closed with no reply. ZooKeeper 3.8 answers
//! each such token with another null until the session expires (a SASL token does not keep a
//! session alive there), and the client then sees the same closed connection (kazoo: AUTH_FAILED,
//! "Connection dropped in SASL"); here it comes at once instead of after a session timeout spent
//! spinning.

use super::{reply, Core, Out};
use crate::acl::AuthId;
use crate::auth::digest_md5::Step;
use crate::core::conn_id::ConnId;
use bytes::Bytes;
use palisade_proto::{ErrorCode, OpCode, Record, SetSASLResponse};

/// A SASL reply: header (zxid 0, as ZooKeeper) and the server's token (null for none).
fn sasl_reply(xid: i32, err: ErrorCode, token: Option<Vec<u8>>) -> Bytes {
    let token = token.map(Bytes::from);
    reply::frame(xid, 0, err.code(), |w| SetSASLResponse { token }.write(w))
}

impl Core {
    /// Answers one SASL token; the flag says to close the connection after the reply. `None`:
    /// close it with no reply (a token after a null one, see above).
    pub(super) fn sasl(&mut self, conn: ConnId, xid: i32, token: &[u8]) -> Option<(Bytes, bool)> {
        let c = self.conns.get_mut(&conn)?;
        if c.null_token_sent {
            tracing::warn!(conn, peer = %c.peer, "SASL token after a null server token (a client in a loop); closing the connection");
            return None;
        }
        // No SASL configured: ZooKeeper answers OK with a null token.
        let Some(sasl) = self.cfg.auth.sasl.clone() else {
            c.null_token_sent = true;
            return Some((sasl_reply(xid, ErrorCode::Ok, None), false));
        };
        let step = c
            .sasl
            .evaluate(token, &sasl.users, |raw| crate::auth::os_random(raw));
        match step {
            Ok(Step::Challenge(t)) => Some((sasl_reply(xid, ErrorCode::Ok, Some(t)), false)),
            Ok(Step::Done { token, user }) => {
                tracing::info!(conn, session = format_args!("{:#x}", c.session), user = %user, "SASL authenticated");
                let is_super = sasl.super_users.contains(&user);
                add_auth(&mut c.auth, "sasl", &user);
                if is_super {
                    add_auth(&mut c.auth, "super", "");
                }
                Some((sasl_reply(xid, ErrorCode::Ok, Some(token)), false))
            }
            Err(why) => {
                self.metrics.auth_failed += 1;
                let required = self.cfg.auth.sasl_required();
                tracing::warn!(conn, peer = %c.peer, reason = why, "SASL authentication failed");
                if sasl.allow_failed && !required {
                    // allowSaslFailedClients: the connection stays, unauthenticated.
                    c.null_token_sent = true;
                    return Some((sasl_reply(xid, ErrorCode::Ok, None), false));
                }
                let err = if required {
                    ErrorCode::SessionClosedRequireSaslAuth
                } else {
                    ErrorCode::AuthFailed
                };
                Some((sasl_reply(xid, err, None), true))
            }
        }
    }

    /// enforce.auth: whether a request of type `op` may run on `conn`. If not, it is
    /// answered SESSIONCLOSEDREQUIRESASLAUTH (zxid 0, no body) and the connection closed;
    /// the session stays, as in ZooKeeper. auth and sasl always pass (they authenticate).
    pub(super) fn authenticated_enough(
        &mut self,
        conn: ConnId,
        xid: i32,
        op: Option<OpCode>,
    ) -> bool {
        if self.cfg.auth.enforce.is_empty() || matches!(op, Some(OpCode::Auth | OpCode::Sasl)) {
            return true;
        }
        let Some(c) = self.conns.get(&conn) else {
            return true;
        };
        let enforce = &self.cfg.auth.enforce;
        if c.auth
            .iter()
            .any(|a| enforce.iter().any(|s| **s == *a.scheme))
        {
            return true;
        }
        tracing::warn!(conn, peer = %c.peer, schemes = ?enforce, "request before authentication with an enforced scheme; closing the connection");
        let out = c.out.clone();
        self.send_reply(
            conn,
            reply::header(xid, 0, ErrorCode::SessionClosedRequireSaslAuth.code()),
        );
        self.outbox.send(&out, Out::Close);
        false
    }
}

/// Adds an identity unless the connection has it, before its `ip` one (where read/auth.rs puts a
/// digest identity, so whoAmI lists authenticated ids first).
fn add_auth(auth: &mut Vec<AuthId>, scheme: &str, id: &str) {
    let aid = AuthId {
        scheme: scheme.into(),
        id: id.into(),
    };
    if !auth.contains(&aid) {
        let at = auth
            .iter()
            .position(|a| &*a.scheme == "ip")
            .unwrap_or(auth.len());
        auth.insert(at, aid);
    }
}
