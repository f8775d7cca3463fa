//! The client side of DIGEST-MD5 (RFC 2831), as a peer link's dialer runs it against the
//! server side in `digest_md5.rs`: answer the challenge with a digest response, then check the
//! server's `rspauth`, so that both ends have proven they know the password (a mutual
//! challenge). qop `auth` only, nonce count 1, as the server accepts. Sans-IO: the caller
//! brings the cnonce's random bytes and moves the tokens.

use super::digest_md5::{response_value, same_bytes, Inputs, Service, MAX_TOKEN};
use super::directives::{self, Refusal};

/// Random bytes in a cnonce (sent as hex).
pub const CNONCE_RANDOM_BYTES: usize = 16;

/// A client exchange: answer one challenge, then verify one `rspauth`.
#[derive(Debug)]
pub struct ClientExchange {
    service: Service,
    user: String,
    password: String,
    /// What the response was computed from, kept to check the server's rspauth.
    sent: Option<Sent>,
}

#[derive(Debug)]
struct Sent {
    nonce: Vec<u8>,
    cnonce: Vec<u8>,
}

impl ClientExchange {
    pub fn new(service: Service, user: &str, password: &str) -> Self {
        ClientExchange {
            service,
            user: user.to_string(),
            password: password.to_string(),
            sent: None,
        }
    }

    fn digest_uri(&self) -> String {
        format!("{}/{}", self.service.protocol, self.service.server)
    }

    fn inputs<'a>(&'a self, uri: &'a str, sent: &'a Sent) -> Inputs<'a> {
        Inputs {
            user: &self.user,
            realm: self.service.server,
            password: &self.password,
            nonce: &sent.nonce,
            cnonce: &sent.cnonce,
            authzid: None,
            digest_uri: uri.as_bytes(),
            qop: "auth",
        }
    }

    /// The response to the server's challenge. The challenge must name the server's realm,
    /// `md5-sess` and (if any) a qop list that offers `auth`.
    pub fn respond(
        &mut self,
        challenge: &[u8],
        random: impl FnOnce(&mut [u8; CNONCE_RANDOM_BYTES]) -> bool,
    ) -> Result<Vec<u8>, Refusal> {
        if self.sent.is_some() {
            return Err("a second challenge");
        }
        if challenge.len() > MAX_TOKEN {
            return Err("challenge longer than 4096 bytes");
        }
        let d = directives::parse(challenge)?;
        let get = |name| directives::one(&d, name);
        if get("realm")?.is_some_and(|r| r != self.service.server.as_bytes()) {
            return Err("the challenge's realm is not the server's name");
        }
        if get("algorithm")? != Some(b"md5-sess".as_slice()) {
            return Err("the challenge's algorithm is not md5-sess");
        }
        if let Some(q) = get("qop")? {
            if !q.split(|b| *b == b',').any(|o| o.trim_ascii() == b"auth") {
                return Err("the challenge offers no qop auth");
            }
        }
        let nonce = get("nonce")?.ok_or("the challenge has no nonce")?.to_vec();
        let mut raw = [0u8; CNONCE_RANDOM_BYTES];
        if !random(&mut raw) {
            return Err("the operating system's random source failed");
        }
        let cnonce: Vec<u8> = raw
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect();
        let sent = Sent { nonce, cnonce };
        let uri = self.digest_uri();
        let response = response_value(&self.inputs(&uri, &sent), "AUTHENTICATE");
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"charset=utf-8,username=\"");
        directives::quote(&mut out, self.user.as_bytes());
        out.extend_from_slice(b"\",realm=\"");
        directives::quote(&mut out, self.service.server.as_bytes());
        out.extend_from_slice(b"\",nonce=\"");
        directives::quote(&mut out, &sent.nonce);
        out.extend_from_slice(b"\",nc=00000001,cnonce=\"");
        out.extend_from_slice(&sent.cnonce);
        out.extend_from_slice(b"\",digest-uri=\"");
        directives::quote(&mut out, uri.as_bytes());
        out.extend_from_slice(b"\",maxbuf=65536,response=");
        out.extend_from_slice(&response);
        out.extend_from_slice(b",qop=auth");
        self.sent = Some(sent);
        Ok(out)
    }

    /// Checks the server's last token: `rspauth` computed from the same password.
    pub fn verify(&self, token: &[u8]) -> Result<(), Refusal> {
        let sent = self.sent.as_ref().ok_or("rspauth before a response")?;
        if token.len() > MAX_TOKEN {
            return Err("rspauth longer than 4096 bytes");
        }
        let d = directives::parse(token)?;
        let got = directives::one(&d, "rspauth")?.ok_or("no rspauth")?;
        let uri = self.digest_uri();
        let want = response_value(&self.inputs(&uri, sent), "");
        if same_bytes(got, &want) {
            Ok(())
        } else {
            Err("the server's rspauth is wrong (it does not know the password)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::digest_md5::{Exchange, Step, Users, QUORUM};

    fn users() -> Users {
        Users::from([("learner".to_string(), "s3cret".to_string())])
    }

    fn run(client_pw: &str, server_users: &Users) -> Result<String, Refusal> {
        let mut server = Exchange::new(QUORUM);
        let mut client = ClientExchange::new(QUORUM, "learner", client_pw);
        let Step::Challenge(c) = server.evaluate(b"", server_users, |b| {
            b.fill(7);
            true
        })?
        else {
            return Err("no challenge");
        };
        let resp = client.respond(&c, |b| {
            b.fill(9);
            true
        })?;
        match server.evaluate(&resp, server_users, |_| true)? {
            Step::Done { token, user } => {
                client.verify(&token)?;
                Ok(user)
            }
            Step::Challenge(_) => Err("a second challenge"),
        }
    }

    #[test]
    fn both_sides_prove_the_password_to_each_other() {
        assert_eq!(run("s3cret", &users()).as_deref(), Ok("learner"));
        assert_eq!(
            run("wrong", &users()),
            Err("wrong response (wrong password?)")
        );
    }

    /// A server that does not know the password cannot forge rspauth: the client refuses it.
    #[test]
    fn a_server_without_the_password_is_refused_by_the_client() {
        let mut client = ClientExchange::new(QUORUM, "learner", "s3cret");
        let challenge =
            b"realm=\"zk-quorum-sasl-md5\",nonce=\"abc\",charset=utf-8,algorithm=md5-sess";
        client.respond(challenge, |_| true).unwrap();
        assert!(client
            .verify(b"rspauth=00000000000000000000000000000000")
            .is_err());
        assert!(client.verify(b"nothing").is_err());
    }

    #[test]
    fn a_challenge_for_another_service_or_algorithm_is_refused() {
        for challenge in [
            &b"realm=\"zk-sasl-md5\",nonce=\"a\",algorithm=md5-sess"[..],
            b"realm=\"zk-quorum-sasl-md5\",nonce=\"a\",algorithm=md5",
            b"realm=\"zk-quorum-sasl-md5\",nonce=\"a\",algorithm=md5-sess,qop=\"auth-conf\"",
        ] {
            let mut c = ClientExchange::new(QUORUM, "learner", "s3cret");
            let got = c.respond(challenge, |_| true);
            assert!(got.is_err(), "{}", String::from_utf8_lossy(challenge));
        }
        let mut c = ClientExchange::new(QUORUM, "learner", "s3cret");
        assert!(c.respond(&[b'x'; MAX_TOKEN + 1], |_| true).is_err());
    }
}
