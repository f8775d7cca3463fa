//! The core thread's own write to a plaintext connection's socket (core/outbox.rs stages what
//! the engine sends in a turn; the runtime has this write it at the turn's end). The socket
//! is a dup of the connection's file descriptor, so it stays valid for as long as the core
//! holds it, whatever the connection's tasks do. What the socket does not take at once, and a
//! close, go to the connection's writer task behind it.

use crate::core::conn_out::{DirectWriter, Lifted, Staged};
use crate::core::{Out, OutTx};
use bytes::Bytes;
use std::io::Write;

/// A plaintext connection's socket, as the core thread writes it.
#[derive(Debug)]
pub struct Socket(pub std::net::TcpStream);

impl DirectWriter for Socket {
    fn write_staged(&self, tx: &OutTx, staged: Staged, lifted: &mut Lifted) {
        let Staged {
            buf,
            weight,
            replies,
            close,
            ..
        } = staged;
        let budget = &tx.budget;
        let keep = |buf| {
            if let Some(d) = tx.direct() {
                d.keep(buf);
            }
        };
        let mut done = 0;
        if !close && budget.handed() == 0 {
            // Non-blocking (the socket is tokio's); an error is the writer's to find.
            if let Ok(n) = (&self.0).write(&buf) {
                budget.progress(n);
                done = n;
            }
        }
        if done == buf.len() && !close {
            budget.wrote(weight);
            budget.answered(replies);
            tx.freed();
            let (own, global) = budget.lifted();
            if own {
                if let Some(d) = tx.direct() {
                    lifted.conns.push(d.conn);
                }
            }
            lifted.global |= global;
            keep(buf);
            return;
        }
        // A client slow to read (or a close): the rest goes to the writer, copied to its size
        // so that what is held stays what the budget counts.
        let rest = Bytes::copy_from_slice(buf.get(done..).unwrap_or_default());
        keep(buf);
        let batch = Out::Batch {
            bytes: rest,
            replies,
            weight,
        };
        if tx.hand(batch).is_err() {
            budget.release(weight);
        }
        if close {
            let _ = tx.hand(Out::Close);
        }
    }
}

#[cfg(test)]
#[path = "direct_test.rs"]
mod tests;
