//! The core thread's runtime: the one part of the core that does I/O. It owns the inbox
//! (spinning, then parking, while it is empty: spin.rs), reads the clock once per step and
//! hands the time to the engine with each input, seeds the engine's random choices, and
//! routes the engine's output at the end of each turn (the direct socket write: net/direct.rs;
//! the work it asks off the core thread: host.rs), and reads the host's facts the engine
//! reports (host.rs). Everything else in src/core is the engine, which reads no clock, draws
//! no random number and touches no file, socket or thread-local (tests/layering.rs checks it).
//!
//! Owns: the core thread, its inbox and reply ends, the clock and random source. May not touch:
//! the engine's state other than by stepping it (`Core::step`).

mod host;
mod inbox;
mod routes;

pub use inbox::{Answer, CoreMsg, Oneshots};
pub use routes::{ConsensusRoutes, Routes};

use super::{Core, CoreConfig, Msg, Now};
use crate::spin;
use inbox::Replies;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Milliseconds since the Unix epoch, from the system clock.
fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Now {
    /// The clocks, read now.
    pub fn read() -> Now {
        Now {
            mono: Instant::now(),
            wall_ms: wall_ms(),
        }
    }
}

impl Core {
    /// An engine starting now, its random choices seeded from the system's random source.
    /// The host's facts it reports (`envi`) are read now.
    pub fn new(cfg: CoreConfig) -> Self {
        let mut core = Core::start(cfg, Now::read(), fastrand::u64(..));
        core.host = host::info();
        core
    }

    /// Steps the engine on one input, at the time read now; an input that reports on the
    /// host (a four-letter word, an admin query or scrape) comes with a fresh reading of it.
    /// Its reply ends are kept in `replies`, the engine given tokens for them.
    fn input(&mut self, replies: &mut Replies, msg: CoreMsg) -> bool {
        if matches!(msg, Msg::FourLetter { .. } | Msg::Admin(_)) {
            self.probe = host::probe();
        }
        let input = replies.split(msg);
        self.step(Now::read(), input)
    }

    /// Runs until Shutdown (or every sender is gone): drains whatever is queued, hands the
    /// writes it prepped to the log (or consensus, through `routes`) as one batch, then
    /// takes one turn of a snapshot capture if one is in progress (so a capture advances
    /// between batches, and while idle).
    pub fn run(mut self, mut inbox: mpsc::Receiver<CoreMsg>, routes: Routes) {
        let mut spinner = spin::Spinner::new(self.cfg.spin_wait);
        let mut replies = Replies::new();
        self.outbox.stage_turns();
        loop {
            let first = if self.capturing() {
                match inbox.try_recv() {
                    Ok(m) => Some(m),
                    Err(mpsc::error::TryRecvError::Empty) => {
                        if self.snapshot_waiting() {
                            std::thread::yield_now();
                        }
                        None
                    }
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                }
            } else {
                let next = spinner.wait(
                    &mut inbox,
                    |inbox| match inbox.try_recv() {
                        Ok(m) => Some(Some(m)),
                        Err(mpsc::error::TryRecvError::Empty) => None,
                        Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
                    },
                    |inbox| inbox.blocking_recv(),
                );
                match next {
                    Some(m) => Some(m),
                    None => break,
                }
            };
            let mut stop = false;
            if let Some(first) = first {
                stop = self.input(&mut replies, first);
                let mut n = 1;
                while !stop && n < crate::limits::CORE_TURN_MESSAGES {
                    match inbox.try_recv() {
                        Ok(m) => stop = self.input(&mut replies, m),
                        Err(_) => break,
                    }
                    n += 1;
                }
                self.flush_turn();
                self.route_work(&routes, &mut replies);
            }
            if stop {
                break;
            }
            for id in replies.gone() {
                self.asker_gone(id);
            }
            self.between_batches(Now::read());
            self.flush_output(&routes, &mut replies);
        }
        self.flush_output(&routes, &mut replies);
        tracing::info!(
            zxid = format_args!("{:#x}", self.state.zxid()),
            "core stopped"
        );
    }

    /// Routes the work the engine pushed for the log and consensus, in the order pushed: at
    /// the end of a turn's inputs (its log batch, its forwards) and of the work between
    /// batches (core/work.rs says how its queues' bounds hold).
    /// And sends the engine's answers to the reply ends it held tokens for.
    fn route_work(&mut self, routes: &Routes, replies: &mut Replies) {
        for w in self.outbox.take_work() {
            routes.route(self, w);
        }
        replies.answer(self.outbox.take_answers());
    }

    /// Has net write the output this turn staged (`outbox.rs`, net/direct.rs). A direct write can bring a held
    /// connection back under its budget, as its writer's `Drained` would: its held reads run
    /// now, and what they answer is written in the same way.
    fn flush_output(&mut self, routes: &Routes, replies: &mut Replies) {
        self.route_work(routes, replies);
        for t in self.outbox.take_tasks() {
            host::run(t);
        }
        for _ in 0..crate::limits::CORE_TURN_MESSAGES {
            let lifted = self.outbox.write();
            if lifted.is_empty() {
                return;
            }
            for c in lifted.conns {
                self.drained(Some(c));
            }
            if lifted.global {
                self.drained(None);
            }
        }
        // Not reached in practice; whatever is still staged goes out, and the tick looks at
        // held connections again.
        let lifted = self.outbox.write();
        self.held.extend(lifted.conns);
    }
}
