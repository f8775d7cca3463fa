//! Client authentication beyond `addauth`: SASL DIGEST-MD5 as ZooKeeper 3.8 does it, and the
//! rule that a connection must authenticate before anything else (`enforce.auth.*`,
//! `sessionRequireClientSASLAuth`). See docs/SASL.md.
//!
//! A leaf: the mechanism is sans-IO (tokens in, tokens out; the caller brings the random
//! bytes), so the core runs an exchange as one more session-local request, in the
//! connection's order, and adds the `sasl` identity to the connection it owns. Imports
//! nothing of the crate.
//!
//! Owns: the DIGEST-MD5 mechanism (server and client side), the JAAS file's sections, the
//! enforce-auth settings. May not touch: connections, sessions, the state (the core holds a
//! connection's identities).

pub mod digest_md5;
pub mod digest_md5_client;
pub mod directives;
pub mod jaas;
mod settings;

pub use settings::{java_bool, SaslSettings};

use std::collections::HashSet;
use std::sync::Arc;

/// The login module ZooKeeper's DIGEST-MD5 users are listed under.
pub const DIGEST_LOGIN_MODULE: &str = "org.apache.zookeeper.server.auth.DigestLoginModule";
/// The provider class whose `authProvider.N` line switches SASL on.
pub const SASL_PROVIDER: &str = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

/// SASL as the server runs it (from the JAAS section and the config keys).
#[derive(Debug, Default)]
pub struct Sasl {
    pub users: digest_md5::Users,
    /// `superUser`, `superUser.*`: these authenticated names also get the `super` identity.
    pub super_users: HashSet<String>,
    /// `allowSaslFailedClients`: a failed exchange keeps the connection (unless SASL is
    /// required), as ZooKeeper's flag of that name does.
    pub allow_failed: bool,
}

/// What the core checks: SASL (if configured) and which schemes a connection must have
/// authenticated with before its requests are served.
#[derive(Debug, Default, Clone)]
pub struct AuthPolicy {
    pub sasl: Option<Arc<Sasl>>,
    /// `enforce.auth.schemes` when `enforce.auth.enabled` (or `sasl` for
    /// `sessionRequireClientSASLAuth`); empty: nothing is enforced.
    pub enforce: Vec<String>,
}

impl AuthPolicy {
    /// Whether a failed SASL exchange is answered SESSIONCLOSEDREQUIRESASLAUTH (ZooKeeper's
    /// `isSaslAuthRequired`).
    pub fn sasl_required(&self) -> bool {
        self.enforce.iter().any(|s| s == "sasl")
    }
}

/// Fills `buf` from the operating system's random source (getrandom(2)).
pub fn os_random(buf: &mut [u8]) -> bool {
    getrandom::fill(buf).is_ok()
}
