//! Offline inspectors for Palisade data dirs, and damage drills on copies of them.
//!
//! Everything here reads a data dir without changing it — log segments through
//! `palisade_wal::scan_segment` (`scan_segment_as` for a Raft log, format 3, which `log`
//! reads too: [`raftlog`]), snapshots through `palisade_snapshot::Snapshot::open`, the
//! tree rebuilt with the server's own `palisade::durability::recovery::Replayer` — except [`damage()`] and
//! [`recover_report()`], which refuse any directory that `damage::prepare` did not copy.
//!
//! | function | subcommand | what it does |
//! |---|---|---|
//! | [`logdump::read_log`] | `log DIR\|FILE` | one line per record (per txn of a Raft batch entry), then how each segment ends (a Raft log too) |
//! | [`snapdump::SnapshotFile`] | `snapshot FILE` | header, trailer, sessions, the tree with stats |
//! | [`validate()`] | `validate DATADIR` | every file checked, full replays, digests |
//! | [`replay()`] | `replay DATADIR --to Z` | the tree as of any zxid, from an exact start |
//! | [`recover_readonly`] | (used by `diff`) | what the server's recovery would rebuild |
//! | [`invariants()`] | `invariants DATADIR` | counters, suffixes, zxids, digests along the log |
//! | [`diff()`], [`diff_trees`] | `diff A B` | node-by-node differences |
//! | [`damage::prepare`], [`damage()`] | `damage` | copy, then tear / flip / drop |
//! | [`recover_report()`] | `recover-report DIR` | the server's recovery run on a copy |
//! | [`zk`] | `log`, `snapshot`, `validate` on ZooKeeper files | ZooKeeper 3.8 data dirs too |
//!
//! JSON (`--json`): one object per line, each with a `type`. Zxids, session ids and digests
//! are strings of `0x` hex (they can exceed what a JSON double holds exactly); counts are
//! numbers. Node data is `data` (a string) when it is UTF-8, else `data_hex`; null data is
//! `"data": null`.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]
#![deny(unsafe_code)]

mod checker;
pub mod damage;
pub mod datadir;
pub mod describe;
pub mod diff;
pub mod error;
pub mod format;
pub mod invariants;
pub mod logdump;
pub mod logscan;
pub mod nodes;
pub mod opview;
pub mod raftlog;
pub mod recover_report;
pub mod replay;
pub mod snapdump;
pub mod validate;
pub mod zk;

pub use damage::{damage, Damage, Damaged};
pub use datadir::DataDir;
pub use diff::{diff, diff_states, diff_trees, DiffReport, Difference};
pub use error::InspectError;
pub use invariants::{invariants, InvariantsReport, Violation};
pub use recover_report::{recover_report, RecoverReport};
pub use replay::{recover_readonly, replay, Base, Replayed};
pub use validate::{validate, ValidateReport};
