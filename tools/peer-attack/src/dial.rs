//! The ways an outsider can try to get a link to a member's peer port, and the link once it
//! has one:
//!
//! - `raw`: the peer protocol before links were authenticated — frames of `PeerRequest`
//!   straight after the TCP connect (every attack of issue 34 worked so on the old code);
//! - `claim`: the handshake of `palisade::ensemble::link::dial`, claiming to be a member
//!   (`Security::plain(claimed)`): the member dialed connects back to the claimed member's
//!   configured address, which knows nothing of this dial;
//! - `tls-nocert` / `tls-foreign`: TLS to a member with `sslQuorum`, with no client
//!   certificate or with one another CA signed, then the same hello by hand;
//! - `sasl-wrong`: the handshake with quorum SASL (DIGEST-MD5), as a `QuorumLearner` whose
//!   password is not the ensemble's.
//!
//! The server's certificate is never checked here: an attacker has nothing to lose by
//! trusting it.

use palisade::ensemble::link::{
    self, read_frame, write_frame, Answer, FrameBudget, Greeting, Hello, QuorumSettings, Security,
    MAGIC, VERSION,
};
use palisade::ensemble::raft::rpc::{PeerRequest, PeerResponse};
use palisade::limits::{PEER_FRAME, PEER_HANDSHAKE_FRAME};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::TcpStream;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Way {
    Raw,
    Claim,
    TlsNocert,
    TlsForeign,
    SaslWrong,
}

impl Way {
    pub fn name(self) -> &'static str {
        match self {
            Way::Raw => "raw",
            Way::Claim => "claim",
            Way::TlsNocert => "tls-nocert",
            Way::TlsForeign => "tls-foreign",
            Way::SaslWrong => "sasl-wrong",
        }
    }
}

/// A member's peer port and id (the id goes in a hello's `to`).
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: String,
    pub id: u64,
}

impl std::str::FromStr for Target {
    type Err = String;
    /// `ID@HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, addr) = s
            .split_once('@')
            .ok_or_else(|| format!("{s:?}: expected ID@HOST:PORT"))?;
        Ok(Target {
            id: id.parse().map_err(|e| format!("{s:?}: {e}"))?,
            addr: addr.to_string(),
        })
    }
}

/// What the TLS ways present.
#[derive(Clone, Debug, Default)]
pub struct Creds {
    /// A PEM file with a certificate (chain) and its key, from a CA the members do not trust.
    pub foreign: Option<PathBuf>,
    /// A JAAS file whose `QuorumLearner` password is not the ensemble's (and a `QuorumServer`
    /// section, which the dialer's `Security` must have).
    pub jaas: Option<PathBuf>,
}

pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Duplex for T {}

/// How long a call waits for its answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A link an outsider holds (authenticated or not: for `raw` it is only a TCP connection).
pub struct Peer {
    pub io: BufReader<Box<dyn Duplex>>,
    budget: FrameBudget,
}

impl Peer {
    fn new(io: Box<dyn Duplex>) -> Peer {
        Peer {
            io: BufReader::new(io),
            budget: FrameBudget::default(),
        }
    }

    pub async fn send(&mut self, req: &PeerRequest) -> Result<(), String> {
        write_frame(self.io.get_mut(), req, PEER_FRAME)
            .await
            .map_err(|e| format!("closed: {e}"))
    }

    /// One call: the answer, or why there was none.
    pub async fn call(&mut self, req: &PeerRequest) -> Result<PeerResponse, String> {
        self.send(req).await?;
        self.answer().await
    }

    pub async fn answer(&mut self) -> Result<PeerResponse, String> {
        match tokio::time::timeout(
            CALL_TIMEOUT,
            read_frame::<_, PeerResponse>(&mut self.io, PEER_FRAME, &self.budget),
        )
        .await
        {
            Err(_) => Err(format!("no answer within {CALL_TIMEOUT:?}")),
            Ok(Ok(Some(r))) => Ok(r),
            Ok(Ok(None)) => Err("closed".into()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(format!("garbage answer: {e}"))
            }
            Ok(Err(e)) => Err(format!("closed: {e}")),
        }
    }
}

/// Opens a link to `target` claiming to be member `as_id`; `listen` is the peer address a
/// joining server gives. Err: why the member refused it.
pub async fn open(
    way: Way,
    target: &Target,
    as_id: u64,
    listen: Option<String>,
    creds: &Creds,
) -> Result<Peer, String> {
    let connect = || async {
        let tcp = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect(&target.addr))
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| format!("connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        Ok::<_, String>(tcp)
    };
    match way {
        Way::Raw => Ok(Peer::new(Box::new(connect().await?))),
        Way::Claim | Way::SaslWrong => {
            let sec = if way == Way::SaslWrong {
                let jaas = creds.jaas.as_ref().ok_or("sasl-wrong needs --jaas")?;
                let mut q = QuorumSettings::default();
                q.apply("quorum.auth.enableSasl", "true")?;
                Security::open(as_id, listen, &q, Some(jaas))?
            } else if listen.is_some() {
                Security::open(as_id, listen, &QuorumSettings::default(), None)?
            } else {
                Security::plain(as_id)
            };
            let linked = link::dial(&target.addr, target.id, &sec)
                .await
                .map_err(|e| format!("refused: {e}"))?;
            Ok(Peer::new(Box::new(linked.into_inner())))
        }
        Way::TlsNocert | Way::TlsForeign => {
            let cert = if way == Way::TlsForeign {
                let path = creds
                    .foreign
                    .as_ref()
                    .ok_or("tls-foreign needs --foreign-cert")?;
                Some(load_pem(path)?)
            } else {
                None
            };
            let tcp = connect().await?;
            let tls = tls_connector(cert)?
                .connect(
                    ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?,
                    tcp,
                )
                .await
                .map_err(|e| format!("refused: TLS: {e}"))?;
            let mut peer = Peer::new(Box::new(tls));
            hello(&mut peer, target, as_id, listen).await?;
            Ok(peer)
        }
    }
}

/// The handshake as `link::dial` runs it, over a stream made here.
async fn hello(
    peer: &mut Peer,
    target: &Target,
    as_id: u64,
    listen: Option<String>,
) -> Result<(), String> {
    let mut nonce = [0u8; 16];
    palisade::auth::os_random(&mut nonce);
    let h = Greeting::Link(Hello {
        magic: MAGIC,
        version: VERSION,
        from: as_id,
        to: target.id,
        nonce,
        listen,
        sasl: false,
    });
    write_frame(peer.io.get_mut(), &h, PEER_HANDSHAKE_FRAME)
        .await
        .map_err(|e| format!("refused: TLS or hello: {e}"))?;
    let a = tokio::time::timeout(
        CALL_TIMEOUT,
        read_frame::<_, Answer>(&mut peer.io, PEER_HANDSHAKE_FRAME, &peer.budget),
    )
    .await
    .map_err(|_| "refused: no answer to the hello".to_string())?;
    match a {
        Ok(Some(Answer::Welcome)) => Ok(()),
        Ok(Some(Answer::Refused(why))) => Err(format!("refused: {why}")),
        Ok(Some(other)) => Err(format!("refused: answered {other:?}")),
        Ok(None) => Err("refused: closed".into()),
        Err(e) => Err(format!("refused: {e}")),
    }
}

fn load_pem(
    path: &PathBuf,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let key = PrivateKeyDer::from_pem_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((certs, key))
}

fn tls_connector(
    cert: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<tokio_rustls::TlsConnector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(TrustAnything(provider)));
    let cfg = match cert {
        Some((chain, key)) => b
            .with_client_auth_cert(chain, key)
            .map_err(|e| e.to_string())?,
        None => b.with_no_client_auth(),
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(cfg)))
}

#[derive(Debug)]
struct TrustAnything(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for TrustAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
