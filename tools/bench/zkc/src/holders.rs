//! The in-process safety check of the lock recipes: who holds the lock right now. Every
//! contender is its own ZooKeeper session, so two holders the recipe should have kept apart are a
//! real violation, whatever the server said to each.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Readers holding (> 0), a writer (−1), nobody (0); violations and read overlaps counted.
#[derive(Default)]
pub struct Holders {
    state: AtomicI64,
    violations: AtomicU64,
    reader_overlaps: AtomicU64,
}

impl Holders {
    /// A contender starts holding: a writer (the mutex's holders are all writers) must be alone,
    /// a reader may join readers only.
    pub fn enter(&self, write: bool) {
        if write {
            let prev = self.state.swap(-1, Ordering::SeqCst);
            if prev != 0 {
                self.violations.fetch_add(1, Ordering::SeqCst);
            }
            // Kept as the writer: whoever else holds still counts as a violation on entering.
        } else {
            let prev = self.state.fetch_add(1, Ordering::SeqCst);
            if prev < 0 {
                self.violations.fetch_add(1, Ordering::SeqCst);
                // Back to "a writer holds": the reader is not counted as in.
                self.state.fetch_sub(1, Ordering::SeqCst);
            } else if prev > 0 {
                self.reader_overlaps.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// A contender stops holding (before it deletes its node).
    pub fn leave(&self, write: bool) {
        if write {
            self.state.store(0, Ordering::SeqCst);
        } else {
            // A reader that entered over a writer was not counted in: never below 0 here.
            let _ = self
                .state
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                    (s > 0).then(|| s - 1)
                });
        }
    }

    /// Acquisitions that found a holder the recipe should have excluded.
    pub fn violations(&self) -> u64 {
        self.violations.load(Ordering::SeqCst)
    }

    /// Reads that began while other reads held: evidence that readers do share.
    pub fn reader_overlaps(&self) -> u64 {
        self.reader_overlaps.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_share_a_writer_is_alone() {
        let h = Holders::default();
        h.enter(false);
        h.enter(false);
        assert_eq!((h.violations(), h.reader_overlaps()), (0, 1));
        h.leave(false);
        h.leave(false);
        h.enter(true);
        h.leave(true);
        h.enter(true);
        h.leave(true);
        assert_eq!(h.violations(), 0);
    }

    #[test]
    fn every_overlap_with_a_writer_is_counted() {
        let h = Holders::default();
        // Two writers (a mutex's two holders).
        h.enter(true);
        h.enter(true);
        assert_eq!(h.violations(), 1);
        h.leave(true);
        h.leave(true);
        // A reader under a writer, then a writer under a reader.
        h.enter(true);
        h.enter(false);
        assert_eq!(h.violations(), 2);
        h.leave(false);
        h.leave(true);
        h.enter(false);
        h.enter(true);
        assert_eq!(h.violations(), 3);
    }
}
