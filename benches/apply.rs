//! The apply hot path: txns applied to the data tree (creates under one parent, setData on
//! existing nodes, deletes), watches empty, as the core runs them after the log reports them
//! durable. `cargo bench -p palisade --bench apply`.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use palisade::apply::Applier;
use palisade::tree::DataTree;
use palisade::watch::Watches;
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

/// A tree with /p and `n` children of 100 bytes.
fn tree(n: i32) -> DataTree {
    let mut t = DataTree::new();
    let (mut w, mut ev) = (Watches::default(), Vec::new());
    let mut a = Applier {
        tree: &mut t,
        watches: &mut w,
        events: &mut ev,
    };
    a.apply(&header(1, OpCode::Create), &create("/p".into(), 1));
    for i in 0..n {
        let z = i64::from(i) + 2;
        a.apply(
            &header(z, OpCode::Create),
            &create(format!("/p/n{i:010}"), i + 1),
        );
    }
    t
}

fn bench(c: &mut Criterion) {
    let n = 100_000;
    c.bench_function("apply create (tree of 100k)", |b| {
        b.iter_batched(
            || (tree(n), Watches::default(), Vec::new()),
            |(mut t, mut w, mut ev)| {
                let mut a = Applier {
                    tree: &mut t,
                    watches: &mut w,
                    events: &mut ev,
                };
                for i in n..n + 1000 {
                    let z = i64::from(i) + 2;
                    a.apply(
                        &header(z, OpCode::Create),
                        &create(format!("/p/n{i:010}"), i + 1),
                    );
                }
                t
            },
            BatchSize::LargeInput,
        )
    });
    let mut t = tree(n);
    let (mut w, mut ev) = (Watches::default(), Vec::new());
    let mut z = i64::from(n) + 10;
    let paths: Vec<String> = (0..1000).map(|i| format!("/p/n{:010}", i * 97)).collect();
    c.bench_function("apply setData x1000 (tree of 100k)", |b| {
        b.iter(|| {
            let mut a = Applier {
                tree: &mut t,
                watches: &mut w,
                events: &mut ev,
            };
            for p in &paths {
                z += 1;
                a.apply(
                    &header(z, OpCode::SetData),
                    &TxnBody::SetData(SetDataTxn {
                        path: JStr::from(p.as_str()),
                        data: Some(Bytes::from_static(&[b'y'; 100])),
                        version: 1,
                    }),
                );
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
