//! DIGEST-MD5 against vectors made elsewhere, and hostile tokens.
//!
//! Vectors: RFC 2831 section 4's IMAP example (user chris, password secret), and an exchange
//! computed by pure-sasl 0.6.2 (kazoo's SASL library) with this file's fixed nonce and
//! pure-sasl's cnonce fixed by seeding Python's `random` with 16:
//!
//! ```text
//! random.seed(16)
//! c = SASLClient(host="zk-sasl-md5", service="zookeeper", mechanism="DIGEST-MD5",
//!                username="alice", password="alice-secret")
//! c.process(None); print(c.process(challenge))           # the response below
//! d = c._chosen_mech; print(d.gen_hash(b":" + d._digest_uri))  # the rspauth below
//! ```

use super::*;

const NONCE: &[u8] = b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk";
/// The pure-sasl response to `challenge(NONCE)` (see the header).
const PURESASL: &[u8] = b"qop=auth,realm=\"zk-sasl-md5\",username=\"alice\",nonce=\"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk\",cnonce=\"36152277491407514\",nc=00000001,digest-uri=\"zookeeper/zk-sasl-md5\",response=d30a4d1d0d3fffa3a6fa6f080cd020ab";
const PURESASL_RSPAUTH: &[u8] = b"rspauth=002af0f42593d96d14b1a2088fcf7eb0";

fn users() -> Users {
    [("alice", "alice-secret"), ("bob", "bob-secret")]
        .into_iter()
        .map(|(u, p)| (u.to_string(), p.to_string()))
        .collect()
}

/// NONCE's 30 random bytes (it is their base64).
fn fixed(raw: &mut [u8; NONCE_RANDOM_BYTES]) -> bool {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(NONCE)
        .unwrap();
    raw.copy_from_slice(&bytes);
    true
}

/// An exchange that has sent its challenge (with NONCE).
fn challenged() -> Exchange {
    let mut x = Exchange::default();
    let Step::Challenge(c) = x.evaluate(b"", &users(), fixed).unwrap() else {
        panic!("no challenge")
    };
    assert_eq!(
        c,
        b"realm=\"zk-sasl-md5\",nonce=\"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk\",charset=utf-8,algorithm=md5-sess"
    );
    x
}

#[test]
fn rfc2831_example() {
    let i = Inputs {
        user: "chris",
        realm: "elwood.innosoft.com",
        password: "secret",
        nonce: b"OA6MG9tEQGm2hh",
        cnonce: b"OA6MHXh6VqTrRk",
        authzid: None,
        digest_uri: b"imap/elwood.innosoft.com",
        qop: "auth",
    };
    assert_eq!(
        response_value(&i, "AUTHENTICATE"),
        b"d388dad90d4bbd760a152321f2143af7"
    );
    assert_eq!(response_value(&i, ""), b"ea40f60335c427b5527b84dbabcdfffd");
}

#[test]
fn pure_sasl_exchange_succeeds() {
    let mut x = challenged();
    assert_eq!(
        x.evaluate(PURESASL, &users(), |_| unreachable!()),
        Ok(Step::Done {
            token: PURESASL_RSPAUTH.to_vec(),
            user: "alice".into()
        })
    );
    assert!(x.over());
}

#[test]
fn token_after_success_fails() {
    let mut x = challenged();
    assert!(x.evaluate(PURESASL, &users(), |_| true).is_ok());
    // Neither a replay of the response nor a fresh start is accepted on this connection.
    assert!(x.evaluate(PURESASL, &users(), |_| true).is_err());
    assert!(x.evaluate(b"", &users(), |_| true).is_err());
}

#[test]
fn response_replayed_against_a_new_nonce_fails() {
    let mut x = Exchange::default();
    assert!(matches!(
        x.evaluate(b"", &users(), |r| {
            r.fill(7);
            true
        }),
        Ok(Step::Challenge(_))
    ));
    assert_eq!(
        x.evaluate(PURESASL, &users(), |_| true),
        Err("nonce does not match the challenge's")
    );
}

fn replaced(from: &str, to: &str) -> Vec<u8> {
    String::from_utf8(PURESASL.to_vec())
        .unwrap()
        .replace(from, to)
        .into_bytes()
}

#[test]
fn altered_responses_fail() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            replaced("nc=00000001", "nc=00000002"),
            "nonce count is not 1",
        ),
        (replaced("nc=00000001", "nc=zz"), "nonce count is not 1"),
        (
            replaced("response=d30a", "response=e30a"),
            "wrong response (wrong password?)",
        ),
        (
            replaced(
                "response=d30a4d1d0d3fffa3a6fa6f080cd020ab",
                "response=D30A4D1D0D3FFFA3A6FA6F080CD020AB",
            ),
            "wrong response (wrong password?)",
        ),
        (
            replaced("username=\"alice\"", "username=\"bob\""),
            "wrong response (wrong password?)",
        ),
        (
            replaced("username=\"alice\"", "username=\"mallory\""),
            "unknown user",
        ),
        (
            replaced("realm=\"zk-sasl-md5\",", ""),
            "realm is not the server's name",
        ),
        (
            replaced("zookeeper/zk-sasl-md5", "zookeeper/localhost"),
            "digest-uri is not the server's protocol/name",
        ),
        (
            replaced("qop=auth", "qop=auth-conf"),
            "qop other than auth (no security layer)",
        ),
        (replaced("qop=auth", "qop=x"), "invalid qop"),
        (
            replaced("qop=auth", "qop=auth,charset=iso-8859-1"),
            "charset other than utf-8",
        ),
        (
            replaced("qop=auth", "qop=auth,qop=auth"),
            "a directive is given more than once",
        ),
        (
            replaced("qop=auth", "qop=auth,maxbuf=x"),
            "maxbuf is not a number",
        ),
        (replaced(",cnonce=\"36152277491407514\"", ""), "no cnonce"),
        (
            replaced("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk", "QUJD"),
            "nonce does not match the challenge's",
        ),
        (b"=x".to_vec(), "empty directive key"),
        (vec![0xff; 64], "no username"),
        (b"username=\"alice".to_vec(), "unterminated quoted value"),
    ];
    for (token, why) in cases {
        let mut x = challenged();
        assert_eq!(
            x.evaluate(&token, &users(), |_| true),
            Err(why),
            "{}",
            String::from_utf8_lossy(&token)
        );
        // One failure ends the exchange: the right response no longer helps.
        assert!(x.over());
        assert!(x.evaluate(PURESASL, &users(), |_| true).is_err());
    }
}

#[test]
fn authzid_is_hashed_but_the_identity_is_the_user() {
    let mut x = challenged();
    let cnonce = b"c0ffee";
    let i = Inputs {
        user: "bob",
        realm: SERVER_NAME,
        password: "bob-secret",
        nonce: NONCE,
        cnonce,
        authzid: Some(b"alice"),
        digest_uri: b"zookeeper/zk-sasl-md5",
        qop: "auth",
    };
    let mut token = b"charset=utf-8,username=\"bob\",realm=\"zk-sasl-md5\",nonce=\"".to_vec();
    token.extend_from_slice(NONCE);
    token.extend_from_slice(b"\",nc=00000001,cnonce=\"c0ffee\",digest-uri=\"zookeeper/zk-sasl-md5\",maxbuf=65536,response=");
    token.extend_from_slice(&response_value(&i, "AUTHENTICATE"));
    token.extend_from_slice(b",qop=auth,authzid=\"alice\"");
    match x.evaluate(&token, &users(), |_| true) {
        Ok(Step::Done { user, .. }) => assert_eq!(user, "bob"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn oversized_token_fails_at_any_step() {
    let big = vec![b'a'; MAX_TOKEN + 1];
    let mut x = Exchange::default();
    assert_eq!(
        x.evaluate(&big, &users(), |_| true),
        Err("token longer than 4096 bytes")
    );
    let mut x = challenged();
    assert!(x.evaluate(&big, &users(), |_| true).is_err());
}

#[test]
fn random_source_failure_fails_the_exchange() {
    let mut x = Exchange::default();
    assert!(x.evaluate(b"", &users(), |_| false).is_err());
    assert!(x.over());
}

#[test]
fn non_empty_first_token_gets_a_challenge() {
    let mut x = Exchange::default();
    assert!(matches!(
        x.evaluate(PURESASL, &users(), fixed),
        Ok(Step::Challenge(_))
    ));
}

#[test]
fn latin1_names_hash_as_latin1_others_as_utf8() {
    assert_eq!(latin1_or_utf8("zoë"), b"zo\xeb");
    assert_eq!(latin1_or_utf8("zoë€"), "zoë€".as_bytes());
}

#[test]
fn garbage_never_panics() {
    // Every prefix of a valid response, and bytes of every value, at the second step.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..PURESASL.len() {
        let mut x = challenged();
        let _ = x.evaluate(&PURESASL[..n], &users(), |_| true);
    }
    for len in [0usize, 1, 2, 7, 64, 512, 4096] {
        let mut buf = vec![0u8; len];
        for b in buf.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = b"=,\" \\azn"[(seed % 8) as usize];
        }
        let mut x = challenged();
        let _ = x.evaluate(&buf, &users(), |_| true);
    }
}
