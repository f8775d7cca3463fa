//! What the client knows of its session, as a value on [`crate::Client::state`]'s stream.

/// The session as the client sees it.
///
/// `Connected` ⇄ `Disconnected` while the client reconnects to the same session; `Expired` and
/// `Closed` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// A connection is up and the server accepted the session on it.
    Connected,
    /// The connection broke; the client is reconnecting to the same session (until a session
    /// timeout has passed since the server last answered).
    Disconnected,
    /// The session is gone: the server said so on a reconnect, or the client could not reach
    /// the server for a whole session timeout. Final.
    Expired,
    /// [`crate::Client::close`] (or [`crate::Client::abandon`]) ended the client. Final.
    Closed,
}

impl SessionState {
    /// `Expired` or `Closed`: nothing will change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }
}
