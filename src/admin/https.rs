//! HTTPS for the AdminServer and /metrics, with ZooKeeper's keys:
//!
//! - AdminServer (JettyAdminServer): `admin.forceHttps` (HTTPS only) or `admin.portUnification`
//!   (HTTP and HTTPS on one port), with the `ssl.quorum.*` key and trust stores (ZooKeeper
//!   builds it from QuorumX509Util); `admin.needClientAuth` makes a client certificate
//!   mandatory (otherwise one is asked for and optional: the `x509` admin auth scheme needs it);
//! - /metrics (PrometheusMetricsProvider since ZOOKEEPER-4798): `metricsProvider.httpsPort`
//!   with `metricsProvider.ssl.{keyStore,trustStore}.*`, `ssl.need.client.auth`,
//!   `ssl.want.client.auth` (both default true), `ssl.enabledProtocols`, `ssl.ciphersuites`;
//!   with httpsPort set, plain HTTP only on an explicit `metricsProvider.httpPort`, and both on
//!   one port when the two are equal.
//!
//! The stores are read as the client port's (net/tls.rs: PEM or PKCS12) and reloaded the same
//! way when their files change or on SIGHUP.

use super::listener::Security;
use crate::config::{AdminConfig, Config};
use crate::net::tls::{self, ClientAuth, TlsConfig};
use std::sync::Arc;

fn acceptor(cfg: TlsConfig, what: &str) -> Result<Arc<tls::Acceptor>, String> {
    if cfg.key_store.location.is_none() {
        return Err(format!("{what} needs a key store"));
    }
    let a = tls::Acceptor::new(cfg).map_err(|e| format!("{what}: {e}"))?;
    tls::spawn_reloader(a.clone(), crate::limits::ADMIN_TLS_RELOAD_CHECK);
    Ok(a)
}

/// The AdminServer's listener security from `admin.forceHttps` / `admin.portUnification`.
pub fn admin_security(cfg: &Config) -> Result<Security, String> {
    let a = &cfg.admin;
    if !a.force_https && !a.port_unification {
        return Ok(Security::Plain);
    }
    let mut t = cfg.quorum.tls.clone();
    t.client_auth = if a.need_client_auth {
        ClientAuth::Need
    } else {
        ClientAuth::Want
    };
    let acc = acceptor(
        t,
        "admin.forceHttps/admin.portUnification (ssl.quorum.keyStore.location)",
    )?;
    Ok(if a.force_https {
        Security::Tls(acc)
    } else {
        Security::Unified(acc)
    })
}

/// The /metrics listeners: (port, security) for each.
pub fn metrics_listeners(a: &AdminConfig) -> Vec<(u16, Result<Security, String>)> {
    let Some(https) = a.metrics_https_port else {
        return vec![(a.metrics_port, Ok(Security::Plain))];
    };
    let mut t = a.metrics_tls.clone();
    t.client_auth = match (a.metrics_need_client_auth, a.metrics_want_client_auth) {
        (true, _) => ClientAuth::Need,
        (false, true) => ClientAuth::Want,
        (false, false) => ClientAuth::None,
    };
    let acc = acceptor(
        t,
        "metricsProvider.httpsPort (metricsProvider.ssl.keyStore.location)",
    );
    if a.metrics_port_set && a.metrics_port == https {
        return vec![(https, acc.map(Security::Unified))];
    }
    let mut out = Vec::new();
    if a.metrics_port_set {
        out.push((a.metrics_port, Ok(Security::Plain)));
    }
    out.push((https, acc.map(Security::Tls)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(text: &str) -> Vec<(u16, &'static str)> {
        let mut c = Config::default();
        c.apply_zoo_cfg(text).unwrap();
        metrics_listeners(&c.admin)
            .into_iter()
            .map(|(p, s)| {
                let kind = match s {
                    Ok(Security::Plain) => "http",
                    Ok(Security::Tls(_)) => "https",
                    Ok(Security::Unified(_)) => "both",
                    // No key store in these configs: the HTTPS listener is refused.
                    Err(_) => "refused",
                };
                (p, kind)
            })
            .collect()
    }

    /// The provider's port rules (ZOOKEEPER-4798): httpPort defaults to 7000 only without
    /// httpsPort; equal ports are one listener for both.
    #[test]
    fn metrics_ports_as_zookeepers_provider() {
        assert_eq!(ports(""), vec![(7000, "http")]);
        assert_eq!(
            ports("metricsProvider.httpPort=7001\n"),
            vec![(7001, "http")]
        );
        assert_eq!(
            ports("metricsProvider.httpsPort=7443\n"),
            vec![(7443, "refused")]
        );
        assert_eq!(
            ports("metricsProvider.httpsPort=7443\nmetricsProvider.httpPort=7001\n"),
            vec![(7001, "http"), (7443, "refused")]
        );
        assert_eq!(
            ports("metricsProvider.httpsPort=7443\nmetricsProvider.httpPort=7443\n"),
            vec![(7443, "refused")]
        );
        let mut c = Config::default();
        c.apply_zoo_cfg("admin.forceHttps=true\n").unwrap();
        assert!(
            admin_security(&c).is_err(),
            "forceHttps without ssl.quorum stores"
        );
        c.apply_zoo_cfg("admin.forceHttps=false\n").unwrap();
        assert!(matches!(admin_security(&c), Ok(Security::Plain)));
    }
}
