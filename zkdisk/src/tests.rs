//! The codec against itself and against damage. Real ZooKeeper files are exercised by
//! tests/migration/roundtrip.py (which writes them with ZooKeeper 3.8 and reads them here).

use crate::log::{decode_log, encode_entry, encode_log_header, pad, LogEnd, Quirk};
use crate::snap::{decode_snapshot, encode_snapshot, ZkNode, ZkSnapshot};
use crate::{adler32::adler32, ZkError};
use bytes::{BufMut, Bytes, BytesMut};
use palisade_proto::*;
use std::path::Path;

fn stat(z: i64) -> StatPersisted {
    StatPersisted {
        czxid: z,
        mzxid: z,
        ctime: 1000 + z,
        mtime: 1000 + z,
        version: 0,
        cversion: 0,
        aversion: 0,
        ephemeral_owner: 0,
        pzxid: z,
    }
}

fn sample() -> ZkSnapshot {
    let node = |path: &str, z: i64| ZkNode {
        path: path.into(),
        node: DataNode {
            data: Some(Bytes::from(format!("data of {path}"))),
            acl: 1,
            stat: stat(z),
        },
        offset: 0,
    };
    ZkSnapshot {
        header: FileHeader {
            magic: crate::snap::SNAP_MAGIC,
            version: 2,
            dbid: -1,
        },
        sessions: vec![SnapSession {
            id: 0x1000_0000_0000_0001,
            timeout: 30_000,
        }],
        acls: vec![SnapAcl {
            index: 1,
            acls: Some(vec![ACL {
                perms: 31,
                id: Id {
                    scheme: "world".into(),
                    id: "anyone".into(),
                },
            }]),
        }],
        nodes: vec![
            node("", 0),
            node("/a", 1),
            node("/a/b", 2),
            node("/zookeeper", 0),
        ],
        digest: Some(ZxidDigest {
            zxid: 2,
            digest_version: 2,
            digest: 12345,
        }),
    }
}

#[test]
fn snapshot_round_trips_and_both_seals_are_adler32_of_the_prefix() {
    let s = sample();
    let b = encode_snapshot(&s);
    assert_eq!(decode_snapshot(b.clone(), Path::new("x")).unwrap(), s);
    // The second seal: Adler32 of everything before it, then "/" (4 + 1 bytes).
    let seal_at = b.len() - 8 - 5;
    let recorded = i64::from_be_bytes(b[seal_at..seal_at + 8].try_into().unwrap());
    assert_eq!(recorded, adler32(&b[..seal_at]));
    // Without the digest section (zookeeper.digest.enabled=false) it reads too.
    let plain = ZkSnapshot { digest: None, ..s };
    let b = encode_snapshot(&plain);
    assert_eq!(decode_snapshot(b, Path::new("x")).unwrap(), plain);
}

#[test]
fn any_flipped_byte_in_a_snapshot_is_an_error_never_a_different_tree() {
    let s = sample();
    let b = encode_snapshot(&s);
    for i in 0..b.len() {
        let mut d = b.to_vec();
        d[i] ^= 0x04;
        match decode_snapshot(Bytes::from(d), Path::new("snapshot.2")) {
            Err(ZkError::Corrupt { .. }) => {}
            Ok(t) => panic!("byte {i} flipped: decoded {t:?}"),
            Err(e) => panic!("byte {i}: unexpected error {e}"),
        }
    }
    // Cut anywhere, the file is refused, except exactly after the first seal: that is a
    // valid snapshot written with zookeeper.digest.enabled=false (ZooKeeper reads it too).
    let first_seal_end = encode_snapshot(&ZkSnapshot {
        digest: None,
        ..s.clone()
    })
    .len();
    for n in 0..b.len() {
        let r = decode_snapshot(b.slice(..n), Path::new("s"));
        if n == first_seal_end {
            assert_eq!(
                r.unwrap(),
                ZkSnapshot {
                    digest: None,
                    ..s.clone()
                }
            );
        } else {
            assert!(r.is_err(), "cut at {n}");
        }
    }
}

fn txn(zxid: i64, body: TxnBody) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: 7,
            cxid: 1,
            zxid,
            time: 5,
            type_: body.op_code().code(),
        },
        body,
    }
}

fn log_of(txns: &[Txn]) -> (BytesMut, Vec<usize>) {
    let mut out = BytesMut::new();
    encode_log_header(&mut out);
    let mut offs = Vec::new();
    for t in txns {
        offs.push(out.len());
        let d = TxnDigest {
            version: 2,
            tree_digest: t.header.zxid,
        };
        encode_entry(&mut out, t, Some(&d));
    }
    (out, offs)
}

fn sample_txns() -> Vec<Txn> {
    vec![
        txn(
            1,
            TxnBody::CreateSession(CreateSessionTxn { time_out: 30_000 }),
        ),
        txn(
            2,
            TxnBody::Create2(CreateTxn {
                path: "/a".into(),
                data: Some(Bytes::from_static(b"x")),
                acl: Some(vec![]),
                ephemeral: false,
                parent_c_version: 1,
            }),
        ),
        txn(
            3,
            TxnBody::CloseSession(CloseSessionTxn {
                paths2_delete: Some(vec!["/a".into()]),
            }),
        ),
    ]
}

#[test]
fn log_entries_round_trip_and_the_preallocated_zeros_end_it_cleanly() {
    let txns = sample_txns();
    let (mut b, _) = log_of(&txns);
    let end = b.len();
    pad(&mut b, 4096);
    let l = decode_log(b.freeze(), Path::new("log.1")).unwrap();
    assert_eq!(
        l.entries.iter().map(|e| e.txn.clone()).collect::<Vec<_>>(),
        txns
    );
    assert!(l
        .entries
        .iter()
        .all(|e| e.digest.is_some() && e.quirk == Quirk::None));
    assert_eq!(l.end, LogEnd::Clean { offset: end as u64 });
}

#[test]
fn a_torn_last_entry_is_torn_and_a_flipped_byte_is_corruption() {
    let (b, offs) = log_of(&sample_txns());
    let last = offs[2];
    for cut in last + 1..b.len() {
        // A partial write: a prefix of the entry, then the preallocated zeros.
        let mut d = b[..cut].to_vec();
        d.resize(b.len() + 64, 0);
        let l = decode_log(Bytes::from(d), Path::new("log.1")).unwrap();
        assert_eq!(l.entries.len(), 2, "cut at {cut}");
        assert!(
            matches!(l.end, LogEnd::Torn { offset, .. } if offset == last as u64)
                || (cut < last + 12 && matches!(l.end, LogEnd::Clean { .. })),
            "cut at {cut}: {:?}",
            l.end
        );
    }
    let mut d = b.to_vec();
    d[offs[1] + 12 + 3] ^= 1;
    let e = decode_log(Bytes::from(d), Path::new("log.1")).unwrap_err();
    assert!(e.to_string().contains("CRC check failed"), "{e}");
}

#[test]
fn close_session_without_its_record_and_a_pre_3_4_create_are_read() {
    let mut b = BytesMut::new();
    let h = |t: OpCode| TxnHeader {
        client_id: 9,
        cxid: 0,
        zxid: 4,
        time: 0,
        type_: t.code(),
    };
    h(OpCode::CloseSession).write(&mut b);
    let (t, d, q) = crate::log::decode_txn(b.freeze()).unwrap();
    assert_eq!(q, Quirk::CloseWithoutPaths);
    assert!(d.is_none());
    assert!(matches!(
        t.body,
        TxnBody::CloseSession(CloseSessionTxn {
            paths2_delete: None
        })
    ));

    let mut b = BytesMut::new();
    h(OpCode::Create).write(&mut b);
    CreateTxnV0 {
        path: "/old".into(),
        data: None,
        acl: Some(vec![]),
        ephemeral: true,
    }
    .write(&mut b);
    let (t, _, q) = crate::log::decode_txn(b.freeze()).unwrap();
    assert_eq!(q, Quirk::CreateV0);
    assert!(matches!(
        t.body,
        TxnBody::Create(CreateTxn {
            parent_c_version: -1,
            ephemeral: true,
            ..
        })
    ));

    // reconfig is a SetDataTxn of /zookeeper/config.
    let mut b = BytesMut::new();
    h(OpCode::Reconfig).write(&mut b);
    SetDataTxn {
        path: "/zookeeper/config".into(),
        data: Some(Bytes::from_static(b"server.1=...")),
        version: 1,
    }
    .write(&mut b);
    b.put_i32(2);
    b.put_i64(77);
    let (t, d, q) = crate::log::decode_txn(b.freeze()).unwrap();
    assert_eq!(q, Quirk::Reconfig);
    assert_eq!(d.map(|d| d.tree_digest), Some(77));
    assert!(matches!(t.body, TxnBody::SetData(_)));
}

#[test]
fn digest_matches_zookeepers_rule() {
    // Nodes under /zookeeper/ count 0; "/" and "" are the same root.
    assert_eq!(
        crate::digest::node_digest("/zookeeper/quota", None, &stat(1)),
        0
    );
    assert_ne!(crate::digest::node_digest("/zookeeper", None, &stat(1)), 0);
    assert_eq!(
        crate::digest::node_digest("/", Some(b""), &stat(0)),
        crate::digest::node_digest("", Some(b""), &stat(0))
    );
}

/// A `.gz` snapshot that inflates past the bound (a zip bomb: zeros compress about 1,000×) is
/// refused before more of it is inflated, naming the file and the byte reached; a real one
/// under the same bound reads.
#[test]
fn a_gzip_snapshot_inflating_past_its_bound_is_refused() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let gz = |name: &str, plain: &[u8]| {
        let path = tmp.path().join(name);
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(plain).unwrap();
        std::fs::write(&path, e.finish().unwrap()).unwrap();
        path
    };
    let bomb = gz("snapshot.5.gz", &vec![0u8; 8 << 20]);
    let size = std::fs::metadata(&bomb).unwrap().len();
    assert!(size < 16 << 10, "{size}");
    match crate::snap::read_snapshot_within(&bomb, Some(1 << 20)) {
        Err(ZkError::Corrupt {
            path,
            offset,
            reason,
        }) => {
            assert_eq!(path, bomb);
            assert!(offset > 0 && offset <= size, "{offset} of {size}");
            assert!(reason.contains("inflates past 1048576 bytes"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let real = encode_snapshot(&sample());
    let good = gz("snapshot.6.gz", &real);
    let bound = Some(real.len() as u64);
    assert_eq!(
        crate::snap::read_snapshot_within(&good, bound).unwrap(),
        sample()
    );
    let short = Some(real.len() as u64 - 1);
    assert!(crate::snap::read_snapshot_within(&good, short).is_err());
    // The default bound: 100× the file's size, at least 64 MiB.
    assert_eq!(crate::snap::inflation_bound(size), 64 << 20);
    assert_eq!(crate::snap::inflation_bound(3 << 20), 300 << 20);
}
