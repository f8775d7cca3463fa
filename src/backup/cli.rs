//! `palisade backup` and `palisade restore` (docs/ADMIN.md, "Backup and restore"):
//!
//! - `backup --url http[s]://HOST:PORT/commands [--auth 'digest user:password'] --out PATH
//!   [--cacert CA] [--cert CERT_AND_KEY [--cert-password PW]]`: takes
//!   an online backup through the AdminServer's `snapshot` command (Palisade's or ZooKeeper
//!   3.9's), checks every seal of the stream, and writes it durably to PATH, or to
//!   PATH/snapshot.<zxid> when PATH is a directory (ZooKeeper's name: a `version-2/` holding it
//!   is a data dir ZooKeeper 3.8 and 3.9 start from).
//! - `restore --file SNAPSHOT --data-dir DIR [--zxid HEX]`: a backup stream (or a ZooKeeper
//!   3.x snapshot file) into a new Palisade data dir, offline, through `import-zookeeper`'s
//!   checks (the server's node rules, ZooKeeper's digest); then start the server on DIR.
//!   `--config zoo.cfg` instead of `--data-dir`: into the data dir that zoo.cfg names; for an
//!   ensemble member (server.N lines, `myid` in its data dir), its Raft snapshot (member_restore.rs),
//!   to start with `--force-new-ensemble`.

use super::client;
use palisade_zkdisk::adler32::adler32;
use palisade_zkdisk::snap;
use std::path::{Path, PathBuf};

const USAGE: &str = "usage:\n  palisade backup --url http[s]://HOST:PORT/commands [--auth 'digest USER:PASSWORD'|ip|x509] --out FILE|DIR\n                  [--cacert CA.pem] [--cert CERT_AND_KEY.pem|.p12 [--cert-password PW]]\n  palisade restore --file SNAPSHOT --data-dir NEW_DIR|--config MEMBER_ZOO_CFG [--zxid HEX]";

/// Runs `palisade backup|restore ARGS`; the exit code, or `None` when `cmd` is neither.
pub fn main(cmd: &str, args: impl Iterator<Item = String>) -> Option<u8> {
    if cmd != "backup" && cmd != "restore" {
        return None;
    }
    let mut opts = std::collections::HashMap::new();
    let mut args = args;
    while let Some(a) = args.next() {
        let known = match cmd {
            "backup" => [
                "--url",
                "--auth",
                "--out",
                "--cacert",
                "--cert",
                "--cert-password",
            ]
            .contains(&a.as_str()),
            _ => ["--file", "--data-dir", "--config", "--zxid"].contains(&a.as_str()),
        };
        if !known {
            eprintln!("unknown option {a}\n{USAGE}");
            return Some(2);
        }
        let Some(v) = args.next() else {
            eprintln!("{a} needs a value\n{USAGE}");
            return Some(2);
        };
        opts.insert(a, v);
    }
    let get = |k: &str| opts.get(k).cloned();
    let r = if cmd == "backup" {
        match (get("--url"), get("--out")) {
            (Some(url), Some(out)) => {
                let store = |location: Option<String>, password| {
                    location.map(|l| crate::net::tls::Store {
                        location: Some(PathBuf::from(l)),
                        password,
                        type_: None,
                    })
                };
                let tls = client::TlsOpts {
                    trust: store(get("--cacert"), None),
                    identity: store(get("--cert"), get("--cert-password")),
                };
                backup(&url, get("--auth").as_deref(), Path::new(&out), &tls)
            }
            _ => Err(format!("--url and --out are required\n{USAGE}")),
        }
    } else {
        let into = match (get("--data-dir"), get("--config")) {
            (Some(d), None) => Ok(RestoreTo::DataDir(PathBuf::from(d))),
            (None, Some(c)) => config(Path::new(&c)),
            _ => Err(format!(
                "one of --data-dir and --config is required\n{USAGE}"
            )),
        };
        match (get("--file"), into) {
            (Some(f), Ok(into)) => restore(Path::new(&f), &into, get("--zxid").as_deref()),
            (None, _) => Err(format!("--file is required\n{USAGE}")),
            (_, Err(e)) => Err(e),
        }
    };
    match r {
        Ok(text) => {
            print!("{text}");
            Some(0)
        }
        Err(e) => {
            eprintln!("palisade {cmd}: {e}");
            Some(1)
        }
    }
}

/// A snapshot seal: the Adler32 of every byte before it (8 bytes), then the string "/".
const SEAL: usize = 8 + 4 + 1;

/// Whether `bytes[..end]` ends with a seal over what precedes it.
fn sealed_at(bytes: &[u8], end: usize) -> bool {
    let Some(start) = end.checked_sub(SEAL) else {
        return false;
    };
    let (Some(before), Some(seal)) = (bytes.get(..start), bytes.get(start..end)) else {
        return false;
    };
    let mut sum = [0u8; 8];
    sum.copy_from_slice(seal.get(..8).unwrap_or(&[0; 8]));
    i64::from_be_bytes(sum) == adler32(before) && seal.get(8..) == Some(&[0, 0, 0, 1, b'/'][..])
}

/// The last processed zxid ZooKeeper 3.9 (and Palisade's stream) writes after the digest's
/// seal, if the stream has that third section: its own seal at the end, and the digest's
/// seal right before the zxid.
pub fn last_processed_zxid(bytes: &[u8]) -> Option<i64> {
    let n = bytes.len();
    let zxid_at = n.checked_sub(SEAL + 8)?;
    if !sealed_at(bytes, n) || !sealed_at(bytes, zxid_at) {
        return None;
    }
    let mut z = [0u8; 8];
    z.copy_from_slice(bytes.get(zxid_at..zxid_at + 8)?);
    Some(i64::from_be_bytes(z))
}

fn backup(
    url: &str,
    auth: Option<&str>,
    out: &Path,
    tls: &client::TlsOpts,
) -> Result<String, String> {
    let url = format!("{}/snapshot?streaming=true", url.trim_end_matches('/'));
    let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
    let reply = client::request(
        "GET",
        &url,
        &headers,
        &[],
        crate::limits::BACKUP_DEADLINE,
        tls,
    )?;
    if reply.status != 200 {
        return Err(format!(
            "{url}: HTTP {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body).trim()
        ));
    }
    let zxid = reply
        .header("last_zxid")
        .and_then(|z| i64::from_str_radix(z.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| format!("{url}: no last_zxid header (not a snapshot reply)"))?;
    let body = bytes::Bytes::from(reply.body);
    let zk = snap::decode_snapshot(body.clone(), Path::new("(the backup stream)"))
        .map_err(|e| e.to_string())?;
    let path = if out.is_dir() {
        out.join(palisade_zkdisk::dir::snapshot_name(zxid))
    } else {
        out.to_path_buf()
    };
    snap::write_durably(&path, &body).map_err(|e| e.to_string())?;
    Ok(format!(
        "backup of {url}\n  zxid:  {zxid:#x}\n  nodes: {}, {} sessions\n  bytes: {}\n  file:  {}\n",
        zk.nodes.len() + 1,
        zk.sessions.len(),
        body.len(),
        path.display()
    ))
}

/// Where a restore goes.
enum RestoreTo {
    /// A standalone server's new data dir.
    DataDir(PathBuf),
    /// The data dir of the ensemble member a zoo.cfg describes.
    Member(super::member_restore::Target),
}

/// The restore's target from a zoo.cfg: its data dir, or, with server.N lines, its member's.
fn config(path: &Path) -> Result<RestoreTo, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cfg = crate::config::Config::default();
    cfg.apply_zoo_cfg(&text)?;
    if cfg.members.len() > 1 {
        super::member_restore::Target::of(&cfg).map(RestoreTo::Member)
    } else {
        Ok(RestoreTo::DataDir(cfg.data_dir))
    }
}

fn restore(file: &Path, into: &RestoreTo, zxid: Option<&str>) -> Result<String, String> {
    let data_dir = match into {
        RestoreTo::DataDir(d) => d.as_path(),
        RestoreTo::Member(t) => t.data_dir.as_path(),
    };
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let zxid = match zxid {
        Some(z) => i64::from_str_radix(z.trim_start_matches("0x"), 16)
            .map_err(|_| format!("--zxid {z:?} is not a hex zxid"))?,
        None => last_processed_zxid(&bytes)
            .or_else(|| {
                // A ZooKeeper snapshot file is named for its zxid.
                let name = file.file_name()?.to_str()?;
                let hex = name.strip_prefix("snapshot.")?;
                i64::from_str_radix(hex.split('.').next()?, 16).ok()
            })
            .ok_or_else(|| {
                format!(
                    "{}: no last processed zxid in the stream and no snapshot.<zxid> name: give --zxid",
                    file.display()
                )
            })?,
    };
    // A ZooKeeper data dir holding only this snapshot, imported as `import-zookeeper` does.
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.ends_with(".gz") || n.ends_with(".snappy"))
        .and_then(|n| n.rsplit_once('.').map(|(_, ext)| ext.to_string()));
    let staging = PathBuf::from(format!("{}.restore-staging", data_dir.display()));
    let version = staging.join(palisade_zkdisk::VERSION_DIR);
    std::fs::create_dir_all(&version).map_err(|e| format!("{}: {e}", version.display()))?;
    let mut snap_name = palisade_zkdisk::dir::snapshot_name(zxid);
    if let Some(ext) = name {
        snap_name = format!("{snap_name}.{ext}");
    }
    let staged = std::fs::write(version.join(&snap_name), &bytes)
        .map_err(|e| format!("{}: {e}", staging.display()));
    let r = staged.and_then(|()| match into {
        RestoreTo::DataDir(d) => crate::migrate::import::run(&crate::migrate::import::ImportOpts {
            zk_data_dir: staging.clone(),
            zk_log_dir: None,
            data_dir: d.clone(),
            dry_run: false,
            max_snapshot_bytes: None,
        })
        .map(|s| s.text()),
        RestoreTo::Member(t) => {
            let (s, state) = crate::migrate::import::read(&staging, None, None)?;
            let term = super::member_restore::write(&state, t)?;
            Ok(format!(
                "{}member {}: a Raft snapshot at term {term}, index 1, membership: itself \
                 alone; start it with --force-new-ensemble (reconfigEnabled=true), then the \
                 others with empty data dirs, and add them with reconfig\n",
                s.text(),
                t.myid
            ))
        }
    });
    let _ = std::fs::remove_dir_all(&staging);
    Ok(format!(
        "restored {} into {}\n{}",
        file.display(),
        data_dir.display(),
        r?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Workload;

    #[test]
    fn the_last_processed_zxid_is_found_only_in_the_third_section() {
        let w = Workload::run(3, 300);
        let stream = crate::backup::stream::encode(&w.state);
        assert_eq!(last_processed_zxid(&stream), Some(w.state.zxid()));
        // ZooKeeper 3.8's form (digest section last) has none.
        let zk38 = snap::encode_snapshot(&crate::migrate::export::to_zk(&w.state));
        assert_eq!(last_processed_zxid(&zk38), None);
        assert_eq!(last_processed_zxid(&[]), None);
    }

    /// A backup stream restored offline is the same tree (every stat field, data and ACL).
    #[test]
    fn a_stream_restores_to_the_same_tree() {
        let w = Workload::run(11, 800);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("backup.snap");
        std::fs::write(&file, crate::backup::stream::encode(&w.state)).unwrap();
        let data = dir.path().join("data");
        restore(&file, &RestoreTo::DataDir(data.clone()), None).unwrap();
        assert!(!dir.path().join("data.restore-staging").exists());
        let cfg = crate::config::Config {
            data_dir: data.clone(),
            ..Default::default()
        };
        let opts = palisade_wal::Options::new(cfg.log_dir());
        let (_wal, log) = palisade_wal::Wal::open(opts, palisade_wal::Corruption::Refuse).unwrap();
        let back = crate::durability::recovery::recover(&cfg.snap_dir(), &log)
            .unwrap()
            .state;
        crate::testkit::assert_same_tree("restored", &back.tree, &w.state.tree);
        assert_eq!(back.zxid(), w.state.zxid());
        assert_eq!(back.sessions(), w.state.sessions());
    }
}
