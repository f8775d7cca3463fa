//! Every zoo.cfg key Palisade honours, one row each: the single source of the configuration
//! reference (docs/configuration.md is generated from it by
//! `palisade --print-config-reference`) and of the effective settings `--check-config`
//! prints. The tests below fail when a key the parsers take is missing here, when a row names
//! a key no parser takes, when a row's default is not the default the code runs with, and
//! when the checked-in page differs from the table.
//!
//! To add a key: add its parser arm (its area's file in src/config/, or the block's own `apply`)
//! and one row here.

use super::Config;
use std::fmt::Display;

/// The kind of value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `true`/`false` (ZooKeeper's Java booleans; some keys also take `yes`/`no`).
    Bool,
    /// A whole number; the row's text says the unit.
    Int,
    Text,
    Path,
    /// Comma-separated.
    List,
    /// A Java class name (ZooKeeper's plug-in points; Palisade recognises the listed ones).
    Class,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "integer",
            Kind::Text => "text",
            Kind::Path => "path",
            Kind::List => "list",
            Kind::Class => "class",
        }
    }
}

/// Which part of the server a key configures (a section of the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    Basics,
    Storage,
    Limits,
    Ensemble,
    ClientTls,
    Authentication,
    QuorumSecurity,
    Admin,
}

impl Area {
    pub const ALL: [Area; 8] = [
        Area::Basics,
        Area::Storage,
        Area::Limits,
        Area::Ensemble,
        Area::ClientTls,
        Area::Authentication,
        Area::QuorumSecurity,
        Area::Admin,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Area::Basics => "Basics: ports, sessions, clients",
            Area::Storage => "Storage: data directories, snapshots, purging",
            Area::Limits => "Limits and tuning",
            Area::Ensemble => "Ensemble",
            Area::ClientTls => "Client TLS",
            Area::Authentication => "Client authentication (SASL, super users)",
            Area::QuorumSecurity => "Quorum security (links between members)",
            Area::Admin => "AdminServer and Prometheus metrics",
        }
    }
}

/// One zoo.cfg key.
pub struct Key {
    /// As written in zoo.cfg (a `zookeeper.` prefix is also accepted). `server.N`,
    /// `authProvider.N` and `superUser.*` stand for a family of keys.
    pub name: &'static str,
    pub kind: Kind,
    /// Palisade's default. In parentheses when it is derived or not a literal value; otherwise
    /// exactly what `value` gives for the default configuration (a test checks).
    pub default: &'static str,
    /// ZooKeeper 3.8's default where it differs; `Some(PALISADE_ONLY)` for Palisade's own keys.
    pub zookeeper: Option<&'static str>,
    pub area: Area,
    pub about: &'static str,
    /// The effective value in a configuration (what `--check-config` prints).
    pub value: fn(&Config) -> String,
}

/// The `zookeeper` column of a key ZooKeeper does not have.
pub const PALISADE_ONLY: &str = "— (Palisade's own)";
/// The `about` text of a key accepted so an existing zoo.cfg starts, with no effect.
const NO_EFFECT: &str = "Accepted for compatibility; no effect.";
const UNSET: &str = "(unset)";

fn opt<T: Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| UNSET.to_string(), |v| v.to_string())
}

fn path(v: &Option<std::path::PathBuf>) -> String {
    v.as_ref()
        .map_or_else(|| UNSET.to_string(), |p| p.display().to_string())
}

fn secret(v: &Option<String>) -> String {
    if v.is_some() { "(set)" } else { UNSET }.to_string()
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        UNSET.to_string()
    } else {
        v.join(",")
    }
}

fn protocols(v: &[String]) -> String {
    if v.is_empty() {
        "TLSv1.2,TLSv1.3".into()
    } else {
        v.join(",")
    }
}

fn suites(v: &[String]) -> String {
    if v.is_empty() {
        "(rustls's defaults)".into()
    } else {
        v.join(",")
    }
}

/// `dynamicConfigFile` as written in the configuration text (its lines become `members`).
fn dynamic_file(c: &Config) -> String {
    let line = c.admin.initial_text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        let k = k.trim();
        (k.strip_prefix("zookeeper.").unwrap_or(k) == "dynamicConfigFile").then(|| v.trim())
    });
    line.map_or_else(|| UNSET.into(), str::to_string)
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

fn auth(a: crate::net::tls::ClientAuth) -> String {
    use crate::net::tls::ClientAuth;
    match a {
        ClientAuth::None => "none",
        ClientAuth::Want => "want",
        ClientAuth::Need => "need",
    }
    .to_string()
}

/// What `value` gives for a key with no effect (left out of the effective settings).
const NO_VALUE: &str = "(no effect)";

fn none(_: &Config) -> String {
    NO_VALUE.to_string()
}

macro_rules! key {
    ($name:expr, $kind:ident, $default:expr, $zk:expr, $area:ident, $about:expr, $value:expr) => {
        Key {
            name: $name,
            kind: Kind::$kind,
            default: $default,
            zookeeper: $zk,
            area: Area::$area,
            about: $about,
            value: $value,
        }
    };
}

/// Every key, grouped by area. One row a key.
#[rustfmt::skip]
pub const KEYS: &[Key] = &[
    // Basics
    key!("tickTime", Int, "3000", None, Basics, "The basic time unit, in ms: session timeouts and initLimit/syncLimit are counted in ticks.", |c| c.tick_time.to_string()),
    key!("clientPort", Int, "2181", None, Basics, "The port clients connect to. A config with only secureClientPort has no plaintext listener. `--port` overrides it.", |c| if c.plaintext_listener() { c.client_port.to_string() } else { "(none: TLS only)".into() }),
    key!("clientPortAddress", Text, "127.0.0.1", Some("0.0.0.0 (every interface)"), Basics, "The address the client port listens on. Palisade listens on loopback unless told otherwise. `--bind` overrides it.", |c| c.client_port_address.clone()),
    key!("dataDir", Path, "data", Some("(none: required)"), Basics, "Where snapshots (and, without dataLogDir, the log) are kept, and `myid` for an ensemble member. `--data-dir` overrides it.", |c| c.data_dir.display().to_string()),
    key!("dataLogDir", Path, "(dataDir)", None, Storage, "A separate directory (ideally a separate disk) for the write-ahead log.", |c| c.data_log_dir.as_ref().unwrap_or(&c.data_dir).display().to_string()),
    key!("minSessionTimeout", Int, "(2 × tickTime)", None, Basics, "The shortest session timeout, in ms, a client may negotiate.", |c| c.min_timeout().to_string()),
    key!("maxSessionTimeout", Int, "(20 × tickTime)", None, Basics, "The longest session timeout, in ms, a client may negotiate.", |c| c.max_timeout().to_string()),
    key!("maxClientCnxns", Int, "60", None, Basics, "Connections one client IP address may hold at once; 0: no limit.", |c| c.max_client_cnxns.to_string()),
    key!("4lw.commands.whitelist", List, "srvr", None, Basics, "The four-letter words served on the client port (`*`: all).", |c| list(&c.four_letter_words)),
    key!("extendedTypesEnabled", Bool, "false", None, Basics, "Enables TTL nodes (createTTL).", |c| c.extended_types_enabled.to_string()),
    key!("znode.container.checkIntervalMs", Int, "60000", None, Basics, "How often, in ms, empty container and expired TTL nodes are looked for.", |c| c.container_check_interval_ms.to_string()),
    key!("container.checkIntervalMs", Int, "60000", None, Basics, "Another spelling of znode.container.checkIntervalMs.", |c| c.container_check_interval_ms.to_string()),
    key!("readonlymode.enabled", Bool, "false", None, Basics, "A member cut off from its quorum serves reads to clients that ask for a read-only session. Also read from `-Dreadonlymode.enabled` in SERVER_JVMFLAGS/JVMFLAGS.", |c| c.read_only_mode.to_string()),
    key!("skipACL", Text, "no", None, Basics, "`yes` (exactly): no ACL is checked at all. Also read from `-Dzookeeper.skipACL`.", |c| yes_no(c.skip_acl)),
    key!("DigestAuthenticationProvider.superDigest", Text, UNSET, None, Basics, "`super:<base64 sha1>`: the digest identity that passes every ACL.", |c| secret(&c.super_digest)),
    key!("superDigest", Text, UNSET, None, Basics, "Another spelling of DigestAuthenticationProvider.superDigest.", |c| secret(&c.super_digest)),
    // Storage
    key!("snapCount", Int, "100000", None, Storage, "Transactions between snapshots (at least 2).", |c| c.snap_count.to_string()),
    key!("preAllocSize", Int, "65536", None, Storage, "The size of a log segment file, in KiB (preallocated when the segment is created).", |c| c.pre_alloc_size_kb.to_string()),
    key!("forceSync", Bool, "yes", None, Storage, "`no`: the log is not fsynced before a write is acknowledged (a power cut loses acknowledged writes). Warned about at start.", |c| yes_no(c.force_sync)),
    key!("autopurge.snapRetainCount", Int, "3", None, Storage, "Snapshots (and the log they need) kept: after each snapshot the older ones and the log before the oldest kept are deleted. Fewer than 3 is raised to 3.", |c| c.snap_retain_count.to_string()),
    key!("autopurge.purgeInterval", Int, "0", None, Storage, "Accepted; Palisade purges after each snapshot (autopurge.snapRetainCount), whatever this says.", |c| c.purge_interval_hours.to_string()),
    key!("dynamicConfigFile", Path, UNSET, None, Ensemble, "A ZooKeeper 3.5+ dynamic configuration file whose server.N lines are read (never rewritten).", dynamic_file),
    // Limits and tuning
    key!("globalOutstandingLimit", Int, "1000", None, Limits, "Requests queued for the core from all connections together; when the queue is full, connections wait before their next request is read (64 at least).", |c| c.global_outstanding_limit.to_string()),
    key!("maxOutstandingPerConnection", Int, "1000", Some(PALISADE_ONLY), Limits, "Requests in flight on one connection before the server stops reading it.", |c| c.max_outstanding_per_connection.to_string()),
    key!("jute.maxbuffer", Int, "1048575", None, Limits, "The largest request or znode, in bytes.", |c| c.jute_max_buffer.to_string()),
    key!("connectionOutputBudget", Int, "(4 × jute.maxbuffer)", Some(PALISADE_ONLY), Limits, "Bytes of unsent replies one connection may queue before the server stops reading it (a slow reader of watch events is closed).", |c| c.connection_output_budget().to_string()),
    key!("globalOutputBudget", Int, "(1 GiB or a quarter of RAM)", Some(PALISADE_ONLY), Limits, "Bytes of unsent replies all connections together may queue.", |c| c.global_output_budget().to_string()),
    key!("maxReplySize", Int, "(unset: no limit)", Some(PALISADE_ONLY), Limits, "The largest reply, in bytes; a request whose reply would be larger gets an error.", |c| opt(&c.max_reply_size())),
    key!("spinWaitMicros", Int, "(300 standalone, 0 in an ensemble)", Some(PALISADE_ONLY), Limits, "How long, in µs (0 to 10000), the core and log threads poll for work before parking.", |c| c.spin_wait().as_micros().to_string()),
    // Ensemble
    key!("server.N", Text, UNSET, None, Ensemble, "`server.<id>=<host>:<peerPort>:<electionPort>[:participant|observer][;[<clientAddress>:]<clientPort>]`, one line a member; several make an ensemble. The election port (the second) is accepted and not opened: Raft elects over the peer port.", |c| if c.members.is_empty() { UNSET.into() } else { format!("{} member(s): {}", c.members.len(), c.members.iter().map(|m| m.id.to_string()).collect::<Vec<_>>().join(", ")) }),
    key!("initLimit", Int, "10", Some("(none: required for an ensemble)"), Ensemble, "Ticks (1 to 1000) a member may take to catch up from the leader's snapshot.", |c| c.init_limit.to_string()),
    key!("syncLimit", Int, "5", Some("(none: required for an ensemble)"), Ensemble, "Ticks (1 to 1000) a follower may go without hearing its leader (design/ENSEMBLE.md maps both limits to Raft's timeouts).", |c| c.sync_limit.to_string()),
    key!("reconfigEnabled", Bool, "false", None, Ensemble, "The `reconfig` request is served; otherwise it is answered RECONFIGDISABLED.", |c| c.reconfig_enabled.to_string()),
    key!("standaloneEnabled", Bool, "true", None, Ensemble, "`false`: a reconfig must leave at least 2 voters.", |c| c.standalone_enabled.to_string()),
    key!("quorum.cnxn.threads.size", Int, UNSET, None, Ensemble, NO_EFFECT, none),
    // Client TLS
    key!("secureClientPort", Int, UNSET, None, ClientTls, "A second client port that speaks TLS only.", |c| opt(&c.secure_client_port)),
    key!("secureClientPortAddress", Text, "(clientPortAddress)", None, ClientTls, "The address the secure client port listens on.", |c| c.secure_client_port_address.clone().unwrap_or_else(|| c.client_port_address.clone())),
    key!("client.portUnification", Bool, "false", None, ClientTls, "clientPort also accepts TLS connections.", |c| c.port_unification.to_string()),
    key!("serverCnxnFactory", Class, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.keyStore.location", Path, UNSET, None, ClientTls, "The server's certificate and key: PEM or PKCS12 (JKS is refused, naming the conversion).", |c| path(&c.tls.key_store.location)),
    key!("ssl.keyStore.password", Text, UNSET, None, ClientTls, "The key store's password.", |c| secret(&c.tls.key_store.password)),
    key!("ssl.keyStore.type", Text, "(from the file name)", None, ClientTls, "PEM or PKCS12.", |c| opt(&c.tls.key_store.type_)),
    key!("ssl.trustStore.location", Path, UNSET, None, ClientTls, "The CAs client certificates are verified against.", |c| path(&c.tls.trust_store.location)),
    key!("ssl.trustStore.password", Text, UNSET, None, ClientTls, "The trust store's password.", |c| secret(&c.tls.trust_store.password)),
    key!("ssl.trustStore.type", Text, "(from the file name)", None, ClientTls, "PEM or PKCS12.", |c| opt(&c.tls.trust_store.type_)),
    key!("ssl.clientAuth", Text, "need", None, ClientTls, "`none`, `want` or `need` a client certificate.", |c| auth(c.tls.client_auth)),
    key!("ssl.enabledProtocols", List, "TLSv1.2,TLSv1.3", None, ClientTls, "TLSv1.2 and/or TLSv1.3.", |c| protocols(&c.tls.enabled_protocols)),
    key!("ssl.protocol", Text, UNSET, None, ClientTls, "Used as ssl.enabledProtocols when that is not set.", |c| list(&c.tls.enabled_protocols)),
    key!("ssl.ciphersuites", List, "(rustls's defaults)", Some("(the JDK's defaults)"), ClientTls, "Cipher suites, by their IANA names.", |c| suites(&c.tls.ciphersuites)),
    key!("ssl.hostnameVerification", Bool, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.clientHostnameVerification", Bool, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.handshakeDetectionTimeoutMillis", Int, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.context.supplier.class", Class, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.authProvider", Text, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.crl", Bool, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("ssl.ocsp", Bool, UNSET, None, ClientTls, NO_EFFECT, none),
    key!("authProvider.x509", Class, UNSET, None, ClientTls, "Accepted with the value org.apache.zookeeper.server.auth.X509AuthenticationProvider: the x509 scheme exists whenever TLS is configured.", none),
    // Client authentication
    key!("authProvider.N", Class, UNSET, None, Authentication, "`org.apache.zookeeper.server.auth.SASLAuthenticationProvider` turns SASL (DIGEST-MD5) on.", |c| if c.sasl.provider { crate::auth::SASL_PROVIDER.into() } else { UNSET.into() }),
    key!("jaasLoginConfig", Path, UNSET, None, Authentication, "The JAAS file with the SASL users. Also `-Djava.security.auth.login.config` in SERVER_JVMFLAGS/JVMFLAGS.", |c| path(&c.sasl.jaas_file)),
    key!("sasl.serverconfig", Text, "(Server)", None, Authentication, "The JAAS section to read.", |c| c.sasl.section.clone().unwrap_or_else(|| "Server".into())),
    key!("sessionRequireClientSASLAuth", Bool, "false", None, Authentication, "A session must authenticate with SASL before any other request.", |c| c.sasl.session_require_sasl.to_string()),
    key!("enforce.auth.enabled", Bool, "false", None, Authentication, "A session must authenticate with one of enforce.auth.schemes.", |c| c.sasl.enforce_enabled.to_string()),
    key!("enforce.auth.schemes", List, UNSET, None, Authentication, "The schemes enforce.auth.enabled accepts (sasl, digest, x509, ip).", |c| list(&c.sasl.enforce_schemes)),
    key!("allowSaslFailedClients", Bool, "false", None, Authentication, "A client whose SASL exchange failed keeps its connection (unauthenticated).", |c| c.sasl.allow_failed.to_string()),
    key!("superUser", Text, UNSET, None, Authentication, "A SASL user that passes every ACL.", |c| c.sasl.super_users.get("superUser").cloned().unwrap_or_else(|| UNSET.into())),
    key!("superUser.*", Text, UNSET, None, Authentication, "More super users, one key each (`superUser.2=bob`).", |c| { let v: Vec<String> = c.sasl.super_users.iter().filter(|(k, _)| k.starts_with("superUser.")).map(|(_, v)| v.clone()).collect(); list(&v) }),
    // Quorum security
    key!("sslQuorum", Bool, "false", None, QuorumSecurity, "Links between members use TLS, both ends verified.", |c| c.quorum.ssl_quorum.to_string()),
    key!("portUnification", Bool, "false", None, QuorumSecurity, "The peer port accepts TLS and plaintext links (for rolling to sslQuorum).", |c| c.quorum.port_unification.to_string()),
    key!("sslQuorumReloadCertFiles", Bool, "false", None, QuorumSecurity, "New links use the store files as they change on disk.", |c| c.quorum.reload_cert_files.to_string()),
    key!("ssl.quorum.hostnameVerification", Bool, "true", None, QuorumSecurity, "A peer's certificate must name the host its server.N line gives.", |c| c.quorum.hostname_verification.to_string()),
    key!("ssl.quorum.clientAuth", Text, "need", None, QuorumSecurity, "Only `need`: both ends of a link are always verified.", |_| "need".into()),
    key!("ssl.quorum.keyStore.location", Path, UNSET, None, QuorumSecurity, "The member's certificate and key (PEM or PKCS12).", |c| path(&c.quorum.tls.key_store.location)),
    key!("ssl.quorum.keyStore.password", Text, UNSET, None, QuorumSecurity, "Its password.", |c| secret(&c.quorum.tls.key_store.password)),
    key!("ssl.quorum.keyStore.type", Text, "(from the file name)", None, QuorumSecurity, "PEM or PKCS12.", |c| opt(&c.quorum.tls.key_store.type_)),
    key!("ssl.quorum.trustStore.location", Path, UNSET, None, QuorumSecurity, "The CA that signs the members' certificates.", |c| path(&c.quorum.tls.trust_store.location)),
    key!("ssl.quorum.trustStore.password", Text, UNSET, None, QuorumSecurity, "Its password.", |c| secret(&c.quorum.tls.trust_store.password)),
    key!("ssl.quorum.trustStore.type", Text, "(from the file name)", None, QuorumSecurity, "PEM or PKCS12.", |c| opt(&c.quorum.tls.trust_store.type_)),
    key!("ssl.quorum.enabledProtocols", List, "TLSv1.2,TLSv1.3", None, QuorumSecurity, "As ssl.enabledProtocols, for links.", |c| protocols(&c.quorum.tls.enabled_protocols)),
    key!("ssl.quorum.protocol", Text, UNSET, None, QuorumSecurity, "As ssl.protocol, for links.", |c| list(&c.quorum.tls.enabled_protocols)),
    key!("ssl.quorum.ciphersuites", List, "(rustls's defaults)", Some("(the JDK's defaults)"), QuorumSecurity, "As ssl.ciphersuites, for links.", |c| suites(&c.quorum.tls.ciphersuites)),
    key!("ssl.quorum.clientHostnameVerification", Bool, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("ssl.quorum.handshakeDetectionTimeoutMillis", Int, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("ssl.quorum.context.supplier.class", Class, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("ssl.quorum.authProvider", Text, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("ssl.quorum.crl", Bool, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("ssl.quorum.ocsp", Bool, UNSET, None, QuorumSecurity, NO_EFFECT, none),
    key!("quorum.auth.enableSasl", Bool, "false", None, QuorumSecurity, "Links run a DIGEST-MD5 exchange both ways.", |c| c.quorum.sasl.to_string()),
    key!("quorum.auth.learnerRequireSasl", Bool, "false", None, QuorumSecurity, "This member refuses a peer that does not run SASL.", |c| c.quorum.learner_require_sasl.to_string()),
    key!("quorum.auth.serverRequireSasl", Bool, "false", None, QuorumSecurity, "This member refuses a link that does not run SASL.", |c| c.quorum.server_require_sasl.to_string()),
    key!("quorum.auth.learner.saslLoginContext", Text, "QuorumLearner", None, QuorumSecurity, "The JAAS section with the credentials this member dials with.", |c| c.quorum.learner_context.clone()),
    key!("quorum.auth.server.saslLoginContext", Text, "QuorumServer", None, QuorumSecurity, "The JAAS section with the users this member accepts.", |c| c.quorum.server_context.clone()),
    key!("quorum.auth.kerberos.servicePrincipal", Text, UNSET, None, QuorumSecurity, "Accepted; Kerberos only (Palisade has DIGEST-MD5).", none),
    // AdminServer and metrics
    key!("admin.enableServer", Bool, "true", None, Admin, "Serve the AdminServer (HTTP commands and /ready).", |c| c.admin.enable.to_string()),
    key!("admin.serverAddress", Text, "127.0.0.1", Some("0.0.0.0"), Admin, "The AdminServer's address: loopback by default, since some commands change state.", |c| c.admin.address.clone()),
    key!("admin.serverPort", Int, "8080", None, Admin, "The AdminServer's port.", |c| c.admin.port.to_string()),
    key!("admin.commandURL", Text, "/commands", None, Admin, "The path under which commands are served.", |c| c.admin.command_url.clone()),
    key!("metricsProvider.className", Class, "(the default provider)", None, Admin, "`org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider` serves /metrics for Prometheus.", |c| if c.admin.prometheus { super::PROMETHEUS_PROVIDER.into() } else { "(the default provider)".into() }),
    key!("metricsProvider.httpHost", Text, "0.0.0.0", None, Admin, "The Prometheus endpoint's address.", |c| c.admin.metrics_host.clone()),
    key!("metricsProvider.httpPort", Int, "7000", None, Admin, "The Prometheus endpoint's port.", |c| c.admin.metrics_port.to_string()),
    key!("metricsProvider.exportJvmInfo", Bool, "true", None, Admin, "Accepted; there is no JVM to describe.", |c| c.admin.export_jvm_info.to_string()),
    key!("admin.rateLimiterIntervalInMS", Int, "300000", None, Admin, "At most one `snapshot` (online backup) per this many ms (ZooKeeper 3.9 reads it in microseconds for `snapshot`, a unit slip); 0: no limit.", |c| c.admin.rate_limiter_interval_ms.to_string()),
    key!("admin.snapshot.enabled", Bool, "true", None, Admin, "The `snapshot` command (online backup) runs; 503 otherwise.", |c| c.admin.snapshot_enabled.to_string()),
    key!("admin.restore.enabled", Bool, "true", None, Admin, "The `restore` command (online restore into a standalone server, or through the Raft log into an ensemble) runs; 503 otherwise. ZooKeeper reads it as the system property zookeeper.admin.restore.enabled.", |c| c.admin.restore_enabled.to_string()),
    key!("admin.forceHttps", Bool, "false", None, Admin, "The AdminServer speaks HTTPS only, with the `ssl.quorum.*` stores (as ZooKeeper).", |c| c.admin.force_https.to_string()),
    key!("admin.portUnification", Bool, "false", None, Admin, "The AdminServer takes HTTP and HTTPS on its one port.", |c| c.admin.port_unification.to_string()),
    key!("admin.needClientAuth", Bool, "false", None, Admin, "HTTPS callers must present a certificate the `ssl.quorum.trustStore` trusts (otherwise one is asked for, optional, for `x509` auth).", |c| c.admin.need_client_auth.to_string()),
    key!("metricsProvider.httpsPort", Int, UNSET, None, Admin, "/metrics over HTTPS on this port (ZooKeeper after 3.9: ZOOKEEPER-4798); with it set, no plain port unless `httpPort` is given (the same port: both).", |c| opt(&c.admin.metrics_https_port)),
    key!("metricsProvider.ssl.keyStore.location", Path, UNSET, None, Admin, "The HTTPS /metrics certificate and key (PEM or PKCS12).", |c| path(&c.admin.metrics_tls.key_store.location)),
    key!("metricsProvider.ssl.keyStore.password", Text, UNSET, None, Admin, "Its password.", |c| secret(&c.admin.metrics_tls.key_store.password)),
    key!("metricsProvider.ssl.keyStore.type", Text, UNSET, None, Admin, "PEM or PKCS12 (by the file's extension when unset).", |c| opt(&c.admin.metrics_tls.key_store.type_)),
    key!("metricsProvider.ssl.trustStore.location", Path, UNSET, None, Admin, "The CA(s) a scraper's certificate must come from.", |c| path(&c.admin.metrics_tls.trust_store.location)),
    key!("metricsProvider.ssl.trustStore.password", Text, UNSET, None, Admin, "Its password.", |c| secret(&c.admin.metrics_tls.trust_store.password)),
    key!("metricsProvider.ssl.trustStore.type", Text, UNSET, None, Admin, "PEM or PKCS12 (by the file's extension when unset).", |c| opt(&c.admin.metrics_tls.trust_store.type_)),
    key!("metricsProvider.ssl.need.client.auth", Bool, "true", None, Admin, "An HTTPS scraper must present a trusted certificate.", |c| c.admin.metrics_need_client_auth.to_string()),
    key!("metricsProvider.ssl.want.client.auth", Bool, "true", None, Admin, "A certificate is asked for (optional when need is false).", |c| c.admin.metrics_want_client_auth.to_string()),
    key!("audit.enable", Bool, UNSET, None, Admin, NO_EFFECT, none),
];

/// The row for a key as written in zoo.cfg (prefix `zookeeper.` allowed).
pub fn find(key: &str) -> Option<&'static Key> {
    let key = key.strip_prefix("zookeeper.").unwrap_or(key);
    KEYS.iter().find(|k| k.name == key).or_else(|| {
        let family = if key.starts_with("server.") {
            "server.N"
        } else if key.starts_with("superUser.") {
            "superUser.*"
        } else if key.starts_with("authProvider.") {
            "authProvider.N"
        } else {
            return None;
        };
        KEYS.iter().find(|k| k.name == family)
    })
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The reference tables, in Markdown: the generated part of docs/configuration.md.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    for area in Area::ALL {
        out.push_str(&format!("\n### {}\n\n", area.title()));
        out.push_str("| Key | Type | Default | ZooKeeper's default | Meaning |\n");
        out.push_str("|---|---|---|---|---|\n");
        for k in KEYS.iter().filter(|k| k.area == area) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                k.name,
                k.kind.name(),
                cell(k.default),
                cell(k.zookeeper.unwrap_or("same")),
                cell(k.about)
            ));
        }
    }
    out
}

/// The whole of docs/configuration.md.
pub fn reference_page() -> String {
    format!("{PAGE_HEAD}{}", reference_markdown())
}

const PAGE_HEAD: &str = "# Configuration reference

<!-- Generated by `palisade --print-config-reference > docs/configuration.md` from
     src/config/keys.rs; a unit test fails when the two differ. Edit the table, not this page. -->

Palisade reads ZooKeeper's `zoo.cfg` format: `key=value` lines, `#` comments. An existing
ZooKeeper configuration file works as it is. Every key may also be written with ZooKeeper's
system-property prefix `zookeeper.` (`zookeeper.jute.maxbuffer=...`).

- A key not listed here is logged as `unknown configuration key (ignored)` and the server
  starts; an invalid value stops start-up with a message naming the key and the value.
- `palisade --check-config zoo.cfg` reads a file as the server would at start (including the
  TLS stores, the JAAS file and an ensemble member's `myid`), prints the effective value of
  every key and every warning, and exits 1 if the server would refuse to start.
- The command line overrides three keys: `--port` (clientPort), `--bind` (clientPortAddress),
  `--data-dir` (dataDir). `-Dreadonlymode.enabled`, `-Dzookeeper.skipACL`, the
  `-Dzookeeper.` SASL keys and `-Djava.security.auth.login.config` are also read from the
  `SERVER_JVMFLAGS` and `JVMFLAGS` environment variables, as zkServer.sh passes them to
  ZooKeeper's JVM; zoo.cfg wins.

Columns: *Default* is Palisade's (in parentheses when derived from other keys);
*ZooKeeper's default* is ZooKeeper 3.8's where it differs (\"same\" otherwise), or says the key
is Palisade's own.
";

/// `key = value` for every key, in table order (what `--check-config` prints).
pub fn effective(cfg: &Config) -> String {
    KEYS.iter()
        .map(|k| (k.name, (k.value)(cfg)))
        .filter(|(_, v)| v != NO_VALUE)
        .map(|(name, v)| format!("{name} = {v}\n"))
        .collect()
}

#[cfg(test)]
#[path = "keys_test.rs"]
mod tests;
