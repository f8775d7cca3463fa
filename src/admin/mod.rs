//! The AdminServer (ZooKeeper 3.8's `admin.*` keys): HTTP on the server's tokio runtime
//! (axum), `GET <commandURL>` lists the commands and `GET <commandURL>/<name>` answers one
//! as JSON with ZooKeeper's key trees; `GET /ready` for orchestrators. Also the Prometheus
//! endpoint (`metricsProvider.*`), which shares the plumbing: anything that needs the core's
//! data is asked of the core through `CoreMsg::Admin`, answered between two messages, as a
//! four-letter word is.
//!
//! Owns: the HTTP listeners (AdminServer, /metrics), their connection bounds, and who may run
//! a command with side effects. May not touch: the state, sessions, client connections or the
//! log — what it knows of them it asks the core (`CoreMsg::Admin`), and it answers with what
//! comes back.

mod auth;
pub mod commands;
mod http;
mod https;
mod listener;
mod shed;

pub use http::{serve_admin, serve_metrics, AdminOpts};
pub use https::{admin_security, metrics_listeners};
pub use listener::Security;

/// The core's inbox as the HTTP side holds it.
pub mod http_slot {
    pub use super::http::CoreSlot;
}

pub use crate::core::admin::{CoreCmd, Json, Query, Readiness};
