//! Configuration: ZooKeeper's zoo.cfg format (so an existing file works) plus command-line
//! overrides. Unknown keys are warned about; invalid values stop start-up naming key and value.
//! Every key has a row in keys.rs (the configuration reference); check.rs is `--check-config`.

use std::collections::BTreeMap;
use std::path::PathBuf;

pub mod check;
pub mod keys;

#[derive(Debug, Clone)]
pub struct Config {
    pub tick_time: u64,
    pub client_port: u16,
    pub client_port_address: String,
    pub data_dir: PathBuf,
    pub data_log_dir: Option<PathBuf>,
    pub max_client_cnxns: usize,
    pub min_session_timeout: Option<i32>,
    pub max_session_timeout: Option<i32>,
    pub global_outstanding_limit: usize,
    pub snap_count: u64,
    pub pre_alloc_size_kb: u64,
    pub force_sync: bool,
    pub snap_retain_count: u32,
    pub purge_interval_hours: u32,
    pub four_letter_words: Vec<String>,
    pub extended_types_enabled: bool,
    pub jute_max_buffer: usize,
    pub container_check_interval_ms: u64,
    pub super_digest: Option<String>,
    pub max_outstanding_per_connection: usize,
    /// Palisade's `spinWaitMicros`: the window the core and log threads may poll for before
    /// parking, while their recent waits say messages come within it (spin.rs); 0: never poll.
    /// None: the default for the mode ([`Config::spin_wait`]).
    pub spin_wait_micros: Option<u64>,
    /// Palisade's `connectionOutputBudget` (bytes; default a few × jute.maxbuffer).
    pub connection_output_budget: Option<usize>,
    /// Palisade's `globalOutputBudget` (bytes; default 1 GiB or a quarter of RAM).
    pub global_output_budget: Option<usize>,
    /// Palisade's `maxReplySize` (bytes; default none: replies are bounded by the output
    /// budgets, as large as ZooKeeper sends them).
    pub max_reply_size: Option<usize>,
    /// `--truncate-corrupt-log`: the operator accepts losing the log from a corrupt record on.
    pub truncate_corrupt_log: bool,
    /// `--force-new-ensemble`: after a permanent loss of the quorum, this member becomes an
    /// ensemble of one with its own log (ensemble/raft/recovery.rs).
    pub force_new_ensemble: bool,
    /// Whether clientPort was given (zoo.cfg or --port). A config with secureClientPort and no
    /// clientPort has no plaintext listener, as in ZooKeeper.
    pub client_port_set: bool,
    /// `secureClientPort`: a second listener that speaks TLS only.
    pub secure_client_port: Option<u16>,
    /// `secureClientPortAddress` (default: clientPortAddress).
    pub secure_client_port_address: Option<String>,
    /// `client.portUnification`: clientPort also accepts TLS (first byte 0x16).
    pub port_unification: bool,
    /// The `ssl.*` keys.
    pub tls: crate::net::tls::TlsConfig,
    /// The AdminServer and the Prometheus endpoint (`admin.*`, `metricsProvider.*`).
    pub admin: AdminConfig,
    /// The links between members: quorum TLS and quorum SASL (`sslQuorum`, `ssl.quorum.*`,
    /// `portUnification`, `quorum.auth.*`; ensemble/link/settings.rs, docs/design/ENSEMBLE.md).
    pub quorum: crate::ensemble::link::QuorumSettings,
    /// SASL and enforced authentication (`authProvider.N`, `jaasLoginConfig`,
    /// `enforce.auth.*`, ...; see auth/settings.rs and docs/SASL.md).
    pub sasl: crate::auth::SaslSettings,
    /// The ensemble (`server.N` lines); empty or one: standalone.
    pub members: Vec<crate::ensemble::members::Member>,
    /// In ticks: how long a member may take to catch up (install-snapshot), and how long a
    /// follower may go without hearing its leader (docs/design/ENSEMBLE.md maps them to Raft).
    pub init_limit: u64,
    pub sync_limit: u64,
    /// `readonlymode.enabled` (ZooKeeper reads it as the JVM flag `-Dreadonlymode.enabled`,
    /// taken from SERVER_JVMFLAGS/JVMFLAGS too): a member cut off from its quorum serves
    /// reads to clients that ask for a read-only session (core/read_only.rs).
    pub read_only_mode: bool,
    /// `reconfigEnabled`: the `reconfig` request is served (docs/design/ENSEMBLE.md); otherwise it is
    /// answered RECONFIGDISABLED, as ZooKeeper's default.
    pub reconfig_enabled: bool,
    /// `standaloneEnabled` (default true): a reconfig must leave at least 2 voters.
    pub standalone_enabled: bool,
    /// `skipACL=yes` (ZooKeeper's `zookeeper.skipACL`): no ACL is checked at all.
    pub skip_acl: bool,
}

/// `admin.*` and `metricsProvider.*`, with ZooKeeper 3.8's defaults except where noted.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// admin.enableServer (default true, as ZooKeeper).
    pub enable: bool,
    /// admin.serverAddress: Palisade defaults to 127.0.0.1 (ZooKeeper: 0.0.0.0), since the
    /// AdminServer has no authentication and commands such as stat_reset change state.
    pub address: String,
    /// admin.serverPort (8080).
    pub port: u16,
    /// admin.commandURL (/commands).
    pub command_url: String,
    /// metricsProvider.className names ZooKeeper's Prometheus provider: serve /metrics.
    pub prometheus: bool,
    /// metricsProvider.httpHost (0.0.0.0, as ZooKeeper: scrapers run elsewhere; the
    /// endpoint only reads).
    pub metrics_host: String,
    /// metricsProvider.httpPort (7000).
    pub metrics_port: u16,
    /// metricsProvider.exportJvmInfo: accepted; there is no JVM to describe.
    pub export_jvm_info: bool,
    /// The configuration text as read (the admin `initial_configuration` command).
    pub initial_text: String,
    /// admin.rateLimiterIntervalInMS (300000): at most one `snapshot` and one `restore` per
    /// interval (ZooKeeper 3.9's RateLimiter; docs/ADMIN.md).
    pub rate_limiter_interval_ms: u64,
    /// admin.snapshot.enabled (true): the `snapshot` command runs (503 otherwise).
    pub snapshot_enabled: bool,
    /// admin.restore.enabled (true): the `restore` command runs (503 otherwise).
    pub restore_enabled: bool,
    /// admin.forceHttps (false): the AdminServer speaks HTTPS only, with the `ssl.quorum.*`
    /// stores (ZooKeeper's QuorumX509Util).
    pub force_https: bool,
    /// admin.portUnification (false): HTTP and HTTPS on the one port.
    pub port_unification: bool,
    /// admin.needClientAuth (false): HTTPS callers must present a certificate the
    /// `ssl.quorum.trustStore` trusts (otherwise one is asked for but optional).
    pub need_client_auth: bool,
    /// Whether metricsProvider.httpPort was given (with httpsPort set, no plain HTTP port
    /// is opened unless it was, as ZooKeeper's provider since ZOOKEEPER-4798).
    pub metrics_port_set: bool,
    /// metricsProvider.httpsPort: /metrics over HTTPS (the same port as httpPort: both).
    pub metrics_https_port: Option<u16>,
    /// metricsProvider.ssl.keyStore.*, ssl.trustStore.*, ssl.enabledProtocols,
    /// ssl.ciphersuites; client auth from ssl.need.client.auth / ssl.want.client.auth
    /// (both default true, as ZooKeeper's provider).
    pub metrics_tls: crate::net::tls::TlsConfig,
    pub metrics_need_client_auth: bool,
    pub metrics_want_client_auth: bool,
}

/// The provider class that switches the Prometheus endpoint on.
pub const PROMETHEUS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            enable: true,
            address: "127.0.0.1".into(),
            port: 8080,
            command_url: "/commands".into(),
            prometheus: false,
            metrics_host: "0.0.0.0".into(),
            metrics_port: 7000,
            export_jvm_info: true,
            initial_text: String::new(),
            rate_limiter_interval_ms: 300_000,
            snapshot_enabled: true,
            restore_enabled: true,
            force_https: false,
            port_unification: false,
            need_client_auth: false,
            metrics_port_set: false,
            metrics_https_port: None,
            metrics_tls: Default::default(),
            metrics_need_client_auth: true,
            metrics_want_client_auth: true,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            members: Vec::new(),
            init_limit: 10,
            sync_limit: 5,
            read_only_mode: false,
            reconfig_enabled: false,
            standalone_enabled: true,
            skip_acl: false,
            tick_time: 3000,
            client_port: 2181,
            client_port_address: "127.0.0.1".into(),
            data_dir: PathBuf::from("data"),
            data_log_dir: None,
            max_client_cnxns: 60,
            min_session_timeout: None,
            max_session_timeout: None,
            global_outstanding_limit: 1000,
            snap_count: 100_000,
            pre_alloc_size_kb: 65536,
            force_sync: true,
            snap_retain_count: 3,
            purge_interval_hours: 0,
            four_letter_words: vec!["srvr".into()],
            extended_types_enabled: false,
            jute_max_buffer: palisade_proto::DEFAULT_MAX_BUFFER,
            container_check_interval_ms: 60_000,
            super_digest: None,
            max_outstanding_per_connection: 1000,
            spin_wait_micros: None,
            connection_output_budget: None,
            global_output_budget: None,
            max_reply_size: None,
            truncate_corrupt_log: false,
            force_new_ensemble: false,
            admin: AdminConfig::default(),
            client_port_set: false,
            secure_client_port: None,
            secure_client_port_address: None,
            port_unification: false,
            tls: Default::default(),
            quorum: Default::default(),
            sasl: Default::default(),
        }
    }
}

fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("invalid value for {key}: {v:?}"))
}

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!(
            "invalid value for {key}: {v:?} (expected yes/no or true/false)"
        )),
    }
}

fn positive(key: &str, v: &str) -> Result<usize, String> {
    parse::<usize>(key, v).and_then(|n| {
        if n > 0 {
            Ok(n)
        } else {
            Err(format!(
                "invalid value for {key}: {v:?} (bytes, at least 1)"
            ))
        }
    })
}

fn ticks(key: &str, v: &str) -> Result<u64, String> {
    match parse::<u64>(key, v)? {
        n @ 1..=1000 => Ok(n),
        _ => Err(format!("invalid value for {key}: {v:?} (ticks, 1 to 1000)")),
    }
}

/// The machine's memory (MemTotal), if /proc says.
fn mem_total() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

impl Config {
    /// Bytes of unsent output one connection may have queued before the server stops reading
    /// its requests (and, for notifications, closes it).
    pub fn connection_output_budget(&self) -> usize {
        self.connection_output_budget.unwrap_or_else(|| {
            self.jute_max_buffer
                .saturating_mul(crate::limits::CONNECTION_BUDGET_MAXBUFFERS)
        })
    }

    /// Bytes of unsent output all connections together may have queued.
    pub fn global_output_budget(&self) -> usize {
        self.global_output_budget.unwrap_or_else(|| {
            let quarter = mem_total().map_or(usize::MAX, |m| m / 4);
            crate::limits::GLOBAL_BUDGET_DEFAULT.min(quarter)
        })
    }

    /// The largest reply the server builds when `maxReplySize` is set (a request whose reply
    /// would be larger is answered with an error). Unset, none: ZooKeeper sends a reply of any
    /// size (go-zookeeper reads a 20 MB getChildren), so the output budgets bound replies
    /// instead (ARCHITECTURE.md, "Output budgets").
    pub fn max_reply_size(&self) -> Option<usize> {
        self.max_reply_size
    }

    /// The polling window: `spinWaitMicros` if set; else 300 µs standalone and none for an
    /// ensemble member. A member's waits are for its peers (a round trip and a follower's
    /// fdatasync), which a window mostly spans, so each member would keep a core busy per
    /// write in flight; with members sharing cores (3 on this 2-core machine) that polling
    /// took the CPU the others needed — lock handoffs 1.8x faster and a write's median 23%
    /// lower without it (docs/design/BENCHMARKS.md, 2026-12-06 ensemble section).
    pub fn spin_wait(&self) -> std::time::Duration {
        let default = if self.members.len() > 1 {
            0
        } else {
            crate::spin::DEFAULT_SPIN_MICROS
        };
        std::time::Duration::from_micros(self.spin_wait_micros.unwrap_or(default))
    }

    /// Applies zoo.cfg text. Returns the unknown keys (to warn about).
    pub fn apply_zoo_cfg(&mut self, text: &str) -> Result<Vec<String>, String> {
        let mut unknown = Vec::new();
        let mut kv = BTreeMap::new();
        self.admin.initial_text.push_str(text);
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("invalid line in config: {line:?}"));
            };
            kv.insert(k.trim().to_string(), v.trim().to_string());
        }
        if let Some(path) = kv.get("dynamicConfigFile").cloned() {
            self.read_dynamic_file(&path, &mut kv)?;
        }
        for (k, v) in &kv {
            let key = k.strip_prefix("zookeeper.").unwrap_or(k);
            match key {
                "tickTime" => {
                    self.tick_time = parse::<u64>(k, v).and_then(|t| {
                        if t > 0 {
                            Ok(t)
                        } else {
                            Err(format!("invalid value for {k}: {v:?}"))
                        }
                    })?
                }
                "clientPort" => {
                    self.client_port = parse(k, v)?;
                    self.client_port_set = true;
                }
                "clientPortAddress" => self.client_port_address = v.clone(),
                "dataDir" => self.data_dir = PathBuf::from(v),
                "dataLogDir" => self.data_log_dir = Some(PathBuf::from(v)),
                "maxClientCnxns" => self.max_client_cnxns = parse(k, v)?,
                "minSessionTimeout" => self.min_session_timeout = Some(parse(k, v)?),
                "maxSessionTimeout" => self.max_session_timeout = Some(parse(k, v)?),
                "globalOutstandingLimit" => self.global_outstanding_limit = parse(k, v)?,
                "snapCount" => {
                    self.snap_count = parse::<u64>(k, v).and_then(|n| {
                        if n >= 2 {
                            Ok(n)
                        } else {
                            Err(format!("invalid value for {k}: {v:?} (at least 2)"))
                        }
                    })?
                }
                "preAllocSize" => {
                    self.pre_alloc_size_kb = parse::<u64>(k, v).and_then(|n| {
                        if (1..=1 << 30).contains(&n) {
                            Ok(n)
                        } else {
                            Err(format!("invalid value for {k}: {v:?} (KiB, 1 to 2^30)"))
                        }
                    })?
                }
                "forceSync" => self.force_sync = parse_bool(k, v)?,
                "autopurge.snapRetainCount" => {
                    // ZooKeeper's floor: fewer than 3 is raised to 3.
                    self.snap_retain_count = parse::<u32>(k, v)?.max(3)
                }
                "autopurge.purgeInterval" => self.purge_interval_hours = parse(k, v)?,
                "4lw.commands.whitelist" => {
                    self.four_letter_words = v
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                }
                "extendedTypesEnabled" => self.extended_types_enabled = parse_bool(k, v)?,
                "jute.maxbuffer" => self.jute_max_buffer = parse(k, v)?,
                "znode.container.checkIntervalMs" | "container.checkIntervalMs" => {
                    self.container_check_interval_ms = parse(k, v)?
                }
                "DigestAuthenticationProvider.superDigest" | "superDigest" => {
                    self.super_digest = Some(v.clone())
                }
                "maxOutstandingPerConnection" => self.max_outstanding_per_connection = parse(k, v)?,
                "spinWaitMicros" => {
                    self.spin_wait_micros = parse::<u64>(k, v).and_then(|n| {
                        if n <= 10_000 {
                            Ok(Some(n))
                        } else {
                            Err(format!("invalid value for {k}: {v:?} (0 to 10000)"))
                        }
                    })?
                }
                "connectionOutputBudget" => self.connection_output_budget = Some(positive(k, v)?),
                "globalOutputBudget" => self.global_output_budget = Some(positive(k, v)?),
                "maxReplySize" => self.max_reply_size = Some(positive(k, v)?),
                "admin.enableServer" => self.admin.enable = parse_bool(k, v)?,
                "admin.serverAddress" => self.admin.address = v.clone(),
                "admin.serverPort" => self.admin.port = parse(k, v)?,
                "admin.commandURL" => {
                    let path = v.trim_end_matches('/');
                    let ok = path.len() > 1
                        && path.starts_with('/')
                        && path != "/ready"
                        && path
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c));
                    if !ok {
                        return Err(format!(
                            "invalid value for {k}: {v:?} (a path such as /commands: letters, digits, - . _ ~ /; not /ready)"
                        ));
                    }
                    self.admin.command_url = path.to_string()
                }
                "metricsProvider.className" => {
                    self.admin.prometheus = match v.as_str() {
                        PROMETHEUS_PROVIDER => true,
                        "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
                        | "org.apache.zookeeper.metrics.impl.NullMetricsProvider" => false,
                        _ => {
                            return Err(format!(
                                "invalid value for {k}: {v:?} (Palisade has {PROMETHEUS_PROVIDER} and the default provider)"
                            ))
                        }
                    }
                }
                "admin.rateLimiterIntervalInMS" => {
                    self.admin.rate_limiter_interval_ms = parse(k, v)?
                }
                "admin.snapshot.enabled" => self.admin.snapshot_enabled = parse_bool(k, v)?,
                "admin.restore.enabled" => self.admin.restore_enabled = parse_bool(k, v)?,
                "metricsProvider.httpHost" => self.admin.metrics_host = v.clone(),
                "metricsProvider.httpPort" => {
                    self.admin.metrics_port = parse(k, v)?;
                    self.admin.metrics_port_set = true;
                }
                "admin.forceHttps" => self.admin.force_https = parse_bool(k, v)?,
                "admin.portUnification" => self.admin.port_unification = parse_bool(k, v)?,
                "admin.needClientAuth" => self.admin.need_client_auth = parse_bool(k, v)?,
                "metricsProvider.httpsPort" => self.admin.metrics_https_port = Some(parse(k, v)?),
                "metricsProvider.ssl.need.client.auth" => {
                    self.admin.metrics_need_client_auth = parse_bool(k, v)?
                }
                "metricsProvider.ssl.want.client.auth" => {
                    self.admin.metrics_want_client_auth = parse_bool(k, v)?
                }
                k if k.starts_with("metricsProvider.ssl.")
                    && self
                        .admin
                        .metrics_tls
                        .apply(k.trim_start_matches("metricsProvider."), v)? => {}
                "metricsProvider.exportJvmInfo" => self.admin.export_jvm_info = parse_bool(k, v)?,
                // TLS for clients (see net/tls.rs and docs/TLS.md).
                "secureClientPort" => self.secure_client_port = Some(parse(k, v)?),
                "secureClientPortAddress" => self.secure_client_port_address = Some(v.clone()),
                "client.portUnification" => self.port_unification = parse_bool(k, v)?,
                // ZooKeeper picks its Netty or NIO factory by name; Palisade has one.
                "serverCnxnFactory" => {}
                // The x509 identity is given whenever TLS is configured (net/tls.rs).
                "authProvider.x509"
                    if v == "org.apache.zookeeper.server.auth.X509AuthenticationProvider" => {}
                k if self.quorum.apply(k, v)? => {}
                k if k.starts_with("ssl.") && self.tls.apply(k, v)? => {}
                k if self.sasl.apply(k, v)? => {}
                "initLimit" => self.init_limit = ticks(k, v)?,
                "readonlymode.enabled" => self.read_only_mode = parse_bool(k, v)?,
                "syncLimit" => self.sync_limit = ticks(k, v)?,
                        "reconfigEnabled" => self.reconfig_enabled = parse_bool(k, v)?,
                "standaloneEnabled" => self.standalone_enabled = parse_bool(k, v)?,
                // ZooKeeper skips ACLs only for the exact value "yes".
                "skipACL" => self.skip_acl = v == "yes",
                // Its server.N lines were read in above.
                "dynamicConfigFile" => {}
                // Accepted for compatibility; it has no effect.
                "audit.enable" => {}
                // Checked as a whole below.
                k if k.starts_with("server.") => {}
                _ => unknown.push(k.clone()),
            }
        }
        // One server.N line runs standalone, as ZooKeeper does with standaloneEnabled=true;
        // several make an ensemble (the server reads dataDir/myid at start).
        self.members = crate::ensemble::members::members(&kv).map_err(|e| e.to_string())?;
        if self.secure_client_port.is_some() || self.port_unification {
            self.tls.validate()?;
        }
        self.quorum.validate()?;
        Ok(unknown)
    }

    /// `dynamicConfigFile`: the server.N lines of a ZooKeeper 3.5+ dynamic configuration file
    /// (ZooKeeper moves them there from zoo.cfg when reconfigEnabled is on). Read, never
    /// rewritten: once an ensemble runs, its committed configuration is in its Raft log.
    fn read_dynamic_file(
        &mut self,
        path: &str,
        kv: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("dynamicConfigFile={path}: {e}"))?;
        if kv.keys().any(|k| k.starts_with("server.")) {
            return Err(format!(
                "dynamicConfigFile={path} is given and zoo.cfg has server.N lines too"
            ));
        }
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once('=') {
                Some((k, v)) if k.trim().starts_with("server.") => {
                    kv.insert(k.trim().to_string(), v.trim().to_string());
                }
                Some((k, _)) if k.trim() == "version" => {}
                _ => {
                    return Err(format!(
                        "dynamicConfigFile={path}: unexpected line {line:?}"
                    ))
                }
            }
        }
        Ok(())
    }

    /// Takes the SASL settings among the `-D` flags of SERVER_JVMFLAGS and JVMFLAGS (what
    /// zkServer.sh passes to ZooKeeper's JVM, SERVER_JVMFLAGS first). Apply before zoo.cfg,
    /// which wins, as in ZooKeeper.
    pub fn apply_jvm_flags(&mut self, server_jvmflags: &str, jvmflags: &str) -> Result<(), String> {
        let flags = format!("{server_jvmflags} {jvmflags}");
        for f in flags.split_whitespace() {
            if let Some(v) = f.strip_prefix("-Dreadonlymode.enabled=") {
                self.read_only_mode = parse_bool("readonlymode.enabled", v)?;
            }
            if let Some(v) = f.strip_prefix("-Dzookeeper.skipACL=") {
                self.skip_acl = v == "yes";
            }
        }
        self.sasl.apply_jvm_flags(&flags)
    }

    /// Whether to listen for plaintext clients on clientPort: unless the config names only a
    /// secureClientPort.
    pub fn plaintext_listener(&self) -> bool {
        self.client_port_set || self.secure_client_port.is_none()
    }

    /// Where snapshots live.
    pub fn snap_dir(&self) -> PathBuf {
        self.data_dir.join("snapshots")
    }

    /// Where the write-ahead log lives (dataLogDir, or dataDir).
    pub fn log_dir(&self) -> PathBuf {
        self.data_log_dir
            .as_ref()
            .unwrap_or(&self.data_dir)
            .join("log")
    }

    pub fn min_timeout(&self) -> i32 {
        self.min_session_timeout
            .unwrap_or((self.tick_time * 2) as i32)
    }

    pub fn max_timeout(&self) -> i32 {
        self.max_session_timeout
            .unwrap_or((self.tick_time * 20) as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_zoo_cfg() {
        let mut c = Config::default();
        let unknown = c
            .apply_zoo_cfg("# sample\ntickTime=2000\nclientPort=2222\ndataDir=/tmp/x\n4lw.commands.whitelist=ruok, srvr\nbogus=1\nforceSync=no\n")
            .unwrap_or_default();
        assert_eq!(unknown, vec!["bogus".to_string()]);
        assert_eq!(
            (c.tick_time, c.client_port, c.min_timeout(), c.max_timeout()),
            (2000, 2222, 4000, 40000)
        );
        assert_eq!(
            c.four_letter_words,
            vec!["ruok".to_string(), "srvr".to_string()]
        );
        assert!(!c.force_sync);
    }

    #[test]
    fn ensemble_lines_are_validated_and_kept() {
        let mut c = Config::default();
        assert!(c.apply_zoo_cfg("server.1=127.0.0.1:2888:3888\n").is_ok());
        c.apply_zoo_cfg("server.1=a:2888:3888\nserver.2=b:2888:3888\ninitLimit=7\nsyncLimit=3\n")
            .unwrap();
        assert_eq!(c.members.len(), 2);
        assert_eq!((c.init_limit, c.sync_limit), (7, 3));
        assert!(c.apply_zoo_cfg("syncLimit=0\n").is_err());
        let e = c.apply_zoo_cfg("server.1=a:2888\n").unwrap_err();
        assert!(e.contains("server.1=a:2888"), "{e}");
    }

    #[test]
    fn read_only_mode_from_zoo_cfg_or_the_jvm_flag() {
        let mut c = Config::default();
        assert!(!c.read_only_mode);
        c.apply_jvm_flags("-Xmx1g -Dreadonlymode.enabled=true", "")
            .unwrap();
        assert!(c.read_only_mode);
        c.apply_zoo_cfg("readonlymode.enabled=false\n").unwrap();
        assert!(!c.read_only_mode);
        c.apply_zoo_cfg("readonlymode.enabled=true\n").unwrap();
        assert!(c.read_only_mode);
        assert!(c.apply_zoo_cfg("readonlymode.enabled=sometimes\n").is_err());
    }

    #[test]
    fn reconfig_keys_and_a_dynamic_config_file() {
        let mut c = Config::default();
        assert!(!c.reconfig_enabled && c.standalone_enabled && !c.skip_acl);
        c.apply_zoo_cfg("reconfigEnabled=true\nstandaloneEnabled=false\nskipACL=yes\n")
            .unwrap();
        assert!(c.reconfig_enabled && !c.standalone_enabled && c.skip_acl);
        c.apply_zoo_cfg("skipACL=true\n").unwrap();
        assert!(!c.skip_acl, "ZooKeeper skips only for \"yes\"");
        let dir = std::env::temp_dir().join(format!("palisade-dyncfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("zoo.cfg.dynamic.100000000");
        std::fs::write(
            &f,
            "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
             server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\nversion=100000000\n",
        )
        .unwrap();
        let mut c = Config::default();
        c.apply_zoo_cfg(&format!("dynamicConfigFile={}\n", f.display()))
            .unwrap();
        assert_eq!(c.members.len(), 2);
        let mut c = Config::default();
        let both = format!("dynamicConfigFile={}\nserver.3=h:1:2\n", f.display());
        assert!(c.apply_zoo_cfg(&both).is_err());
        assert!(c
            .apply_zoo_cfg("dynamicConfigFile=/nonexistent/x\n")
            .is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn invalid_values_name_key_and_value() {
        let mut c = Config::default();
        let e = c
            .apply_zoo_cfg("clientPort=abc\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("clientPort") && e.contains("abc"), "{e}");
        let e = c
            .apply_zoo_cfg("forceSync=maybe\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("forceSync"), "{e}");
    }

    #[test]
    fn quorum_tls_and_sasl_are_read_and_checked_at_start() {
        let mut c = Config::default();
        let cfg = "sslQuorum=true\nssl.quorum.keyStore.location=/k.pem\n\
                   ssl.quorum.trustStore.location=/t.pem\nportUnification=true\n\
                   quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true\n";
        assert_eq!(c.apply_zoo_cfg(cfg), Ok(vec![]));
        assert!(c.quorum.ssl_quorum && c.quorum.port_unification && c.quorum.sasl);
        // The client port's stores are another block of keys.
        assert!(c.tls.key_store.location.is_none());
        let mut c = Config::default();
        let e = c.apply_zoo_cfg("sslQuorum=true\n").unwrap_err();
        assert!(e.contains("ssl.quorum.keyStore.location"), "{e}");
        let mut c = Config::default();
        let e = c
            .apply_zoo_cfg("quorum.auth.learnerRequireSasl=true\n")
            .unwrap_err();
        assert!(e.contains("enableSasl"), "{e}");
        for key in ["sslQuorum", "quorum.auth.enableSasl"] {
            let mut c = Config::default();
            assert_eq!(c.apply_zoo_cfg(&format!("{key}=false\n")), Ok(vec![]));
        }
    }

    #[test]
    fn output_budgets_default_from_jute_maxbuffer_and_can_be_set() {
        let mut c = Config::default();
        assert_eq!(c.apply_zoo_cfg("jute.maxbuffer=1000\n"), Ok(vec![]));
        assert_eq!(c.connection_output_budget(), 4000);
        assert_eq!(c.max_reply_size(), None);
        assert!(c.global_output_budget() <= 1 << 30);
        let cfg = "connectionOutputBudget=123\nglobalOutputBudget=4567\nmaxReplySize=89\n";
        assert_eq!(c.apply_zoo_cfg(cfg), Ok(vec![]));
        assert_eq!(
            (
                c.connection_output_budget(),
                c.global_output_budget(),
                c.max_reply_size()
            ),
            (123, 4567, Some(89))
        );
        let e = c
            .apply_zoo_cfg("maxReplySize=0\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("maxReplySize"), "{e}");
    }

    #[test]
    fn admin_and_metrics_keys() {
        let mut c = Config::default();
        assert!(c.admin.enable && !c.admin.prometheus);
        assert_eq!(
            (c.admin.address.as_str(), c.admin.port),
            ("127.0.0.1", 8080)
        );
        let text = "admin.enableServer=false\nadmin.serverAddress=0.0.0.0\nadmin.serverPort=9090\nadmin.commandURL=/cmds\nmetricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\nmetricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=7001\nmetricsProvider.exportJvmInfo=false\n";
        assert_eq!(c.apply_zoo_cfg(text), Ok(vec![]));
        let a = &c.admin;
        assert!(!a.enable && a.prometheus && !a.export_jvm_info);
        assert_eq!(
            (a.address.as_str(), a.port, a.command_url.as_str()),
            ("0.0.0.0", 9090, "/cmds")
        );
        assert_eq!(
            (a.metrics_host.as_str(), a.metrics_port),
            ("127.0.0.1", 7001)
        );
        assert_eq!(a.initial_text, text);
        let e = c
            .apply_zoo_cfg("metricsProvider.className=com.example.Other\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("metricsProvider.className"), "{e}");
        for bad in ["/", "commands", "/ready", "/a{b}", "/a b"] {
            let e = c
                .apply_zoo_cfg(&format!("admin.commandURL={bad}\n"))
                .err()
                .unwrap_or_default();
            assert!(e.contains("admin.commandURL"), "{bad}: {e}");
        }
        let e = c
            .apply_zoo_cfg("admin.serverPort=x\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("admin.serverPort"), "{e}");
    }

    #[test]
    fn tls_keys_are_read_with_and_without_the_zookeeper_prefix() {
        use crate::net::tls::{ClientAuth, StoreType};
        let mut c = Config::default();
        let cfg = "secureClientPort=2281\nsecureClientPortAddress=0.0.0.0\n\
                   serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                   zookeeper.ssl.keyStore.location=/k.p12\nssl.keyStore.password=pw\n\
                   ssl.trustStore.location=/t.pem\nssl.trustStore.type=PEM\n\
                   ssl.clientAuth=want\nssl.enabledProtocols=TLSv1.3\n\
                   ssl.ciphersuites=TLS_AES_128_GCM_SHA256\nclient.portUnification=true\n";
        assert_eq!(c.apply_zoo_cfg(cfg), Ok(vec![]));
        assert_eq!(c.secure_client_port, Some(2281));
        // secureClientPort without clientPort: TLS only, as in ZooKeeper.
        assert!(!c.plaintext_listener());
        assert!(Config::default().plaintext_listener());
        assert_eq!(c.apply_zoo_cfg("clientPort=2181\n"), Ok(vec![]));
        assert!(c.plaintext_listener());
        assert_eq!(c.secure_client_port_address.as_deref(), Some("0.0.0.0"));
        assert!(c.port_unification);
        assert_eq!(c.tls.key_store.kind(), Ok(StoreType::Pkcs12));
        assert_eq!(c.tls.trust_store.kind(), Ok(StoreType::Pem));
        assert_eq!(c.tls.key_store.password.as_deref(), Some("pw"));
        assert_eq!(c.tls.client_auth, ClientAuth::Want);
        assert_eq!(c.tls.enabled_protocols, vec!["TLSv1.3".to_string()]);
        // ZooKeeper's default is need.
        assert_eq!(Config::default().tls.client_auth, ClientAuth::Need);
    }

    #[test]
    fn tls_config_errors_are_clear() {
        let mut c = Config::default();
        let e = c
            .apply_zoo_cfg("secureClientPort=2281\nssl.keyStore.location=/k.jks\n")
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("JKS") && e.contains("PEM") && e.contains("PKCS12"),
            "{e}"
        );
        let mut c = Config::default();
        let e = c
            .apply_zoo_cfg("secureClientPort=2281\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("ssl.keyStore.location"), "{e}");
        let e = Config::default()
            .apply_zoo_cfg("ssl.clientAuth=sometimes\n")
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("ssl.clientAuth") && e.contains("sometimes"),
            "{e}"
        );
    }

    #[test]
    fn spin_wait_is_bounded() {
        let mut c = Config::default();
        assert_eq!(
            c.spin_wait(),
            std::time::Duration::from_micros(crate::spin::DEFAULT_SPIN_MICROS)
        );
        assert_eq!(c.apply_zoo_cfg("spinWaitMicros=0\n"), Ok(vec![]));
        assert_eq!(c.spin_wait(), std::time::Duration::ZERO);
        let e = c
            .apply_zoo_cfg("spinWaitMicros=20000\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("spinWaitMicros") && e.contains("20000"), "{e}");
    }

    #[test]
    fn an_ensemble_member_parks_unless_told_to_poll() {
        let servers = "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n\
                       server.3=127.0.0.1:2890:3890\n";
        let mut c = Config::default();
        c.apply_zoo_cfg(servers).unwrap();
        assert_eq!(c.members.len(), 3);
        assert_eq!(c.spin_wait(), std::time::Duration::ZERO);
        c.apply_zoo_cfg("spinWaitMicros=300\n").unwrap();
        assert_eq!(c.spin_wait(), std::time::Duration::from_micros(300));
    }
}
