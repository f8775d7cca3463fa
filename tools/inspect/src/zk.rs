//! `log`, `snapshot` and `validate` on Apache ZooKeeper 3.8 data dirs (issue 17): the same
//! reader `palisade import-zookeeper` uses (the zkdisk crate), every checksum verified.
//! A ZooKeeper file is told by its magic (`ZKSN`, `ZKLG`), a ZooKeeper data dir by its
//! `version-2` directory.

use palisade_proto::{TxnBody, TxnHeader};
use palisade_zkdisk::{self as zkdisk, LogEnd, ZkEntry};
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Whether `path` is a ZooKeeper snapshot or log file (by its first 4 bytes).
pub fn is_zk_file(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && (&magic == b"ZKSN" || &magic == b"ZKLG")
}

/// The `version-2` directory of a ZooKeeper data dir (given the data dir or that directory).
pub fn zk_version_dir(path: &Path) -> Option<PathBuf> {
    if path.file_name().is_some_and(|n| n == zkdisk::VERSION_DIR) && path.is_dir() {
        return Some(path.to_path_buf());
    }
    let v = path.join(zkdisk::VERSION_DIR);
    v.is_dir().then_some(v)
}

fn hex(z: i64) -> String {
    format!("{z:#x}")
}

fn body_text(b: &TxnBody) -> String {
    let s = format!("{b:?}");
    if s.len() > 240 {
        format!("{}…", s.chars().take(240).collect::<String>())
    } else {
        s
    }
}

fn header_text(h: &TxnHeader) -> String {
    format!(
        "zxid {} session {} cxid {} time {} type {}",
        hex(h.zxid),
        hex(h.client_id),
        h.cxid,
        h.time,
        palisade_proto::OpCode::from_i32(h.type_).map_or("?", |o| o.name())
    )
}

fn entry_line(e: &ZkEntry, json_out: bool) -> Result<String, Value> {
    if json_out {
        return Err(json!({
            "type": "zk_txn", "offset": e.offset, "zxid": hex(e.txn.header.zxid),
            "session": hex(e.txn.header.client_id), "cxid": e.txn.header.cxid,
            "time": e.txn.header.time, "op": palisade_proto::OpCode::from_i32(e.txn.header.type_).map_or("?", |o| o.name()),
            "body": body_text(&e.txn.body),
            "digest": e.digest.as_ref().map(|d| hex(d.tree_digest)),
        }));
    }
    Ok(format!(
        "@{} {} {}{}",
        e.offset,
        header_text(&e.txn.header),
        body_text(&e.txn.body),
        e.digest
            .as_ref()
            .map_or(String::new(), |d| format!(" digest {}", hex(d.tree_digest)))
    ))
}

/// Output sink: text lines or JSON values.
pub trait Sink {
    fn line(&mut self, s: &str);
    fn json(&mut self, v: &Value);
}

fn emit(out: &mut dyn Sink, r: Result<String, Value>) {
    match r {
        Ok(s) => out.line(&s),
        Err(v) => out.json(&v),
    }
}

/// `log`: every entry of one ZooKeeper log file, or of every log in a data dir, then how each
/// file ends. Returns false if a file is damaged (checksum, torn entry, undecodable txn).
pub fn log(path: &Path, json_out: bool, out: &mut dyn Sink) -> Result<bool, String> {
    let files: Vec<PathBuf> = match zk_version_dir(path) {
        Some(v) => zkdisk::list(&v)
            .map_err(|e| e.to_string())?
            .logs
            .into_iter()
            .map(|(_, p)| p)
            .collect(),
        None => vec![path.to_path_buf()],
    };
    let mut fine = true;
    for f in files {
        match zkdisk::read_log(&f) {
            Ok(l) => {
                for e in &l.entries {
                    emit(out, entry_line(e, json_out));
                }
                let (end, torn) = match &l.end {
                    LogEnd::Clean { offset } => (format!("clean end at byte {offset}"), false),
                    LogEnd::Torn { offset, reason } => {
                        (format!("torn entry at byte {offset}: {reason}"), true)
                    }
                };
                fine &= !torn;
                emit(
                    out,
                    if json_out {
                        Err(json!({"type": "zk_log", "file": f.display().to_string(),
                            "entries": l.entries.len(), "end": end, "ok": !torn}))
                    } else {
                        Ok(format!(
                            "{}: {} entries, {end}",
                            f.display(),
                            l.entries.len()
                        ))
                    },
                );
            }
            Err(e) => {
                fine = false;
                emit(
                    out,
                    if json_out {
                        Err(
                            json!({"type": "zk_log", "file": f.display().to_string(), "ok": false, "error": e.to_string()}),
                        )
                    } else {
                        Ok(format!("DAMAGED {e}"))
                    },
                );
            }
        }
    }
    Ok(fine)
}

/// `snapshot`: a ZooKeeper snapshot's header, sessions, ACL table and nodes (seals checked).
pub fn snapshot(file: &Path, json_out: bool, out: &mut dyn Sink) -> Result<bool, String> {
    let s = zkdisk::read_snapshot(file).map_err(|e| e.to_string())?;
    let digest = s.digest.as_ref().map(|d| {
        format!(
            "zxid {} version {} digest {}",
            hex(d.zxid),
            d.digest_version,
            hex(d.digest)
        )
    });
    emit(
        out,
        if json_out {
            Err(
                json!({"type": "zk_snapshot", "file": file.display().to_string(),
                "dbid": s.header.dbid, "sessions": s.sessions.len(), "acls": s.acls.len(),
                "nodes": s.nodes.len(), "digest": digest, "seals": "ok"}),
            )
        } else {
            Ok(format!(
                "ZooKeeper snapshot {}: dbid {}, {} sessions, {} ACL lists, {} nodes, digest {}; seals ok",
                file.display(),
                s.header.dbid,
                s.sessions.len(),
                s.acls.len(),
                s.nodes.len(),
                digest.unwrap_or_else(|| "none".into())
            ))
        },
    );
    for x in &s.sessions {
        emit(
            out,
            if json_out {
                Err(json!({"type": "zk_session", "id": hex(x.id), "timeout_ms": x.timeout}))
            } else {
                Ok(format!("session {} timeout {} ms", hex(x.id), x.timeout))
            },
        );
    }
    for a in &s.acls {
        emit(
            out,
            if json_out {
                Err(json!({"type": "zk_acl", "index": a.index, "list": format!("{:?}", a.acls)}))
            } else {
                Ok(format!("acl {} = {:?}", a.index, a.acls))
            },
        );
    }
    for n in &s.nodes {
        let st = &n.node.stat;
        let path = if n.path.is_empty() { "/" } else { &n.path };
        emit(
            out,
            if json_out {
                Err(json!({"type": "zk_node", "path": path, "acl": n.node.acl,
                    "czxid": hex(st.czxid), "mzxid": hex(st.mzxid), "pzxid": hex(st.pzxid),
                    "ctime": st.ctime, "mtime": st.mtime, "version": st.version,
                    "cversion": st.cversion, "aversion": st.aversion,
                    "ephemeral_owner": hex(st.ephemeral_owner),
                    "data_length": n.node.data.as_ref().map(|d| d.len())}))
            } else {
                Ok(format!(
                    "{path} czxid {} mzxid {} pzxid {} version {} cversion {} aversion {} owner {} acl {} data {}",
                    hex(st.czxid),
                    hex(st.mzxid),
                    hex(st.pzxid),
                    st.version,
                    st.cversion,
                    st.aversion,
                    hex(st.ephemeral_owner),
                    n.node.acl,
                    n.node.data.as_ref().map_or("null".into(), |d| format!("{} bytes", d.len()))
                ))
            },
        );
    }
    Ok(true)
}

/// `validate`: every snapshot's seals and every log's checksums, then the import's rebuild
/// (newest valid snapshot + logs, gaps and ZooKeeper's digests checked).
pub fn validate(
    data_dir: &Path,
    log_dir: Option<&Path>,
    json_out: bool,
    out: &mut dyn Sink,
) -> Result<bool, String> {
    let v = zk_version_dir(data_dir)
        .ok_or_else(|| format!("{}: no version-2 directory", data_dir.display()))?;
    let files = zkdisk::list(&v).map_err(|e| e.to_string())?;
    let mut fine = true;
    let report = |ok: bool, file: &Path, what: String, out: &mut dyn Sink| {
        emit(
            out,
            if json_out {
                Err(
                    json!({"type": "zk_file", "file": file.display().to_string(), "ok": ok, "what": what}),
                )
            } else {
                Ok(format!(
                    "{} {}: {what}",
                    if ok { "ok     " } else { "DAMAGED" },
                    file.display()
                ))
            },
        );
    };
    for f in &files.snapshots {
        match zkdisk::read_snapshot(&f.path) {
            Ok(s) => report(
                true,
                &f.path,
                format!("{} nodes, seals ok", s.nodes.len()),
                out,
            ),
            Err(e) => {
                fine = false;
                report(false, &f.path, e.to_string(), out)
            }
        }
    }
    let lv = match log_dir {
        Some(l) => zk_version_dir(l).unwrap_or_else(|| l.to_path_buf()),
        None => v.clone(),
    };
    for (_, p) in zkdisk::list(&lv).map_err(|e| e.to_string())?.logs {
        match zkdisk::read_log(&p) {
            Ok(l) => {
                let torn = matches!(l.end, LogEnd::Torn { .. });
                report(
                    !torn,
                    &p,
                    format!("{} entries, {:?}", l.entries.len(), l.end),
                    out,
                )
            }
            Err(e) => {
                fine = false;
                report(false, &p, e.to_string(), out)
            }
        }
    }
    let base = |d: &Path| {
        if d.file_name().is_some_and(|n| n == zkdisk::VERSION_DIR) {
            d.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            d.to_path_buf()
        }
    };
    let log_base = log_dir.map(base);
    match palisade::migrate::import::check(&base(data_dir), log_base.as_deref()) {
        Ok(s) => emit(
            out,
            if json_out {
                Err(
                    json!({"type": "zk_rebuild", "ok": true, "nodes": s.nodes, "sessions": s.sessions,
                    "last_zxid": hex(s.last_zxid), "zk_digest": hex(s.zk_digest),
                    "digests_checked": s.digests_checked, "notes": s.notes}),
                )
            } else {
                Ok(format!(
                    "rebuild (as import-zookeeper would):\n{}",
                    s.text()
                ))
            },
        ),
        Err(e) => {
            fine = false;
            emit(
                out,
                if json_out {
                    Err(json!({"type": "zk_rebuild", "ok": false, "error": e}))
                } else {
                    Ok(format!("REBUILD FAILED: {e}"))
                },
            );
        }
    }
    Ok(fine)
}
