//! The backup stream: the state as ZooKeeper 3.9's FileSnap.serialize writes a snapshot with
//! `zookeeper.serializeLastProcessedZxid.enabled` (3.9's default, and what its `restore`
//! requires): file header, sessions, ACL cache, nodes, seal; digest, seal; last processed
//! zxid, seal. Each seal is the Adler32 of every byte before it, as SnapStream.sealStream.

use crate::migrate::export;
use crate::state::State;
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::{JStr, Record, SnapSeal};
use palisade_zkdisk::adler32::adler32;
use palisade_zkdisk::snap;

/// The state as a ZooKeeper 3.9 snapshot stream; its last processed zxid is the state's.
pub fn encode(state: &State) -> Bytes {
    let zk = export::to_zk(state);
    let mut out = BytesMut::from(&snap::encode_snapshot(&zk)[..]);
    out.put_i64(state.zxid());
    let checksum = adler32(&out);
    SnapSeal {
        checksum,
        path: JStr::from("/"),
    }
    .write(&mut out);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Workload;

    /// zkdisk reads the stream back (every seal checked, the third one too) to the same tree.
    #[test]
    fn the_stream_reads_back_with_every_seal() {
        let w = Workload::run(7, 500);
        let state = w.state;
        let bytes = encode(&state);
        let zk = snap::decode_snapshot(bytes.clone(), std::path::Path::new("(stream)")).unwrap();
        assert_eq!(zk.nodes.len(), export::to_zk(&state).nodes.len());
        assert_eq!(zk.digest.as_ref().map(|d| d.zxid), Some(state.zxid()));
        // A flipped bit in the last zxid breaks the third seal.
        let mut bad = bytes.to_vec();
        let at = bad.len() - 5 - 8 - 1;
        bad[at] ^= 1;
        assert!(snap::decode_snapshot(Bytes::from(bad), std::path::Path::new("x")).is_err());
    }
}
