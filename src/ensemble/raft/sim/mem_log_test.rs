use super::mem_log::{Disk, MemLog, SharedDisk};
use super::mem_sm::MemSm;
use crate::ensemble::raft::types::{NodeId, Proposal, TypeConfig};
use bytes::Bytes;
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader, StorageError, Vote};

struct Builder;

impl StoreBuilder<TypeConfig, MemLog, MemSm, ()> for Builder {
    async fn build(&self) -> Result<((), MemLog, MemSm), StorageError<NodeId>> {
        let disk = SharedDisk::default();
        let log = MemLog::open(1, disk.clone(), 1, None);
        let sm = MemSm::open(1, disk, None).await?;
        Ok(((), log, sm))
    }
}

/// openraft's own storage suite, against the in-memory log and the state machine over it.
#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).unwrap();
}

fn entry(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        payload: EntryPayload::Normal(Proposal::Txn(Bytes::from(format!("{term}/{index}")))),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

async fn indexes(log: &mut MemLog) -> Vec<u64> {
    log.try_get_log_entries(..)
        .await
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect()
}

/// How: entries appended and flushed, then more appended and a crash before their flush: a
/// restart finds the flushed ones only, and the vote saved meanwhile. A truncation and a
/// purge are on the disk when they return; a store of an earlier life writes nothing.
#[test]
fn a_crash_keeps_what_was_flushed_and_loses_the_rest() {
    rt().block_on(async {
        let disk = SharedDisk::default();
        let mut log = MemLog::open(1, disk.clone(), 5, None);
        log.blocking_append((1..=4).map(|i| entry(1, i)))
            .await
            .unwrap();
        // Not awaited: durable only at the next flush, 1 to 5 ms away.
        let mut unflushed = log.clone();
        let pending = tokio::spawn(async move {
            unflushed
                .blocking_append((5..=6).map(|i| entry(1, i)))
                .await
        });
        tokio::task::yield_now().await;
        assert_eq!(
            indexes(&mut log).await,
            vec![1, 2, 3, 4, 5, 6],
            "readable at once"
        );
        log.save_vote(&Vote::new(2, 1)).await.unwrap();
        Disk::crash(&disk);
        // The flush comes after the crash: it writes nothing and acknowledges nothing.
        assert!(
            pending.await.unwrap().is_err(),
            "an append acknowledged after the crash"
        );
        let mut back = MemLog::open(1, disk.clone(), 5, None);
        assert_eq!(indexes(&mut back).await, vec![1, 2, 3, 4]);
        assert_eq!(back.read_vote().await.unwrap(), Some(Vote::new(2, 1)));
        assert_eq!(disk.lock().lost_unflushed, 2);

        back.truncate(LogId::new(CommittedLeaderId::new(1, 1), 3))
            .await
            .unwrap();
        back.purge(LogId::new(CommittedLeaderId::new(1, 1), 1))
            .await
            .unwrap();
        Disk::crash(&disk);
        back.blocking_append([entry(2, 3)]).await.unwrap_err();
        let mut again = MemLog::open(1, disk.clone(), 5, None);
        assert_eq!(indexes(&mut again).await, vec![2]);
        let state = again.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id.map(|l| l.index), Some(1));
    });
}
