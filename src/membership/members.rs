//! The ensemble's members as ZooKeeper's configuration names them:
//! `server.N=host:peerPort:electionPort[:participant|observer][;[clientAddr:]clientPort]`,
//! with `dataDir/myid` naming the local one. Parsed with ZooKeeper 3.8's rules
//! (QuorumPeer.QuorumServer): several `|`-separated peer addresses, IPv6 in brackets, the
//! role case-insensitive, the client part optional.

use std::collections::BTreeMap;
use std::fmt;

/// Whether a member votes. ZooKeeper's observers become non-voting Raft learners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Participant,
    Observer,
}

/// One peer address: where the other members reach this one (ZooKeeper's quorum port). The
/// election port is kept so a config that names it starts; Raft's votes go over the peer port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddr {
    pub host: String,
    pub peer_port: u16,
    pub election_port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    /// At least one; ZooKeeper 3.6+ accepts several for multi-homed hosts.
    pub addrs: Vec<PeerAddr>,
    pub role: Role,
    /// `(address, port)` from the part after `;`, when given; an address of `None` means
    /// every interface (ZooKeeper's default of 0.0.0.0).
    pub client: Option<(Option<String>, u16)>,
    /// ZooKeeper 3.9's third part, the secure client port, kept so such a line parses.
    pub secure_client: Option<(Option<String>, u16)>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct MemberError(String);

impl fmt::Display for MemberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MemberError {}

fn err(key: &str, value: &str, why: &str) -> MemberError {
    MemberError(format!("{key}={value} has wrong format: {why}"))
}

fn port(key: &str, value: &str, s: &str, what: &str) -> Result<u16, MemberError> {
    match s.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(err(key, value, &format!("{what} {s:?} is not a port"))),
    }
}

/// `host:port:port[:role]`, host possibly `[v6]`. Returns the address and the role if named.
fn peer_part(key: &str, value: &str, part: &str) -> Result<(PeerAddr, Option<Role>), MemberError> {
    let (host, rest) = if let Some(v6) = part.strip_prefix('[') {
        let Some((h, rest)) = v6.split_once(']') else {
            return Err(err(key, value, "unclosed '[' in an IPv6 address"));
        };
        let Some(rest) = rest.strip_prefix(':') else {
            return Err(err(key, value, "expected ':' after the IPv6 address"));
        };
        (h.to_string(), rest)
    } else {
        let Some((h, rest)) = part.split_once(':') else {
            return Err(err(key, value, "expected host:peerPort:electionPort"));
        };
        (h.to_string(), rest)
    };
    if host.is_empty() {
        return Err(err(key, value, "empty host"));
    }
    let fields: Vec<&str> = rest.split(':').collect();
    let (peer, election, role) = match fields.as_slice() {
        [p, e] => (*p, *e, None),
        [p, e, r] => (*p, *e, Some(*r)),
        _ => {
            return Err(err(
                key,
                value,
                "expected host:peerPort:electionPort[:role]",
            ))
        }
    };
    let role = match role.map(str::to_ascii_lowercase).as_deref() {
        None => None,
        Some("participant") => Some(Role::Participant),
        Some("observer") => Some(Role::Observer),
        Some(other) => {
            return Err(err(key, value, &format!("unknown role {other:?}")));
        }
    };
    let addr = PeerAddr {
        host,
        peer_port: port(key, value, peer, "peer port")?,
        election_port: port(key, value, election, "election port")?,
    };
    if addr.peer_port == addr.election_port {
        return Err(err(key, value, "the peer and election ports must differ"));
    }
    Ok((addr, role))
}

/// `port` or `addr:port` (addr possibly `[v6]`).
fn client_part(key: &str, value: &str, part: &str) -> Result<(Option<String>, u16), MemberError> {
    let part = part.trim();
    match part.rsplit_once(':') {
        None => Ok((None, port(key, value, part, "client port")?)),
        Some((addr, p)) => {
            let addr = addr.trim_start_matches('[').trim_end_matches(']');
            if addr.is_empty() {
                return Err(err(key, value, "empty client address"));
            }
            Ok((Some(addr.to_string()), port(key, value, p, "client port")?))
        }
    }
}

/// Parses one `server.N` line: `key` is `server.N`, `value` what follows `=`.
pub fn parse_member(key: &str, value: &str) -> Result<Member, MemberError> {
    let id = key
        .strip_prefix("server.")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| MemberError(format!("{key}: the server id must be a number")))?;
    let opt = |part: &str| match part.trim() {
        "" => Ok(None),
        p => client_part(key, value, p).map(Some),
    };
    let (peers, client, secure_client) = match value.split(';').collect::<Vec<_>>().as_slice() {
        [p] => (*p, None, None),
        [p, c] => (*p, opt(c)?, None),
        [p, c, s] => (*p, opt(c)?, opt(s)?),
        _ => return Err(err(key, value, "more than two ';'")),
    };
    let mut addrs = Vec::new();
    let mut role = None;
    for part in peers.split('|') {
        let (addr, r) = peer_part(key, value, part.trim())?;
        if r.is_some() && role.is_some() && r != role {
            return Err(err(key, value, "addresses disagree on the role"));
        }
        role = role.or(r);
        addrs.push(addr);
    }
    Ok(Member {
        id,
        addrs,
        role: role.unwrap_or(Role::Participant),
        client,
        secure_client,
    })
}

/// Every `server.N` line of a config (keys as written, values trimmed), in id order. Two
/// lines for one id, or an ensemble whose voters cannot form a majority, are refused.
pub fn members(kv: &BTreeMap<String, String>) -> Result<Vec<Member>, MemberError> {
    let mut by_id = BTreeMap::new();
    for (k, v) in kv.iter().filter(|(k, _)| k.starts_with("server.")) {
        let m = parse_member(k, v)?;
        if by_id.insert(m.id, m).is_some() {
            return Err(MemberError(format!("{k} is given twice")));
        }
    }
    let members: Vec<Member> = by_id.into_values().collect();
    if !members.is_empty() && !members.iter().any(|m| m.role == Role::Participant) {
        return Err(MemberError(
            "every server.N is an observer: an ensemble needs voting members".into(),
        ));
    }
    Ok(members)
}

/// A member as ZooKeeper 3.8 prints it (QuorumServer.toString):
/// `host:peer:election[|...]:role[;clientAddr:clientPort]`.
pub fn spec(m: &Member) -> String {
    let host = |h: &str| {
        if h.contains(':') {
            format!("[{h}]")
        } else {
            h.to_string()
        }
    };
    let addrs: Vec<String> = m
        .addrs
        .iter()
        .map(|a| format!("{}:{}:{}", host(&a.host), a.peer_port, a.election_port))
        .collect();
    let role = match m.role {
        Role::Participant => "participant",
        Role::Observer => "observer",
    };
    let client = match &m.client {
        Some((addr, port)) => format!(";{}:{port}", addr.as_deref().map_or("0.0.0.0".into(), host)),
        None => String::new(),
    };
    format!("{}:{role}{client}", addrs.join("|"))
}

/// The lines ZooKeeper 3.8's `conf` prints for a quorum member after its session bounds:
/// serverId, the limits, the election settings of `myid`, then `membership: ` — after which
/// the configuration's text follows (`DynConfig::text`, core/role/member/reconfig.rs).
pub fn conf_header(members: &[Member], myid: u64, init_limit: u64, sync_limit: u64) -> String {
    let me = members.iter().find(|m| m.id == myid);
    let first = me.and_then(|m| m.addrs.first());
    format!(
        "serverId={myid}\ninitLimit={init_limit}\nsyncLimit={sync_limit}\nelectionAlg=3\n\
         electionPort={}\nquorumPort={}\npeerType={}\nmembership: \n",
        first.map_or(0, |a| a.election_port),
        first.map_or(0, |a| a.peer_port),
        u8::from(me.is_some_and(|m| m.role == Role::Observer)),
    )
}

/// The contents of `dataDir/myid`: the local member's N, with surrounding whitespace (as
/// `echo 1 > myid` writes it) allowed.
pub fn parse_myid(text: &str) -> Result<u64, MemberError> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| MemberError(format!("myid holds {:?}, not a server id", text.trim())))
}

#[cfg(test)]
#[path = "members_test.rs"]
mod tests;
