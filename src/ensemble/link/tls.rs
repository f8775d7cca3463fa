//! TLS on the peer links (`sslQuorum`): mutual TLS on rustls, both ends verified against
//! `ssl.quorum.trustStore`, each presenting `ssl.quorum.keyStore`. With
//! `ssl.quorum.hostnameVerification` (the default) the certificate a member presents must
//! name the host of its `server.N` line, whichever end dialed: that is what fixes which
//! server id a link may speak as (the accepting end checks it against the id the link claims,
//! the dialing end against the member it dialed). The configs are rebuilt from the files on
//! SIGHUP or, with `sslQuorumReloadCertFiles`, when they change (without it a changed file is
//! not read until SIGHUP, as ZooKeeper reads it only with that key); a link keeps the config
//! it was made with.

use crate::net::tls::{load_key_store, load_trust_store, Reload, TlsConfig};
use parking_lot::RwLock;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::path::PathBuf;
use std::sync::Arc;

/// The two configs a member's links use, built from the same stores.
pub struct QuorumTls {
    cfg: TlsConfig,
    hostname_verification: bool,
    /// `sslQuorumReloadCertFiles`: the store files are watched.
    watch_files: bool,
    current: RwLock<Configs>,
}

/// The acceptor's and the connector's configs, and the connector's certificate check.
type Configs = (
    Arc<ServerConfig>,
    Arc<ClientConfig>,
    Arc<dyn ServerCertVerifier>,
);

impl QuorumTls {
    pub fn new(
        cfg: TlsConfig,
        hostname_verification: bool,
        watch_files: bool,
    ) -> Result<Arc<Self>, String> {
        let pair = build(&cfg, hostname_verification)?;
        Ok(Arc::new(QuorumTls {
            cfg,
            hostname_verification,
            watch_files,
            current: RwLock::new(pair),
        }))
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.read().0.clone())
    }

    pub fn connector(&self) -> tokio_rustls::TlsConnector {
        tokio_rustls::TlsConnector::from(self.current.read().1.clone())
    }

    /// A connector whose certificate check, where the certificate does not name the host
    /// dialed, also takes one naming `ip`, the address dialed: what ZooKeeper's learner
    /// accepts (`ZKTrustManager` checks the IP address, then the host name). For the observer
    /// of a ZooKeeper ensemble; Palisade's own links bind a certificate to the host alone.
    pub fn connector_or_ip(&self, ip: std::net::IpAddr) -> tokio_rustls::TlsConnector {
        let (_, client, verifier) = &*self.current.read();
        let mut c = ClientConfig::clone(client);
        c.dangerous().set_certificate_verifier(Arc::new(NameRule {
            inner: verifier.clone(),
            wrong_name: WrongName::OrIp(ServerName::IpAddress(ip.into())),
        }));
        tokio_rustls::TlsConnector::from(Arc::new(c))
    }

    pub fn hostname_verification(&self) -> bool {
        self.hostname_verification
    }
}

impl Reload for QuorumTls {
    /// The files the reloader watches: none without `sslQuorumReloadCertFiles` (SIGHUP
    /// still reloads).
    fn files(&self) -> Vec<PathBuf> {
        if self.watch_files {
            self.cfg.files()
        } else {
            Vec::new()
        }
    }

    fn reload(&self, why: &str) {
        match build(&self.cfg, self.hostname_verification) {
            Ok(pair) => {
                *self.current.write() = pair;
                tracing::info!(why, "quorum TLS certificates reloaded");
            }
            Err(e) => tracing::warn!(
                why,
                error = %e,
                "quorum TLS certificates not reloaded; keeping the old ones"
            ),
        }
    }
}

fn build(cfg: &TlsConfig, hostname_verification: bool) -> Result<Configs, String> {
    let provider = cfg.provider()?;
    let versions = cfg.versions()?;
    let quorum = |e: String| e.replace("ssl.", "ssl.quorum.");
    let (certs, key) = load_key_store(&cfg.key_store).map_err(quorum)?;
    let mut roots = rustls::RootCertStore::empty();
    for c in load_trust_store(&cfg.trust_store).map_err(quorum)? {
        roots
            .add(c)
            .map_err(|e| format!("ssl.quorum.trustStore.location: {e}"))?;
    }
    let roots = Arc::new(roots);
    let client_verifier =
        WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| format!("ssl.quorum.trustStore.location: {e}"))?;
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("ssl.quorum.enabledProtocols: {e}"))?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| format!("ssl.quorum.keyStore.location: {e}"))?;
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| format!("ssl.quorum.trustStore.location: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if hostname_verification {
        webpki
    } else {
        Arc::new(NameRule {
            inner: webpki,
            wrong_name: WrongName::Accept,
        })
    };
    let client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("ssl.quorum.enabledProtocols: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_client_auth_cert(certs, key)
        .map_err(|e| format!("ssl.quorum.keyStore.location: {e}"))?;
    Ok((Arc::new(server), Arc::new(client), verifier))
}

/// The name a link dials, for the certificate check: the host of `host:port` (brackets of
/// an IPv6 literal removed).
pub fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = match addr.rsplit_once(':') {
        Some((h, _)) => h,
        None => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| format!("peer host {host:?}: {e}"))
}

/// Whether a (chain-verified) certificate names the host of `addr`.
pub fn names_host(cert: &CertificateDer<'_>, addr: &str) -> bool {
    let Ok(name) = server_name(addr) else {
        return false;
    };
    ParsedCertificate::try_from(cert)
        .and_then(|c| rustls::client::verify_server_name(&c, &name))
        .is_ok()
}

/// A chain-verifying check with a rule for a certificate that does not name the host dialed.
#[derive(Debug)]
struct NameRule {
    inner: Arc<dyn ServerCertVerifier>,
    wrong_name: WrongName,
}

#[derive(Debug)]
enum WrongName {
    /// `ssl.quorum.hostnameVerification=false`: the chain is verified, the name is not (any
    /// member's certificate may speak as any member, as in ZooKeeper with that setting).
    Accept,
    /// Also take a certificate naming this, the IP address dialed (`QuorumTls::connector_or_ip`).
    OrIp(ServerName<'static>),
}

impl ServerCertVerifier for NameRule {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verify = |name: &ServerName<'_>| {
            self.inner
                .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
        };
        let first = verify(server_name);
        let names_another = matches!(
            first,
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. },
            ))
        );
        match &self.wrong_name {
            _ if !names_another => first,
            WrongName::Accept => Ok(ServerCertVerified::assertion()),
            WrongName::OrIp(ip) if server_name != ip => verify(ip),
            WrongName::OrIp(_) => first,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
