//! A txn's operation as an operator reads it, with the fields that matter for recovery
//! questions: paths, the parent's create counter after a create (`parentCVersion`) and the
//! sequential suffix it implies, versions, data, ACLs, the ephemerals a closeSession removes,
//! a multi's sub-ops.

use crate::format;
use bytes::Bytes;
use palisade_proto::{ErrorCode, JStr, TxnBody, ACL};
use serde_json::{json, Map, Value};

/// One ACL entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclView {
    pub perms: i32,
    pub scheme: String,
    pub id: String,
}

impl AclView {
    /// `scheme:id:perms`, perms as zkCli letters.
    pub fn text(&self) -> String {
        format!("{}:{}:{}", self.scheme, self.id, format::perms(self.perms))
    }

    pub fn json(&self) -> Value {
        json!({"scheme": self.scheme, "id": self.id, "perms": self.perms,
               "letters": format::perms(self.perms)})
    }
}

pub fn acl_text(acl: &[AclView]) -> String {
    let parts: Vec<String> = acl.iter().map(AclView::text).collect();
    parts.join(",")
}

fn acl_views(acl: &Option<Vec<ACL>>) -> Vec<AclView> {
    acl.iter()
        .flatten()
        .map(|a| AclView {
            perms: a.perms,
            scheme: lossy(&a.id.scheme),
            id: lossy(&a.id.id),
        })
        .collect()
}

fn lossy(s: &JStr) -> String {
    s.to_lossy()
        .map_or_else(|| "(null)".into(), |c| c.into_owned())
}

/// A data field of a txn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// The op carries no data.
    Absent,
    /// Null data (distinct from empty).
    Null,
    Bytes(Bytes),
}

/// One operation (a txn body, or one sub-op of a multi).
#[derive(Debug, Clone)]
pub struct OpView {
    /// The opcode's name in the spec (`create`, `create2`, `delete`, `multi`, ...).
    pub op: &'static str,
    pub path: Option<String>,
    /// Creates: the parent's stored create counter C after this create.
    pub parent_cversion: Option<i32>,
    /// Creates whose name ends in 10 digits: that suffix. A sequential create's suffix is the
    /// parent's C before it, i.e. `parentCVersion - 1`.
    pub suffix: Option<i64>,
    pub ephemeral: bool,
    pub ttl: Option<i64>,
    /// setData: the new version; setACL: the new aversion; check: the version checked.
    pub version: Option<i32>,
    pub data: Payload,
    pub acl: Option<Vec<AclView>>,
    /// Error txns (failed writes, and the sub-results of a failed multi).
    pub err: Option<i32>,
    pub timeout_ms: Option<i32>,
    /// closeSession: the ephemerals it deletes.
    pub deletes: Vec<String>,
    /// multi: its sub-ops in order.
    pub subs: Vec<OpView>,
}

impl OpView {
    fn new(op: &'static str) -> OpView {
        OpView {
            op,
            path: None,
            parent_cversion: None,
            suffix: None,
            ephemeral: false,
            ttl: None,
            version: None,
            data: Payload::Absent,
            acl: None,
            err: None,
            timeout_ms: None,
            deletes: Vec::new(),
            subs: Vec::new(),
        }
    }

    /// The op of a txn body.
    pub fn of(body: &TxnBody) -> OpView {
        let mut v = OpView::new(body.op_code().name());
        match body {
            TxnBody::Create(c) | TxnBody::Create2(c) => {
                v.create(&c.path, &c.data, &c.acl, c.parent_c_version);
                v.ephemeral = c.ephemeral;
            }
            TxnBody::CreateContainer(c) => v.create(&c.path, &c.data, &c.acl, c.parent_c_version),
            TxnBody::CreateTtl(c) => {
                v.create(&c.path, &c.data, &c.acl, c.parent_c_version);
                v.ttl = Some(c.ttl);
            }
            TxnBody::Delete(d) | TxnBody::DeleteContainer(d) => v.path = Some(lossy(&d.path)),
            TxnBody::SetData(s) => {
                v.path = Some(lossy(&s.path));
                v.data = payload(&s.data);
                v.version = Some(s.version);
            }
            TxnBody::SetAcl(s) => {
                v.path = Some(lossy(&s.path));
                v.acl = Some(acl_views(&s.acl));
                v.version = Some(s.version);
            }
            TxnBody::Check(c) => {
                v.path = Some(lossy(&c.path));
                v.version = Some(c.version);
            }
            TxnBody::CreateSession(c) => v.timeout_ms = Some(c.time_out),
            TxnBody::CloseSession(c) => {
                v.deletes = c.paths2_delete.iter().flatten().map(lossy).collect();
            }
            TxnBody::Error(e) => v.err = Some(e.err),
            TxnBody::Multi(subs) => v.subs = subs.iter().map(OpView::of).collect(),
        }
        v
    }

    fn create(&mut self, path: &JStr, data: &Option<Bytes>, acl: &Option<Vec<ACL>>, pcv: i32) {
        let p = lossy(path);
        self.suffix = format::sequential_suffix(&p);
        self.path = Some(p);
        self.data = payload(data);
        self.acl = Some(acl_views(acl));
        self.parent_cversion = Some(pcv);
    }

    /// One line: the op, its path and fields (a multi's sub-ops go on their own lines).
    pub fn text(&self) -> String {
        let mut s = self.op.to_string();
        if let Some(p) = &self.path {
            s.push(' ');
            s.push_str(p);
        }
        if let Some(pcv) = self.parent_cversion {
            s.push_str(&format!(" parentCVersion={pcv}"));
        }
        if let Some(suffix) = self.suffix {
            let expected = self.parent_cversion.map(|p| i64::from(p).saturating_sub(1));
            let mark = if expected == Some(suffix) {
                ""
            } else {
                " (not parentCVersion-1)"
            };
            s.push_str(&format!(" suffix={suffix:010}{mark}"));
        }
        if self.ephemeral {
            s.push_str(" ephemeral");
        }
        if let Some(t) = self.ttl {
            s.push_str(&format!(" ttl={t}ms"));
        }
        if let Some(v) = self.version {
            s.push_str(&format!(" version={v}"));
        }
        match &self.data {
            Payload::Absent => {}
            Payload::Null => s.push_str(" data=null"),
            Payload::Bytes(b) => s.push_str(&format!(
                " data={}B \"{}\"",
                b.len(),
                format::preview(b, 24)
            )),
        }
        if let Some(acl) = &self.acl {
            s.push_str(&format!(" acl={}", acl_text(acl)));
        }
        if let Some(e) = self.err {
            let name = ErrorCode::from_i32(e).map_or("unknown", |c| c.name());
            s.push_str(&format!(" err={e} ({name})"));
        }
        if let Some(t) = self.timeout_ms {
            s.push_str(&format!(" timeout={t}ms"));
        }
        if !self.deletes.is_empty() || self.op == "closeSession" {
            s.push_str(&format!(" deletes {} ephemerals", self.deletes.len()));
            for d in &self.deletes {
                s.push(' ');
                s.push_str(d);
            }
        }
        if !self.subs.is_empty() || self.op == "multi" {
            s.push_str(&format!(" ({} ops)", self.subs.len()));
            for (i, sub) in self.subs.iter().enumerate() {
                s.push_str(&format!("\n    [{i}] {}", sub.text()));
            }
        }
        s
    }

    /// The op's fields as JSON members (a multi's sub-ops under `ops`).
    pub fn json_fields(&self, m: &mut Map<String, Value>) {
        m.insert("op".into(), json!(self.op));
        let mut put = |k: &str, v: Value| {
            m.insert(k.into(), v);
        };
        if let Some(p) = &self.path {
            put("path", json!(p));
        }
        if let Some(pcv) = self.parent_cversion {
            put("parentCVersion", json!(pcv));
        }
        if let Some(suffix) = self.suffix {
            put("suffix", json!(suffix));
        }
        if self.ephemeral {
            put("ephemeral", json!(true));
        }
        if let Some(t) = self.ttl {
            put("ttl_ms", json!(t));
        }
        if let Some(v) = self.version {
            put("version", json!(v));
        }
        match &self.data {
            Payload::Absent => {}
            Payload::Null => put("data", Value::Null),
            Payload::Bytes(b) => {
                put("data_len", json!(b.len()));
                data_json(b, &mut put);
            }
        }
        if let Some(acl) = &self.acl {
            put("acl", Value::Array(acl.iter().map(AclView::json).collect()));
        }
        if let Some(e) = self.err {
            put("err", json!(e));
            let name = ErrorCode::from_i32(e).map(|c| c.name());
            put("err_name", json!(name));
        }
        if let Some(t) = self.timeout_ms {
            put("timeout_ms", json!(t));
        }
        if self.op == "closeSession" {
            put("deletes", json!(self.deletes));
        }
        if self.op == "multi" {
            let subs = self.subs.iter().map(|s| {
                let mut sm = Map::new();
                s.json_fields(&mut sm);
                Value::Object(sm)
            });
            put("ops", Value::Array(subs.collect()));
        }
    }
}

/// Data as JSON: `data` (a string) when it is UTF-8, `data_hex` otherwise.
pub fn data_json(b: &[u8], put: &mut impl FnMut(&str, Value)) {
    match std::str::from_utf8(b) {
        Ok(s) => put("data", json!(s)),
        Err(_) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            put("data_hex", json!(hex));
        }
    }
}

fn payload(d: &Option<Bytes>) -> Payload {
    match d {
        None => Payload::Null,
        Some(b) => Payload::Bytes(b.clone()),
    }
}
