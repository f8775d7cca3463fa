//! TLS for clients: ZooKeeper's `ssl.*` keys turned into a rustls `ServerConfig` (ring
//! provider). Key and trust stores are PEM files or PKCS12 archives; JKS is refused with an
//! error naming the two. The acceptor's config is swapped when the store files change or on
//! SIGHUP; a connection keeps the config it was accepted with.

use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// `ssl.clientAuth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    None,
    Want,
    /// ZooKeeper's default.
    #[default]
    Need,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    Pem,
    Pkcs12,
}

/// `ssl.keyStore.*` or `ssl.trustStore.*`.
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub location: Option<PathBuf>,
    pub password: Option<String>,
    /// As written; `None` means: from the file name's extension, as ZooKeeper does.
    pub type_: Option<String>,
}

impl Store {
    /// The store's type: `ssl.*.type`, else the extension (.pem; .p12/.pfx), else PEM.
    pub fn kind(&self) -> Result<StoreType, String> {
        let ext = self
            .location
            .as_ref()
            .and_then(|p| p.extension())
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let name = match (&self.type_, ext.as_deref()) {
            (Some(t), _) => t.to_ascii_uppercase(),
            (None, Some("p12" | "pfx" | "pkcs12")) => "PKCS12".into(),
            (None, Some("jks")) => "JKS".into(),
            (None, Some("bcfks")) => "BCFKS".into(),
            _ => "PEM".into(),
        };
        match name.as_str() {
            "PEM" => Ok(StoreType::Pem),
            "PKCS12" => Ok(StoreType::Pkcs12),
            other => Err(format!(
                "store type {other} ({}) is not supported: use PEM or PKCS12 (convert a JKS \
                 store with `keytool -importkeystore -srcstoretype JKS -deststoretype PKCS12`)",
                self.location
                    .as_ref()
                    .map_or("no location".into(), |p| p.display().to_string())
            )),
        }
    }
}

/// The `ssl.*` keys for the client port.
#[derive(Debug, Clone, Default)]
pub struct TlsConfig {
    pub key_store: Store,
    pub trust_store: Store,
    pub client_auth: ClientAuth,
    /// `ssl.enabledProtocols` (or `ssl.protocol`); empty: TLSv1.2 and TLSv1.3.
    pub enabled_protocols: Vec<String>,
    /// `ssl.ciphersuites`; empty: rustls's defaults.
    pub ciphersuites: Vec<String>,
}

/// A comma-separated list, as ZooKeeper splits one: each item trimmed, empty ones dropped.
pub fn comma_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

impl TlsConfig {
    /// Applies one `ssl.` key (prefix `zookeeper.` already stripped). `Ok(false)`: not a key
    /// of this block.
    pub fn apply(&mut self, key: &str, v: &str) -> Result<bool, String> {
        let v = v.trim();
        let opt = || (!v.is_empty()).then(|| v.to_string());
        match key {
            "ssl.keyStore.location" => self.key_store.location = opt().map(PathBuf::from),
            "ssl.keyStore.password" => self.key_store.password = opt(),
            "ssl.keyStore.type" => self.key_store.type_ = opt(),
            "ssl.trustStore.location" => self.trust_store.location = opt().map(PathBuf::from),
            "ssl.trustStore.password" => self.trust_store.password = opt(),
            "ssl.trustStore.type" => self.trust_store.type_ = opt(),
            "ssl.clientAuth" => {
                self.client_auth = match v.to_ascii_lowercase().as_str() {
                    "none" => ClientAuth::None,
                    "want" => ClientAuth::Want,
                    "need" | "" => ClientAuth::Need,
                    _ => {
                        return Err(format!(
                            "invalid value for ssl.clientAuth: {v:?} (none, want or need)"
                        ))
                    }
                }
            }
            "ssl.enabledProtocols" => self.enabled_protocols = comma_list(v),
            "ssl.protocol" => {
                if self.enabled_protocols.is_empty() {
                    self.enabled_protocols = comma_list(v)
                }
            }
            "ssl.ciphersuites" => self.ciphersuites = comma_list(v),
            // Accepted: client-side or JVM-specific settings with no server-side meaning here.
            "ssl.hostnameVerification"
            | "ssl.clientHostnameVerification"
            | "ssl.handshakeDetectionTimeoutMillis"
            | "ssl.context.supplier.class"
            | "ssl.authProvider"
            | "ssl.crl"
            | "ssl.ocsp" => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks what can be checked without reading the files.
    pub fn validate(&self) -> Result<(), String> {
        if self.key_store.location.is_none() {
            return Err(
                "secureClientPort (or client.portUnification) needs ssl.keyStore.location".into(),
            );
        }
        self.key_store.kind()?;
        if self.trust_store.location.is_some() {
            self.trust_store.kind()?;
        } else if self.client_auth != ClientAuth::None {
            return Err(format!(
                "ssl.clientAuth={} needs ssl.trustStore.location (the CA that signs client \
                 certificates), or set ssl.clientAuth=none",
                if self.client_auth == ClientAuth::Need {
                    "need (ZooKeeper's default)"
                } else {
                    "want"
                }
            ));
        }
        self.provider()?;
        self.versions()?;
        Ok(())
    }

    pub(crate) fn versions(
        &self,
    ) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
        if self.enabled_protocols.is_empty() {
            return Ok(rustls::ALL_VERSIONS.to_vec());
        }
        let mut out = Vec::new();
        for p in &self.enabled_protocols {
            match p.as_str() {
                "TLSv1.3" => out.push(&rustls::version::TLS13),
                "TLSv1.2" => out.push(&rustls::version::TLS12),
                // ZooKeeper's generic name: whatever the JVM's best is.
                "TLS" => out.extend(rustls::ALL_VERSIONS.iter().copied()),
                other => tracing::warn!(
                    protocol = other,
                    "ssl.enabledProtocols: not supported (only TLSv1.2 and TLSv1.3); ignored"
                ),
            }
        }
        if out.is_empty() {
            return Err(format!(
                "ssl.enabledProtocols={} names no supported protocol (TLSv1.2, TLSv1.3)",
                self.enabled_protocols.join(",")
            ));
        }
        out.dedup_by_key(|v| v.version);
        Ok(out)
    }

    /// The ring provider, cut down to `ssl.ciphersuites` (IANA names as Java uses them).
    pub(crate) fn provider(&self) -> Result<Arc<CryptoProvider>, String> {
        let mut p = rustls::crypto::ring::default_provider();
        if !self.ciphersuites.is_empty() {
            let iana = |s: &rustls::SupportedCipherSuite| {
                let n = s.suite().as_str().unwrap_or("");
                n.strip_prefix("TLS13_")
                    .map_or(n.to_string(), |rest| format!("TLS_{rest}"))
            };
            for c in &self.ciphersuites {
                if !p.cipher_suites.iter().any(|s| iana(s) == *c) {
                    tracing::warn!(ciphersuite = %c, "ssl.ciphersuites: not supported; ignored");
                }
            }
            p.cipher_suites
                .retain(|s| self.ciphersuites.iter().any(|c| *c == iana(s)));
            if p.cipher_suites.is_empty() {
                return Err(format!(
                    "ssl.ciphersuites={} names no supported cipher suite",
                    self.ciphersuites.join(",")
                ));
            }
        }
        Ok(Arc::new(p))
    }

    /// Reads the stores and builds the server config.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, String> {
        let provider = self.provider()?;
        let (certs, key) = load_key_store(&self.key_store)?;
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&self.versions()?)
            .map_err(|e| format!("TLS protocol versions: {e}"))?;
        let builder = match (self.client_auth, &self.trust_store.location) {
            (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
            (auth, Some(_)) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in load_trust_store(&self.trust_store)? {
                    roots
                        .add(c)
                        .map_err(|e| format!("trust store certificate: {e}"))?;
                }
                let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let v = if auth == ClientAuth::Want {
                    v.allow_unauthenticated()
                } else {
                    v
                };
                builder.with_client_cert_verifier(
                    v.build()
                        .map_err(|e| format!("ssl.trustStore.location: {e}"))?,
                )
            }
        };
        let cfg = builder
            .with_single_cert(certs, key)
            .map_err(|e| format!("ssl.keyStore.location: {e}"))?;
        Ok(Arc::new(cfg))
    }

    pub(crate) fn files(&self) -> Vec<PathBuf> {
        [&self.key_store.location, &self.trust_store.location]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

fn read(store: &Store, what: &str) -> Result<Vec<u8>, String> {
    let path = store
        .location
        .as_ref()
        .ok_or_else(|| format!("ssl.{what}.location is not set"))?;
    std::fs::read(path).map_err(|e| format!("ssl.{what}.location {}: {e}", path.display()))
}

fn pkcs12(
    store: &Store,
    what: &str,
    policy: p12_keystore::Pkcs12ImportPolicy,
) -> Result<p12_keystore::KeyStore, String> {
    let data = read(store, what)?;
    p12_keystore::KeyStore::from_pkcs12(&data, store.password.as_deref().unwrap_or(""), policy)
        .map_err(|e| {
            format!(
                "ssl.{what}.location {}: not a readable PKCS12 store (wrong ssl.{what}.password?): {e}",
                store.location.as_deref().unwrap_or(Path::new("")).display()
            )
        })
}

pub(crate) type KeyPair = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

pub(crate) fn load_key_store(store: &Store) -> Result<KeyPair, String> {
    const W: &str = "keyStore";
    match store.kind()? {
        StoreType::Pem => {
            let data = read(store, W)?;
            if data
                .windows(29)
                .any(|w| w == b"BEGIN ENCRYPTED PRIVATE KEY--")
            {
                return Err(
                    "ssl.keyStore.location: the PEM private key is encrypted; Palisade \
                            reads unencrypted PEM keys (`openssl pkcs8 -topk8 -nocrypt`) or a \
                            password-protected PKCS12 store"
                        .into(),
                );
            }
            let certs = CertificateDer::pem_slice_iter(&data)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("ssl.keyStore.location: {e}"))?;
            if certs.is_empty() {
                return Err("ssl.keyStore.location: no CERTIFICATE in the PEM file".into());
            }
            let key = PrivateKeyDer::from_pem_slice(&data)
                .map_err(|e| format!("ssl.keyStore.location: no usable private key: {e}"))?;
            Ok((certs, key))
        }
        StoreType::Pkcs12 => {
            let ks = pkcs12(store, W, p12_keystore::Pkcs12ImportPolicy::Strict)?;
            let (_, chain) = ks.private_key_chain().ok_or_else(|| {
                "ssl.keyStore.location: the PKCS12 store has no private key with its certificate"
                    .to_string()
            })?;
            let certs = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
            Ok((certs, key))
        }
    }
}

pub(crate) fn load_trust_store(store: &Store) -> Result<Vec<CertificateDer<'static>>, String> {
    const W: &str = "trustStore";
    let certs: Vec<CertificateDer<'static>> = match store.kind()? {
        StoreType::Pem => CertificateDer::pem_slice_iter(&read(store, W)?)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("ssl.trustStore.location: {e}"))?,
        StoreType::Pkcs12 => {
            // Raw: certificates with or without Java's trusted-usage attribute (openssl's
            // `pkcs12 -export -nokeys` writes none).
            let ks = pkcs12(store, W, p12_keystore::Pkcs12ImportPolicy::Raw)?;
            let mut out = Vec::new();
            for (_, e) in ks.entries() {
                match e {
                    p12_keystore::KeyStoreEntry::Certificate(c) => {
                        out.push(CertificateDer::from(c.as_der().to_vec()))
                    }
                    p12_keystore::KeyStoreEntry::PrivateKeyChain(ch) => out.extend(
                        ch.certs()
                            .iter()
                            .map(|c| CertificateDer::from(c.as_der().to_vec())),
                    ),
                    p12_keystore::KeyStoreEntry::Secret(_) => {}
                }
            }
            out
        }
    };
    if certs.is_empty() {
        return Err("ssl.trustStore.location: no certificate in the trust store".into());
    }
    Ok(certs)
}

/// The config new TLS connections are accepted with; swapped on reload.
pub struct Acceptor {
    cfg: TlsConfig,
    current: RwLock<Arc<ServerConfig>>,
}

impl Acceptor {
    pub fn new(cfg: TlsConfig) -> Result<Arc<Self>, String> {
        let sc = cfg.server_config()?;
        Ok(Arc::new(Acceptor {
            cfg,
            current: RwLock::new(sc),
        }))
    }

    /// The acceptor for one new connection.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.read().clone())
    }

    /// Rereads the stores; on an error the old config stays.
    pub fn reload(&self, why: &str) {
        match self.cfg.server_config() {
            Ok(sc) => {
                *self.current.write() = sc;
                tracing::info!(why, "TLS certificates reloaded");
            }
            Err(e) => {
                tracing::warn!(why, error = %e, "TLS certificates not reloaded; keeping the old ones")
            }
        }
    }
}

impl Reload for Acceptor {
    fn files(&self) -> Vec<PathBuf> {
        self.cfg.files()
    }
    fn reload(&self, why: &str) {
        Acceptor::reload(self, why)
    }
}

/// Something built from certificate files that can be built again from them.
pub trait Reload: Send + Sync + 'static {
    fn files(&self) -> Vec<PathBuf>;
    fn reload(&self, why: &str);
}

fn fingerprint(files: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    files
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// Reloads `target` on SIGHUP and when a file's mtime or size changes (checked every
/// `every`).
pub fn spawn_reloader(target: Arc<dyn Reload>, every: Duration) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = signal(SignalKind::hangup()).ok();
        let files = target.files();
        let mut seen = fingerprint(&files);
        let mut t = tokio::time::interval(every);
        loop {
            let hup_fired = tokio::select! {
                _ = t.tick() => false,
                Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => true,
            };
            let now = fingerprint(&files);
            if hup_fired {
                seen = now;
                target.reload("SIGHUP");
            } else if now != seen {
                // Let a writer finish: reload once the files have stopped changing.
                tokio::time::sleep(crate::limits::TLS_RELOAD_SETTLE).await;
                let settled = fingerprint(&files);
                if settled == now {
                    seen = now;
                    target.reload("store file changed");
                }
            }
        }
    });
}

/// The first byte of a TLS ClientHello record (handshake content type).
pub const TLS_HANDSHAKE_BYTE: u8 = 0x16;

/// The `x509` identity of a verified client certificate: its subject as Java's
/// `X500Principal.getName()` writes it (RFC 2253: last RDN first, `,` between RDNs, `+` within
/// one), which is the id ZooKeeper's X509AuthenticationProvider gives the connection.
pub fn x509_id(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, c) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let mut out = String::new();
    let rdns: Vec<_> = c.subject().iter().collect();
    for (i, rdn) in rdns.into_iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let oid = atv.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            match (keyword, atv.as_str()) {
                (Some(k), Ok(v)) => {
                    out.push_str(k);
                    out.push('=');
                    escape_rfc2253(v, &mut out);
                }
                _ => {
                    // Java: the dotted OID and `#` + the value's DER in hex.
                    out.push_str(&oid);
                    out.push_str("=#");
                    let v = atv.attr_value();
                    let data = v.data;
                    let mut der = vec![v.tag().0 as u8];
                    match data.len() {
                        n @ 0..=127 => der.push(n as u8),
                        n @ 128..=255 => der.extend([0x81, n as u8]),
                        n => der.extend([0x82, (n >> 8) as u8, n as u8]),
                    }
                    der.extend_from_slice(data);
                    for b in der {
                        out.push_str(&format!("{b:02x}"));
                    }
                }
            }
        }
    }
    Some(out)
}

fn escape_rfc2253(v: &str, out: &mut String) {
    let n = v.chars().count();
    for (i, ch) in v.chars().enumerate() {
        let special = matches!(ch, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (ch == '#' || ch == ' '))
            || (i + 1 == n && ch == ' ');
        if special {
            out.push('\\');
        }
        out.push(ch);
    }
}
