//! Basics: ports, the data directory, ticks and session timeouts, clients, ACL switches
//! (the "Basics" area of the reference, keys.rs).

use super::values::{parse, parse_bool, Taken};
use super::Config;
use crate::net::tls::comma_list;
use std::path::PathBuf;

impl Config {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the basics.
    pub(super) fn apply_basics(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "tickTime" => {
                self.tick_time = parse::<u64>(name, v).and_then(|t| {
                    if t > 0 {
                        Ok(t)
                    } else {
                        Err(format!("invalid value for {name}: {v:?}"))
                    }
                })?
            }
            "clientPort" => {
                self.client_port = parse(name, v)?;
                self.client_port_set = true;
            }
            "clientPortAddress" => self.client_port_address = v.to_string(),
            "dataDir" => self.data_dir = PathBuf::from(v),
            "maxClientCnxns" => self.max_client_cnxns = parse(name, v)?,
            "minSessionTimeout" => self.min_session_timeout = Some(parse(name, v)?),
            "maxSessionTimeout" => self.max_session_timeout = Some(parse(name, v)?),
            "4lw.commands.whitelist" => self.four_letter_words = comma_list(v),
            "extendedTypesEnabled" => self.extended_types_enabled = parse_bool(name, v)?,
            "znode.container.checkIntervalMs" | "container.checkIntervalMs" => {
                self.container_check_interval_ms = parse(name, v)?
            }
            "DigestAuthenticationProvider.superDigest" | "superDigest" => {
                self.super_digest = Some(v.to_string())
            }
            "readonlymode.enabled" => self.read_only_mode = parse_bool(name, v)?,
            // ZooKeeper skips ACLs only for the exact value "yes".
            "skipACL" => self.skip_acl = v == "yes",
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn min_timeout(&self) -> i32 {
        self.min_session_timeout
            .unwrap_or((self.tick_time * 2) as i32)
    }

    pub fn max_timeout(&self) -> i32 {
        self.max_session_timeout
            .unwrap_or((self.tick_time * 20) as i32)
    }
}
