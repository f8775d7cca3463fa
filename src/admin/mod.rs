//! The AdminServer (ZooKeeper 3.8's `admin.*` keys): HTTP on the server's tokio runtime
//! (axum), `GET <commandURL>` lists the commands and `GET <commandURL>/<name>` answers one
//! as JSON with ZooKeeper's key trees; `GET /ready` for orchestrators. Also the Prometheus
//! endpoint (`metricsProvider.*`), which shares the plumbing: anything that needs the core's
//! data is asked of the core through `CoreMsg::Admin`, answered between two messages, as a
//! four-letter word is.

pub mod commands;
mod http;
mod listener;

pub use http::{serve_admin, serve_metrics};

/// The core's inbox as the HTTP side holds it.
pub mod http_slot {
    pub use super::http::CoreSlot;
}

use crate::metrics::Sample;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

/// A JSON object, in the shape ZooKeeper's CommandResponse serializes.
pub type Json = Map<String, Value>;

/// A command the core answers (the others need only the configuration or the files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreCmd {
    Connections,
    ConnectionStatReset,
    Dump,
    Hash,
    Monitor,
    ServerStats,
    Stats,
    StatReset,
    WatchSummary,
    Watches,
    WatchesByPath,
}

/// What the HTTP side asks the core.
pub enum Query {
    Command {
        cmd: CoreCmd,
        reply: oneshot::Sender<Json>,
    },
    Metrics {
        reply: oneshot::Sender<Sample>,
    },
    /// Answered as soon as the core reads it: the core is running and serving.
    Ready {
        reply: oneshot::Sender<()>,
    },
}

impl crate::core::Core {
    /// Answers an admin query (a dropped receiver means the HTTP request went away).
    pub(crate) fn admin(&mut self, q: Query) {
        match q {
            Query::Command { cmd, reply } => {
                let _ = reply.send(self.admin_command(cmd));
            }
            Query::Metrics { reply } => {
                let _ = reply.send(self.metrics_sample());
            }
            Query::Ready { reply } => {
                let _ = reply.send(());
            }
        }
    }
}
