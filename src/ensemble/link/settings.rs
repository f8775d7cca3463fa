//! The zoo.cfg keys that secure the links between members, named and defaulted as ZooKeeper
//! 3.8 names them (its administrator's guide, "Quorum TLS" and "Quorum SASL"):
//!
//! - `sslQuorum`, `ssl.quorum.keyStore.*`, `ssl.quorum.trustStore.*`,
//!   `ssl.quorum.hostnameVerification`, `ssl.quorum.enabledProtocols`,
//!   `ssl.quorum.ciphersuites`, `sslQuorumReloadCertFiles`, and `portUnification` (the peer
//!   port accepts TLS and plaintext links both: the window of a rolling enablement);
//! - `quorum.auth.enableSasl`, `quorum.auth.learnerRequireSasl`,
//!   `quorum.auth.serverRequireSasl`, `quorum.auth.learner.saslLoginContext` (JAAS section
//!   `QuorumLearner`), `quorum.auth.server.saslLoginContext` (`QuorumServer`).

use crate::auth::java_bool;
use crate::net::tls::TlsConfig;

#[derive(Debug, Clone)]
pub struct QuorumSettings {
    /// `sslQuorum`: this member dials its peers over TLS, and (without `port_unification`)
    /// accepts only TLS links.
    pub ssl_quorum: bool,
    /// `portUnification`: the peer port accepts TLS links and plaintext ones.
    pub port_unification: bool,
    /// `ssl.quorum.*`, read as the client port's `ssl.*` keys are.
    pub tls: TlsConfig,
    /// `ssl.quorum.hostnameVerification` (default true): a peer's certificate must name the
    /// host its `server.N` line gives.
    pub hostname_verification: bool,
    /// `sslQuorumReloadCertFiles`: new links use the store files as they change.
    pub reload_cert_files: bool,
    /// `quorum.auth.enableSasl`: links run a DIGEST-MD5 exchange both ways.
    pub sasl: bool,
    /// `quorum.auth.learnerRequireSasl`: this member refuses a peer that does not run it.
    pub learner_require_sasl: bool,
    /// `quorum.auth.serverRequireSasl`: this member refuses a link that does not run it.
    pub server_require_sasl: bool,
    pub learner_context: String,
    pub server_context: String,
}

impl Default for QuorumSettings {
    fn default() -> Self {
        QuorumSettings {
            ssl_quorum: false,
            port_unification: false,
            tls: TlsConfig::default(),
            hostname_verification: true,
            reload_cert_files: false,
            sasl: false,
            learner_require_sasl: false,
            server_require_sasl: false,
            learner_context: "QuorumLearner".into(),
            server_context: "QuorumServer".into(),
        }
    }
}

impl QuorumSettings {
    /// Takes one zoo.cfg key (`zookeeper.` prefix stripped) if it is one of these.
    pub fn apply(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match key {
            "sslQuorum" => self.ssl_quorum = java_bool(key, v)?,
            "portUnification" => self.port_unification = java_bool(key, v)?,
            "sslQuorumReloadCertFiles" => self.reload_cert_files = java_bool(key, v)?,
            "ssl.quorum.hostnameVerification" => self.hostname_verification = java_bool(key, v)?,
            // Links always verify both ends (mutual TLS), as ZooKeeper's quorum does.
            "ssl.quorum.clientAuth" => {
                if !v.trim().eq_ignore_ascii_case("need") && !v.trim().is_empty() {
                    return Err(format!(
                        "invalid value for {key}: {v:?} (peer links always verify both \
                         certificates: need)"
                    ));
                }
            }
            "quorum.auth.enableSasl" => self.sasl = java_bool(key, v)?,
            "quorum.auth.learnerRequireSasl" => self.learner_require_sasl = java_bool(key, v)?,
            "quorum.auth.serverRequireSasl" => self.server_require_sasl = java_bool(key, v)?,
            "quorum.auth.learner.saslLoginContext" => self.learner_context = v.trim().into(),
            "quorum.auth.server.saslLoginContext" => self.server_context = v.trim().into(),
            // Kerberos only; DIGEST-MD5 ignores them.
            "quorum.auth.kerberos.servicePrincipal" | "quorum.cnxn.threads.size" => {}
            k => match k.strip_prefix("ssl.quorum.") {
                Some(rest) => {
                    if !self.tls.apply(&format!("ssl.{rest}"), v)? {
                        return Ok(false);
                    }
                }
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    /// Whether any TLS is configured on the peer port (dialing or accepting).
    pub fn tls_on(&self) -> bool {
        self.ssl_quorum || (self.port_unification && self.tls.key_store.location.is_some())
    }

    /// Checks what can be checked before the files are read.
    pub fn validate(&self) -> Result<(), String> {
        if self.tls_on() {
            if self.tls.key_store.location.is_none() {
                return Err("sslQuorum=true needs ssl.quorum.keyStore.location".into());
            }
            if self.tls.trust_store.location.is_none() {
                return Err(
                    "sslQuorum=true needs ssl.quorum.trustStore.location (the CA that signs \
                     the members' certificates: both ends of a link are verified)"
                        .into(),
                );
            }
            self.tls.key_store.kind()?;
            self.tls.trust_store.kind()?;
        }
        if (self.learner_require_sasl || self.server_require_sasl) && !self.sasl {
            return Err(
                "quorum.auth.learnerRequireSasl or serverRequireSasl is true but \
                 quorum.auth.enableSasl is not"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zookeepers_quorum_keys_are_read_and_checked() {
        let mut q = QuorumSettings::default();
        for (k, v) in [
            ("sslQuorum", "true"),
            ("ssl.quorum.keyStore.location", "/k.p12"),
            ("ssl.quorum.keyStore.password", "pw"),
            ("ssl.quorum.trustStore.location", "/t.pem"),
            ("ssl.quorum.hostnameVerification", "false"),
            ("ssl.quorum.enabledProtocols", "TLSv1.3"),
            ("sslQuorumReloadCertFiles", "true"),
            ("portUnification", "true"),
            ("quorum.auth.enableSasl", "true"),
            ("quorum.auth.learnerRequireSasl", "true"),
        ] {
            assert_eq!(q.apply(k, v), Ok(true), "{k}");
        }
        assert!(q.ssl_quorum && q.port_unification && q.reload_cert_files && q.sasl);
        assert!(!q.hostname_verification && q.learner_require_sasl);
        assert_eq!(q.tls.key_store.password.as_deref(), Some("pw"));
        assert_eq!(q.tls.enabled_protocols, ["TLSv1.3"]);
        assert_eq!(q.validate(), Ok(()));
        assert_eq!(q.apply("ssl.keyStore.location", "/x"), Ok(false));
        assert_eq!(q.apply("ssl.quorum.nonsense", "1"), Ok(false));
        assert!(q.apply("sslQuorum", "yes").is_err());
        // Both ends of a link are always verified.
        assert_eq!(q.apply("ssl.quorum.clientAuth", "need"), Ok(true));
        assert!(q.apply("ssl.quorum.clientAuth", "want").is_err());
        assert!(q.apply("ssl.quorum.clientAuth", "none").is_err());

        let mut q = QuorumSettings::default();
        q.apply("sslQuorum", "true").unwrap();
        assert!(q.validate().unwrap_err().contains("keyStore"));
        q.apply("ssl.quorum.keyStore.location", "/k.pem").unwrap();
        assert!(q.validate().unwrap_err().contains("trustStore"));

        let mut q = QuorumSettings::default();
        q.apply("quorum.auth.serverRequireSasl", "true").unwrap();
        assert!(q.validate().unwrap_err().contains("enableSasl"));
    }
}
