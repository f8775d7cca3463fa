//! The log stage: a writer thread that group-commits prepped txns and reports when they are
//! durable. The sink behind it is a trait: the durability issue supplies the WAL; until
//! then `MemorySink` keeps nothing (writes are lost on restart).

use bytes::Bytes;
use std::io;
use std::sync::mpsc;

pub trait LogSink: Send + 'static {
    /// Buffers one serialized txn.
    fn append(&mut self, zxid: i64, txn: &[u8]) -> io::Result<()>;
    /// Makes every appended txn durable.
    fn sync(&mut self) -> io::Result<()>;
}

/// Keeps nothing: every txn is "durable" at once and lost on restart.
pub struct MemorySink;

impl LogSink for MemorySink {
    fn append(&mut self, _zxid: i64, _txn: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Txns handed to the log in zxid order.
pub struct Batch {
    pub txns: Vec<(i64, Bytes)>,
}

/// Starts the writer: every batch waiting is appended, then one sync, then `durable(last zxid)`.
pub fn spawn_writer(
    mut sink: Box<dyn LogSink>,
    durable: impl Fn(Result<i64, io::Error>) + Send + 'static,
) -> io::Result<mpsc::Sender<Batch>> {
    let (tx, rx) = mpsc::channel::<Batch>();
    std::thread::Builder::new()
        .name("palisade-log".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut last = None;
                let mut result = Ok(());
                for batch in std::iter::once(first).chain(rx.try_iter()) {
                    for (zxid, txn) in &batch.txns {
                        if result.is_ok() {
                            result = sink.append(*zxid, txn);
                        }
                        last = Some(*zxid);
                    }
                }
                let Some(last) = last else { continue };
                match result.and_then(|_| sink.sync()) {
                    Ok(()) => durable(Ok(last)),
                    Err(e) => {
                        // After a failed write or fsync nothing later may be acknowledged.
                        durable(Err(e));
                        return;
                    }
                }
            }
        })?;
    Ok(tx)
}
