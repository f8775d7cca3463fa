//! Durability: the write-ahead log stage (group commit), the fuzzy capture of snapshots, and
//! the digest records that let recovery prove it rebuilt what was acknowledged.
//!
//! The core talks to the log through one seam, [`Durability`]: it appends prepped txns and
//! digest records, flushes them as one batch, and is told `CoreMsg::Durable(zxid)` once the
//! batch is on disk. Only this folder (and recovery) knows the WAL's record kinds and
//! encodings. It may not touch: connections, sessions' liveness, watches; it reads the tree
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
use log::{Batch, LogMsg, LogRecord};
use palisade_proto::Txn;
use palisade_wal::RecordKind;
use std::sync::mpsc;

/// The core's side of the log.
pub trait Durability {
    /// Queues a prepped txn (in zxid order).
    fn append(&mut self, txn: &Txn);
    /// Queues a digest record: the tree digest right after txn `zxid` was applied.
    fn digest(&mut self, zxid: i64, digest: u64);
    /// Hands what is queued to the log as one batch. The log reports the batch durable
    /// (`CoreMsg::Durable`) after the one fsync that covers it, or fails the server.
    fn flush(&mut self);
}

/// The log thread's input: batches of records, sent as they are flushed.
pub struct LogQueue {
    tx: mpsc::Sender<LogMsg>,
    queued: Vec<LogRecord>,
}

impl LogQueue {
    pub fn new(tx: mpsc::Sender<LogMsg>) -> Self {
        LogQueue {
            tx,
            queued: Vec::new(),
        }
    }
}

impl Durability for LogQueue {
    fn append(&mut self, txn: &Txn) {
        self.queued.push(LogRecord {
            kind: RecordKind::Txn,
            zxid: txn.header.zxid,
            bytes: txn.encode(),
        });
    }

    fn digest(&mut self, zxid: i64, digest: u64) {
        let rec = digest_record::encode_record(zxid, digest);
        self.queued.push(LogRecord {
            kind: RecordKind::Meta,
            zxid,
            bytes: Bytes::copy_from_slice(&rec),
        });
    }

    fn flush(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.queued);
        if self.tx.send(LogMsg::Batch(Batch { records })).is_err() {
            tracing::error!("log writer is gone; writes cannot be acknowledged");
        }
    }
}
