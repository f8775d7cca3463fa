//! Acquiring a lock: create an ephemeral sequential node under the lock path, then decide from
//! the children whether it holds, else watch the node it waits for and decide again. A failed
//! or timed-out attempt deletes its node.

use super::guard::{delete_node, Guard};
use super::naming::{decide, node_prefix, Decision, Kind};
use super::LockOptions;
use crate::client::Client;
use crate::error::Error;
use palisade_proto::{CreateMode, ErrorCode};
use std::time::Duration;

/// How long a failed attempt waits for its cleanup before returning (the cleanup goes on in
/// the background after that, until the node is deleted or the session is gone).
const CLEANUP_WAIT: Duration = Duration::from_secs(2);

pub(crate) async fn acquire(
    client: &Client,
    dir: &str,
    kind: Kind,
    opts: &LockOptions,
    timeout: Option<Duration>,
) -> Result<Guard, Error> {
    let prefix = node_prefix(opts.naming, kind);
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let attempt = attempt(client, dir, kind, opts, &prefix, deadline);
    // The deadline bounds the waiting for other holders (the first look always completes, so
    // a zero timeout is a try-lock); the round trips themselves are bounded only here, by one
    // more session timeout, for a server that stopped answering.
    let result = match deadline {
        Some(d) => tokio::time::timeout_at(d + client.session_timeout(), attempt)
            .await
            .unwrap_or(Err(Error::Timeout)),
        None => attempt.await,
    };
    match result {
        Ok((node, token)) => {
            let lost_after = client.session_timeout().mul_f64(opts.lost_after);
            Ok(Guard::new(client.clone(), node, token, lost_after))
        }
        Err(e) => {
            cleanup(client, dir, &prefix).await;
            Err(e)
        }
    }
}

/// The node's full path and czxid once it holds.
async fn attempt(
    client: &Client,
    dir: &str,
    kind: Kind,
    opts: &LockOptions,
    prefix: &str,
    deadline: Option<tokio::time::Instant>,
) -> Result<(String, i64), Error> {
    let (name, token) = create_node(client, dir, prefix, &opts.data).await?;
    loop {
        let children = retry(|| client.get_children(dir)).await?;
        match decide(opts.naming, kind, &children, &name, prefix) {
            Decision::Holds => return Ok((format!("{dir}/{name}"), token)),
            // As Curator: our node vanished (deleted by someone, or a session that moved on).
            Decision::Gone => return Err(Error::Zk(ErrorCode::NoNode)),
            Decision::Wait(pred) => {
                let pred = format!("{dir}/{pred}");
                let (stat, watch) = retry(|| client.exists_watch(&pred)).await?;
                if stat.is_some() {
                    // Any event on it (deleted, or data changed) means: decide again. After a
                    // reconnect the watch is re-registered, so it cannot be missed.
                    match deadline {
                        Some(d) => match tokio::time::timeout_at(d, watch).await {
                            Ok(ev) => ev.map(|_| ())?,
                            Err(_) => return Err(Error::Timeout),
                        },
                        None => watch.await.map(|_| ())?,
                    }
                }
            }
        }
    }
}

/// Creates the contender node (and the lock path as containers, as Curator does); its bare name
/// and czxid. A create whose reply was lost is found again by its unique prefix.
async fn create_node(
    client: &Client,
    dir: &str,
    prefix: &str,
    data: &[u8],
) -> Result<(String, i64), Error> {
    let path = format!("{dir}/{prefix}");
    let mut made_parents = false;
    loop {
        match client
            .create2(&path, data, CreateMode::EphemeralSequential)
            .await
        {
            Ok((full, stat)) => return Ok((basename(&full).to_string(), stat.czxid)),
            Err(Error::Zk(ErrorCode::NoNode)) if !made_parents => {
                make_parents(client, dir).await?;
                made_parents = true;
            }
            Err(Error::ConnectionLoss) => {
                if let Some(found) = find_ours(client, dir, prefix).await? {
                    return Ok(found);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates every missing ancestor of `dir` (and `dir`) as a container node: removed by the
/// server once empty, like Curator's `creatingParentContainersIfNeeded`.
async fn make_parents(client: &Client, dir: &str) -> Result<(), Error> {
    let mut at = String::new();
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match retry(|| client.create(&at, &[], CreateMode::Container)).await {
            Ok(_) | Err(Error::Zk(ErrorCode::NodeExists)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The contender node with this prefix, if it exists: its name and czxid.
async fn find_ours(
    client: &Client,
    dir: &str,
    prefix: &str,
) -> Result<Option<(String, i64)>, Error> {
    let children = match retry(|| client.get_children(dir)).await {
        Err(Error::Zk(ErrorCode::NoNode)) => return Ok(None),
        other => other?,
    };
    for name in children.into_iter().filter(|c| c.starts_with(prefix)) {
        let path = format!("{dir}/{name}");
        if let Some(stat) = retry(|| client.exists(&path)).await? {
            return Ok(Some((name, stat.czxid)));
        }
    }
    Ok(None)
}

/// Deletes the node of a failed attempt, found by its prefix (the attempt may have been cut off
/// before learning its name). Waits up to CLEANUP_WAIT, then lets it finish in the background:
/// a node left behind by a live session would block every other contender.
async fn cleanup(client: &Client, dir: &str, prefix: &str) {
    let (client, dir, prefix) = (client.clone(), dir.to_string(), prefix.to_string());
    let task = tokio::spawn(async move {
        match find_ours(&client, &dir, &prefix).await {
            Ok(Some((name, _))) => {
                if let Err(e) = delete_node(&client, &format!("{dir}/{name}")).await {
                    tracing::warn!(%dir, %name, %e, "could not delete the node of a failed lock attempt");
                }
            }
            Ok(None) => {}
            Err(e) if e.is_terminal() => {}
            Err(e) => {
                tracing::warn!(%dir, %prefix, %e, "could not look for the node of a failed lock attempt")
            }
        }
    });
    let _ = tokio::time::timeout(CLEANUP_WAIT, task).await;
}

/// Retries a read or an idempotent call whose reply was lost with the connection (the retry
/// waits for the reconnect inside the client).
async fn retry<T, F, Fut>(mut f: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    loop {
        match f().await {
            Err(Error::ConnectionLoss) => continue,
            other => return other,
        }
    }
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The lock path without a trailing slash; "/" and relative paths are refused.
pub(crate) fn lock_dir(path: &str) -> Result<String, Error> {
    let p = path.trim_end_matches('/');
    if !p.starts_with('/') || p.is_empty() {
        return Err(Error::BadArgument(format!("lock path {path:?}")));
    }
    Ok(p.to_string())
}
