//! Authentication of the AdminServer's commands with side effects, as ZooKeeper 3.9's
//! Commands.runCommand does it (ZOOKEEPER-4639, with ZOOKEEPER-4964's per-bit check):
//!
//! - the caller names a scheme in the `Authorization` header: `digest user:password`, `x509`
//!   (the verified client certificate of an HTTPS connection) or `ip` (the peer's address);
//!   the header is split on spaces into the scheme and at most one credential;
//! - the identities it yields are checked against the ACL of the root node `/` for every bit
//!   of ALL (read, write, create, delete, admin), as a client's request is: a `super` identity
//!   (`superDigest`) or `skipACL` passes, `world:anyone` passes any authenticated caller;
//! - refusals: no header 401 "Auth info is missing for the command", a scheme that yields no
//!   identity 401 "Not authenticated", identities the ACL does not admit 403 "Not authorized".
//!
//! ZooKeeper asks this of `snapshot` and `restore` (and `shed_connections` in 3.10); Palisade
//! also of the commands that reset counters (`crst`, `srst`, `orst`), issue 37.

use crate::acl::{self, AuthId, Entry};
use std::net::IpAddr;

/// Primary names of the commands that need an authenticated caller.
const NEED_AUTH: &[&str] = &[
    "connection_stat_reset",
    "observer_connection_stat_reset",
    "restore",
    "snapshot",
    "stat_reset",
];

/// Whether the command (by its primary name) needs an authenticated caller.
pub fn needed(primary: &str) -> bool {
    NEED_AUTH.contains(&primary)
}

/// Who sent a request: the peer's address, and the `x509` id of its verified client
/// certificate when it came over HTTPS with one.
#[derive(Clone, Debug)]
pub struct Caller {
    pub ip: IpAddr,
    pub x509: Option<Box<str>>,
}

/// Why a command was refused: its HTTP status and ZooKeeper's error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    NotAuthenticated,
    NotAuthorized,
}

impl Refusal {
    pub fn status(self) -> u16 {
        match self {
            Refusal::Missing | Refusal::NotAuthenticated => 401,
            Refusal::NotAuthorized => 403,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Refusal::Missing => "Auth info is missing for the command",
            Refusal::NotAuthenticated => "Not authenticated",
            Refusal::NotAuthorized => "Not authorized",
        }
    }
}

/// The identities an `Authorization` header proves (ZooKeeper's handleAuthentication).
/// `super_digest`: the `superDigest` key, whose digest also gets the `super` identity.
pub fn authenticate(
    header: Option<&str>,
    caller: &Caller,
    super_digest: Option<&str>,
) -> Result<Vec<AuthId>, Refusal> {
    let header = header.ok_or(Refusal::Missing)?;
    // Java's String.split(" "): empty pieces between spaces count, trailing ones do not.
    let mut parts: Vec<&str> = header.split(' ').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    let (scheme, data) = match parts.as_slice() {
        [s] => (*s, None),
        [s, d] => (*s, Some(*d)),
        _ => return Err(Refusal::NotAuthenticated),
    };
    let id = |scheme: &str, id: &str| AuthId {
        scheme: scheme.into(),
        id: id.into(),
    };
    let ids = match scheme {
        // ZooKeeper's digest provider fails on a missing credential (a null byte array).
        "digest" => {
            let d = data.ok_or(Refusal::NotAuthenticated)?;
            let digest = acl::digest_id(d);
            let mut ids = Vec::with_capacity(2);
            if super_digest == Some(digest.as_str()) {
                ids.push(id("super", ""));
            }
            ids.push(id("digest", &digest));
            ids
        }
        "ip" => vec![id("ip", &caller.ip.to_string())],
        "x509" => caller
            .x509
            .as_deref()
            .map(|x| vec![id("x509", x)])
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if ids.is_empty() {
        return Err(Refusal::NotAuthenticated);
    }
    Ok(ids)
}

/// ZooKeeper's handleAuthorization: each permission bit of ALL checked on its own against the
/// root's ACL.
pub fn authorize(root_acl: &[Entry], ids: &[AuthId]) -> Result<(), Refusal> {
    let bits = [acl::READ, acl::WRITE, acl::CREATE, acl::DELETE, acl::ADMIN];
    if bits.iter().all(|&b| acl::check(root_acl, b, ids)) {
        Ok(())
    } else {
        Err(Refusal::NotAuthorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Caller {
        Caller {
            ip: "127.0.0.1".parse().unwrap(),
            x509: None,
        }
    }

    fn entry(perms: i32, scheme: &str, id: &str) -> Entry {
        Entry {
            perms,
            scheme: scheme.into(),
            id: id.into(),
        }
    }

    #[test]
    fn header_forms() {
        let c = caller();
        assert_eq!(authenticate(None, &c, None), Err(Refusal::Missing));
        for bad in ["digest", "digest a:b c", "basic dXNlcjpwdw==", "", "x509"] {
            assert_eq!(
                authenticate(Some(bad), &c, None),
                Err(Refusal::NotAuthenticated),
                "{bad:?}"
            );
        }
        let ids = authenticate(Some("digest admin:pw"), &c, None).unwrap();
        assert_eq!(&*ids[0].id, acl::digest_id("admin:pw"));
        let ids = authenticate(Some("ip"), &c, None).unwrap();
        assert_eq!((&*ids[0].scheme, &*ids[0].id), ("ip", "127.0.0.1"));
        let with_cert = Caller {
            x509: Some("CN=admin".into()),
            ..caller()
        };
        let ids = authenticate(Some("x509"), &with_cert, None).unwrap();
        assert_eq!((&*ids[0].scheme, &*ids[0].id), ("x509", "CN=admin"));
        let sup = acl::digest_id("super:secret");
        let ids = authenticate(Some("digest super:secret"), &c, Some(&sup)).unwrap();
        assert_eq!(&*ids[0].scheme, "super");
    }

    #[test]
    fn every_bit_of_all_is_needed_on_the_root() {
        let admin = authenticate(Some("digest admin:pw"), &caller(), None).unwrap();
        let open = [entry(acl::ALL, "world", "anyone")];
        assert_eq!(authorize(&open, &admin), Ok(()));
        let theirs = [entry(acl::ALL, "digest", &acl::digest_id("admin:pw"))];
        assert_eq!(authorize(&theirs, &admin), Ok(()));
        let other = authenticate(Some("digest eve:pw"), &caller(), None).unwrap();
        assert_eq!(authorize(&theirs, &other), Err(Refusal::NotAuthorized));
        // Read alone is not enough (ZooKeeper 3.9.0-3.9.3 let any one bit through).
        let read_only = [entry(acl::READ, "world", "anyone")];
        assert_eq!(authorize(&read_only, &admin), Err(Refusal::NotAuthorized));
        // Bits from two entries add up.
        let split = [
            entry(acl::READ | acl::WRITE, "ip", "127.0.0.0/8"),
            entry(acl::CREATE | acl::DELETE | acl::ADMIN, "ip", "127.0.0.1"),
        ];
        let ip = authenticate(Some("ip"), &caller(), None).unwrap();
        assert_eq!(authorize(&split, &ip), Ok(()));
    }
}
