//! Access control: ACL validation (fixupACL), permission checks (checkACL), digest and ip
//! providers, and the interned table of ACL lists (identical lists are stored once).

use base64::Engine as _;
use palisade_proto::{ErrorCode, Id, JStr, ACL};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the `x509` provider is registered (TLS for clients is configured), as in
/// ZooKeeper, where an `x509` ACL is INVALIDACL unless it is. Set once at start-up; ACL
/// validation is leader-side (prep), never part of `State::apply`, so replay does not see it.
static X509_PROVIDER: AtomicBool = AtomicBool::new(false);

/// Registers the `x509` provider (server start-up with TLS configured).
pub fn enable_x509() {
    X509_PROVIDER.store(true, Ordering::Relaxed);
}

/// Whether the `sasl` provider is registered (authProvider.N=SASLAuthenticationProvider), as
/// `x509`: a `sasl` ACL is INVALIDACL unless it is.
static SASL_PROVIDER: AtomicBool = AtomicBool::new(false);

/// Registers the `sasl` provider (server start-up with SASL configured).
pub fn enable_sasl() {
    SASL_PROVIDER.store(true, Ordering::Relaxed);
}

/// ZooKeeper's SASLAuthenticationProvider.isValid: a name KerberosName accepts (one with an
/// `@` must be `primary[/instance]@REALM`).
fn sasl_id_valid(id: &str) -> bool {
    let Some((name, realm)) = id.rsplit_once('@') else {
        return true;
    };
    !realm.contains('/') && name.split('/').count() <= 2 && !name.contains('@')
}

pub const READ: i32 = 1;
pub const WRITE: i32 = 2;
pub const CREATE: i32 = 4;
pub const DELETE: i32 = 8;
pub const ADMIN: i32 = 16;
pub const ALL: i32 = 31;

/// One entry of an ACL list as the server keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    pub perms: i32,
    pub scheme: Box<str>,
    pub id: Box<str>,
}

/// An identity a connection has authenticated as (ZooKeeper's authInfo).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthId {
    pub scheme: Box<str>,
    pub id: Box<str>,
}

impl Entry {
    pub fn to_wire(&self) -> ACL {
        ACL {
            perms: self.perms,
            id: Id {
                scheme: JStr::from(&*self.scheme),
                id: JStr::from(&*self.id),
            },
        }
    }
}

/// `user:` + base64(sha1(`user:password`)), as DigestAuthenticationProvider computes it.
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    let sha = sha1_smol::Sha1::from(user_password.as_bytes())
        .digest()
        .bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(sha)
    )
}

/// Validates and expands an ACL list from a create or setACL request, failing as ZooKeeper's
/// fixupACL does: INVALIDACL for a list it rejects, MARSHALLINGERROR where ZooKeeper trips on
/// a null (a NullPointerException there).
pub fn fixup(acl: Option<&[ACL]>, auth: &[AuthId]) -> Result<Vec<Entry>, ErrorCode> {
    let acl = acl.filter(|a| !a.is_empty()).ok_or(ErrorCode::InvalidAcl)?;
    let mut out: Vec<Entry> = Vec::with_capacity(acl.len());
    for a in acl {
        // A null scheme names no provider: INVALIDACL, as in ZooKeeper.
        let scheme = a.id.scheme.as_str().ok_or(ErrorCode::InvalidAcl)?;
        // A null id is fine for `auth`, whose id is ignored (kazoo sends the "" of its
        // CREATOR_ALL_ACL as null); ZooKeeper fails the other schemes on it.
        let id = match a.id.id.as_str() {
            Some(id) => id,
            None if scheme == "auth" => "",
            None => return Err(ErrorCode::MarshallingError),
        };
        if scheme == "auth" {
            expand_auth(a.perms, auth, &mut out)?;
        } else if valid_as_given(scheme, id) {
            let e = Entry {
                perms: a.perms,
                scheme: scheme.into(),
                id: id.into(),
            };
            push_new(e, &mut out);
        } else {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(out)
}

/// Whether an ACL entry of a scheme other than `auth` is one ZooKeeper stores as given: its
/// scheme has a provider here and its id is one that provider accepts.
fn valid_as_given(scheme: &str, id: &str) -> bool {
    match scheme {
        "world" => id == "anyone",
        "digest" => id.split(':').count() == 2,
        "x509" => X509_PROVIDER.load(Ordering::Relaxed) && !id.is_empty(),
        "sasl" => SASL_PROVIDER.load(Ordering::Relaxed) && sasl_id_valid(id),
        "ip" => parse_cidr(id).is_some(),
        _ => false,
    }
}

/// `auth` expands to every digest identity of the connection. ZooKeeper takes the ids whose
/// scheme has an authenticating provider: `super` has none (a super login adds `super:` and
/// `digest:super:...`; only the latter is expanded) and `ip` is not an authenticating one.
/// None at all is INVALIDACL.
fn expand_auth(perms: i32, auth: &[AuthId], out: &mut Vec<Entry>) -> Result<(), ErrorCode> {
    let mut any = false;
    for cid in auth
        .iter()
        .filter(|c| matches!(&*c.scheme, "digest" | "x509" | "sasl"))
    {
        any = true;
        let e = Entry {
            perms,
            scheme: cid.scheme.clone(),
            id: cid.id.clone(),
        };
        push_new(e, out);
    }
    if any {
        Ok(())
    } else {
        Err(ErrorCode::InvalidAcl)
    }
}

/// Adds `e` unless the list already holds it.
fn push_new(e: Entry, out: &mut Vec<Entry>) {
    if !out.contains(&e) {
        out.push(e);
    }
}

/// `skipACL=yes`: ZooKeeper's process-wide switch (a static it reads once at start) that
/// makes every ACL check pass.
static SKIP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `skipACL` for the process (the server, once, at start).
pub fn set_skip(on: bool) {
    SKIP.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// ZooKeeper's checkACL: allowed when ACLs are skipped, the list is empty, the caller is
/// super, or some entry granting one of `perm`'s bits matches one of the caller's identities.
pub fn check(acl: &[Entry], perm: i32, auth: &[AuthId]) -> bool {
    if SKIP.load(std::sync::atomic::Ordering::Relaxed) {
        return true;
    }
    if acl.is_empty() || auth.iter().any(|a| &*a.scheme == "super") {
        return true;
    }
    acl.iter()
        .filter(|e| e.perms & perm != 0)
        .any(|e| match &*e.scheme {
            "world" => &*e.id == "anyone",
            "digest" => auth.iter().any(|a| &*a.scheme == "digest" && a.id == e.id),
            "x509" => auth.iter().any(|a| &*a.scheme == "x509" && a.id == e.id),
            // SASLAuthenticationProvider.matches: the same name, or the SASL user "super".
            "sasl" => auth
                .iter()
                .any(|a| &*a.scheme == "sasl" && (a.id == e.id || &*a.id == "super")),
            "ip" => auth
                .iter()
                .any(|a| &*a.scheme == "ip" && ip_matches(&e.id, &a.id)),
            _ => false,
        })
}

fn parse_cidr(s: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u32>().ok()?)),
        None => (s, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((ip, bits))
}

fn ip_matches(acl_id: &str, client: &str) -> bool {
    let (Some((net, bits)), Ok(ip)) = (parse_cidr(acl_id), client.parse::<IpAddr>()) else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(c)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(n) & mask == u32::from(c) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(c)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(n) & mask == u128::from(c) & mask
        }
        _ => false,
    }
}

/// getACL for a caller without ADMIN: digest ids are shown as `user:x`.
pub fn masked(e: &Entry) -> ACL {
    if &*e.scheme == "digest" {
        let user = e.id.split(':').next().unwrap_or("");
        return ACL {
            perms: e.perms,
            id: Id {
                scheme: JStr::from("digest"),
                id: JStr::from(format!("{user}:x")),
            },
        };
    }
    e.to_wire()
}

/// A stable 64-bit hash of an ACL list's content (for the tree digest: it must be the same
/// in every process, so no randomly seeded hasher).
pub fn content_hash(acl: &[Entry]) -> u64 {
    let mut h = crc32fast::Hasher::new();
    for e in acl {
        h.update(&e.perms.to_be_bytes());
        for s in [&e.scheme, &e.id] {
            h.update(&(s.len() as u32).to_be_bytes());
            h.update(s.as_bytes());
        }
    }
    u64::from(h.finalize()) | (acl.len() as u64) << 32
}

/// One interned list: its references and its content hash.
struct Interned {
    list: Arc<[Entry]>,
    refs: u64,
    hash: u64,
}

/// Interned ACL lists, reference-counted by the nodes that use them.
#[derive(Default)]
pub struct AclTable {
    lists: Vec<Option<Interned>>,
    index: HashMap<Arc<[Entry]>, u32>,
    free: Vec<u32>,
}

impl AclTable {
    /// The id of `acl`, adding it (or one more reference to it).
    pub fn intern(&mut self, acl: Vec<Entry>) -> u32 {
        if let Some(&id) = self.index.get(acl.as_slice()) {
            self.add_ref(id);
            return id;
        }
        let hash = content_hash(&acl);
        let list: Arc<[Entry]> = acl.into();
        let id = match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.lists.get_mut(id as usize) {
                    *slot = Some(Interned {
                        list: list.clone(),
                        refs: 1,
                        hash,
                    });
                }
                id
            }
            None => {
                self.lists.push(Some(Interned {
                    list: list.clone(),
                    refs: 1,
                    hash,
                }));
                (self.lists.len() - 1) as u32
            }
        };
        self.index.insert(list, id);
        id
    }

    /// One more reference to an interned list (bulk loading: no hashing of the content).
    pub fn add_ref(&mut self, id: u32) {
        if let Some(Some(i)) = self.lists.get_mut(id as usize) {
            i.refs += 1;
        }
    }

    pub fn release(&mut self, id: u32) {
        let Some(slot) = self.lists.get_mut(id as usize) else {
            return;
        };
        let drop_it = match slot {
            Some(i) => {
                i.refs -= 1;
                i.refs == 0
            }
            None => false,
        };
        if drop_it {
            if let Some(i) = slot.take() {
                self.index.remove(&i.list);
            }
            self.free.push(id);
        }
    }

    /// The list, shared (no copy).
    pub fn shared(&self, id: u32) -> Arc<[Entry]> {
        match self.lists.get(id as usize) {
            Some(Some(i)) => i.list.clone(),
            _ => Arc::from(Vec::new()),
        }
    }

    pub fn get(&self, id: u32) -> &[Entry] {
        match self.lists.get(id as usize) {
            Some(Some(i)) => &i.list,
            _ => &[],
        }
    }

    /// The list's content hash (see [`content_hash`]).
    pub fn hash(&self, id: u32) -> u64 {
        match self.lists.get(id as usize) {
            Some(Some(i)) => i.hash,
            _ => 0,
        }
    }

    /// Number of distinct lists stored.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(perms: i32, scheme: &str, id: &str) -> ACL {
        ACL {
            perms,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }
    }

    #[test]
    fn digest_matches_zookeeper() {
        // Value computed by ZooKeeper's DigestAuthenticationProvider.generateDigest.
        assert_eq!(
            digest_id("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn fixup_rules() {
        assert!(fixup(None, &[]).is_err());
        assert!(fixup(Some(&[]), &[]).is_err());
        assert!(fixup(Some(&[acl(31, "auth", "")]), &[]).is_err());
        assert!(fixup(Some(&[acl(31, "world", "someone")]), &[]).is_err());
        assert!(fixup(Some(&[acl(31, "digest", "nocolon")]), &[]).is_err());
        let me = [AuthId {
            scheme: "digest".into(),
            id: "u:h".into(),
        }];
        let got = fixup(Some(&[acl(31, "auth", ""), acl(31, "auth", "")]), &me).unwrap_or_default();
        assert_eq!(
            got,
            vec![Entry {
                perms: 31,
                scheme: "digest".into(),
                id: "u:h".into()
            }]
        );
        // the auth scheme's id is ignored, null included
        let null_id = ACL {
            perms: 31,
            id: Id {
                scheme: "auth".into(),
                id: JStr::null(),
            },
        };
        assert_eq!(
            fixup(Some(std::slice::from_ref(&null_id)), &me)
                .unwrap_or_default()
                .len(),
            1
        );
        assert_eq!(fixup(Some(&[null_id]), &[]), Err(ErrorCode::InvalidAcl));
        // any other scheme with a null id: ZooKeeper's NullPointerException, MARSHALLINGERROR
        for scheme in ["world", "digest", "ip"] {
            let a = ACL {
                perms: 31,
                id: Id {
                    scheme: scheme.into(),
                    id: JStr::null(),
                },
            };
            assert_eq!(
                fixup(Some(&[a]), &me),
                Err(ErrorCode::MarshallingError),
                "{scheme}"
            );
        }
        // a super login: the auth scheme expands to its digest id only, as in ZooKeeper
        let super_login = [
            AuthId {
                scheme: "super".into(),
                id: "".into(),
            },
            AuthId {
                scheme: "digest".into(),
                id: "super:h".into(),
            },
            AuthId {
                scheme: "ip".into(),
                id: "127.0.0.1".into(),
            },
        ];
        assert_eq!(
            fixup(Some(&[acl(31, "auth", "")]), &super_login).unwrap_or_default(),
            vec![Entry {
                perms: 31,
                scheme: "digest".into(),
                id: "super:h".into()
            }]
        );
        assert!(fixup(Some(&[acl(1, "ip", "10.0.0.0/8")]), &[]).is_ok());
        assert!(fixup(Some(&[acl(1, "ip", "10.0.0.0/33")]), &[]).is_err());
    }

    #[test]
    fn checks() {
        let world_read = [Entry {
            perms: READ,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        assert!(check(&world_read, READ, &[]));
        assert!(!check(&world_read, WRITE, &[]));
        assert!(check(
            &world_read,
            WRITE,
            &[AuthId {
                scheme: "super".into(),
                id: "".into()
            }]
        ));
        let ip = [Entry {
            perms: ALL,
            scheme: "ip".into(),
            id: "127.0.0.0/8".into(),
        }];
        assert!(check(
            &ip,
            READ,
            &[AuthId {
                scheme: "ip".into(),
                id: "127.0.0.1".into()
            }]
        ));
        assert!(!check(
            &ip,
            READ,
            &[AuthId {
                scheme: "ip".into(),
                id: "10.0.0.1".into()
            }]
        ));
    }
}
