//! The core's SASL hook (core/sasl.rs) driven message by message: the identity a success
//! adds, the reply and close a failure gets, enforce.auth on decoded and undecodable
//! requests, and the unconfigured answer. The mechanism itself: auth/digest_md5_test.rs.

use super::*;
use crate::auth::digest_md5::{response_value, Inputs, SERVER_NAME};
use crate::auth::{AuthPolicy, Sasl};
use std::sync::Arc;

/// SASL with one user, alice (password "alice-secret"), the other settings ZooKeeper's
/// defaults.
fn alice() -> Sasl {
    Sasl {
        users: [("alice".to_string(), "alice-secret".to_string())].into(),
        ..Default::default()
    }
}

/// A core with these SASL settings, enforcing `enforce`.
fn with(sasl: Sasl, enforce: &[&str]) -> Harness {
    let mut h = Harness::new();
    h.core.cfg.auth = AuthPolicy {
        sasl: Some(Arc::new(sasl)),
        enforce: enforce.iter().map(|s| s.to_string()).collect(),
    };
    h
}

fn with_sasl(enforce: &[&str]) -> Harness {
    with(alice(), enforce)
}

fn sasl(token: &[u8]) -> Request {
    Request::Sasl(GetSASLRequest {
        token: Some(Bytes::copy_from_slice(token)),
    })
}

/// Every message queued to `c`: (xid, zxid, err, body) for replies, and whether a Close came.
fn out(c: &mut Client) -> (Vec<(i32, i64, i32, Bytes)>, bool) {
    let (mut replies, mut closed) = (Vec::new(), false);
    while let Some(o) = c.out.next() {
        match o {
            Out::Reply(mut b) => {
                b.advance(4);
                let (xid, zxid, err) = (b.get_i32(), b.get_i64(), b.get_i32());
                replies.push((xid, zxid, err, b));
            }
            Out::Close => closed = true,
            _ => {}
        }
    }
    (replies, closed)
}

/// The server token of a SetSASLResponse body (None for null).
fn token(body: &Bytes) -> Option<Vec<u8>> {
    SetSASLResponse::decode(body.clone(), DEFAULT_MAX_BUFFER)
        .ok()?
        .token
        .map(|t| t.to_vec())
}

/// The digest response to `challenge` for alice with `password`.
fn respond(challenge: &[u8], password: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(challenge);
    let nonce = text
        .split("nonce=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap();
    let i = Inputs {
        user: "alice",
        realm: SERVER_NAME,
        password,
        nonce: nonce.as_bytes(),
        cnonce: b"abc",
        authzid: None,
        digest_uri: b"zookeeper/zk-sasl-md5",
        qop: "auth",
    };
    let r = String::from_utf8(response_value(&i, "AUTHENTICATE")).unwrap();
    format!("username=\"alice\",realm=\"zk-sasl-md5\",nonce=\"{nonce}\",cnonce=\"abc\",nc=00000001,qop=auth,digest-uri=\"zookeeper/zk-sasl-md5\",response={r}").into_bytes()
}

/// Runs the exchange on `c` with `password`; returns the last reply and whether it closed.
fn login(h: &mut Harness, c: &mut Client, password: &str) -> ((i32, i64, i32, Bytes), bool) {
    h.send(c, 1, sasl(b""));
    let (r, closed) = out(c);
    assert!(!closed);
    let (xid, zxid, err, body) = &r[0];
    assert_eq!((*xid, *zxid, *err), (1, 0, 0));
    let challenge = token(body).unwrap();
    h.send(c, 2, sasl(&respond(&challenge, password)));
    let (mut r, closed) = out(c);
    (r.remove(0), closed)
}

fn has(h: &Harness, c: &Client, scheme: &str, id: &str) -> bool {
    h.core.conns[&c.conn]
        .auth
        .iter()
        .any(|a| &*a.scheme == scheme && &*a.id == id)
}

#[test]
fn success_adds_the_sasl_identity() {
    let mut h = with_sasl(&[]);
    let mut c = h.connect();
    let ((_, zxid, err, body), closed) = login(&mut h, &mut c, "alice-secret");
    assert_eq!((zxid, err, closed), (0, 0, false));
    assert!(token(&body).unwrap().starts_with(b"rspauth="));
    assert!(has(&h, &c, "sasl", "alice"));
    // A second exchange on the same connection fails and closes it.
    h.send(&c, 3, sasl(b""));
    let (r, closed) = out(&mut c);
    assert_eq!(r[0].2, ErrorCode::AuthFailed.code());
    assert!(closed);
}

#[test]
fn failure_is_authfailed_with_a_null_token_then_close_and_the_session_stays() {
    let mut h = with_sasl(&[]);
    let mut c = h.connect();
    let session = h.core.conns[&c.conn].session;
    let ((xid, zxid, err, body), closed) = login(&mut h, &mut c, "wrong");
    assert_eq!((xid, zxid, err), (2, 0, ErrorCode::AuthFailed.code()));
    assert_eq!(token(&body), None);
    assert!(closed);
    assert!(!has(&h, &c, "sasl", "alice"));
    assert!(h.core.liveness.get(session).is_some());
    assert_eq!(h.core.metrics.auth_failed, 1);
}

#[test]
fn required_refuses_requests_before_sasl_and_runs_them_after() {
    let mut h = with_sasl(&["sasl"]);
    let mut c = h.connect();
    h.send(&c, 1, get_data("/", false));
    let (r, closed) = out(&mut c);
    assert_eq!(
        (r[0].0, r[0].1, r[0].2, r[0].3.len()),
        (1, 0, ErrorCode::SessionClosedRequireSaslAuth.code(), 0)
    );
    assert!(closed);
    // An undecodable request too.
    let mut c = h.connect();
    h.core.handle(Input::Bad {
        conn: c.conn,
        xid: 5,
        op: 999,
        error: DecodeError::UnknownOpCode(999),
    });
    let (r, closed) = out(&mut c);
    assert_eq!(r[0].2, ErrorCode::SessionClosedRequireSaslAuth.code());
    assert!(closed);
    // After SASL, requests run.
    let mut c = h.connect();
    let ((_, _, err, _), _) = login(&mut h, &mut c, "alice-secret");
    assert_eq!(err, 0);
    h.send(&c, 3, get_data("/", false));
    let (r, closed) = out(&mut c);
    assert_eq!((r[0].0, r[0].2, closed), (3, 0, false));
}

#[test]
fn required_failure_is_session_closed_require_sasl() {
    let mut h = with_sasl(&["sasl"]);
    let mut c = h.connect();
    let ((_, _, err, _), closed) = login(&mut h, &mut c, "wrong");
    assert_eq!(err, ErrorCode::SessionClosedRequireSaslAuth.code());
    assert!(closed);
}

#[test]
fn unconfigured_sasl_is_ok_with_a_null_token() {
    let mut h = Harness::new();
    let mut c = h.connect();
    h.send(&c, 1, sasl(b"anything"));
    let (r, closed) = out(&mut c);
    assert_eq!((r[0].1, r[0].2, closed), (0, 0, false));
    assert_eq!(token(&r[0].3), None);
}

#[test]
fn a_token_after_a_null_one_closes_with_no_reply_and_the_session_stays() {
    // pure-sasl answers a null challenge with another empty token, forever (issue 37).
    let mut h = Harness::new();
    let mut c = h.connect();
    let session = h.core.conns[&c.conn].session;
    h.send(&c, 1, sasl(b""));
    let (r, closed) = out(&mut c);
    assert_eq!(
        (r.len(), r[0].2, token(&r[0].3), closed),
        (1, 0, None, false)
    );
    h.send(&c, 2, sasl(b""));
    let (r, closed) = out(&mut c);
    assert_eq!((r.len(), closed), (0, true));
    assert!(h.core.liveness.get(session).is_some());
    // Another connection gets its own first answer.
    let mut c = h.connect();
    h.send(&c, 1, sasl(b""));
    let (r, closed) = out(&mut c);
    assert_eq!((r.len(), r[0].2, closed), (1, 0, false));
}

#[test]
fn allow_failed_a_token_after_the_failure_closes_with_no_reply() {
    let allow_failed = Sasl {
        allow_failed: true,
        ..alice()
    };
    let mut h = with(allow_failed, &[]);
    let mut c = h.connect();
    let ((_, _, err, body), closed) = login(&mut h, &mut c, "wrong");
    assert_eq!((err, token(&body), closed), (0, None, false));
    h.send(&c, 3, sasl(b""));
    let (r, closed) = out(&mut c);
    assert_eq!((r.len(), closed), (0, true));
}

#[test]
fn super_user_gets_super_and_allow_failed_keeps_the_connection() {
    let settings = Sasl {
        super_users: ["alice".to_string()].into(),
        allow_failed: true,
        ..alice()
    };
    let mut h = with(settings, &[]);
    let mut c = h.connect();
    let ((_, _, err, _), closed) = login(&mut h, &mut c, "alice-secret");
    assert_eq!((err, closed), (0, false));
    assert!(has(&h, &c, "sasl", "alice") && has(&h, &c, "super", ""));
    // allowSaslFailedClients: OK with a null token, the connection stays, no identity.
    let mut c = h.connect();
    let ((_, _, err, body), closed) = login(&mut h, &mut c, "wrong");
    assert_eq!((err, token(&body), closed), (0, None, false));
    assert!(!has(&h, &c, "sasl", "alice"));
    // ...but not when SASL is required.
    h.core.cfg.auth.enforce = vec!["sasl".into()];
    let mut c = h.connect();
    let ((_, _, err, _), closed) = login(&mut h, &mut c, "wrong");
    assert_eq!(
        (err, closed),
        (ErrorCode::SessionClosedRequireSaslAuth.code(), true)
    );
}
