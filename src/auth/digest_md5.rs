//! The server side of DIGEST-MD5 (RFC 2831) as ZooKeeper 3.8 runs it through the JDK's
//! DigestMD5Server: protocol `zookeeper`, server name and realm `zk-sasl-md5`, qop `auth`
//! only (no integrity or privacy layer), `algorithm=md5-sess`, `charset=utf-8`.
//!
//! Three steps: the client's first token is empty and the server answers a challenge with a
//! fresh nonce; the client answers with its digest response; the server checks it and answers
//! `rspauth=...`, proving it knows the password too. Then the exchange is over: any further
//! token fails (the JDK's "server at illegal state"), and so does any token after a failure.
//! Sans-IO: the caller supplies the nonce's random bytes and the user table.

use super::directives::{self, Refusal};
use md5::{Digest, Md5};
use std::collections::HashMap;

/// The service (protocol) name ZooKeeper gives its SASL server.
pub const SERVICE: &str = "zookeeper";
/// The server name ZooKeeper hard-codes for DIGEST-MD5; with no realm configured it is the
/// only realm offered.
pub const SERVER_NAME: &str = "zk-sasl-md5";
/// The JDK refuses a response longer than this (DigestMD5Base.MAX_RESPONSE_LENGTH).
pub const MAX_TOKEN: usize = 4096;
/// Random bytes in a nonce (the JDK's RAW_NONCE_SIZE), sent as 40 base64 characters.
pub const NONCE_RANDOM_BYTES: usize = 30;

/// Users and their passwords (the JAAS `user_NAME="password"` options).
pub type Users = HashMap<String, String>;

#[derive(Debug, Default)]
enum State {
    /// Waiting for the client's first (empty) token.
    #[default]
    Start,
    /// The challenge went out with this nonce; waiting for the digest response.
    Challenged { nonce: Vec<u8> },
    /// Succeeded or failed: no further token is accepted.
    Over,
}

/// Who the server is in an exchange: the service (protocol) and server name of its
/// digest-uri, the server name also being its only realm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    pub protocol: &'static str,
    pub server: &'static str,
}

/// ZooKeeper's client port: `zookeeper/zk-sasl-md5`.
pub const CLIENT_PORT: Service = Service {
    protocol: SERVICE,
    server: SERVER_NAME,
};

/// ZooKeeper's quorum links (QuorumAuth's protocol and DIGEST server name):
/// `zookeeper-quorum/zk-quorum-sasl-md5`. Palisade's peer links use the same names.
pub const QUORUM: Service = Service {
    protocol: "zookeeper-quorum",
    server: "zk-quorum-sasl-md5",
};

/// One connection's exchange.
#[derive(Debug)]
pub struct Exchange {
    state: State,
    service: Service,
}

impl Default for Exchange {
    fn default() -> Self {
        Exchange::new(CLIENT_PORT)
    }
}

/// What a token led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this challenge and wait for the next token.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; send `token` (the `rspauth`) as the last server token.
    Done { token: Vec<u8>, user: String },
}

impl Exchange {
    pub fn new(service: Service) -> Self {
        Exchange {
            state: State::Start,
            service,
        }
    }

    /// Evaluates one client token. `random` fills the nonce's random bytes (only the first
    /// step asks); an error there fails the exchange. Every failure ends the exchange.
    pub fn evaluate(
        &mut self,
        token: &[u8],
        users: &Users,
        random: impl FnOnce(&mut [u8; NONCE_RANDOM_BYTES]) -> bool,
    ) -> Result<Step, Refusal> {
        let state = std::mem::replace(&mut self.state, State::Over);
        if token.len() > MAX_TOKEN {
            return Err("token longer than 4096 bytes");
        }
        match state {
            // The JDK ignores an initial response (RFC 2831 2.2: the server without
            // "subsequent authentication" answers a fresh challenge).
            State::Start => {
                let mut raw = [0u8; NONCE_RANDOM_BYTES];
                if !random(&mut raw) {
                    return Err("the operating system's random source failed");
                }
                use base64::Engine as _;
                let nonce = base64::engine::general_purpose::STANDARD
                    .encode(raw)
                    .into_bytes();
                let challenge = challenge(self.service.server, &nonce);
                self.state = State::Challenged { nonce };
                Ok(Step::Challenge(challenge))
            }
            State::Challenged { nonce } => verify(token, &nonce, users, self.service),
            State::Over => Err("the exchange is already over"),
        }
    }

    /// Whether the exchange has ended (succeeded or failed).
    pub fn over(&self) -> bool {
        matches!(self.state, State::Over)
    }
}

/// The challenge, byte for byte as the JDK writes it for ZooKeeper (which sets no qop, so
/// none is listed: the default is auth).
fn challenge(realm: &str, nonce: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"realm=\"");
    directives::quote(&mut out, realm.as_bytes());
    out.extend_from_slice(b"\",nonce=\"");
    directives::quote(&mut out, nonce);
    out.extend_from_slice(b"\",charset=utf-8,algorithm=md5-sess");
    out
}

/// Java's `Integer.parseInt(s, radix)`: an optional sign, then digits, within i32.
pub(crate) fn java_int(s: &[u8], radix: u32) -> Option<i32> {
    let s = std::str::from_utf8(s).ok()?;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i32::from_str_radix(s, radix).ok()
}

/// A string as the JDK hashes it (stringToByte_8859_1 with UTF-8 on): ISO 8859-1 when every
/// character fits, else UTF-8.
fn latin1_or_utf8(s: &str) -> Vec<u8> {
    if s.chars().all(|c| u32::from(c) <= 0xFF) {
        s.chars().map(|c| u32::from(c) as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

/// Lower-case hex, as the JDK's binaryToHex.
fn hex(d: &[u8]) -> Vec<u8> {
    let digit = |n: u8| if n < 10 { b'0' + n } else { b'a' + (n - 10) };
    let mut out = Vec::with_capacity(d.len() * 2);
    for &b in d {
        out.push(digit(b >> 4));
        out.push(digit(b & 15));
    }
    out
}

/// Compares in time that depends on the lengths only, so that timing does not tell how much
/// of a guessed response was right.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What the response-value of RFC 2831 2.1.2.1 is computed from.
pub struct Inputs<'a> {
    pub user: &'a str,
    pub realm: &'a str,
    pub password: &'a str,
    pub nonce: &'a [u8],
    pub cnonce: &'a [u8],
    pub authzid: Option<&'a [u8]>,
    pub digest_uri: &'a [u8],
    pub qop: &'a str,
}

/// The response-value (32 lower-case hex digits): `method` is "AUTHENTICATE" for the
/// client's response and "" for the server's rspauth. The nonce count is always 00000001,
/// the only one the server accepts.
pub fn response_value(i: &Inputs<'_>, method: &str) -> Vec<u8> {
    let mut h = Md5::new();
    h.update(latin1_or_utf8(i.user));
    h.update(b":");
    h.update(latin1_or_utf8(i.realm));
    h.update(b":");
    h.update(latin1_or_utf8(i.password));
    let user_hash = h.finalize();
    let mut a1 = Md5::new();
    a1.update(user_hash);
    a1.update(b":");
    a1.update(i.nonce);
    a1.update(b":");
    a1.update(i.cnonce);
    if let Some(z) = i.authzid {
        a1.update(b":");
        a1.update(z);
    }
    let ha1 = hex(&a1.finalize());
    let mut a2 = Md5::new();
    a2.update(method.as_bytes());
    a2.update(b":");
    a2.update(i.digest_uri);
    let ha2 = hex(&a2.finalize());
    let mut kd = Md5::new();
    for (n, part) in [
        &ha1[..],
        i.nonce,
        b"00000001",
        i.cnonce,
        i.qop.as_bytes(),
        &ha2[..],
    ]
    .iter()
    .enumerate()
    {
        if n > 0 {
            kd.update(b":");
        }
        kd.update(part);
    }
    hex(&kd.finalize())
}

/// Checks the client's digest response, in the JDK's order of checks.
fn verify(token: &[u8], nonce: &[u8], users: &Users, service: Service) -> Result<Step, Refusal> {
    let d = directives::parse(token)?;
    let get = |name| directives::one(&d, name);
    if let Some(cs) = get("charset")? {
        if cs != b"utf-8" {
            return Err("charset other than utf-8");
        }
    }
    if let Some(m) = get("maxbuf")? {
        java_int(m, 10).ok_or("maxbuf is not a number")?;
    }
    let user = String::from_utf8_lossy(get("username")?.ok_or("no username")?).into_owned();
    let realm = get("realm")?
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    if realm != service.server {
        return Err("realm is not the server's name");
    }
    if get("nonce")?.ok_or("no nonce")? != nonce {
        return Err("nonce does not match the challenge's");
    }
    let cnonce = get("cnonce")?.ok_or("no cnonce")?;
    if let Some(nc) = get("nc")? {
        if java_int(nc, 16) != Some(1) {
            return Err("nonce count is not 1");
        }
    }
    let qop = get("qop")?.map(String::from_utf8_lossy);
    match qop.as_deref() {
        None | Some("auth") => {}
        Some("auth-int" | "auth-conf") => return Err("qop other than auth (no security layer)"),
        Some(_) => return Err("invalid qop"),
    }
    let uri = get("digest-uri")?.ok_or("no digest-uri")?;
    let expected_uri = format!("{}/{}", service.protocol, service.server);
    if !uri.eq_ignore_ascii_case(expected_uri.as_bytes()) {
        return Err("digest-uri is not the server's protocol/name");
    }
    let response = get("response")?.ok_or("no response")?;
    let authzid = get("authzid")?;
    let password = users.get(&user).ok_or("unknown user")?;
    let inputs = Inputs {
        user: &user,
        realm: &realm,
        password,
        nonce,
        cnonce,
        authzid,
        digest_uri: uri,
        qop: "auth",
    };
    if !same_bytes(response, &response_value(&inputs, "AUTHENTICATE")) {
        return Err("wrong response (wrong password?)");
    }
    let mut token = b"rspauth=".to_vec();
    token.extend_from_slice(&response_value(&inputs, ""));
    // ZooKeeper's callback authorizes any authzid but names the connection by the
    // authentication id (SaslServerCallbackHandler.handleAuthorizeCallback).
    Ok(Step::Done { token, user })
}

#[cfg(test)]
#[path = "digest_md5_test.rs"]
mod tests;
