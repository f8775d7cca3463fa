//! The log thread never waits for a purge's deletions.

use super::*;
use std::time::Duration;

/// Appends nothing; every purge names the same two segments.
struct PlanSink;

impl LogSink for PlanSink {
    fn append(&mut self, _rec: &LogRecord) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn purgeable(&mut self, _keep_from: i64) -> io::Result<Vec<PathBuf>> {
        Ok(vec!["log.1".into(), "log.2".into()])
    }
}

#[test]
fn batches_are_acknowledged_while_a_purge_is_still_deleting() {
    let (durable_tx, durable) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let log = spawn_writer(
        Box::new(PlanSink),
        Duration::ZERO,
        move |r| {
            let _ = durable_tx.send(r.map_err(|e| e.to_string()));
        },
        move |paths| {
            let _ = started_tx.send(paths.to_vec());
            // A file system slow to unlink: held until the test is done.
            let _ = release.recv();
            Ok(())
        },
    )
    .unwrap();
    log.send(LogMsg::Purge { keep_from: 5 }).unwrap();
    log.send(LogMsg::Batch(Batch { records: vec![] })).unwrap();
    let doomed = started.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(doomed, vec![PathBuf::from("log.1"), PathBuf::from("log.2")]);
    log.send(LogMsg::Batch(Batch {
        records: vec![LogRecord {
            kind: RecordKind::Txn,
            zxid: 7,
            bytes: Bytes::from_static(b"txn"),
        }],
    }))
    .unwrap();
    assert_eq!(
        durable.recv_timeout(Duration::from_secs(10)),
        Ok(Ok(7)),
        "the batch waited for the deletion"
    );
    release_tx.send(()).unwrap();
}
