//! The checks after every restart, each violation with its evidence.

use crate::ledger::{suffix, Ledger};
use crate::workload::PARENTS;
use palisade_client::{Client, CreateMode, Error};

/// Holds the restarted server to the ledger; returns the violations found.
pub async fn after_restart(c: &Client, l: &mut Ledger) -> Result<Vec<String>, Error> {
    let mut v = Vec::new();
    for p in &l.present {
        if !l.uncertain.contains(p) && c.exists(p).await?.is_none() {
            v.push(format!("acknowledged create {p} is gone"));
        }
    }
    // Readable: their ACL survived the snapshot and the replay.
    for p in &l.own_acl {
        if l.present.contains(p) && !l.uncertain.contains(p) {
            if let Err(e) = c.get_data(p).await {
                v.push(format!("{p} (its own ACL list) cannot be read: {e}"));
            }
        }
    }
    for p in &l.deleted {
        if let Some(st) = c.exists(p).await? {
            v.push(format!(
                "acknowledged delete of {p} came back (czxid {:#x})",
                st.czxid
            ));
        }
    }
    // Before any write of ours: the zxid a read reports is the server's last applied one.
    c.exists("/").await?;
    if c.last_zxid() < l.max_zxid {
        v.push(format!(
            "zxid went backwards: clients saw {:#x}, the server now says {:#x}",
            l.max_zxid,
            c.last_zxid()
        ));
    }
    for parent in PARENTS {
        let Some(st) = c.exists(parent).await? else {
            v.push(format!("{parent} is gone"));
            continue;
        };
        let cv = l.max_cversion.get(parent).copied().unwrap_or(i32::MIN);
        if st.cversion < cv {
            v.push(format!(
                "{parent}: cversion went down from {cv} to {}",
                st.cversion
            ));
        }
        let pz = l.max_pzxid.get(parent).copied().unwrap_or(0);
        if st.pzxid < pz {
            v.push(format!(
                "{parent}: pzxid went down from {pz:#x} to {:#x}",
                st.pzxid
            ));
        }
        for child in c.get_children(parent).await? {
            l.seen(&format!("{parent}/{child}"));
        }
        let highest = l.max_suffix.get(parent).copied().unwrap_or(-1);
        let probe = c
            .create(
                &format!("{parent}/probe-"),
                b"",
                CreateMode::PersistentSequential,
            )
            .await?;
        match suffix(&probe) {
            Some((_, n)) if n <= highest => v.push(format!(
                "{parent}: the next suffix is {n:010}, but {highest:010} was already handed out (reuse or rollback)"
            )),
            _ => {}
        }
        l.created(&probe);
        l.stat(parent, st.cversion, st.pzxid);
    }
    for (session, owned) in &l.closed {
        for p in owned {
            if c.exists(p).await?.is_some() {
                v.push(format!(
                    "ephemeral {p} of session {session:#x}, closed and acknowledged, came back"
                ));
            }
        }
    }
    Ok(v)
}

/// A live session's acknowledged ephemerals must all be there (checked through that session,
/// which has resumed).
pub async fn ephemerals(c: &Client, l: &Ledger) -> Result<Vec<String>, Error> {
    let mut v = Vec::new();
    let session = c.session_id();
    for p in l.ephemerals.get(&session).into_iter().flatten() {
        if l.uncertain.contains(p) {
            continue;
        }
        match c.exists(p).await? {
            Some(st) if st.ephemeral_owner == session => {}
            Some(st) => v.push(format!(
                "ephemeral {p} of session {session:#x} now belongs to {:#x}",
                st.ephemeral_owner
            )),
            None => v.push(format!(
                "ephemeral {p} of live session {session:#x} is gone"
            )),
        }
    }
    Ok(v)
}
