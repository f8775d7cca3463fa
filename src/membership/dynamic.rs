//! The ensemble's dynamic configuration as ZooKeeper 3.8 shows it in `/zookeeper/config`
//! (QuorumMaj.toString): one `server.N=spec` line per member, then `version=<hex>` (the zxid
//! of the reconfig that made it), and the changes a `reconfig` asks for: incremental
//! (joining/leaving) or a whole new member list.
//!
//! The line order is what clients read, so it is ZooKeeper's: its members live in a Java
//! HashMap, iterated by hash bucket (`JavaOrder`). An incremental reconfig copies the last
//! config's map (the copy's table sized from its member count) and removes, then re-adds,
//! the servers named; a new member list is a fresh map of 16 buckets.

use super::members::{parse_member, spec, Member, Role};
use std::collections::BTreeSet;

/// A configuration and its version (0: the static one from zoo.cfg, never committed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynConfig {
    /// In ZooKeeper's print order.
    pub members: Vec<Member>,
    pub version: i64,
}

/// Why a reconfig is refused, as ZooKeeper answers it.
#[derive(Debug, PartialEq, Eq)]
pub enum ChangeError {
    /// BADARGUMENTS: a malformed server string, a missing client port, duplicate addresses,
    /// too few voters.
    BadArguments(String),
    /// MARSHALLINGERROR: a leaving id that is not a number (ZooKeeper's NumberFormatException).
    Marshalling(String),
}

impl DynConfig {
    /// The zoo.cfg members, in the order ZooKeeper prints a config read from a file.
    pub fn from_static(members: &[Member]) -> DynConfig {
        let mut order = JavaOrder::new(16);
        for m in members {
            order.put(m.clone());
        }
        DynConfig {
            members: order.into_vec(),
            version: 0,
        }
    }

    /// The node's text: the lines, then `version=<hex>` (no newline after it).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for m in &self.members {
            out.push_str(&format!("server.{}={}\n", m.id, spec(m)));
        }
        out.push_str(&format!("version={:x}", self.version));
        out
    }

    /// Reads a node's text back (None: not a configuration this server wrote).
    pub fn parse(text: &str) -> Option<DynConfig> {
        let mut members = Vec::new();
        let mut version = None;
        for line in text.lines() {
            let (k, v) = line.split_once('=')?;
            if k.starts_with("server.") {
                members.push(parse_member(k.trim(), v.trim()).ok()?);
            } else if k == "version" {
                version = Some(i64::from_str_radix(v.trim(), 16).ok()?);
            }
        }
        (!members.is_empty()).then_some(DynConfig {
            members,
            version: version?,
        })
    }

    pub fn voters(&self) -> BTreeSet<u64> {
        self.ids_of(Role::Participant)
    }

    pub fn observers(&self) -> BTreeSet<u64> {
        self.ids_of(Role::Observer)
    }

    fn ids_of(&self, role: Role) -> BTreeSet<u64> {
        self.members
            .iter()
            .filter(|m| m.role == role)
            .map(|m| m.id)
            .collect()
    }

    pub fn get(&self, id: u64) -> Option<&Member> {
        self.members.iter().find(|m| m.id == id)
    }

    /// ZooKeeper's incremental reconfig: `leaving` ids (comma-separated) removed, then each
    /// `joining` server (`server.N=spec`, comma-separated, with a client port) put in,
    /// replacing one of the same id. The result's version is for the caller to set.
    pub fn incremental(
        &self,
        joining: Option<&str>,
        leaving: Option<&str>,
    ) -> Result<DynConfig, ChangeError> {
        let mut order = JavaOrder::copy_of(&self.members);
        for id in split(leaving) {
            let id = id
                .parse::<u64>()
                .map_err(|_| ChangeError::Marshalling(format!("leaving server {id:?}")))?;
            order.remove(id);
        }
        for joiner in split(joining) {
            let Some((k, v)) = joiner.split_once('=') else {
                return Err(bad("Wrong format of server string"));
            };
            let m = parse_member(k.trim(), v.trim()).map_err(|_| bad("Reconfiguration failed"))?;
            if m.client.is_none() {
                return Err(bad(
                    "Wrong format of server string - each server should have 3 ports specified",
                ));
            }
            if order.members().any(|o| o.id != m.id && same_address(o, &m)) {
                return Err(bad("Reconfiguration failed"));
            }
            order.remove(m.id);
            order.put(m);
        }
        Ok(DynConfig {
            members: order.into_vec(),
            version: self.version,
        })
    }

    /// ZooKeeper's non-incremental reconfig: the whole member list, lines separated by commas
    /// or newlines (read as Java properties: `key=value`, later keys win).
    pub fn replace(new_members: &str) -> Result<DynConfig, ChangeError> {
        let mut by_id = std::collections::BTreeMap::new();
        for line in new_members.split([',', '\n']) {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((k, v)) = line.split_once(['=', ':']) else {
                return Err(bad(&format!("{line} is not a server line")));
            };
            let (k, v) = (k.trim(), v.trim());
            if k == "version" {
                continue;
            }
            if !k.starts_with("server.") {
                return Err(bad(&format!("unrecognised parameter: {k}")));
            }
            let m = parse_member(k, v).map_err(|e| bad(&e.to_string()))?;
            by_id.insert(m.id, m);
        }
        let members: Vec<Member> = by_id.into_values().collect();
        for (i, a) in members.iter().enumerate() {
            if members.iter().skip(i + 1).any(|b| same_address(a, b)) {
                return Err(bad("duplicate addresses"));
            }
        }
        let mut order = JavaOrder::new(16);
        for m in members {
            order.put(m);
        }
        Ok(DynConfig {
            members: order.into_vec(),
            version: 0,
        })
    }

    /// ZooKeeper's last check before the quorum check: with standaloneEnabled (its default)
    /// a configuration needs at least 2 voters, else at least 1.
    pub fn check_voters(&self, standalone_enabled: bool) -> Result<(), ChangeError> {
        let n = self.voters().len();
        if standalone_enabled && n < 2 {
            return Err(bad(
                "Reconfig failed - new configuration must include at least 2 followers",
            ));
        }
        if n < 1 {
            return Err(bad(
                "Reconfig failed - new configuration must include at least 1 follower",
            ));
        }
        Ok(())
    }
}

fn bad(why: &str) -> ChangeError {
    ChangeError::BadArguments(why.to_string())
}

fn split(list: Option<&str>) -> impl Iterator<Item = &str> {
    list.into_iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Two members sharing a peer or election address (ZooKeeper's checkAddressDuplicate).
fn same_address(a: &Member, b: &Member) -> bool {
    a.addrs.iter().any(|x| {
        b.addrs.iter().any(|y| {
            x.host == y.host
                && (x.peer_port == y.peer_port
                    || x.election_port == y.election_port
                    || x.peer_port == y.election_port
                    || x.election_port == y.peer_port)
        })
    })
}

/// Java's `HashMap<Long, _>` iteration order: buckets of a power-of-two table in index
/// order, each in insertion order; the table doubles once it holds more than 3/4 of its size.
struct JavaOrder {
    table: usize,
    entries: Vec<Member>,
}

impl JavaOrder {
    fn new(table: usize) -> Self {
        JavaOrder {
            table,
            entries: Vec::new(),
        }
    }

    /// `new HashMap<>(m)`: a table sized for m's entries, filled in m's order.
    fn copy_of(members: &[Member]) -> Self {
        let want = (members.len() as f64 / 0.75 + 1.0) as usize;
        let mut o = JavaOrder::new(want.max(1).next_power_of_two());
        for m in members {
            o.put(m.clone());
        }
        o
    }

    fn put(&mut self, m: Member) {
        self.entries.push(m);
        if self.entries.len() * 4 > self.table * 3 {
            self.table *= 2;
        }
    }

    fn remove(&mut self, id: u64) {
        self.entries.retain(|m| m.id != id);
    }

    fn members(&self) -> impl Iterator<Item = &Member> {
        self.entries.iter()
    }

    fn bucket(&self, id: u64) -> usize {
        // Long.hashCode, then HashMap.hash's spreading of the high bits.
        let h = (id ^ (id >> 32)) as u32;
        ((h ^ (h >> 16)) as usize) & (self.table - 1)
    }

    fn into_vec(self) -> Vec<Member> {
        let mut keyed: Vec<(usize, usize, Member)> = Vec::new();
        for (i, m) in self.entries.iter().enumerate() {
            keyed.push((self.bucket(m.id), i, m.clone()));
        }
        keyed.sort_by_key(|(b, i, _)| (*b, *i));
        keyed.into_iter().map(|(_, _, m)| m).collect()
    }
}

#[cfg(test)]
#[path = "dynamic_test.rs"]
mod tests;
