//! ZooKeeper's txn log files (FileTxnLog, Util.marshallTxnEntry / readTxnBytes,
//! SerializeUtils.deserializeTxn): each entry's Adler32 is checked; the end of a file is
//! classified as clean (the preallocated zeros or end of file at an entry boundary) or torn
//! (a partial last entry, which ZooKeeper never acknowledged).

use crate::adler32::adler32;
use crate::error::ZkError;
use crate::snap::FORMAT_VERSION;
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{
    CloseSessionTxn, CreateTxn, CreateTxnV0, DecodeError, FileHeader, OpCode, Reader, Record,
    SetDataTxn, Txn, TxnBody, TxnDigest, TxnHeader, TxnLogEntry,
};
use std::path::{Path, PathBuf};

/// "ZKLG" as a big-endian int (FileTxnLog.TXNLOG_MAGIC).
pub const LOG_MAGIC: i32 = 0x5a4b_4c47;
/// The end-of-record byte after every entry ('B').
pub const EOR: u8 = 0x42;

/// How a txn's record was read, when it is not the plain current layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quirk {
    None,
    /// closeSession logged with no record (zookeeper.closeSessionTxn.enabled=false): the
    /// ephemerals to delete are the session's, found at replay.
    CloseWithoutPaths,
    /// A pre-3.4 create (CreateTxnV0): parentCVersion is to be computed at replay.
    CreateV0,
    /// reconfig: a SetDataTxn of /zookeeper/config.
    Reconfig,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkEntry {
    /// Offset of the entry's checksum in the file.
    pub offset: u64,
    pub txn: Txn,
    pub digest: Option<TxnDigest>,
    pub quirk: Quirk,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// The preallocated zeros, or the end of the file, at an entry boundary.
    Clean { offset: u64 },
    /// A partial last entry: ZooKeeper's "Last transaction was partial."
    Torn { offset: u64, reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkLog {
    pub path: PathBuf,
    pub header: FileHeader,
    pub entries: Vec<ZkEntry>,
    pub end: LogEnd,
}

fn body(op: i32, r: &mut Reader) -> Result<(TxnBody, Quirk), DecodeError> {
    if op == OpCode::Reconfig.code() {
        return Ok((TxnBody::SetData(SetDataTxn::read(r)?), Quirk::Reconfig));
    }
    Ok((TxnBody::read(op, r)?, Quirk::None))
}

/// The optional TxnDigest after the record: nothing, or exactly one TxnDigest.
fn digest(r: &mut Reader) -> Result<Option<TxnDigest>, DecodeError> {
    if r.is_empty() {
        return Ok(None);
    }
    let d = TxnDigest::read(r)?;
    r.finish()?;
    Ok(Some(d))
}

/// Decodes the bytes of one entry (TxnHeader + record + optional TxnDigest), trying the
/// older layouts ZooKeeper's reader also accepts.
pub fn decode_txn(bytes: Bytes) -> Result<(Txn, Option<TxnDigest>, Quirk), DecodeError> {
    let mut r = Reader::new(bytes, usize::MAX);
    let header = TxnHeader::read(&mut r)?;
    let rest = r.rest().clone();
    let op = header.type_;
    let first = {
        let mut r = Reader::new(rest.clone(), usize::MAX);
        body(op, &mut r).and_then(|(b, q)| Ok((b, digest(&mut r)?, q)))
    };
    let (body, digest, quirk) = match first {
        Ok(x) => x,
        Err(e) if op == OpCode::CloseSession.code() => {
            let mut r = Reader::new(rest, usize::MAX);
            let d = digest(&mut r).map_err(|_| e)?;
            let b = TxnBody::CloseSession(CloseSessionTxn {
                paths2_delete: None,
            });
            (b, d, Quirk::CloseWithoutPaths)
        }
        Err(e) if op == OpCode::Create.code() => {
            let mut r = Reader::new(rest, usize::MAX);
            let v0 = CreateTxnV0::read(&mut r).map_err(|_| e.clone())?;
            let d = digest(&mut r).map_err(|_| e)?;
            let b = TxnBody::Create(CreateTxn {
                path: v0.path,
                data: v0.data,
                acl: v0.acl,
                ephemeral: v0.ephemeral,
                parent_c_version: -1,
            });
            (b, d, Quirk::CreateV0)
        }
        Err(e) => return Err(e),
    };
    Ok((Txn { header, body }, digest, quirk))
}

/// Decodes a whole log file's bytes; `path` names it in errors. A failed checksum or an
/// entry that does not decode is an error; a partial last entry is [`LogEnd::Torn`].
pub fn decode_log(bytes: Bytes, path: &Path) -> Result<ZkLog, ZkError> {
    let total = bytes.len();
    let corrupt = |offset: usize, reason: String| ZkError::Corrupt {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    };
    let mut r = Reader::new(bytes, usize::MAX);
    let header = FileHeader::read(&mut r).map_err(|e| corrupt(0, format!("file header: {e}")))?;
    if header.magic != LOG_MAGIC {
        return Err(corrupt(0, format!("magic {:#x} is not ZKLG", header.magic)));
    }
    if header.version != FORMAT_VERSION {
        return Err(corrupt(0, format!("format version {}", header.version)));
    }
    let mut entries = Vec::new();
    let end = loop {
        let at = total.saturating_sub(r.remaining());
        let torn = |reason: &str| LogEnd::Torn {
            offset: at as u64,
            reason: reason.into(),
        };
        if r.rest().iter().all(|&b| b == 0) {
            break LogEnd::Clean { offset: at as u64 };
        }
        let Ok(checksum) = r.long() else {
            break torn("file ends inside an entry's checksum");
        };
        let Ok(len) = r.int() else {
            break torn("file ends inside an entry's length");
        };
        if len == 0 {
            // ZooKeeper reads an empty entry as the end of the file (the preallocated zeros).
            if checksum == 0 {
                break LogEnd::Clean { offset: at as u64 };
            }
            break torn("an entry of length 0 with a non-zero checksum");
        }
        let Ok(len) = usize::try_from(len) else {
            break torn("negative entry length");
        };
        if len >= r.remaining() {
            break torn("file ends inside an entry");
        }
        let Ok(txn) = r.take(len) else {
            break torn("file ends inside an entry");
        };
        match r.byte() {
            Ok(EOR) => {}
            _ => break torn("the entry's end byte is not 0x42 (partial entry)"),
        }
        let ours = adler32(&txn);
        if ours != checksum {
            return Err(corrupt(
                at,
                format!(
                    "entry checksum {checksum:#x} recorded, {ours:#x} computed (CRC check failed)"
                ),
            ));
        }
        let (txn, digest, quirk) =
            decode_txn(txn).map_err(|e| corrupt(at, format!("txn does not decode: {e}")))?;
        entries.push(ZkEntry {
            offset: at as u64,
            txn,
            digest,
            quirk,
        });
    };
    Ok(ZkLog {
        path: path.to_path_buf(),
        header,
        entries,
        end,
    })
}

pub fn read_log(path: &Path) -> Result<ZkLog, ZkError> {
    let bytes = std::fs::read(path).map_err(ZkError::io(path))?;
    decode_log(Bytes::from(bytes), path)
}

/// Encodes one entry as FileTxnLog.append writes it.
pub fn encode_entry(out: &mut BytesMut, txn: &Txn, digest: Option<&TxnDigest>) {
    let mut b = BytesMut::new();
    txn.header.write(&mut b);
    txn.body.write(&mut b);
    if let Some(d) = digest {
        d.write(&mut b);
    }
    TxnLogEntry {
        checksum: adler32(&b),
        txn: Some(b.freeze()),
        eor: EOR,
    }
    .write(out);
}

/// A log file's header (then entries follow, then zeros).
pub fn encode_log_header(out: &mut BytesMut) {
    FileHeader {
        magic: LOG_MAGIC,
        version: FORMAT_VERSION,
        dbid: crate::snap::DBID,
    }
    .write(out);
}

/// Appends `n` zero bytes (ZooKeeper's preallocation).
pub fn pad(out: &mut BytesMut, n: usize) {
    out.put_bytes(0, n);
}
