//! The links between members on the peer port (`server.N`'s first port), below any Raft:
//! every link proves which member it comes from before it carries a single RPC, and nobody
//! who can merely reach the port can make a member hold more than a few small buffers.
//!
//! A link is a TCP connection, under TLS when `sslQuorum` is on, opened by one member (the
//! dialer) to another. Its handshake (`hello.rs`), within `PEER_HANDSHAKE_DEADLINE`:
//! 1. the dialer greets: its id, the id it means to reach, a nonce;
//! 2. with `quorum.auth.enableSasl`, the member dialed challenges and both prove they know
//!    the `QuorumLearner` password (DIGEST-MD5 with rspauth: mutual);
//! 3. a link with neither a verified certificate nor SASL proves its id by connecting back
//!    (`proof.rs`);
//! 4. the member dialed welcomes it. From then on the link speaks only as that member.
//!
//! The dialer's side is `dial.rs`, the side of the member dialed (its listener and bounds)
//! `accept.rs`; the frames, the gate on connections and the proofs have files of their own.
//!
//! What each way of proving binds is in docs/design/ENSEMBLE.md ("Securing the peer links"). This
//! folder knows nothing of openraft: `raft/network.rs` carries Raft's RPCs over these links.
//!
//! Owns: the peer port's sockets, a link's handshake and framing, and the bounds on what an
//! unauthenticated or authenticated link may hold (src/limits.rs). May not touch: openraft,
//! the core, the state.

mod accept;
mod dial;
mod frame;
mod gate;
mod hello;
mod proof;
mod settings;
mod stream;
mod tls;

pub use accept::{accept, listen};
pub use dial::dial;
pub use frame::{read_frame, write_frame, FrameBudget};
pub use gate::{Gate, Limits};
pub use hello::{Answer, Greeting, Hello, Response, MAGIC, VERSION};
pub use proof::{Nonce, Proofs};
pub use settings::QuorumSettings;
pub use stream::Stream;
pub use tls::QuorumTls;

use crate::auth::digest_md5::{Exchange, Step, Users, QUORUM};
use crate::auth::digest_md5_client::ClientExchange;
use crate::auth::jaas::Section;
use crate::limits::{PEER_HANDSHAKE_DEADLINE, PEER_HANDSHAKE_FRAME};
use crate::net::tls::TLS_HANDSHAKE_BYTE;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio_util::either::Either;

// A handshake frame holds a SASL token (and its framing) whole.
const _: () = assert!(PEER_HANDSHAKE_FRAME as usize >= 2 * crate::auth::digest_md5::MAX_TOKEN);

/// A link once its handshake is done: read through a buffer.
pub type Link = BufReader<Stream>;

/// Who this member is on its links, and what it asks of them.
pub struct Security {
    me: u64,
    /// This member's peer address, told to a member that may not know it (a joining server).
    listen: Option<String>,
    tls: Option<Arc<QuorumTls>>,
    /// `sslQuorum`: dial over TLS.
    dial_tls: bool,
    /// Accept plaintext links (`sslQuorum` off, or `portUnification`).
    accept_plain: bool,
    sasl: Option<Sasl>,
    learner_require_sasl: bool,
    server_require_sasl: bool,
    proofs: Proofs,
    gate: Gate,
    budget: FrameBudget,
    refusals: RateLimited,
}

/// `quorum.auth.enableSasl`: the users a member checks links against (`QuorumServer`), and
/// the user it dials as (`QuorumLearner`).
struct Sasl {
    users: Users,
    learner: (String, String),
}

/// How a link proved which member it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proven {
    /// A certificate the trust store signs (naming the member's host, unless
    /// `ssl.quorum.hostnameVerification=false`).
    Certificate,
    /// A SASL exchange, as this `QuorumServer` user.
    Sasl(String),
    /// Its address, by connecting back.
    Address,
}

/// The other end of an accepted link.
pub struct Peer {
    pub id: u64,
    /// Where this member reaches it (its configuration's address, or a joiner's own).
    pub addr: String,
    pub proven: Proven,
    /// No configuration of this member names it: it may only ask to join.
    pub joiner: bool,
    _admitted: gate::Admitted,
}

/// What the member dialed knows of the others.
pub trait Directory: Send + Sync + 'static {
    /// Where this member reaches server `id`, if it is one it knows (its zoo.cfg, the
    /// configuration in force, Raft's membership).
    fn addr_of(&self, id: u64) -> Option<String>;
    /// Whether a server no configuration names may link to ask to join (reconfigEnabled).
    fn open_to_joiners(&self) -> bool;
}

impl Security {
    /// Links with no credential: each proves its address by connecting back.
    pub fn plain(me: u64) -> Arc<Security> {
        Arc::new(Security::bare(me, None))
    }

    fn bare(me: u64, listen: Option<String>) -> Security {
        Security {
            me,
            listen,
            tls: None,
            dial_tls: false,
            accept_plain: true,
            sasl: None,
            learner_require_sasl: false,
            server_require_sasl: false,
            proofs: Proofs::default(),
            gate: Gate::default(),
            budget: FrameBudget::default(),
            refusals: RateLimited::default(),
        }
    }

    /// From zoo.cfg's quorum keys (TLS stores and the JAAS file are read here).
    pub fn open(
        me: u64,
        listen: Option<String>,
        q: &QuorumSettings,
        jaas: Option<&Path>,
    ) -> Result<Arc<Security>, String> {
        q.validate()?;
        let mut s = Security::bare(me, listen);
        if q.tls_on() {
            s.tls = Some(QuorumTls::new(
                q.tls.clone(),
                q.hostname_verification,
                q.reload_cert_files,
            )?);
        }
        s.dial_tls = q.ssl_quorum;
        s.accept_plain = !q.ssl_quorum || q.port_unification;
        if q.sasl {
            s.sasl = Some(load_sasl(q, jaas)?);
        }
        s.learner_require_sasl = q.learner_require_sasl;
        s.server_require_sasl = q.server_require_sasl;
        Ok(Arc::new(s))
    }

    /// Replaces the admission bounds (tests).
    pub fn with_limits(mut self: Arc<Self>, limits: Limits) -> Arc<Self> {
        if let Some(s) = Arc::get_mut(&mut self) {
            s.gate = Gate::new(limits);
        }
        self
    }

    pub fn me(&self) -> u64 {
        self.me
    }

    /// The TLS configs, to reload (`sslQuorumReloadCertFiles`, SIGHUP).
    pub fn tls(&self) -> Option<Arc<QuorumTls>> {
        self.tls.clone()
    }

    pub fn budget(&self) -> &FrameBudget {
        &self.budget
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// A refusal, logged at most once a second (an outsider can cause many).
    fn refused(&self, source: SocketAddr, why: &str) {
        if self.refusals.ready() {
            tracing::warn!(%source, why, "peer link refused");
        }
    }
}

fn load_sasl(q: &QuorumSettings, jaas: Option<&Path>) -> Result<Sasl, String> {
    let (path, sections) = jaas_sections(jaas)?;
    let users: Users = digest_options(&sections, &path, &q.server_context)?
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_string(), v)))
        .collect();
    if users.is_empty() {
        return Err(format!(
            "JAAS section '{}' lists no user_NAME: no member could link",
            q.server_context
        ));
    }
    let learner = learner_in(&sections, &path, q)?;
    // A member dials with its QuorumLearner user and is dialed by members checking theirs
    // against QuorumServer. One whose own QuorumServer refuses its QuorumLearner would be
    // refused by members configured alike, yet could still be dialed (it knows the
    // QuorumServer password): a follower that cannot vote, forward or open a session.
    // ZooKeeper runs it and it never joins; here it does not start, and says why.
    if users.get(&learner.0) != Some(&learner.1) {
        return Err(format!(
            "JAAS file {}: the '{}' user '{}' and its password are not among the '{}' \
             users: members checking links against the same users would refuse this \
             member's links (a wrong QuorumLearner password?)",
            path.display(),
            q.learner_context,
            learner.0,
            q.server_context
        ));
    }
    Ok(Sasl { users, learner })
}

/// The user and password `quorum.auth.learner.saslLoginContext` (`QuorumLearner`) names in
/// the JAAS file: what a learner authenticates with. The observer of a ZooKeeper ensemble
/// (src/migrate/observe/) needs these alone: nobody dials it.
pub fn learner_credentials(
    q: &QuorumSettings,
    jaas: Option<&Path>,
) -> Result<(String, String), String> {
    let (path, sections) = jaas_sections(jaas)?;
    learner_in(&sections, &path, q)
}

fn jaas_sections(jaas: Option<&Path>) -> Result<(std::path::PathBuf, Vec<Section>), String> {
    let path = jaas.ok_or_else(|| {
        "quorum.auth.enableSasl=true needs a JAAS file (jaasLoginConfig, or \
         -Djava.security.auth.login.config in SERVER_JVMFLAGS) with QuorumServer and \
         QuorumLearner sections"
            .to_string()
    })?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the JAAS file {}: {e}", path.display()))?;
    let sections = crate::auth::jaas::parse(&text)
        .map_err(|e| format!("JAAS file {}: {e}", path.display()))?;
    Ok((path.to_path_buf(), sections))
}

/// A section's options, every module DIGEST-MD5's.
fn digest_options(
    sections: &[Section],
    path: &Path,
    name: &str,
) -> Result<Vec<(String, String)>, String> {
    let section = sections
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("no JAAS section '{name}' in {}", path.display()))?;
    let mut out = Vec::new();
    for m in &section.modules {
        if m.class != crate::auth::DIGEST_LOGIN_MODULE {
            return Err(format!(
                "JAAS section '{name}' uses {}: only {} (DIGEST-MD5) is supported",
                m.class,
                crate::auth::DIGEST_LOGIN_MODULE
            ));
        }
        out.extend(m.options.iter().cloned());
    }
    Ok(out)
}

fn learner_in(
    sections: &[Section],
    path: &Path,
    q: &QuorumSettings,
) -> Result<(String, String), String> {
    let learner = digest_options(sections, path, &q.learner_context)?;
    let get = |k: &str| {
        learner
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("JAAS section '{}' has no {k}", q.learner_context))
    };
    Ok((get("username")?, get("password")?))
}

/// At most one `ready` a second.
#[derive(Default)]
struct RateLimited(AtomicU64);

impl RateLimited {
    fn ready(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.0.swap(now, Ordering::Relaxed) != now
    }
}

fn refused(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why.into())
}

fn invalid(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.into())
}

async fn within<T>(
    what: &str,
    f: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    tokio::time::timeout(PEER_HANDSHAKE_DEADLINE, f)
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{what} did not finish within {PEER_HANDSHAKE_DEADLINE:?}"),
            )
        })?
}

async fn connect(addr: &str, sec: &Security) -> io::Result<Stream> {
    let tcp = TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    if !sec.dial_tls {
        return Ok(Either::Left(tcp));
    }
    let tls = sec
        .tls
        .as_ref()
        .ok_or_else(|| io::Error::other("sslQuorum without TLS configs"))?;
    let name = tls::server_name(addr).map_err(io::Error::other)?;
    let s = tls.connector().connect(name, tcp).await?;
    Ok(Either::Right(Box::new(tokio_rustls::TlsStream::Client(s))))
}

async fn read<T: for<'a> serde::Deserialize<'a>>(link: &mut Link, sec: &Security) -> io::Result<T> {
    read_frame(link, PEER_HANDSHAKE_FRAME, &sec.budget)
        .await?
        .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
}

async fn send<T: serde::Serialize>(link: &mut Link, msg: &T) -> io::Result<()> {
    write_frame(link.get_mut(), msg, PEER_HANDSHAKE_FRAME).await
}

#[cfg(test)]
#[path = "link_test.rs"]
pub(crate) mod tests;
