//! State shared by the API handles and the connection task: the session's identity, the last
//! zxid seen, when the server last confirmed the session alive, the state stream and the
//! watch table.

use crate::state::SessionState;
use crate::watch::WatchRegistry;
use bytes::Bytes;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub(crate) struct Shared {
    /// "host:port", or a comma-separated list of them (an ensemble's members): each reconnect
    /// attempt goes to the next one, as ZooKeeper's clients rotate through their host list.
    pub addr: String,
    /// The member of `addr` the next reconnect attempt goes to.
    next_addr: AtomicUsize,
    /// The member the latest connection was made to (diagnostics).
    connected_to: Mutex<String>,
    pub session_id: i64,
    pub password: Bytes,
    /// What the client asks for on every (re)connect.
    pub requested_timeout_ms: i32,
    /// What the server granted on the latest handshake.
    negotiated_timeout_ms: AtomicI32,
    last_zxid: AtomicI64,
    /// The send time of the latest request the server answered (or of the accepted handshake).
    /// The server refreshes a session whenever it receives a message, so the session cannot
    /// expire before this instant plus the session timeout.
    last_alive: Mutex<Instant>,
    pub state: watch::Sender<SessionState>,
    pub watches: Mutex<WatchRegistry>,
}

/// Locks a mutex, recovering from poisoning: the data under these locks is valid after any
/// panic (plain values and tables), and the client must not panic on a caller's panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(
        addr: String,
        session_id: i64,
        password: Bytes,
        requested_timeout_ms: i32,
        negotiated_timeout_ms: i32,
        last_zxid: i64,
        alive_at: Instant,
    ) -> Shared {
        Shared {
            addr,
            next_addr: AtomicUsize::new(1),
            connected_to: Mutex::new(String::new()),
            session_id,
            password,
            requested_timeout_ms,
            negotiated_timeout_ms: AtomicI32::new(negotiated_timeout_ms),
            last_zxid: AtomicI64::new(last_zxid),
            last_alive: Mutex::new(alive_at),
            state: watch::Sender::new(SessionState::Connected),
            watches: Mutex::new(WatchRegistry::default()),
        }
    }

    /// The address the next (re)connect attempt goes to: the members of `addr` in turn,
    /// starting after the one the session was opened on.
    pub fn next_addr(&self) -> &str {
        let hosts: Vec<&str> = self.addr.split(',').collect();
        let i = self.next_addr.fetch_add(1, Ordering::Relaxed);
        hosts[i % hosts.len()]
    }

    /// The session was opened on member `i` of `addr`: reconnects start with the next one.
    pub fn opened_on(&self, i: usize) {
        self.next_addr.store(i + 1, Ordering::Relaxed);
        if let Some(h) = self.addr.split(',').nth(i) {
            self.connected(h);
        }
    }

    /// The latest connection was made to `host`.
    pub fn connected(&self, host: &str) {
        *lock(&self.connected_to) = host.to_string();
    }

    /// The member the latest connection was made to.
    pub fn connected_to(&self) -> String {
        lock(&self.connected_to).clone()
    }

    pub fn session_timeout(&self) -> Duration {
        let ms = self.negotiated_timeout_ms.load(Ordering::Relaxed);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }

    pub fn set_session_timeout_ms(&self, ms: i32) {
        self.negotiated_timeout_ms.store(ms, Ordering::Relaxed);
    }

    pub fn last_zxid(&self) -> i64 {
        self.last_zxid.load(Ordering::Relaxed)
    }

    /// Replies carry the server's latest zxid; notifications carry -1 and are not counted.
    pub fn saw_zxid(&self, zxid: i64) {
        if zxid > 0 {
            self.last_zxid.fetch_max(zxid, Ordering::Relaxed);
        }
    }

    pub fn last_alive(&self) -> Instant {
        *lock(&self.last_alive)
    }

    /// Raise-only: replies come in order, but pings are matched on their own queue.
    pub fn alive_at(&self, sent: Instant) {
        let mut a = lock(&self.last_alive);
        if sent > *a {
            *a = sent;
        }
    }

    pub fn state(&self) -> SessionState {
        *self.state.borrow()
    }

    pub fn set_state(&self, s: SessionState) {
        self.state.send_if_modified(|cur| {
            // Final states stay final.
            if *cur == s || cur.is_terminal() {
                return false;
            }
            *cur = s;
            true
        });
    }
}
