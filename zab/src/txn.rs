//! The txn a PROPOSAL, INFORM or INFORMANDACTIVATE carries: the bytes of a txn log entry
//! (TxnHeader + the record of its type + an optional TxnDigest, Util.marshallTxnEntry),
//! decoded by zkdisk's txn log reader so the link and the importer read txns alike.

use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{CreateTxnV0, DecodeError, Record, Txn, TxnBody, TxnDigest};
use palisade_zkdisk::log::decode_txn;
use palisade_zkdisk::Quirk;

/// One committed (or proposed) txn, as ZooKeeper logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnEntry {
    pub txn: Txn,
    /// The tree digest after the txn (zookeeper.digest.enabled, on by default in 3.8).
    pub digest: Option<TxnDigest>,
    /// Which older layout the record had, so it re-encodes as it came.
    pub quirk: Quirk,
}

impl TxnEntry {
    pub fn zxid(&self) -> i64 {
        self.txn.header.zxid
    }

    pub fn decode(bytes: Bytes) -> Result<TxnEntry, DecodeError> {
        let (txn, digest, quirk) = decode_txn(bytes)?;
        Ok(TxnEntry { txn, digest, quirk })
    }

    pub fn write(&self, w: &mut BytesMut) {
        self.txn.header.write(w);
        match (&self.quirk, &self.txn.body) {
            // zookeeper.closeSessionTxn.enabled=false: the header alone.
            (Quirk::CloseWithoutPaths, _) => {}
            (Quirk::CreateV0, TxnBody::Create(c)) => CreateTxnV0 {
                path: c.path.clone(),
                data: c.data.clone(),
                acl: c.acl.clone(),
                ephemeral: c.ephemeral,
            }
            .write(w),
            (_, body) => body.write(w),
        }
        if let Some(d) = &self.digest {
            d.write(w);
        }
    }

    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::with_capacity(128);
        self.write(&mut w);
        w.freeze()
    }

    /// The bytes of an INFORMANDACTIVATE / COMMITANDACTIVATE-style prefix + this entry.
    pub(crate) fn encode_after(&self, leader_id: i64) -> Bytes {
        let mut w = BytesMut::with_capacity(136);
        w.put_i64(leader_id);
        self.write(&mut w);
        w.freeze()
    }
}
