//! The proposer task: the leader core's proposals, one batch per core turn, handed to
//! `Raft::client_write_ff` in order (fire and forget: the core learns the outcome from the
//! committed stream), consecutive txns as one entry.

use super::types::{Proposal, TypeConfig};
use crate::seam::Proposed;
use bytes::Bytes;
use openraft::Raft;
use tokio::sync::mpsc;

/// Hands the core's batches to Raft in order. The outcome arrives through the committed
/// stream, so the replies `client_write_ff` offers are not needed — but they are kept until
/// they resolve: openraft logs a warning for every reply it cannot deliver, which at one per
/// write cost more than the write.
pub(super) async fn proposer(
    raft: Raft<TypeConfig>,
    mut rx: mpsc::UnboundedReceiver<Vec<Proposed>>,
) {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let mut replies = FuturesUnordered::new();
    loop {
        let batch = tokio::select! {
            b = rx.recv() => match b {
                Some(b) => b,
                None => return,
            },
            Some(_) = replies.next(), if !replies.is_empty() => continue,
        };
        for p in entries(batch) {
            // A proposal that loses its leader fails its clients when the core hears of the
            // new one.
            match raft.client_write_ff(p).await {
                Ok(reply) => replies.push(reply),
                Err(e) => {
                    tracing::warn!(error = %e, "Raft stopped; proposals dropped");
                    return;
                }
            }
        }
    }
}

/// A core turn's proposals as Raft entries, in order: consecutive txns as one entry of at
/// most `PEER_BATCH_BYTES` (a larger txn alone).
fn entries(batch: Vec<Proposed>) -> Vec<Proposal> {
    let mut out = Vec::new();
    let mut txns = Vec::new();
    let mut bytes = 0usize;
    let flush = |txns: &mut Vec<Bytes>, out: &mut Vec<Proposal>| match txns.len() {
        0 => {}
        1 => out.extend(txns.pop().map(Proposal::Txn)),
        _ => out.push(Proposal::Txns(std::mem::take(txns))),
    };
    for p in batch {
        match p {
            Proposed::Txn(b) => {
                if bytes.saturating_add(b.len()) > crate::limits::PEER_BATCH_BYTES {
                    flush(&mut txns, &mut out);
                    bytes = 0;
                }
                bytes = bytes.saturating_add(b.len());
                txns.push(b);
            }
            Proposed::Key(k) => {
                flush(&mut txns, &mut out);
                bytes = 0;
                out.push(Proposal::Key(k));
            }
            Proposed::Digest { zxid, digest } => {
                flush(&mut txns, &mut out);
                bytes = 0;
                out.push(Proposal::Digest { zxid, digest });
            }
            Proposed::Restore(r) => {
                flush(&mut txns, &mut out);
                bytes = 0;
                out.push(Proposal::Restore(r));
            }
        }
    }
    flush(&mut txns, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turns_txns_go_to_raft_as_batches_in_order_and_bounded_in_bytes() {
        let t = |n: usize, fill: u8| Proposed::Txn(Bytes::from(vec![fill; n]));
        let got = entries(vec![
            t(10, 1),
            t(10, 2),
            Proposed::Key([7; 16]),
            t(10, 3),
            Proposed::Digest { zxid: 5, digest: 9 },
        ]);
        let want = vec![
            Proposal::Txns(vec![Bytes::from(vec![1; 10]), Bytes::from(vec![2; 10])]),
            Proposal::Key([7; 16]),
            Proposal::Txn(Bytes::from(vec![3; 10])),
            Proposal::Digest { zxid: 5, digest: 9 },
        ];
        assert_eq!(got, want);
        // 3 txns of 0.4 MiB: two fit in a batch, the third starts the next
        let big = crate::limits::PEER_BATCH_BYTES * 2 / 5;
        let got = entries(vec![
            t(big, 1),
            t(big, 2),
            t(big, 3),
            t(2 * crate::limits::PEER_BATCH_BYTES, 4),
        ]);
        let shape: Vec<usize> = got
            .iter()
            .map(|p| match p {
                Proposal::Txns(b) => b.len(),
                Proposal::Txn(_) => 1,
                _ => 0,
            })
            .collect();
        assert_eq!(shape, [2, 1, 1]);
        assert!(
            matches!(&got[2], Proposal::Txn(b) if b.len() == 2 * crate::limits::PEER_BATCH_BYTES)
        );
    }
}
