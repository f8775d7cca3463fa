//! Whether a read's reply is built now, waits for room, or is refused (ARCHITECTURE.md,
//! "Output budgets"). A reply that could never be queued (over maxReplySize, if set, or over
//! the server's whole output budget) is not built: MARSHALLINGERROR instead. One that could
//! but has no room in the budgets now waits (`hold_read`), as ZooKeeper sends any reply.

use super::{Answer, Asked};
use crate::core::conn_id::ConnId;
use crate::core::Core;
use bytes::Bytes;
use palisade_proto::{ErrorCode, Request};

/// Whether a reply of a known size is built now.
pub(super) enum Room {
    /// It has room in the output budgets.
    Now,
    /// Not yet: the read waits, held, until writers make room.
    Wait,
    /// Never: over `maxReplySize`, or larger than the server's whole output budget.
    Never,
}

impl Core {
    /// The bytes a reply frame of `body` bytes takes (length prefix and ReplyHeader).
    pub(super) fn frame_bytes(body: usize) -> usize {
        body.saturating_add(20)
    }

    /// The largest reply body that could ever be built for `conn`: `maxReplySize` if set, and
    /// what the output budgets could ever hold (`OutBudget::largest_reply`).
    pub(super) fn reply_cap(&self, conn: ConnId) -> usize {
        let budgets = self
            .conns
            .get(&conn)
            .map_or(usize::MAX, |c| c.out.budget.largest_reply());
        self.cfg.max_reply.min(budgets).saturating_sub(20)
    }

    /// Whether a reply of `body` bytes is built for `conn` now, later, or never.
    pub(super) fn room(&self, conn: ConnId, body: usize) -> Room {
        if body > self.reply_cap(conn) {
            return Room::Never;
        }
        match self.conns.get(&conn) {
            Some(c) if !c.out.budget.has_room(Self::frame_bytes(body)) => Room::Wait,
            _ => Room::Now,
        }
    }

    /// Holds `req` until the output budgets have room for a reply of `body` bytes.
    pub(super) fn hold(&mut self, q: Asked, req: Request, body: usize) -> Answer {
        self.hold_read(q.conn, q.xid, req, q.at, Self::frame_bytes(body));
        Answer::Done
    }

    /// The answer to `op` whose reply of `len` bytes could never be queued.
    pub(super) fn too_big(&self, q: Asked, op: &str, len: usize) -> Bytes {
        tracing::debug!(
            conn = q.conn,
            op,
            len,
            cap = self.reply_cap(q.conn),
            "reply would exceed maxReplySize or globalOutputBudget; refused"
        );
        q.err(ErrorCode::MarshallingError)
    }
}
