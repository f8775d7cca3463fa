//! The log sink the server runs: times each sync and counts the records it covers for the
//! metrics (fsynctime, sync_processor_batch_size, palisade_wal_*), around the real sink.

pub struct TimedSink {
    inner: Box<dyn super::log::LogSink>,
    pending: u64,
}

impl TimedSink {
    pub fn new(inner: Box<dyn super::log::LogSink>) -> Self {
        TimedSink { inner, pending: 0 }
    }
}

impl super::log::LogSink for TimedSink {
    fn append(&mut self, rec: &super::log::LogRecord) -> std::io::Result<()> {
        self.pending = self.pending.saturating_add(1);
        self.inner.append(rec)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        let t0 = std::time::Instant::now();
        let r = self.inner.sync();
        if r.is_ok() {
            crate::metrics::shared().log_synced(self.pending, t0.elapsed());
        }
        self.pending = 0;
        r
    }

    fn purgeable(&mut self, keep_from: i64) -> std::io::Result<Vec<std::path::PathBuf>> {
        self.inner.purgeable(keep_from)
    }
}
