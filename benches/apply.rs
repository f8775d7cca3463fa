//! The apply hot path: txns applied to the state (creates under one parent, setData on
//! existing nodes) through `State::apply`, as the core commits them after the log reports them
//! durable (watch lookups are the core's, not measured here). `cargo bench -p palisade --bench apply`.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use palisade::state::State;
use palisade_proto::*;

fn header(zxid: i64, type_: OpCode) -> TxnHeader {
    TxnHeader {
        client_id: 1,
        cxid: 1,
        zxid,
        time: 1_700_000_000_000,
        type_: type_.code(),
    }
}

fn open() -> Option<Vec<ACL>> {
    Some(vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }])
}

fn create(path: String, pcv: i32) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: JStr::from(path),
        data: Some(Bytes::from_static(&[b'x'; 100])),
        acl: open(),
        ephemeral: false,
        parent_c_version: pcv,
    })
}

fn txn(zxid: i64, type_: OpCode, body: TxnBody) -> Txn {
    Txn {
        header: header(zxid, type_),
        body,
    }
}

/// A state with /p and `n` children of 100 bytes.
fn state(n: i32) -> State {
    let mut s = State::new();
    s.apply(&txn(1, OpCode::Create, create("/p".into(), 1)));
    for i in 0..n {
        let z = i64::from(i) + 2;
        s.apply(&txn(
            z,
            OpCode::Create,
            create(format!("/p/n{i:010}"), i + 1),
        ));
    }
    s
}

fn bench(c: &mut Criterion) {
    let n = 100_000;
    c.bench_function("apply create (tree of 100k)", |b| {
        b.iter_batched(
            || {
                let txns: Vec<Txn> = (n..n + 1000)
                    .map(|i| {
                        let z = i64::from(i) + 2;
                        txn(z, OpCode::Create, create(format!("/p/n{i:010}"), i + 1))
                    })
                    .collect();
                (state(n), txns)
            },
            |(mut s, txns)| {
                for t in &txns {
                    s.apply(t);
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    let mut s = state(n);
    let mut z = i64::from(n) + 10;
    let paths: Vec<String> = (0..1000).map(|i| format!("/p/n{:010}", i * 97)).collect();
    c.bench_function("apply setData x1000 (tree of 100k)", |b| {
        b.iter(|| {
            for p in &paths {
                z += 1;
                let t = txn(
                    z,
                    OpCode::SetData,
                    TxnBody::SetData(SetDataTxn {
                        path: JStr::from(p.as_str()),
                        data: Some(Bytes::from_static(&[b'y'; 100])),
                        version: 1,
                    }),
                );
                s.apply(&t);
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
