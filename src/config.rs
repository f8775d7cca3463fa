//! Configuration: ZooKeeper's zoo.cfg format (so an existing file works) plus command-line
//! overrides. Unknown keys are warned about; invalid values stop start-up naming key and value.
//! Every key has a row in keys.rs (the configuration reference); check.rs is `--check-config`.
//! `apply_zoo_cfg` hands each key to the parser of its area, one file each, as the reference
//! groups them: basics.rs, storage.rs, limits.rs, ensemble.rs, client_tls.rs, admin.rs (the
//! AdminServer and /metrics); client authentication and quorum security are parsed by their
//! own blocks (auth/settings.rs, ensemble/link/settings.rs). values.rs reads the values.
//!
//! Owns: the settings as values, and their checks. May not touch: sockets, the state, any
//! running part of the server; it reads zoo.cfg, myid, a dynamicConfigFile and /proc/meminfo
//! (the default output budget), and the files its keys name only where `--check-config` checks
//! them.

use std::collections::BTreeMap;
use std::path::PathBuf;

mod admin;
mod basics;
pub mod check;
mod client_tls;
mod ensemble;
pub mod keys;
mod limits;
mod storage;
mod values;

pub use admin::{AdminConfig, PROMETHEUS_PROVIDER};
use values::{parse_bool, Taken};

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
    /// reads to clients that ask for a read-only session (core/role/member/read_only.rs).
    pub read_only_mode: bool,
    /// `reconfigEnabled`: the `reconfig` request is served (docs/design/ENSEMBLE.md); otherwise it is
    /// answered RECONFIGDISABLED, as ZooKeeper's default.
    pub reconfig_enabled: bool,
    /// `standaloneEnabled` (default true): a reconfig must leave at least 2 voters.
    pub standalone_enabled: bool,
    /// `skipACL=yes` (ZooKeeper's `zookeeper.skipACL`): no ACL is checked at all.
    pub skip_acl: bool,
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

impl Config {
    /// Test support: why `text` is refused ("" if it is not).
    #[cfg(test)]
    pub(crate) fn refusal(&mut self, text: &str) -> String {
        self.apply_zoo_cfg(text).err().unwrap_or_default()
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
        for (name, v) in &kv {
            let key = name.strip_prefix("zookeeper.").unwrap_or(name);
            if !self.apply_key(key, name, v)? {
                unknown.push(name.clone());
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

    /// Hands `key` (without a `zookeeper.` prefix; `name` as written, for errors) to the
    /// parser of its area; false: no area takes it. Each key belongs to one area (its row in
    /// keys.rs says which), so the order here does not matter.
    fn apply_key(&mut self, key: &str, name: &str, v: &str) -> Taken {
        Ok(self.apply_basics(key, name, v)?
            || self.apply_storage(key, name, v)?
            || self.apply_limits(key, name, v)?
            || self.apply_ensemble(key, name, v)?
            || self.apply_client_tls(key, name, v)?
            || self.sasl.apply(key, v)?
            || self.quorum.apply(key, v)?
            || self.admin.apply(key, name, v)?)
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
    fn invalid_values_name_key_and_value() {
        let mut c = Config::default();
        let e = c.refusal("clientPort=abc\n");
        assert!(e.contains("clientPort") && e.contains("abc"), "{e}");
        let e = c.refusal("forceSync=maybe\n");
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
}
