//! Append throughput with ~100-byte payloads: group commit (100 records per fdatasync), one
//! fdatasync per record, and sync=false. Criterion reports records/s (Throughput::Elements).
//! Segments are the server default (64 MiB, preallocated); old ones are purged outside the
//! timed sections so the disk does not fill up.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use palisade_wal::{Corruption, Options, RecordKind, Wal};
use std::time::{Duration, Instant};

const PAYLOAD: [u8; 100] = [0x5a; 100];

/// Times `iters` rounds of `batch` appends followed by one sync.
fn run(sync: bool, batch: u64, iters: u64) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        sync,
        ..Options::new(dir.path())
    };
    let (mut wal, _) = Wal::open(opts, Corruption::Refuse).unwrap();
    let mut zxid = 0i64;
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let start = Instant::now();
        for _ in 0..batch {
            zxid += 1;
            wal.append(RecordKind::Txn, zxid, &PAYLOAD).unwrap();
        }
        wal.sync().unwrap();
        total += start.elapsed();
        if i % 4096 == 4095 {
            Wal::purge(dir.path(), zxid).unwrap();
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("wal_append_100B");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for (name, sync, batch) in [
        ("group_commit_100_per_fdatasync", true, 100),
        ("fdatasync_per_record", true, 1),
        ("sync_false_100_per_batch", false, 100),
    ] {
        g.throughput(Throughput::Elements(batch));
        g.bench_function(name, |b| b.iter_custom(|iters| run(sync, batch, iters)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
