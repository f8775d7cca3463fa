//! Storage: the log's directory, snapshots and purging (the "Storage" area of the
//! reference, keys.rs).

use super::values::{parse, parse_bool, Taken};
use super::Config;
use std::path::PathBuf;

impl Config {
    /// Takes `key` (as matched, without a `zookeeper.` prefix; `name` as written) if it is
    /// one of the storage keys.
    pub(super) fn apply_storage(&mut self, key: &str, name: &str, v: &str) -> Taken {
        match key {
            "dataLogDir" => self.data_log_dir = Some(PathBuf::from(v)),
            "snapCount" => {
                self.snap_count = parse::<u64>(name, v).and_then(|n| {
                    if n >= 2 {
                        Ok(n)
                    } else {
                        Err(format!("invalid value for {name}: {v:?} (at least 2)"))
                    }
                })?
            }
            "preAllocSize" => {
                self.pre_alloc_size_kb = parse::<u64>(name, v).and_then(|n| {
                    if (1..=1 << 30).contains(&n) {
                        Ok(n)
                    } else {
                        Err(format!("invalid value for {name}: {v:?} (KiB, 1 to 2^30)"))
                    }
                })?
            }
            "forceSync" => self.force_sync = parse_bool(name, v)?,
            "autopurge.snapRetainCount" => {
                // ZooKeeper's floor: fewer than 3 is raised to 3.
                self.snap_retain_count = parse::<u32>(name, v)?.max(3)
            }
            "autopurge.purgeInterval" => self.purge_interval_hours = parse(name, v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where snapshots live.
    pub fn snap_dir(&self) -> PathBuf {
        self.data_dir.join("snapshots")
    }

    /// Where the write-ahead log lives (dataLogDir, or dataDir).
    pub fn log_dir(&self) -> PathBuf {
        self.data_log_dir
            .as_ref()
            .unwrap_or(&self.data_dir)
            .join("log")
    }
}
