//! What secures the observer's connection to a ZooKeeper leader, read from the ensemble's
//! zoo.cfg as ZooKeeper's own learner reads it (`Learner.createSocket`, `connectToLeader`):
//!
//! - `sslQuorum=true`: the connection is TLS from its first byte; the leader's certificate is
//!   checked against `ssl.quorum.trustStore` (and, with `ssl.quorum.hostnameVerification`,
//!   must name the host of its `server.N` line or the address dialed, as ZooKeeper's
//!   learner's check takes either), and ours from `ssl.quorum.keyStore` is
//!   presented (ZooKeeper's quorum always needs it). The stores and the rustls configs are
//!   Palisade's own links' (src/ensemble/link/tls.rs).
//! - `quorum.auth.learnerRequireSasl=true` (with `enableSasl`): before OBSERVERINFO, the
//!   DIGEST-MD5 exchange of `SaslQuorumAuthLearner` as the `QuorumLearner` JAAS user, in
//!   QuorumAuthPackets (`palisade_zab::auth`). A ZooKeeper learner with `enableSasl` but not
//!   `learnerRequireSasl` skips it, and so does this one (the leader lets a learner through
//!   without it unless `serverRequireSasl`). The rspauth of the leader is checked too: a
//!   leader that does not know the password is refused.
//!
//! Everything here is bounded: the handshake and the exchange together within
//! tickTime x initLimit (ZooKeeper's read timeout on that socket), tokens and packets by
//! src/limits.rs. A failure is a [`Refused`], which ends that connection only.

use crate::auth::digest_md5::QUORUM;
use crate::auth::digest_md5_client::ClientExchange;
use crate::ensemble::link::{learner_credentials, QuorumSettings, QuorumTls, Stream};
use crate::limits::{OBSERVER_AUTH_MAX_PACKETS, OBSERVER_AUTH_MAX_TOKEN};
use bytes::BytesMut;
use palisade_zab::auth::{leader_step, AuthRefused, AuthStep};
use palisade_zab::{AuthDecoder, AuthPacket};
use rustls_pki_types::ServerName;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::either::Either;

// The observer's token bound is the DIGEST-MD5 client's own (limits.rs says why).
const _: () = assert!(OBSERVER_AUTH_MAX_TOKEN == crate::auth::digest_md5::MAX_TOKEN);

/// DIGEST-MD5 takes one challenge: the leader's second packet is SUCCESS (with rspauth).
const DIGEST_ROUNDS: usize = 1;

#[derive(Default)]
pub struct LinkSecurity {
    tls: Option<Arc<QuorumTls>>,
    /// `QuorumLearner`'s user and password, when the exchange runs.
    sasl: Option<(String, String)>,
}

/// Why a connection was given up before its first QuorumPacket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Tls(String),
    Sasl(String),
}

impl LinkSecurity {
    /// From the zoo.cfg's quorum keys (validated as it was read) and the JAAS file: the
    /// stores and the file are read here, so a bad one stops the command at its start.
    pub fn open(q: &QuorumSettings, jaas: Option<&Path>) -> Result<LinkSecurity, String> {
        q.validate()?;
        let tls = if q.ssl_quorum {
            // The acceptor built alongside is unused: nobody dials an observer.
            Some(QuorumTls::new(
                q.tls.clone(),
                q.hostname_verification,
                false,
            )?)
        } else {
            None
        };
        let sasl = if q.sasl && q.learner_require_sasl {
            Some(learner_credentials(q, jaas)?)
        } else {
            None
        };
        Ok(LinkSecurity { tls, sasl })
    }

    /// For the start-up line: what the link runs.
    pub fn describe(&self) -> &'static str {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => "plaintext, no authentication",
            (true, false) => "TLS (sslQuorum)",
            (false, true) => "quorum SASL (DIGEST-MD5)",
            (true, true) => "TLS (sslQuorum) and quorum SASL (DIGEST-MD5)",
        }
    }

    /// Secures a fresh connection to `host` (as its `server.N` line names it): the TLS
    /// handshake, then the SASL exchange, within `deadline`. Returns the stream and any bytes
    /// the leader sent after its last auth packet (the start of its QuorumPackets).
    pub async fn secure(
        &self,
        tcp: TcpStream,
        host: &str,
        deadline: Duration,
    ) -> Result<(Stream, BytesMut), Refused> {
        let ip = tcp.peer_addr().map(|a| a.ip());
        let work = async {
            let mut stream = match &self.tls {
                None => Either::Left(tcp),
                Some(tls) => {
                    let name = ServerName::try_from(
                        host.trim_start_matches('[')
                            .trim_end_matches(']')
                            .to_string(),
                    )
                    .map_err(|e| Refused::Tls(format!("host {host:?}: {e}")))?;
                    // As ZooKeeper's learner: a certificate naming the address dialed will
                    // do when it does not name the server.N line's host.
                    let connector = match ip {
                        Ok(ip) => tls.connector_or_ip(ip),
                        Err(_) => tls.connector(),
                    };
                    let s = connector
                        .connect(name, tcp)
                        .await
                        .map_err(|e| Refused::Tls(e.to_string()))?;
                    Either::Right(Box::new(tokio_rustls::TlsStream::Client(s)))
                }
            };
            let rest = match &self.sasl {
                None => BytesMut::new(),
                Some((user, password)) => authenticate(&mut stream, user, password)
                    .await
                    .map_err(Refused::Sasl)?,
            };
            Ok((stream, rest))
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(r) => r,
            Err(_) => {
                let what = if self.sasl.is_some() {
                    "the TLS handshake and quorum SASL"
                } else {
                    "the TLS handshake"
                };
                let why = format!("{what} did not finish within {deadline:?}");
                Err(match self.sasl {
                    Some(_) => Refused::Sasl(why),
                    None => Refused::Tls(why),
                })
            }
        }
    }
}

/// `SaslQuorumAuthLearner.authenticate` with DIGEST-MD5: an empty first token; the leader's
/// challenge (IN_PROGRESS) answered; its SUCCESS checked (rspauth). Returns what the leader
/// sent after it. The caller bounds the time.
pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    user: &str,
    password: &str,
) -> Result<BytesMut, String> {
    let mut client = ClientExchange::new(QUORUM, user, password);
    let mut decoder = AuthDecoder::new(OBSERVER_AUTH_MAX_TOKEN, OBSERVER_AUTH_MAX_PACKETS);
    let mut buf = vec![0u8; 4096];
    let mut rounds = 0usize;
    send(s, &AuthPacket::learner(b"")).await?;
    loop {
        let packet = loop {
            match decoder.next_packet() {
                Ok(Some(p)) => break p,
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
            let n = s.read(&mut buf).await.map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(
                    "the leader closed the connection during the exchange (does \
                            it run quorum.auth.enableSasl?)"
                        .into(),
                );
            }
            decoder.push(buf.get(..n).unwrap_or_default());
        };
        match leader_step(packet, rounds, DIGEST_ROUNDS) {
            Ok(AuthStep::Challenge(challenge)) => {
                let response = client
                    .respond(&challenge, |b| crate::auth::os_random(b))
                    .map_err(|e| format!("the leader's challenge: {e}"))?;
                send(s, &AuthPacket::learner(&response)).await?;
                rounds += 1;
            }
            Ok(AuthStep::Success(token)) => {
                if rounds == 0 {
                    return Err("SUCCESS before any challenge: the leader proved nothing".into());
                }
                client
                    .verify(&token)
                    .map_err(|e| format!("the leader's SUCCESS: {e}"))?;
                return Ok(decoder.into_rest());
            }
            Err(AuthRefused::ByLeader) => {
                return Err(format!(
                    "the leader refused the exchange (ERROR): is the QuorumLearner user \
                     '{user}' and its password one of the leader's QuorumServer users?"
                ))
            }
            Err(AuthRefused::TooManyRounds(n)) => {
                return Err(format!(
                    "the leader sent a challenge more after {n}: DIGEST-MD5 takes one"
                ))
            }
        }
    }
}

/// A read error that is the leader's TLS alert: with TLS 1.3 a client finishes its handshake
/// before the server has checked the client's certificate, so a leader refusing ours says so
/// on the first read, not in the handshake. The caller treats it as a refused handshake when
/// it comes before any packet.
pub fn tls_alert(e: &std::io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    matches!(inner, rustls::Error::AlertReceived(_)).then(|| inner.to_string())
}

async fn send<S: AsyncWrite + Unpin>(s: &mut S, p: &AuthPacket) -> Result<(), String> {
    s.write_all(&p.encode())
        .await
        .map_err(|e| format!("write: {e}"))?;
    s.flush().await.map_err(|e| format!("write: {e}"))
}

#[cfg(test)]
#[path = "secure_test.rs"]
mod tests;
