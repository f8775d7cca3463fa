//! Log records as an operator reads them: each txn's header (zxid, time, session, cxid) and
//! its operation ([`OpView`]), digest records, and what does not decode.

use crate::format;
use crate::opview::OpView;
use bytes::Bytes;
use palisade_proto::Txn;
use palisade_wal::{RecordKind, RecordRef};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// What a record holds.
#[derive(Debug, Clone)]
pub enum RecordView {
    Txn {
        /// The zxid in the txn's own header (the record's must match it).
        header_zxid: i64,
        time_ms: i64,
        session: i64,
        cxid: i32,
        op: Box<OpView>,
    },
    /// A tree digest record: the digest right after txn `zxid` was applied.
    Digest { zxid: i64, digest: u64 },
    /// A meta record of a kind this build does not know.
    Meta { len: usize },
    /// A txn record whose payload does not decode.
    Undecodable { reason: String },
}

/// One record, where it lives, and what it holds.
#[derive(Debug, Clone)]
pub struct RecordLine {
    pub kind: RecordKind,
    /// The zxid in the record header.
    pub zxid: i64,
    pub segment: PathBuf,
    pub offset: u64,
    pub view: RecordView,
}

/// Decodes one record for display. Never fails: a payload that does not decode says so.
pub fn describe(rec: &RecordRef<'_>) -> RecordLine {
    let view = match rec.kind {
        RecordKind::Txn => match decode_txn(rec.payload) {
            Ok(txn) => RecordView::Txn {
                header_zxid: txn.header.zxid,
                time_ms: txn.header.time,
                session: txn.header.client_id,
                cxid: txn.header.cxid,
                op: Box::new(OpView::of(&txn.body)),
            },
            Err(reason) => RecordView::Undecodable { reason },
        },
        RecordKind::Meta => match palisade::durability::digest_record::decode_record(rec.payload) {
            Some((zxid, digest)) => RecordView::Digest { zxid, digest },
            None => RecordView::Meta {
                len: rec.payload.len(),
            },
        },
    };
    RecordLine {
        kind: rec.kind,
        zxid: rec.zxid,
        segment: rec.segment.to_path_buf(),
        offset: rec.offset,
        view,
    }
}

/// A txn payload as the server decodes it at recovery.
pub fn decode_txn(payload: &[u8]) -> Result<Txn, String> {
    Txn::decode(Bytes::copy_from_slice(payload), usize::MAX).map_err(|e| e.to_string())
}

impl RecordLine {
    pub fn text(&self) -> String {
        let z = format::zxid(self.zxid);
        match &self.view {
            RecordView::Txn {
                header_zxid,
                time_ms,
                session,
                cxid,
                op,
            } => {
                let mismatch = if *header_zxid == self.zxid {
                    String::new()
                } else {
                    format!(" (HEADER SAYS {})", format::zxid(*header_zxid))
                };
                format!(
                    "{z}{mismatch} {} session={} cxid={cxid} {}",
                    format::utc_ms(*time_ms),
                    format::zxid(*session),
                    op.text()
                )
            }
            RecordView::Digest { zxid, digest } => {
                format!("digest after {} = {digest:#018x}", format::zxid(*zxid))
            }
            RecordView::Meta { len } => format!("meta record ({len} bytes, unknown kind) {z}"),
            RecordView::Undecodable { reason } => {
                format!("{z} UNDECODABLE txn at {}: {reason}", self.offset)
            }
        }
    }

    pub fn json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.into(), v);
        };
        match &self.view {
            RecordView::Txn {
                header_zxid,
                time_ms,
                session,
                cxid,
                op,
            } => {
                put("type", json!("txn"));
                put("zxid", json!(format::zxid(self.zxid)));
                if *header_zxid != self.zxid {
                    put("header_zxid", json!(format::zxid(*header_zxid)));
                }
                put("time", json!(format::utc_ms(*time_ms)));
                put("time_ms", json!(time_ms));
                put("session", json!(format::zxid(*session)));
                put("cxid", json!(cxid));
                op.json_fields(&mut m);
            }
            RecordView::Digest { zxid, digest } => {
                put("type", json!("digest"));
                put("after", json!(format::zxid(*zxid)));
                put("digest", json!(format!("{digest:#018x}")));
            }
            RecordView::Meta { len } => {
                put("type", json!("meta"));
                put("zxid", json!(format::zxid(self.zxid)));
                put("len", json!(len));
            }
            RecordView::Undecodable { reason } => {
                put("type", json!("undecodable"));
                put("zxid", json!(format::zxid(self.zxid)));
                put("reason", json!(reason));
            }
        }
        m.insert("segment".into(), json!(self.segment.display().to_string()));
        m.insert("offset".into(), json!(self.offset));
        Value::Object(m)
    }
}
