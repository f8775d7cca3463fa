//! The cost of finding the recursive watchers of a changed path, by depth: the trie walk the
//! core uses (`Watches::trigger`, through `path::trie`) against the lookup it replaced (hash
//! every ancestor prefix). One recursive watch on an unrelated path, as in issue 12 item 4,
//! and the trie's worst case, a recursive watch on every ancestor. Paths of 100-byte components.
//! `cargo bench -p palisade --bench watch`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use palisade::core::watch::{Mode, Watches, ON_DATA};
use std::collections::HashMap;
use std::hint::black_box;

/// A path of `depth` components of `len` bytes each.
fn deep(depth: usize, len: usize) -> String {
    (0..depth)
        .map(|i| format!("/{}", format!("{i:04}").repeat(len / 4)))
        .collect()
}

/// The replaced lookup: every ancestor prefix hashed and looked up.
fn ancestors_hashed(table: &HashMap<String, u64>, path: &str) -> u64 {
    let mut hits = 0;
    let mut p = path;
    while let Some(i) = p.rfind('/') {
        let parent = if i == 0 { "/" } else { &p[..i] };
        if let Some(v) = table.get(parent) {
            hits += v;
        }
        if parent == "/" {
            break;
        }
        p = parent;
    }
    hits
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("recursive_watch_lookup");
    g.sample_size(20);
    g.measurement_time(std::time::Duration::from_secs(2));
    for depth in [10usize, 100, 400] {
        let path = deep(depth, 100);
        let mut w = Watches::default();
        w.add_watch(Mode::Recursive, "/elsewhere", 1);
        g.bench_with_input(BenchmarkId::new("trie", depth), &path, |b, p| {
            b.iter(|| black_box(w.trigger(ON_DATA, black_box(p))))
        });
        // the walk's worst case: a recursive watch on every ancestor (each one notified)
        let mut every = Watches::default();
        let mut prefix = String::new();
        for (i, comp) in path.split('/').skip(1).enumerate() {
            prefix.push('/');
            prefix.push_str(comp);
            every.add_watch(Mode::Recursive, &prefix, i as u64);
        }
        g.bench_with_input(
            BenchmarkId::new("trie_every_ancestor", depth),
            &path,
            |b, p| b.iter(|| black_box(every.trigger(ON_DATA, black_box(p)))),
        );
        let mut old: HashMap<String, u64> = HashMap::new();
        old.insert("/elsewhere".into(), 1);
        g.bench_with_input(
            BenchmarkId::new("ancestors_hashed", depth),
            &path,
            |b, p| b.iter(|| black_box(ancestors_hashed(&old, black_box(p)))),
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
