//! The two HTTP listeners (axum on the server's tokio runtime, a task per connection, no
//! thread per request): the AdminServer and the Prometheus endpoint.

use super::auth::{self, Caller};
use super::commands::{self, Info, Kind, Post};
use super::listener::{self, Bounded, Security};
use super::{Json, Query};
use crate::backup::rate::RateLimiter;
use crate::core::member::LeadershipAsk;
use crate::core::{CoreMsg, Oneshots};
use crate::limits::{ADMIN_CONNECTIONS, ADMIN_IDLE};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// The core's inbox once it runs (the listeners start before recovery, so /ready can say
/// "not yet" while the data dir is replayed).
pub type CoreSlot = Arc<OnceLock<mpsc::Sender<CoreMsg>>>;

#[derive(Clone)]
struct AdminState {
    core: CoreSlot,
    info: Arc<Info>,
    url: Arc<str>,
    opts: Arc<AdminOpts>,
    snapshot_limit: Arc<RateLimiter>,
    restore_limit: Arc<RateLimiter>,
}

/// What the AdminServer's commands with side effects need beyond the core.
#[derive(Clone, Debug)]
pub struct AdminOpts {
    /// `superDigest`: its digest identity also authenticates as `super` (auth.rs).
    pub super_digest: Option<String>,
    /// `admin.snapshot.enabled`.
    pub snapshot_enabled: bool,
    /// `admin.restore.enabled`.
    pub restore_enabled: bool,
    /// `admin.rateLimiterIntervalInMS`: one `snapshot`, and one `restore`, per interval.
    pub rate_interval: Duration,
}

impl Default for AdminOpts {
    fn default() -> Self {
        AdminOpts {
            super_digest: None,
            snapshot_enabled: true,
            restore_enabled: true,
            rate_interval: Duration::from_millis(300_000),
        }
    }
}

/// ZooKeeper's error text when the server is not running.
const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// Asks the core; None if it is not running or has not answered within
/// `ADMIN_CORE_ANSWER` (an admin request never hangs on a stuck core).
async fn ask<T>(
    core: &CoreSlot,
    make: impl FnOnce(oneshot::Sender<T>) -> Query<Oneshots>,
) -> Option<T> {
    let answer = ask_long(core, make);
    tokio::time::timeout(crate::limits::ADMIN_CORE_ANSWER, answer)
        .await
        .ok()
        .flatten()
}

/// As [`ask`], for an answer that takes many core turns (a backup's capture walks the whole
/// tree a step per turn): no deadline but the caller's own; dropping the request drops the
/// capture (core/backup.rs).
async fn ask_long<T>(
    core: &CoreSlot,
    make: impl FnOnce(oneshot::Sender<T>) -> Query<Oneshots>,
) -> Option<T> {
    let tx = core.get()?.clone();
    let (reply, rx) = oneshot::channel();
    tx.send(CoreMsg::Admin(make(reply))).await.ok()?;
    rx.await.ok()
}

fn json_response(status: StatusCode, body: &Json) -> Response {
    let text = serde_json::to_string_pretty(body).unwrap_or_else(|_| "{}".into());
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn list(State(st): State<AdminState>) -> Response {
    // Every primary name, GET and POST commands together, sorted as ZooKeeper lists them.
    let mut names: Vec<&str> = commands::COMMANDS
        .iter()
        .filter_map(|(n, _)| n.first())
        .chain(
            commands::POST_COMMANDS
                .iter()
                .filter_map(|(n, _)| n.first()),
        )
        .copied()
        .collect();
    names.sort_unstable();
    let mut html = String::new();
    for n in names {
        html.push_str(&format!("<a href=\"{}/{n}\">{n}</a>\n<br/>\n", st.url));
    }
    ([(header::CONTENT_TYPE, "text/html")], html).into_response()
}

/// A response with only `command` and `error`, as ZooKeeper's CommandResponse(cmd, error).
fn bare(status: StatusCode, command: &str, error: Option<&str>) -> Response {
    let mut m = Json::new();
    m.insert("command".into(), json!(command));
    m.insert("error".into(), json!(error));
    json_response(status, &m)
}

/// ZooKeeper's order: an unknown command, then a server not serving (both 200 with an
/// error), then the caller's authentication for a command with side effects (auth.rs).
async fn command(
    State(st): State<AdminState>,
    Path(name): Path<String>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    if let Some((primary, _)) = commands::find_post(&name) {
        // ZooKeeper's PostCommand has no GET answer (its Jetty answers 500); say which method.
        let mut m = Json::new();
        m.insert("command".into(), json!(primary));
        m.insert("error".into(), json!(format!("{primary} takes POST")));
        return json_response(StatusCode::METHOD_NOT_ALLOWED, &m);
    }
    let Some((primary, kind)) = commands::find(&name) else {
        return bare(
            StatusCode::OK,
            &name,
            Some(&format!("Unknown command: {name}")),
        );
    };
    if auth::needed(primary) {
        if let Err(r) = check_auth(&st, &caller, &headers).await {
            return r.into_response_for(&name);
        }
    }
    if primary == SNAPSHOT {
        return snapshot(&st, uri.query().unwrap_or("")).await;
    }
    let mut m = match kind {
        Kind::Local(l) => {
            let info = st.info.clone();
            tokio::task::spawn_blocking(move || commands::local(l, &info))
                .await
                .unwrap_or_default()
        }
        Kind::Core(c) => {
            match ask(&st.core, |reply| Query::Command { cmd: c, reply }).await {
                Some(mut m) => {
                    // The directory sizes are walked here, off the core thread.
                    if let Some(Value::Object(s)) = m.get_mut("server_stats") {
                        let info = st.info.clone();
                        let (d, l) = tokio::task::spawn_blocking(move || {
                            (
                                commands::dir_size(&info.data_dir),
                                commands::dir_size(&info.data_log_dir),
                            )
                        })
                        .await
                        .unwrap_or((0, 0));
                        s.insert("data_dir_size".into(), json!(d));
                        s.insert("log_dir_size".into(), json!(l));
                    }
                    m
                }
                None => {
                    let mut m = Json::new();
                    m.insert("error".into(), json!(NOT_SERVING));
                    m
                }
            }
        }
    };
    m.insert("command".into(), json!(primary));
    m.entry("error").or_insert(Value::Null);
    json_response(StatusCode::OK, &m)
}

/// A POST command (`POST <commandURL>/<name>`, JSON body); any other name is 405, as every
/// POST was before there were POST commands.
async fn post_command(
    State(st): State<AdminState>,
    Path(name): Path<String>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let Some((primary, cmd)) = commands::find_post(&name) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    // ZooKeeper authenticates before it reads the body (an unauthenticated caller cannot
    // make the server hold a restore's worth of bytes).
    if cmd.needs_auth() {
        if let Err(r) = check_auth(&st, &caller, &headers).await {
            return r.into_response_for(&name);
        }
    }
    if cmd == Post::Restore {
        return restore(&st, body).await;
    }
    let Ok(body) = axum::body::to_bytes(body, crate::limits::ADMIN_POST_BODY).await else {
        return bare(
            StatusCode::PAYLOAD_TOO_LARGE,
            primary,
            Some("request body too large"),
        );
    };
    let mut m = Json::new();
    let status = match cmd {
        Post::Restore => unreachable!("answered above"),
        Post::ShedConnections => shed(&st.core, &body, &mut m).await,
        Post::YieldLeadership => leadership(&st.core, LeadershipAsk::Yield, &mut m).await,
        Post::RequestLeadership => leadership(&st.core, LeadershipAsk::Request, &mut m).await,
    };
    m.insert("command".into(), json!(primary));
    m.entry("error").or_insert(Value::Null);
    json_response(status, &m)
}

/// shed_connections: 400 with ZooKeeper's text for a bad body, else the core closes the share.
async fn shed(core: &CoreSlot, body: &[u8], m: &mut Json) -> StatusCode {
    let percentage = match super::shed::percentage(body) {
        Ok(p) => p,
        Err(e) => {
            m.insert("error".into(), json!(e));
            return StatusCode::BAD_REQUEST;
        }
    };
    match ask(core, |reply| Query::Shed { percentage, reply }).await {
        Some(n) => {
            m.insert("connections_shed".into(), json!(n));
            m.insert("percentage_requested".into(), json!(percentage));
        }
        None => {
            m.insert("error".into(), json!(NOT_SERVING));
        }
    }
    StatusCode::OK
}

/// yield_leadership / request_leadership: `sent` once the Raft side has the ask (`srvr` and
/// /ready show the outcome, as after `ydld`/`rqld`); 400 with why when it cannot be sent
/// (standalone; a yield on a member that does not lead).
async fn leadership(core: &CoreSlot, what: LeadershipAsk, m: &mut Json) -> StatusCode {
    match ask(core, |reply| Query::Leadership { ask: what, reply }).await {
        Some(Ok(())) => {
            m.insert("sent".into(), json!(true));
            StatusCode::OK
        }
        Some(Err(why)) => {
            m.insert("sent".into(), json!(false));
            m.insert("error".into(), json!(why));
            StatusCode::BAD_REQUEST
        }
        None => {
            m.insert("error".into(), json!(NOT_SERVING));
            StatusCode::OK
        }
    }
}

/// The answer to `command` (`snapshot` or `restore`: switched by `admin.<command>.enabled`,
/// one per rate-limit interval) when it is refused before any work, as ZooKeeper 3.9 refuses
/// it: 503 where it is switched off, 429 within the interval. The log lines are in
/// docs/troubleshooting.md with both names.
fn refused(command: &str, enabled: bool, limit: &RateLimiter) -> Option<Response> {
    if !enabled {
        tracing::warn!("{command} command is disabled (admin.{command}.enabled=false)");
        return Some(bare(StatusCode::SERVICE_UNAVAILABLE, command, None));
    }
    if !limit.allow() {
        tracing::warn!("{command} request was rate limited");
        return Some(bare(StatusCode::TOO_MANY_REQUESTS, command, None));
    }
    None
}

/// The restore command's primary name (ZooKeeper 3.9's RestoreCommand).
const RESTORE: &str = "restore";

/// `restore`, as ZooKeeper 3.9's RestoreCommand once the caller is authenticated: 503 when
/// `admin.restore.enabled=false`, 429 past the rate limit, 400 for a body that is not a
/// snapshot stream with its last processed zxid (ZooKeeper's serializeLastProcessedZxid),
/// else the backup replaces the live state (core/restore.rs, durably) and the answer holds
/// the zxid it stands at; 500 with why when the server cannot (an ensemble member, a failed
/// snapshot file).
async fn restore(st: &AdminState, body: axum::body::Body) -> Response {
    if let Some(refusal) = refused(RESTORE, st.opts.restore_enabled, &st.restore_limit) {
        return refusal;
    }
    let Ok(bytes) = axum::body::to_bytes(body, crate::limits::RESTORE_MAX_BYTES).await else {
        return bare(
            StatusCode::PAYLOAD_TOO_LARGE,
            RESTORE,
            Some("the snapshot is larger than a restore takes"),
        );
    };
    let Some(zxid) = crate::backup::cli::last_processed_zxid(&bytes) else {
        return bare(
            StatusCode::BAD_REQUEST,
            RESTORE,
            Some("not a snapshot stream with its last processed zxid"),
        );
    };
    // The restored state goes on past this zxid (core/restore.rs): an epoch's worth of room,
    // and none below zero, or the stream is refused rather than the core's zxids overflowing.
    if !(0..=crate::limits::RESTORE_MAX_ZXID).contains(&zxid) {
        return bare(
            StatusCode::BAD_REQUEST,
            RESTORE,
            Some(&format!(
                "the stream's last processed zxid {zxid:#x} is out of range"
            )),
        );
    }
    let stream = bytes.clone();
    let decoded =
        tokio::task::spawn_blocking(move || crate::migrate::import::from_stream(bytes, zxid)).await;
    let state = match decoded {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "restore command: the snapshot did not load");
            return bare(StatusCode::BAD_REQUEST, RESTORE, Some(&e));
        }
        Err(_) => return bare(StatusCode::INTERNAL_SERVER_ERROR, RESTORE, None),
    };
    let answer = ask_long(&st.core, |reply| Query::Restore {
        state: Box::new(state),
        stream: (stream, zxid),
        reply,
    })
    .await;
    match answer {
        Some(Ok(z)) => {
            let mut m = Json::new();
            m.insert("command".into(), json!(RESTORE));
            m.insert("error".into(), Value::Null);
            m.insert("last_zxid".into(), json!(z));
            json_response(StatusCode::OK, &m)
        }
        Some(Err(why)) => bare(StatusCode::INTERNAL_SERVER_ERROR, RESTORE, Some(&why)),
        None => bare(StatusCode::OK, RESTORE, Some(NOT_SERVING)),
    }
}

/// The online backup command's primary name (ZooKeeper 3.9's SnapshotCommand).
const SNAPSHOT: &str = "snapshot";

/// `snapshot[?streaming=true|false]`, as ZooKeeper 3.9's SnapshotCommand once the caller is
/// authenticated: 503 when `admin.snapshot.enabled=false`, 429 past the rate limit, else a
/// consistent snapshot of the live tree (core/backup.rs) in ZooKeeper's snapshot format
/// (backup/stream.rs), its zxid and size in the `last_zxid` (`0x…`) and `snapshot_size`
/// headers; streamed as the body unless `streaming` is other than `true` (then the JSON).
async fn snapshot(st: &AdminState, query: &str) -> Response {
    let streaming = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| *k == "streaming")
        .map(|(_, v)| v.eq_ignore_ascii_case("true"))
        .next_back()
        .unwrap_or(true);
    if let Some(refusal) = refused(SNAPSHOT, st.opts.snapshot_enabled, &st.snapshot_limit) {
        return refusal;
    }
    let Some(image) = ask_long(&st.core, |reply| Query::Backup { reply }).await else {
        return bare(StatusCode::OK, SNAPSHOT, Some(NOT_SERVING));
    };
    // Decoding replays the txns over the capture and checks the digest; then ZooKeeper's
    // format. Both walk the tree: off the runtime's workers.
    let built = tokio::task::spawn_blocking(move || {
        crate::durability::image::decode_fuzzy(&image)
            .map(|state| (state.zxid(), crate::backup::stream::encode(&state)))
            .map_err(|e| e.to_string())
    })
    .await;
    let (zxid, bytes) = match built {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "snapshot command: the captured image did not load");
            return bare(StatusCode::INTERNAL_SERVER_ERROR, SNAPSHOT, None);
        }
        Err(_) => return bare(StatusCode::INTERNAL_SERVER_ERROR, SNAPSHOT, None),
    };
    tracing::info!(
        zxid = format_args!("{zxid:#x}"),
        bytes = bytes.len(),
        streaming,
        "snapshot command: backup taken"
    );
    let last_zxid = format!("0x{zxid:x}");
    let size = bytes.len().to_string();
    let mut r = if streaming {
        ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
    } else {
        let mut m = Json::new();
        m.insert("command".into(), json!(SNAPSHOT));
        m.insert("error".into(), Value::Null);
        json_response(StatusCode::OK, &m)
    };
    for (k, v) in [("last_zxid", last_zxid), ("snapshot_size", size)] {
        if let Ok(v) = header::HeaderValue::from_str(&v) {
            r.headers_mut().insert(k, v);
        }
    }
    r
}

/// Why an authenticated command was not run.
enum AuthFail {
    NotServing,
    Refused(auth::Refusal),
}

impl AuthFail {
    fn into_response_for(self, name: &str) -> Response {
        match self {
            AuthFail::NotServing => bare(StatusCode::OK, name, Some(NOT_SERVING)),
            AuthFail::Refused(r) => bare(
                StatusCode::from_u16(r.status()).unwrap_or(StatusCode::UNAUTHORIZED),
                name,
                Some(r.text()),
            ),
        }
    }
}

/// Authenticates the caller and authorizes it on the root's ACL (auth.rs).
async fn check_auth(st: &AdminState, caller: &Caller, headers: &HeaderMap) -> Result<(), AuthFail> {
    // The command needs a running server (ZooKeeper checks that first).
    if st.core.get().is_none() {
        return Err(AuthFail::NotServing);
    }
    // A header that is not text proves nothing.
    let header = match headers.get(header::AUTHORIZATION) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| AuthFail::Refused(auth::Refusal::NotAuthenticated))?,
        ),
    };
    let ids = auth::authenticate(header, caller, st.opts.super_digest.as_deref())
        .map_err(AuthFail::Refused)?;
    let root = ask(&st.core, |reply| Query::RootAcl { reply })
        .await
        .ok_or(AuthFail::NotServing)?;
    auth::authorize(&root, &ids).map_err(AuthFail::Refused)
}

/// Ready = the core runs, answers and serves read-write clients, as `srvr` says: recovery
/// done, and for an ensemble member a quorum (a leader it follows, or its own with a quorum
/// behind it); a read-only member is not ready. The role is srvr's Mode.
async fn ready(State(st): State<AdminState>) -> Response {
    let r = ask(&st.core, |reply| Query::Ready { reply }).await;
    let (status, body) = match r {
        Some(r) => (
            if r.serving {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            },
            json!({
                "status": if r.serving { "ok" } else { "fail" },
                "details": { "role": r.role, "hasLeader": r.has_leader },
            }),
        ),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "status": "fail", "details": { "role": "", "hasLeader": false } }),
        ),
    };
    let m = match body {
        Value::Object(m) => m,
        _ => Json::new(),
    };
    json_response(status, &m)
}

/// Serves the AdminServer on `listener` until the runtime stops.
pub fn serve_admin(
    listener: TcpListener,
    core: CoreSlot,
    info: Info,
    command_url: &str,
    opts: AdminOpts,
    security: Security,
) {
    let url: Arc<str> = {
        let u = command_url.trim_end_matches('/');
        let u = if u.starts_with('/') {
            u.to_string()
        } else {
            format!("/{u}")
        };
        u.into()
    };
    let st = AdminState {
        core,
        info: Arc::new(info),
        url: url.clone(),
        snapshot_limit: Arc::new(RateLimiter::new(1, opts.rate_interval)),
        restore_limit: Arc::new(RateLimiter::new(1, opts.rate_interval)),
        opts: Arc::new(opts),
    };
    let app = Router::new()
        .route(&url, get(list))
        .route(&format!("{url}/{{name}}"), get(command).post(post_command))
        .route("/ready", get(ready))
        .with_state(st);
    let listener = Bounded::new(listener, ADMIN_CONNECTIONS, ADMIN_IDLE);
    tokio::spawn(listener::serve(listener, app, security));
}

async fn metrics(State(core): State<CoreSlot>) -> Response {
    let Some(sample) = ask(&core, |reply| Query::Metrics { reply }).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, NOT_SERVING).into_response();
    };
    match crate::metrics::prometheus::encode(&sample) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                crate::metrics::prometheus::content_type(),
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// Serves `GET /metrics` (Prometheus text format) on `listener` until the runtime stops.
pub fn serve_metrics(listener: TcpListener, core: CoreSlot, security: Security) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(core);
    let listener = Bounded::new(listener, ADMIN_CONNECTIONS, ADMIN_IDLE);
    tokio::spawn(listener::serve(listener, app, security));
}

#[cfg(test)]
#[path = "http_test.rs"]
mod tests;
