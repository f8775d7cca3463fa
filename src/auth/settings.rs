//! The configuration of SASL and of enforced authentication, from the places a ZooKeeper
//! operator already sets it: zoo.cfg keys (ZooKeeper turns an unknown zoo.cfg key into the
//! system property `zookeeper.<key>`, so both spellings work) and `-D` flags in the
//! `SERVER_JVMFLAGS` / `JVMFLAGS` environment variables that zkServer.sh passes to the JVM.
//! zoo.cfg wins over a flag, as in ZooKeeper, where it sets the property after the JVM did.

use super::{jaas, AuthPolicy, Sasl, DIGEST_LOGIN_MODULE, SASL_PROVIDER};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The JVM property that names the JAAS file.
pub const JAAS_PROPERTY: &str = "java.security.auth.login.config";

#[derive(Debug, Clone, Default)]
pub struct SaslSettings {
    /// Some `authProvider.N` names SASLAuthenticationProvider.
    pub provider: bool,
    /// The JAAS file: zoo.cfg `jaasLoginConfig`, or `-Djava.security.auth.login.config`.
    pub jaas_file: Option<PathBuf>,
    /// `sasl.serverconfig`: the JAAS section to read (default `Server`).
    pub section: Option<String>,
    pub session_require_sasl: bool,
    pub enforce_enabled: bool,
    pub enforce_schemes: Vec<String>,
    /// `superUser` and `superUser.<anything>` (the key keeps several apart).
    pub super_users: BTreeMap<String, String>,
    pub allow_failed: bool,
}

/// A boolean of the keys ZooKeeper reads as Java system properties (the SASL and quorum
/// security ones): `true` or `false`, any case.
pub fn java_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("invalid value for {key}: {v:?} (true or false)")),
    }
}

impl SaslSettings {
    /// Takes one zoo.cfg key (its `zookeeper.` prefix already stripped) if it is one of
    /// these; `Ok(false)` leaves it to the caller.
    pub fn apply(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match key {
            k if k.starts_with("authProvider.") && v.trim() == SASL_PROVIDER => {
                self.provider = true
            }
            "jaasLoginConfig" => self.jaas_file = Some(PathBuf::from(v.trim())),
            "sasl.serverconfig" => self.section = Some(v.trim().to_string()),
            "sessionRequireClientSASLAuth" => self.session_require_sasl = java_bool(key, v)?,
            "enforce.auth.enabled" => self.enforce_enabled = java_bool(key, v)?,
            "enforce.auth.schemes" => {
                self.enforce_schemes = v
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            "allowSaslFailedClients" => self.allow_failed = java_bool(key, v)?,
            k if k == "superUser" || k.starts_with("superUser.") => {
                self.super_users.insert(k.to_string(), v.trim().to_string());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Takes the `-Dname=value` flags of a JVM command line (split on white space, as the
    /// shell splits zkServer.sh's unquoted `$JVMFLAGS`) that are SASL settings; later flags
    /// win, as in Java. Other flags are ignored.
    pub fn apply_jvm_flags(&mut self, flags: &str) -> Result<(), String> {
        for f in flags.split_whitespace() {
            let Some((name, value)) = f.strip_prefix("-D").and_then(|p| p.split_once('=')) else {
                continue;
            };
            if name == JAAS_PROPERTY {
                self.jaas_file = Some(PathBuf::from(value));
            } else if let Some(key) = name.strip_prefix("zookeeper.") {
                self.apply(key, value)
                    .map_err(|e| format!("{e} (a JVM flag)"))?;
            }
        }
        Ok(())
    }

    /// The policy the core runs with: SASL on when an `authProvider.N` names
    /// SASLAuthenticationProvider, with the users of the JAAS section; `x509` says whether
    /// the x509 scheme exists (TLS configured). Refuses what ZooKeeper refuses at start-up
    /// (enforcement with no or unknown schemes) and, unlike it, SASL with no JAAS users file
    /// (ZooKeeper would then answer every SASL token with an empty OK).
    pub fn resolve(&self, x509: bool) -> Result<AuthPolicy, String> {
        let sasl = if self.provider {
            Some(Arc::new(self.load()?))
        } else {
            if self.has_client_section() {
                tracing::warn!(
                    "a JAAS file is configured but no authProvider.N={SASL_PROVIDER}: SASL is off"
                );
            }
            None
        };
        let enforce = if self.session_require_sasl {
            vec!["sasl".to_string()]
        } else if self.enforce_enabled {
            if self.enforce_schemes.is_empty() {
                return Err(
                    "enforce.auth.enabled is true: enforce.auth.schemes must be configured".into(),
                );
            }
            self.enforce_schemes.clone()
        } else {
            Vec::new()
        };
        for s in &enforce {
            let known = match s.as_str() {
                "ip" | "digest" => true,
                "sasl" => sasl.is_some(),
                "x509" => x509,
                _ => false,
            };
            if !known {
                return Err(format!(
                    "authentication scheme {s} is not available (enforce.auth.schemes / \
                     sessionRequireClientSASLAuth; sasl needs authProvider.N={SASL_PROVIDER})"
                ));
            }
        }
        Ok(AuthPolicy { sasl, enforce })
    }

    /// Whether the JAAS file has the clients' section (`Server`, or zookeeper.sasl.serverconfig):
    /// a file with only the quorum's sections (QuorumServer, QuorumLearner) is for the peer
    /// links, and client SASL being off is then no news.
    fn has_client_section(&self) -> bool {
        let Some(text) = self
            .jaas_file
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
        else {
            return false;
        };
        let name = self.section.as_deref().unwrap_or("Server");
        jaas::parse(&text).is_ok_and(|sections| sections.iter().any(|s| s.name == name))
    }

    fn load(&self) -> Result<Sasl, String> {
        let Some(path) = &self.jaas_file else {
            return Err(format!(
                "authProvider {SASL_PROVIDER} is configured but no JAAS file: set \
                 jaasLoginConfig=PATH in zoo.cfg or -D{JAAS_PROPERTY}=PATH in SERVER_JVMFLAGS"
            ));
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the JAAS file {}: {e}", path.display()))?;
        let sections =
            jaas::parse(&text).map_err(|e| format!("JAAS file {}: {e}", path.display()))?;
        let name = self.section.as_deref().unwrap_or("Server");
        let Some(section) = sections.iter().find(|s| s.name == name) else {
            return Err(format!(
                "no JAAS configuration section named '{name}' was found in '{}'",
                path.display()
            ));
        };
        let mut users = super::digest_md5::Users::new();
        for m in &section.modules {
            if m.class != DIGEST_LOGIN_MODULE {
                return Err(format!(
                    "JAAS section '{name}' uses {}: only {DIGEST_LOGIN_MODULE} (DIGEST-MD5) is \
                     supported; GSSAPI/Kerberos is not",
                    m.class
                ));
            }
            for (k, v) in &m.options {
                if let Some(user) = k.strip_prefix("user_") {
                    users.insert(user.to_string(), v.clone());
                }
            }
        }
        if users.is_empty() {
            tracing::warn!(section = name, file = %path.display(), "the JAAS section lists no user_NAME: every SASL login will fail");
        }
        tracing::info!(
            users = users.len(),
            section = name,
            file = %path.display(),
            "SASL DIGEST-MD5 on"
        );
        Ok(Sasl {
            users,
            super_users: self.super_users.values().cloned().collect(),
            allow_failed: self.allow_failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jaas(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let p = dir.path().join("jaas.conf");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn zoo_cfg_wins_over_jvm_flags() {
        let mut s = SaslSettings::default();
        s.apply_jvm_flags("-Xmx1g -Djava.security.auth.login.config=/a -Dzookeeper.sessionRequireClientSASLAuth=true -Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
            .unwrap();
        assert!(s.provider && s.session_require_sasl);
        assert_eq!(s.jaas_file.as_deref(), Some(std::path::Path::new("/a")));
        s.apply("jaasLoginConfig", "/b").unwrap();
        s.apply("sessionRequireClientSASLAuth", "false").unwrap();
        assert_eq!(s.jaas_file.as_deref(), Some(std::path::Path::new("/b")));
        assert!(!s.session_require_sasl);
        assert!(s
            .apply_jvm_flags("-Dzookeeper.enforce.auth.enabled=maybe")
            .is_err());
        assert!(!s.apply("authProvider.1", "com.example.Other").unwrap());
    }

    /// The "SASL is off" warning is for a JAAS file with the clients' section: one with only
    /// the quorum's sections (quorum SASL alone) once drew it on every member.
    #[test]
    fn only_a_client_section_makes_sasl_off_worth_a_warning() {
        let d = tempfile_dir();
        let quorum = "QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required \
                      user_m=\"p\"; };\nQuorumLearner { org.apache.zookeeper.server.auth.\
                      DigestLoginModule required username=\"m\" password=\"p\"; };\n";
        let mut s = SaslSettings {
            jaas_file: Some(jaas(&d, quorum)),
            ..Default::default()
        };
        assert!(!s.has_client_section());
        let client = format!(
            "{quorum}Server {{ org.apache.zookeeper.server.auth.DigestLoginModule required \
             user_a=\"b\"; }};\n"
        );
        s.jaas_file = Some(jaas(&d, &client));
        assert!(s.has_client_section());
        s.section = Some("Elsewhere".into());
        assert!(!s.has_client_section());
        s.jaas_file = Some(d.path().join("missing"));
        assert!(!s.has_client_section());
    }

    #[test]
    fn resolve_loads_users_and_checks_schemes() {
        let d = tempfile_dir();
        let mut s = SaslSettings::default();
        assert!(s.resolve(false).unwrap().sasl.is_none());
        s.apply("authProvider.1", SASL_PROVIDER).unwrap();
        assert!(s.resolve(false).unwrap_err().contains("no JAAS file"));
        s.jaas_file = Some(jaas(&d, "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_alice=\"a1\" user_bob=\"b2\"; };"));
        s.apply("superUser", "alice").unwrap();
        let p = s.resolve(false).unwrap();
        let sasl = p.sasl.unwrap();
        assert_eq!(sasl.users.get("bob").map(String::as_str), Some("b2"));
        assert!(sasl.super_users.contains("alice"));
        assert!(p.enforce.is_empty());
        s.apply("enforce.auth.enabled", "true").unwrap();
        assert!(s.resolve(false).unwrap_err().contains("must be configured"));
        s.apply("enforce.auth.schemes", "sasl, digest").unwrap();
        assert_eq!(s.resolve(false).unwrap().enforce, ["sasl", "digest"]);
        s.apply("enforce.auth.schemes", "x509").unwrap();
        assert!(s
            .resolve(false)
            .unwrap_err()
            .contains("x509 is not available"));
        assert!(s.resolve(true).is_ok());
        s.apply("sasl.serverconfig", "Other").unwrap();
        assert!(s.resolve(true).unwrap_err().contains("'Other'"));
    }

    #[test]
    fn kerberos_modules_are_refused() {
        let d = tempfile_dir();
        let mut s = SaslSettings {
            provider: true,
            ..Default::default()
        };
        s.jaas_file = Some(jaas(
            &d,
            "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };",
        ));
        assert!(s
            .resolve(false)
            .unwrap_err()
            .contains("GSSAPI/Kerberos is not"));
    }

    fn tempfile_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }
}
