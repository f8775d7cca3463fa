//! One-shot watches: the future a caller awaits, and the client-side table the connection task
//! fires from notifications and re-registers with setWatches after a reconnect.

use crate::error::Error;
use palisade_proto::EventType;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// A watch notification: what happened, and to which node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub path: String,
}

/// Resolves once, when the watched node changes (`Ok`), or with the error that ended the
/// session ([`Error::SessionExpired`], [`Error::Closed`]). Watches survive reconnects: the client
/// re-registers them with setWatches, and the server sends at once the events missed meanwhile.
#[must_use = "a watch does nothing unless awaited"]
pub struct WatchFuture {
    rx: oneshot::Receiver<Result<WatchedEvent, Error>>,
}

impl Future for WatchFuture {
    type Output = Result<WatchedEvent, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(r)) => Poll::Ready(r),
            // The table dropped the waiter without a value: only when the client itself is gone.
            Poll::Ready(Err(_)) => Poll::Ready(Err(Error::Closed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

pub(crate) type Waiter = oneshot::Sender<Result<WatchedEvent, Error>>;

pub(crate) fn watch_pair() -> (Waiter, WatchFuture) {
    let (tx, rx) = oneshot::channel();
    (tx, WatchFuture { rx })
}

/// Which of ZooKeeper's three client-side tables a watch sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchKind {
    /// getData, or exists on a node that exists.
    Data,
    /// exists on a node that does not exist.
    Exist,
    /// getChildren.
    Child,
}

/// What the caller asked for: exists registers a data or an exist watch depending on the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchRequest {
    Exists,
    Data,
    Child,
}

#[derive(Default)]
pub(crate) struct WatchRegistry {
    data: HashMap<String, Vec<Waiter>>,
    exist: HashMap<String, Vec<Waiter>>,
    child: HashMap<String, Vec<Waiter>>,
}

impl WatchRegistry {
    pub fn add(&mut self, kind: WatchKind, path: String, w: Waiter) {
        let table = match kind {
            WatchKind::Data => &mut self.data,
            WatchKind::Exist => &mut self.exist,
            WatchKind::Child => &mut self.child,
        };
        table.entry(path).or_default().push(w);
    }

    /// Fires every waiter the event concerns, as ZooKeeper's client does (ZKWatchManager):
    /// created/data changed → data and exist watches; children changed → child watches;
    /// deleted → all three.
    pub fn fire(&mut self, ev: &WatchedEvent) {
        let p = ev.path.as_str();
        let mut hit = Vec::new();
        match ev.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                hit.extend(self.data.remove(p).unwrap_or_default());
                hit.extend(self.exist.remove(p).unwrap_or_default());
            }
            EventType::NodeChildrenChanged => {
                hit.extend(self.child.remove(p).unwrap_or_default());
            }
            EventType::NodeDeleted => {
                hit.extend(self.data.remove(p).unwrap_or_default());
                hit.extend(self.exist.remove(p).unwrap_or_default());
                hit.extend(self.child.remove(p).unwrap_or_default());
            }
            _ => {}
        }
        for w in hit {
            let _ = w.send(Ok(ev.clone()));
        }
    }

    /// Ends every watch with an error (session expired or client closed).
    pub fn fail_all(&mut self, make: impl Fn() -> Error) {
        for table in [&mut self.data, &mut self.exist, &mut self.child] {
            for (_, ws) in table.drain() {
                for w in ws {
                    let _ = w.send(Err(make()));
                }
            }
        }
    }

    /// The paths to re-register after a reconnect (data, exist, child), dropping waiters
    /// nobody awaits any more.
    pub fn paths(&mut self) -> [Vec<String>; 3] {
        [&mut self.data, &mut self.exist, &mut self.child].map(|table| {
            table.retain(|_, ws| {
                ws.retain(|w| !w.is_closed());
                !ws.is_empty()
            });
            table.keys().cloned().collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: EventType, p: &str) -> WatchedEvent {
        WatchedEvent {
            event_type: t,
            path: p.into(),
        }
    }

    #[test]
    fn events_fire_the_tables_zookeeper_fires() {
        let mut r = WatchRegistry::default();
        let (d, mut fd) = watch_pair();
        let (e, mut fe) = watch_pair();
        let (c, mut fc) = watch_pair();
        r.add(WatchKind::Data, "/a".into(), d);
        r.add(WatchKind::Exist, "/a".into(), e);
        r.add(WatchKind::Child, "/a".into(), c);
        r.fire(&ev(EventType::NodeChildrenChanged, "/a"));
        assert!(fc.rx.try_recv().is_ok());
        assert!(fd.rx.try_recv().is_err() && fe.rx.try_recv().is_err());
        r.fire(&ev(EventType::NodeDataChanged, "/b"));
        assert!(fd.rx.try_recv().is_err());
        r.fire(&ev(EventType::NodeCreated, "/a"));
        assert!(fd.rx.try_recv().is_ok() && fe.rx.try_recv().is_ok());
        assert_eq!(r.paths(), [Vec::<String>::new(), vec![], vec![]]);
    }

    #[test]
    fn paths_skip_abandoned_waiters() {
        let mut r = WatchRegistry::default();
        let (d, fd) = watch_pair();
        let (c, _fc) = watch_pair();
        r.add(WatchKind::Data, "/x".into(), d);
        r.add(WatchKind::Child, "/y".into(), c);
        drop(fd);
        assert_eq!(r.paths(), [vec![], vec![], vec!["/y".to_string()]]);
    }
}
