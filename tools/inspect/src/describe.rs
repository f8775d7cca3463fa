//! Log records as an operator reads them: each txn's header (zxid, time, session, cxid) and
//! its operation ([`OpView`]), digest records, and what does not decode; in a Raft log
//! (format 3), each entry's index and log id with what it carries (a txn, each txn of a
//! batch, the ensemble key's presence, a digest), and the committed log ids of its metadata
//! records.

use crate::format;
use crate::opview::OpView;
use crate::raftlog::{self, RaftLogId, RaftPayload};
use bytes::Bytes;
use palisade_proto::Txn;
use palisade_wal::{LogFormat, RecordKind, RecordRef};
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
    /// A Raft entry (format 3): the record's zxid field is its index. `entry` is None when
    /// the payload does not decode (`undecodable` says why).
    RaftEntry {
        len: usize,
        entry: Option<RaftEntryView>,
        undecodable: Option<String>,
    },
    /// A Raft metadata record holding the committed log id.
    RaftCommitted { log_id: RaftLogId },
    /// A Raft metadata record of a kind this build does not know.
    RaftMeta { len: usize },
}

/// A decoded Raft entry: its log id and what it carries.
#[derive(Debug, Clone)]
pub struct RaftEntryView {
    pub log_id: RaftLogId,
    pub payload: RaftPayloadView,
}

#[derive(Debug, Clone)]
pub enum RaftPayloadView {
    Blank,
    /// A Palisade txn, decoded as a log record's would be ([`RecordView::Txn`] or
    /// [`RecordView::Undecodable`]), and its size.
    Txn {
        len: usize,
        view: Box<RecordView>,
    },
    /// Several txns as one entry, in order, each as [`RaftPayloadView::Txn`] holds one.
    Txns(Vec<RaftTxnView>),
    /// The ensemble's session-password key: only that it is there (its bytes are a secret).
    Key,
    /// The leader's tree digest right after txn `zxid`.
    Digest {
        zxid: i64,
        digest: u64,
    },
    Membership {
        bytes: usize,
    },
}

/// One txn of a batch entry: its size and its decoded record.
#[derive(Debug, Clone)]
pub struct RaftTxnView {
    pub len: usize,
    pub view: Box<RecordView>,
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

/// [`describe`] for a record of a log of `format`.
pub fn describe_as(format: LogFormat, rec: &RecordRef<'_>) -> RecordLine {
    match format {
        LogFormat::Standalone => describe(rec),
        LogFormat::Raft => describe_raft(rec),
    }
}

/// Decodes one record of a Raft log (format 3) for display. Never fails.
pub fn describe_raft(rec: &RecordRef<'_>) -> RecordLine {
    let view = match rec.kind {
        RecordKind::Txn => match raftlog::decode_entry(rec.payload) {
            Ok(e) => RecordView::RaftEntry {
                len: rec.payload.len(),
                entry: Some(RaftEntryView {
                    log_id: e.log_id,
                    payload: match e.payload {
                        RaftPayload::Blank => RaftPayloadView::Blank,
                        RaftPayload::Membership { bytes } => RaftPayloadView::Membership { bytes },
                        RaftPayload::Txn(txn) => RaftPayloadView::Txn {
                            len: txn.len(),
                            view: Box::new(txn_view(&txn)),
                        },
                        RaftPayload::Txns(txns) => RaftPayloadView::Txns(
                            txns.iter()
                                .map(|t| RaftTxnView {
                                    len: t.len(),
                                    view: Box::new(txn_view(t)),
                                })
                                .collect(),
                        ),
                        RaftPayload::Key => RaftPayloadView::Key,
                        RaftPayload::Digest { zxid, digest } => {
                            RaftPayloadView::Digest { zxid, digest }
                        }
                    },
                }),
                undecodable: None,
            },
            Err(reason) => RecordView::RaftEntry {
                len: rec.payload.len(),
                entry: None,
                undecodable: Some(reason),
            },
        },
        RecordKind::Meta => match raftlog::decode_committed(rec.payload) {
            Some(log_id) => RecordView::RaftCommitted { log_id },
            None => RecordView::RaftMeta {
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

fn txn_view(payload: &[u8]) -> RecordView {
    match decode_txn(payload) {
        Ok(txn) => RecordView::Txn {
            header_zxid: txn.header.zxid,
            time_ms: txn.header.time,
            session: txn.header.client_id,
            cxid: txn.header.cxid,
            op: Box::new(OpView::of(&txn.body)),
        },
        Err(reason) => RecordView::Undecodable { reason },
    }
}

/// Decodes one record for display. Never fails: a payload that does not decode says so.
pub fn describe(rec: &RecordRef<'_>) -> RecordLine {
    let view = match rec.kind {
        RecordKind::Txn => txn_view(rec.payload),
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
        view_text(&self.view, self.zxid, self.offset)
    }

    pub fn json(&self) -> Value {
        let mut m = Map::new();
        view_json(&self.view, self.zxid, &mut m);
        m.insert("segment".into(), json!(self.segment.display().to_string()));
        m.insert("offset".into(), json!(self.offset));
        Value::Object(m)
    }
}

/// One record as a line; `zxid` is the record header's (for a Raft entry, its index).
fn view_text(view: &RecordView, zxid: i64, offset: u64) -> String {
    let z = format::zxid(zxid);
    match view {
        RecordView::Txn {
            header_zxid,
            time_ms,
            session,
            cxid,
            op,
        } => {
            let mismatch = if *header_zxid == zxid {
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
            format!("{z} UNDECODABLE txn at {offset}: {reason}")
        }
        RecordView::RaftEntry {
            len,
            entry: Some(e),
            ..
        } => {
            let head = format!(
                "entry {zxid}{} term={} node={} ({len} bytes)",
                index_mismatch(e.log_id.index, zxid),
                e.log_id.term,
                e.log_id.node
            );
            match &e.payload {
                RaftPayloadView::Blank => format!("{head} blank"),
                RaftPayloadView::Membership { bytes } => {
                    format!("{head} membership ({bytes} bytes)")
                }
                RaftPayloadView::Txn { len, view } => {
                    format!("{head} txn ({len} bytes): {}", txn_text(view, offset))
                }
                // A batch: a line per txn, in order, each as a one-txn entry's.
                RaftPayloadView::Txns(txns) if txns.is_empty() => {
                    format!("{head} txns: an empty batch")
                }
                RaftPayloadView::Txns(txns) => {
                    let n = txns.len();
                    let lines: Vec<String> = txns
                        .iter()
                        .zip(1..)
                        .map(|(t, i)| {
                            format!(
                                "{head} txn {i}/{n} ({} bytes): {}",
                                t.len,
                                txn_text(&t.view, offset)
                            )
                        })
                        .collect();
                    lines.join("\n")
                }
                RaftPayloadView::Key => format!("{head} ensemble key"),
                RaftPayloadView::Digest { zxid, digest } => format!(
                    "{head} digest after {} = {digest:#018x}",
                    format::zxid(*zxid)
                ),
            }
        }
        RecordView::RaftEntry {
            len, undecodable, ..
        } => format!(
            "entry {zxid} ({len} bytes) UNDECODABLE entry at {offset}: {}",
            undecodable.as_deref().unwrap_or_default()
        ),
        RecordView::RaftCommitted { log_id } => format!(
            "committed index={} term={} node={}",
            log_id.index, log_id.term, log_id.node
        ),
        RecordView::RaftMeta { len } => {
            format!("raft meta record ({len} bytes, unknown kind) at {zxid}")
        }
    }
}

/// A txn an entry carries, as a log record's line, by the zxid in its own header.
fn txn_text(view: &RecordView, offset: u64) -> String {
    view_text(view, txn_zxid(view), offset)
}

/// The zxid in a txn's header; 0 if it does not decode.
fn txn_zxid(view: &RecordView) -> i64 {
    match *view {
        RecordView::Txn { header_zxid, .. } => header_zxid,
        _ => 0,
    }
}

/// A txn an entry carries, as a log record's JSON object.
fn txn_json(view: &RecordView) -> Value {
    let mut t = Map::new();
    view_json(view, txn_zxid(view), &mut t);
    Value::Object(t)
}

/// An entry must carry the index of its record (the Raft log store refuses to open
/// otherwise): say so when it does not.
fn index_mismatch(entry_index: u64, record_index: i64) -> String {
    if i64::try_from(entry_index) == Ok(record_index) {
        String::new()
    } else {
        format!(" (ENTRY SAYS index {entry_index})")
    }
}

fn view_json(view: &RecordView, zxid: i64, m: &mut Map<String, Value>) {
    let mut put = |k: &str, v: Value| {
        m.insert(k.into(), v);
    };
    match view {
        RecordView::Txn {
            header_zxid,
            time_ms,
            session,
            cxid,
            op,
        } => {
            put("type", json!("txn"));
            put("zxid", json!(format::zxid(zxid)));
            if *header_zxid != zxid {
                put("header_zxid", json!(format::zxid(*header_zxid)));
            }
            put("time", json!(format::utc_ms(*time_ms)));
            put("time_ms", json!(time_ms));
            put("session", json!(format::zxid(*session)));
            put("cxid", json!(cxid));
            op.json_fields(m);
        }
        RecordView::Digest { zxid, digest } => {
            put("type", json!("digest"));
            put("after", json!(format::zxid(*zxid)));
            put("digest", json!(format!("{digest:#018x}")));
        }
        RecordView::Meta { len } => {
            put("type", json!("meta"));
            put("zxid", json!(format::zxid(zxid)));
            put("len", json!(len));
        }
        RecordView::Undecodable { reason } => {
            put("type", json!("undecodable"));
            put("zxid", json!(format::zxid(zxid)));
            put("reason", json!(reason));
        }
        RecordView::RaftEntry {
            len,
            entry,
            undecodable,
        } => {
            put("type", json!("raft_entry"));
            put("index", json!(zxid));
            put("len", json!(len));
            if let Some(reason) = undecodable {
                put("undecodable", json!(reason));
            }
            if let Some(e) = entry {
                put("term", json!(e.log_id.term));
                put("node", json!(e.log_id.node));
                if i64::try_from(e.log_id.index) != Ok(zxid) {
                    put("entry_index", json!(e.log_id.index));
                }
                match &e.payload {
                    RaftPayloadView::Blank => put("payload", json!("blank")),
                    RaftPayloadView::Membership { bytes } => {
                        put("payload", json!("membership"));
                        put("payload_len", json!(bytes));
                    }
                    RaftPayloadView::Txn { len, view } => {
                        put("payload", json!("txn"));
                        put("payload_len", json!(len));
                        put("txn", txn_json(view));
                    }
                    RaftPayloadView::Txns(txns) => {
                        put("payload", json!("txns"));
                        put("count", json!(txns.len()));
                        let each: Vec<Value> = txns
                            .iter()
                            .map(|t| {
                                let mut v = txn_json(&t.view);
                                if let Some(o) = v.as_object_mut() {
                                    o.insert("payload_len".into(), json!(t.len));
                                }
                                v
                            })
                            .collect();
                        put("txns", Value::Array(each));
                    }
                    RaftPayloadView::Key => put("payload", json!("key")),
                    RaftPayloadView::Digest { zxid, digest } => {
                        put("payload", json!("digest"));
                        put("after", json!(format::zxid(*zxid)));
                        put("digest", json!(format!("{digest:#018x}")));
                    }
                }
            }
        }
        RecordView::RaftCommitted { log_id } => {
            put("type", json!("raft_committed"));
            put("index", json!(log_id.index));
            put("term", json!(log_id.term));
            put("node", json!(log_id.node));
        }
        RecordView::RaftMeta { len } => {
            put("type", json!("raft_meta"));
            put("len", json!(len));
        }
    }
}
