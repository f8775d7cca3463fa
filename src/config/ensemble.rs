//! The ensemble: `server.N` lines (checked as a whole by ensemble/members.rs once every key is
//! read), a dynamic configuration file, the tick limits and reconfiguration (the "Ensemble"
//! area of the reference, keys.rs).

use super::values::{parse_bool, ticks, Taken};
use super::Config;
use std::collections::BTreeMap;

impl Config {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the ensemble's.
    pub(super) fn apply_ensemble(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "initLimit" => self.init_limit = ticks(name, v)?,
            "syncLimit" => self.sync_limit = ticks(name, v)?,
            "reconfigEnabled" => self.reconfig_enabled = parse_bool(name, v)?,
            "standaloneEnabled" => self.standalone_enabled = parse_bool(name, v)?,
            // Its server.N lines were read in before the keys (`read_dynamic_file`).
            "dynamicConfigFile" => {}
            // Checked as a whole once every key is read.
            k if k.starts_with("server.") => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `dynamicConfigFile`: the server.N lines of a ZooKeeper 3.5+ dynamic configuration file
    /// (ZooKeeper moves them there from zoo.cfg when reconfigEnabled is on). Read, never
    /// rewritten: once an ensemble runs, its committed configuration is in its Raft log.
    pub(super) fn read_dynamic_file(
        &mut self,
        path: &str,
        kv: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("dynamicConfigFile={path}: {e}"))?;
        if kv.keys().any(|k| k.starts_with("server.")) {
            return Err(format!(
                "dynamicConfigFile={path} is given and zoo.cfg has server.N lines too"
            ));
        }
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once('=') {
                Some((k, v)) if k.trim().starts_with("server.") => {
                    kv.insert(k.trim().to_string(), v.trim().to_string());
                }
                Some((k, _)) if k.trim() == "version" => {}
                _ => {
                    return Err(format!(
                        "dynamicConfigFile={path}: unexpected line {line:?}"
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensemble_lines_are_validated_and_kept() {
        let mut c = Config::default();
        assert!(c.apply_zoo_cfg("server.1=127.0.0.1:2888:3888\n").is_ok());
        c.apply_zoo_cfg("server.1=a:2888:3888\nserver.2=b:2888:3888\ninitLimit=7\nsyncLimit=3\n")
            .unwrap();
        assert_eq!(c.members.len(), 2);
        assert_eq!((c.init_limit, c.sync_limit), (7, 3));
        assert!(c.apply_zoo_cfg("syncLimit=0\n").is_err());
        let e = c.apply_zoo_cfg("server.1=a:2888\n").unwrap_err();
        assert!(e.contains("server.1=a:2888"), "{e}");
    }

    #[test]
    fn reconfig_keys_and_a_dynamic_config_file() {
        let mut c = Config::default();
        assert!(!c.reconfig_enabled && c.standalone_enabled && !c.skip_acl);
        c.apply_zoo_cfg("reconfigEnabled=true\nstandaloneEnabled=false\nskipACL=yes\n")
            .unwrap();
        assert!(c.reconfig_enabled && !c.standalone_enabled && c.skip_acl);
        c.apply_zoo_cfg("skipACL=true\n").unwrap();
        assert!(!c.skip_acl, "ZooKeeper skips only for \"yes\"");
        let dir = std::env::temp_dir().join(format!("palisade-dyncfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("zoo.cfg.dynamic.100000000");
        std::fs::write(
            &f,
            "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
             server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\nversion=100000000\n",
        )
        .unwrap();
        let mut c = Config::default();
        c.apply_zoo_cfg(&format!("dynamicConfigFile={}\n", f.display()))
            .unwrap();
        assert_eq!(c.members.len(), 2);
        let mut c = Config::default();
        let both = format!("dynamicConfigFile={}\nserver.3=h:1:2\n", f.display());
        assert!(c.apply_zoo_cfg(&both).is_err());
        assert!(c
            .apply_zoo_cfg("dynamicConfigFile=/nonexistent/x\n")
            .is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
