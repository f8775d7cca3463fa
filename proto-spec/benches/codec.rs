//! Decode and encode of typical requests and replies (run: cargo bench -p palisade-proto).

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use palisade_proto::*;

const MAX: usize = DEFAULT_MAX_BUFFER;

fn stat() -> Stat {
    Stat {
        czxid: 0x1_0000_0005,
        mzxid: 0x1_0000_0009,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_500,
        version: 3,
        num_children: 1000,
        pzxid: 7,
        ..Stat::default()
    }
}

fn benches(c: &mut Criterion) {
    let data = Bytes::from(vec![b'x'; 100]);
    let acl = vec![ACL {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }];
    let requests = [
        (
            "create",
            Request::Create(CreateRequest {
                path: "/bench/node-0000000042".into(),
                data: Some(data.clone()),
                acl: Some(acl),
                flags: 2,
            }),
        ),
        (
            "getData",
            Request::GetData(GetDataRequest {
                path: "/bench/node-0000000042".into(),
                watch: true,
            }),
        ),
        (
            "setData",
            Request::SetData(SetDataRequest {
                path: "/bench/node-0000000042".into(),
                data: Some(data.clone()),
                version: -1,
            }),
        ),
    ];
    for (name, req) in &requests {
        let frame = req.encode(7).freeze();
        let body = frame.slice(8..);
        let op = req.op_code().code();
        c.bench_function(&format!("decode {name}"), |b| {
            b.iter(|| Request::decode(op, black_box(body.clone()), MAX))
        });
        c.bench_function(&format!("encode {name}"), |b| {
            b.iter(|| black_box(req).encode(7))
        });
    }
    let children: Vec<JStr> = (0..1000)
        .map(|i| JStr::from(format!("node-{i:010}")))
        .collect();
    let resp = GetChildren2Response {
        children: Some(children),
        stat: stat(),
    };
    let enc = resp.encode().freeze();
    c.bench_function("decode getChildren2 reply (1000 children)", |b| {
        b.iter(|| GetChildren2Response::decode(black_box(enc.clone()), MAX))
    });
    c.bench_function("encode getChildren2 reply (1000 children)", |b| {
        b.iter(|| black_box(&resp).encode())
    });
    let gd = GetDataResponse {
        data: Some(data),
        stat: stat(),
    };
    c.bench_function("encode getData reply (100 B)", |b| {
        b.iter(|| black_box(&gd).encode())
    });
}

criterion_group!(codec, benches);
criterion_main!(codec);
