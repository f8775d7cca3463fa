//! Durability: the write-ahead log stage (group commit), the fuzzy capture of snapshots, and
//! the digest records that let recovery prove it rebuilt what was acknowledged.
//!
//! The core talks to the log through one seam, [`LogQueue`]: it appends prepped txns and
//! digest records, takes them as one batch a turn (its runtime sends it to the log thread),
//! and is told `CoreMsg::Durable(zxid)` once the batch is on disk. Only this folder (and recovery) knows the WAL's record kinds and
//! encodings. Owns: the WAL's and snapshots' files, and the threads that write them. It may not touch: connections, sessions' liveness, watches; it reads the tree
//! only through the capture.

pub mod capture;
pub mod crashpoint;
pub mod datadir;
pub mod digest_record;
pub mod image;
pub mod log;
pub mod recovery;
pub mod snapshotter;
pub mod timed_sink;

use bytes::Bytes;
use log::{Batch, LogRecord};
use palisade_proto::Txn;
use palisade_wal::RecordKind;

/// The core's side of the log: the records of one core turn (prepped txns, digest records),
/// taken as one batch at the turn's end and handed to the log thread by the core's runtime
/// (`LogMsg::Batch`). The log reports the batch durable (`CoreMsg::Durable`) after the one
/// fsync that covers it, or fails the server.
#[derive(Default)]
pub struct LogQueue {
    queued: Vec<LogRecord>,
}

impl LogQueue {
    /// Queues a prepped txn (in zxid order).
    pub fn append(&mut self, txn: &Txn) {
        self.queued.push(LogRecord {
            kind: RecordKind::Txn,
            zxid: txn.header.zxid,
            bytes: txn.encode(),
        });
    }

    /// Queues a digest record: the tree digest right after txn `zxid` was applied.
    pub fn digest(&mut self, zxid: i64, digest: u64) {
        let rec = digest_record::encode_record(zxid, digest);
        self.queued.push(LogRecord {
            kind: RecordKind::Meta,
            zxid,
            bytes: Bytes::copy_from_slice(&rec),
        });
    }

    /// What is queued, as one batch (None: nothing is).
    pub fn take(&mut self) -> Option<Batch> {
        if self.queued.is_empty() {
            return None;
        }
        Some(Batch {
            records: std::mem::take(&mut self.queued),
        })
    }
}
