//! TLS for clients: the secure client port, port unification and the `ssl.*` stores (parsed
//! by net/tls.rs; docs/TLS.md) (the "Client TLS" area of the reference, keys.rs).

use super::values::{parse, parse_bool, Taken};
use super::Config;

impl Config {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the client TLS keys.
    pub(super) fn apply_client_tls(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "secureClientPort" => self.secure_client_port = Some(parse(name, v)?),
            "secureClientPortAddress" => self.secure_client_port_address = Some(v.to_string()),
            "client.portUnification" => self.port_unification = parse_bool(name, v)?,
            // ZooKeeper picks its Netty or NIO factory by name; Palisade has one.
            "serverCnxnFactory" => {}
            // The x509 identity is given whenever TLS is configured (net/tls.rs).
            "authProvider.x509"
                if v == "org.apache.zookeeper.server.auth.X509AuthenticationProvider" => {}
            k if k.starts_with("ssl.") && self.tls.apply(k, v)? => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether to listen for plaintext clients on clientPort: unless the config names only a
    /// secureClientPort.
    pub fn plaintext_listener(&self) -> bool {
        self.client_port_set || self.secure_client_port.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = c.refusal("secureClientPort=2281\nssl.keyStore.location=/k.jks\n");
        assert!(
            e.contains("JKS") && e.contains("PEM") && e.contains("PKCS12"),
            "{e}"
        );
        let mut c = Config::default();
        let e = c.refusal("secureClientPort=2281\n");
        assert!(e.contains("ssl.keyStore.location"), "{e}");
        let e = Config::default().refusal("ssl.clientAuth=sometimes\n");
        assert!(
            e.contains("ssl.clientAuth") && e.contains("sometimes"),
            "{e}"
        );
    }
}
