//! The AdminServer's and the Prometheus endpoint's settings (`admin.*`, `metricsProvider.*`)
//! and the parser of their keys.

use super::values::{parse, parse_bool, Taken};

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

impl AdminConfig {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the AdminServer's or the metrics endpoint's.
    pub(super) fn apply(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "admin.enableServer" => self.enable = parse_bool(name, v)?,
            "admin.serverAddress" => self.address = v.to_string(),
            "admin.serverPort" => self.port = parse(name, v)?,
            "admin.commandURL" => self.command_url = command_url(name, v)?,
            "admin.rateLimiterIntervalInMS" => self.rate_limiter_interval_ms = parse(name, v)?,
            "admin.snapshot.enabled" => self.snapshot_enabled = parse_bool(name, v)?,
            "admin.restore.enabled" => self.restore_enabled = parse_bool(name, v)?,
            "admin.forceHttps" => self.force_https = parse_bool(name, v)?,
            "admin.portUnification" => self.port_unification = parse_bool(name, v)?,
            "admin.needClientAuth" => self.need_client_auth = parse_bool(name, v)?,
            "metricsProvider.className" => self.prometheus = prometheus(name, v)?,
            "metricsProvider.httpHost" => self.metrics_host = v.to_string(),
            "metricsProvider.httpPort" => {
                self.metrics_port = parse(name, v)?;
                self.metrics_port_set = true;
            }
            "metricsProvider.httpsPort" => self.metrics_https_port = Some(parse(name, v)?),
            "metricsProvider.ssl.need.client.auth" => {
                self.metrics_need_client_auth = parse_bool(name, v)?
            }
            "metricsProvider.ssl.want.client.auth" => {
                self.metrics_want_client_auth = parse_bool(name, v)?
            }
            k if k.starts_with("metricsProvider.ssl.")
                && self
                    .metrics_tls
                    .apply(k.trim_start_matches("metricsProvider."), v)? => {}
            "metricsProvider.exportJvmInfo" => self.export_jvm_info = parse_bool(name, v)?,
            // Accepted for compatibility; it has no effect.
            "audit.enable" => {}
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// admin.commandURL: a path such as /commands (a trailing '/' dropped), not /ready.
fn command_url(name: &str, v: &str) -> Result<String, String> {
    let path = v.trim_end_matches('/');
    let ok = path.len() > 1
        && path.starts_with('/')
        && path != "/ready"
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c));
    if !ok {
        return Err(format!(
            "invalid value for {name}: {v:?} (a path such as /commands: letters, digits, - . _ ~ /; not /ready)"
        ));
    }
    Ok(path.to_string())
}

/// metricsProvider.className: whether it names the Prometheus provider (the default and
/// null providers: no endpoint; any other class is refused).
fn prometheus(name: &str, v: &str) -> Result<bool, String> {
    match v {
        PROMETHEUS_PROVIDER => Ok(true),
        "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
        | "org.apache.zookeeper.metrics.impl.NullMetricsProvider" => Ok(false),
        _ => Err(format!(
            "invalid value for {name}: {v:?} (Palisade has {PROMETHEUS_PROVIDER} and the default provider)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

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
        let e = c.refusal("metricsProvider.className=com.example.Other\n");
        assert!(e.contains("metricsProvider.className"), "{e}");
        for bad in ["/", "commands", "/ready", "/a{b}", "/a b"] {
            let e = c.refusal(&format!("admin.commandURL={bad}\n"));
            assert!(e.contains("admin.commandURL"), "{bad}: {e}");
        }
        let e = c.refusal("admin.serverPort=x\n");
        assert!(e.contains("admin.serverPort"), "{e}");
    }
}
