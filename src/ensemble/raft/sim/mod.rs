//! Deterministic-time fault schedules over 3 and 5 members in one process (issue 15): the
//! members run on in-memory storage whose durability is modelled (`mem_log.rs`, `mem_sm.rs`),
//! linked by an in-memory network (`net.rs`), under tokio's paused clock, so that thousands
//! of short seeded schedules fit in CI time (`schedules_test.rs`). The real WAL-backed log
//! store is exercised on real time by `chaos_test.rs`.
//!
//! Test code only (compiled under `cfg(test)`). Owns: the in-memory log, state machine and
//! network. May not touch: files, sockets, the wall clock.

mod cluster;
mod ledger;
mod mem_log;
mod mem_sm;
mod net;

#[cfg(test)]
#[path = "mem_log_test.rs"]
mod mem_log_test;
#[cfg(test)]
#[path = "schedules_test.rs"]
mod schedules_test;
