use super::*;
use crate::testkit::{assert_same_tree, Workload};
use openraft::{CommittedLeaderId, Membership};
use std::collections::BTreeSet;

fn id(term: u64, index: u64) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

/// The workload's txns as Raft entries from index 2 on, after a membership entry at 1.
fn log_of(w: &Workload) -> Vec<Entry<TypeConfig>> {
    let members: BTreeSet<NodeId> = [1, 2, 3].into();
    let mut v = vec![Entry {
        log_id: id(1, 1),
        payload: EntryPayload::Membership(Membership::new(vec![members], None)),
    }];
    for (i, t) in w.log.iter().enumerate() {
        v.push(Entry {
            log_id: id(1, i as u64 + 2),
            payload: EntryPayload::Normal(proposal(t)),
        });
    }
    v
}

/// A snapshot of `sm` as it stands.
async fn snapshot_of<A: Applier>(sm: &mut StateMachine<A>) -> Snapshot<TypeConfig> {
    sm.get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn assert_same_state(what: &str, got: &State, want: &State) {
    assert_eq!(got.zxid(), want.zxid(), "{what}: zxid");
    assert_eq!(got.tree.digest(), want.tree.digest(), "{what}: digest");
    assert_eq!(got.sessions(), want.sessions(), "{what}: sessions");
    assert_eq!(got.tree.znode_count(), want.tree.znode_count(), "{what}");
    assert_eq!(
        got.tree.approximate_data_size(),
        want.tree.approximate_data_size(),
        "{what}: data size"
    );
    assert_same_tree(what, &got.tree, &want.tree);
}

/// How: a random workload's log applied through the adapter (with a blank entry in the
/// middle) against the same txns applied to a State directly; a snapshot of the result
/// installed on a fresh adapter; then the rest of the log applied to both.
#[test]
fn applies_in_order_and_a_snapshot_restores_an_equal_state() {
    for seed in 0..5 {
        let w = Workload::run(seed, 400);
        let entries = log_of(&w);
        let (head, tail) = entries.split_at(250);
        let mut direct = State::new();
        rt().block_on(async {
            let mut sm = StateMachine::new(StateApplier::default());
            assert_eq!(sm.apply(head.to_vec()).await.unwrap().len(), head.len());
            for t in &w.log[..249] {
                direct.apply(t);
            }
            sm.with_applier(|a| assert_same_state("applied", &a.state, &direct))
                .await;
            let (applied, membership) = sm.applied_state().await.unwrap();
            assert_eq!(applied, Some(id(1, 250)));
            assert_eq!(membership.log_id(), &Some(id(1, 1)));

            let snap = snapshot_of(&mut sm).await;
            assert_eq!(snap.meta.last_log_id, Some(id(1, 250)));
            let mut other = StateMachine::new(StateApplier::default());
            let mut data = other.begin_receiving_snapshot().await.unwrap();
            *data = *snap.snapshot;
            other.install_snapshot(&snap.meta, data).await.unwrap();
            other
                .with_applier(|a| assert_same_state("installed", &a.state, &direct))
                .await;
            assert_eq!(
                other.applied_state().await.unwrap(),
                sm.applied_state().await.unwrap()
            );
            let current = other.get_current_snapshot().await.unwrap().unwrap();
            assert_eq!(current.meta, snap.meta);

            let blank = Entry {
                log_id: id(2, tail[0].log_id.index),
                payload: EntryPayload::Blank,
            };
            let rest: Vec<_> = std::iter::once(blank)
                .chain(tail.iter().map(|e| Entry {
                    log_id: id(2, e.log_id.index + 1),
                    payload: e.payload.clone(),
                }))
                .collect();
            sm.apply(rest.clone()).await.unwrap();
            other.apply(rest).await.unwrap();
            for t in &w.log[249..] {
                direct.apply(t);
            }
            sm.with_applier(|a| assert_same_state("leader", &a.state, &direct))
                .await;
            other
                .with_applier(|a| assert_same_state("follower", &a.state, &direct))
                .await;
        });
    }
}

/// How: with a snapshot file, a built snapshot's image goes to openraft whole and is not
/// held in memory; asked for the current snapshot, the state machine reads it back from the
/// file (same meta, same bytes), after a reopen too; with the file gone, the ask fails rather
/// than answer an empty image.
#[test]
fn with_a_file_the_current_snapshot_is_read_back_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let w = Workload::run(7, 300);
    let entries = log_of(&w);
    rt().block_on(async {
        let mut sm = StateMachine::open(dir.path(), StateApplier::default())
            .await
            .unwrap();
        sm.apply(entries.clone()).await.unwrap();
        let built = snapshot_of(&mut sm).await;
        let built_bytes = built.snapshot.into_memory().unwrap();
        assert!(!built_bytes.is_empty());
        assert!(
            sm.inner
                .lock()
                .await
                .snapshot
                .as_ref()
                .unwrap()
                .data
                .is_none(),
            "the image is held in memory besides the file"
        );
        let current = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta, built.meta);
        assert_eq!(current.snapshot.into_memory().unwrap(), built_bytes);

        let mut reopened = StateMachine::open(dir.path(), StateApplier::default())
            .await
            .unwrap();
        let current = reopened.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta, built.meta);
        assert_eq!(current.snapshot.into_memory().unwrap(), built_bytes);

        std::fs::remove_file(dir.path().join(super::super::snapshot_file::FILE)).unwrap();
        assert!(sm.get_current_snapshot().await.is_err());
    });
}

/// How: a snapshot whose digest word is flipped, and one cut short, are refused and leave
/// the state machine as it was.
#[test]
fn a_damaged_snapshot_is_refused() {
    let w = Workload::run(7, 200);
    rt().block_on(async {
        let mut sm = StateMachine::new(StateApplier::default());
        sm.apply(log_of(&w)).await.unwrap();
        let snap = snapshot_of(&mut sm).await;
        let good = snap.snapshot.into_memory().unwrap();
        let mut flipped = good.clone();
        flipped[16] ^= 1;
        let cut = good[..good.len() - 3].to_vec();
        for bad in [flipped, cut] {
            let mut other = StateMachine::new(StateApplier::default());
            let r = other
                .install_snapshot(&snap.meta, Box::new(SnapshotBuf::memory(bad)))
                .await;
            assert!(r.is_err());
            assert_eq!(other.applied_state().await.unwrap().0, None);
            other.with_applier(|a| assert_eq!(a.state.zxid(), 0)).await;
        }
    });
}

/// An applier whose capture stays open until the test says, and which drops it when a
/// snapshot is installed — as the core does (`Core::install`).
#[derive(Default)]
struct SlowApplier {
    inner: StateApplier,
    open: Arc<parking_lot::Mutex<Option<oneshot::Sender<()>>>>,
}

use tokio::sync::oneshot;

impl Applier for SlowApplier {
    async fn apply(&mut self, txns: Committed, upto: LogId<NodeId>) -> io::Result<()> {
        self.inner.apply(txns, upto).await
    }

    async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
        let (tx, rx) = oneshot::channel();
        *self.open.lock() = Some(tx);
        let image = (image::encode(&self.inner.state), self.inner.upto);
        Ok(Box::pin(async move {
            rx.await
                .map_err(|_| io::Error::other("the core dropped the snapshot capture"))?;
            Ok(image)
        }))
    }

    async fn install(&mut self, snapshot: &[u8], at: Option<LogId<NodeId>>) -> io::Result<()> {
        self.open.lock().take();
        self.inner.install(snapshot, at).await
    }
}

/// How: a capture is under way on a member when the leader installs a newer snapshot on it
/// (the member had fallen behind); the capture is dropped, or it ends after the install.
/// openraft 0.9 stops a member's Raft for good when a build fails, so the build must answer
/// with the installed snapshot instead (the stop-26 stall: a follower capturing under load was
/// sent a snapshot and never received anything again).
#[test]
fn a_capture_overtaken_by_an_installed_snapshot_answers_with_the_installed_one() {
    let w = Workload::run(11, 300);
    let entries = log_of(&w);
    let (head, _) = entries.split_at(100);
    tokio::task::LocalSet::new().block_on(&rt(), async {
        // the leader's snapshot of the whole log
        let mut leader = StateMachine::new(StateApplier::default());
        leader.apply(entries.clone()).await.unwrap();
        let snap = snapshot_of(&mut leader).await;
        for drop_it in [true, false] {
            let mut follower = StateMachine::new(SlowApplier::default());
            follower.apply(head.to_vec()).await.unwrap();
            let open = follower.with_applier(|a| a.open.clone()).await;
            let mut builder = follower.get_snapshot_builder().await;
            let build = tokio::task::spawn_local(async move { builder.build_snapshot().await });
            while open.lock().is_none() {
                tokio::task::yield_now().await;
            }
            if !drop_it {
                // the capture ends before the install, but its builder resumes only after it
                if let Some(tx) = open.lock().take() {
                    tx.send(()).unwrap();
                }
            }
            let mut data = follower.begin_receiving_snapshot().await.unwrap();
            *data = SnapshotBuf::memory(snap.snapshot.in_memory().unwrap().to_vec());
            follower.install_snapshot(&snap.meta, data).await.unwrap();
            if let Some(tx) = open.lock().take() {
                tx.send(()).unwrap();
            }
            let built = build
                .await
                .unwrap()
                .expect("a build overtaken by an install");
            assert_eq!(built.meta, snap.meta, "drop_it={drop_it}");
            assert_eq!(
                follower.applied_state().await.unwrap().0,
                snap.meta.last_log_id
            );
        }
    });
}

/// How: the log is on disk only up to entry 2; a batch up to entry 4 committed (a quorum's
/// copies are on disk, the leader's own still being synced) waits to apply until the mark
/// reaches 4, so no client is answered for an entry this member could still lose.
#[test]
fn an_entry_applies_only_once_the_log_holding_it_is_on_disk() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let w = Workload::run(7, 5);
    let log = log_of(&w);
    let durable = crate::ensemble::raft::durable::Durable::new(Some(id(1, 2)));
    let sm = StateMachine::new(StateApplier::default()).with_durable(durable.clone());
    rt.block_on(async {
        let mut applying = sm.clone();
        let batch: Vec<_> = log.iter().take(4).cloned().collect();
        let task = tokio::spawn(async move { applying.apply(batch).await.map(|_| ()) });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!task.is_finished(), "applied before the log was on disk");
        durable.advance(id(1, 4));
        task.await.unwrap().unwrap();
        assert_eq!(sm.last_applied().await, Some(id(1, 4)));
    });
}
