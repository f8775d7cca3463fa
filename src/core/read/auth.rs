//! The connection's identities: addAuth, a SASL step, whoAmI.

use super::{Answer, Asked};
use crate::acl::{self, AuthId};
use crate::core::{reply, Core};
use bytes::Bytes;
use palisade_proto::*;

impl Core {
    /// addAuth: `digest` adds the identity (and `super` for the super digest), `ip` is
    /// accepted as is; any other scheme fails AUTHFAILED and closes the connection.
    pub(super) fn add_auth(&mut self, q: Asked, a: &AuthPacket) -> Answer {
        let data = a.auth.as_deref().unwrap_or(&[]);
        match a.scheme.as_str() {
            Some("digest") if !data.is_empty() => {
                let id = acl::digest_id(&String::from_utf8_lossy(data));
                let is_super = self.cfg.super_digest.as_deref() == Some(id.as_str());
                if let Some(c) = self.conns.get_mut(&q.conn) {
                    if is_super {
                        c.auth.push(AuthId {
                            scheme: "super".into(),
                            id: "".into(),
                        });
                    }
                    let aid = AuthId {
                        scheme: "digest".into(),
                        id: id.into(),
                    };
                    if !c.auth.contains(&aid) {
                        // ZooKeeper lists authenticated ids before the connection's ip id.
                        let at = c
                            .auth
                            .iter()
                            .position(|a| &*a.scheme == "ip")
                            .unwrap_or(c.auth.len());
                        c.auth.insert(at, aid);
                    }
                }
                Answer::Reply(reply::header(q.xid, 0, 0))
            }
            Some("ip") => Answer::Reply(reply::header(q.xid, 0, 0)),
            _ => Answer::ReplyAndClose(reply::header(q.xid, 0, ErrorCode::AuthFailed.code())),
        }
    }

    /// One SASL token (core/sasl.rs), answered, answered then closed, or closed.
    pub(super) fn sasl_step(&mut self, q: Asked, s: &GetSASLRequest) -> Answer {
        let token = s.token.as_deref().unwrap_or(&[]);
        match self.sasl(q.conn, q.xid, token) {
            Some((frame, false)) => Answer::Reply(frame),
            Some((frame, true)) => Answer::ReplyAndClose(frame),
            None => Answer::Close,
        }
    }

    pub(super) fn who_am_i(&self, q: Asked) -> Bytes {
        let infos = self.conns.get(&q.conn).map(|c| {
            c.auth
                .iter()
                .map(|a| {
                    // ZooKeeper reports a digest identity by its user name only.
                    let user = match &*a.scheme {
                        "digest" => a.id.split(':').next().unwrap_or(""),
                        _ => &*a.id,
                    };
                    ClientInfo {
                        auth_scheme: JStr::from(&*a.scheme),
                        user: JStr::from(user),
                    }
                })
                .collect()
        });
        reply::record(q.xid, q.zxid, &WhoAmIResponse { client_info: infos })
    }
}
