//! The ordering rules against hand-built children lists, including the mixes that docs/LOCKS.md
//! describes (what Curator makes of kazoo's names and the reverse).

use super::*;

fn kids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const CA: &str = "_c_aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-";

fn cur(kind: &str, seq: u32, who: char) -> String {
    format!("{}{kind}{seq:010}", CA.replace('a', &who.to_string()))
}

#[test]
fn curator_mutex_first_in_sequence_order_holds_others_wait_for_predecessor() {
    let (a, b, c) = (
        cur("lock-", 3, 'a'),
        cur("lock-", 1, 'b'),
        cur("lock-", 2, 'c'),
    );
    let ch = vec![a.clone(), b.clone(), c.clone()];
    assert_eq!(curator(Kind::Mutex, &ch, &b), Decision::Holds);
    assert_eq!(curator(Kind::Mutex, &ch, &c), Decision::Wait(b.clone()));
    assert_eq!(curator(Kind::Mutex, &ch, &a), Decision::Wait(c));
    assert_eq!(
        curator(Kind::Mutex, &ch, "_c_x-lock-0000000009"),
        Decision::Gone
    );
}

#[test]
fn curator_sorts_a_stock_kazoo_node_by_its_whole_name_so_ignores_it() {
    // "5f…__lock__0000000000" has no "lock-": Curator sorts it by its whole name, after every
    // "000…" sequence, so a Curator contender with a later sequence still holds first.
    let kz = "5f0e__lock__0000000000".to_string();
    let ours = cur("lock-", 1, 'b');
    assert_eq!(
        curator(Kind::Mutex, &[kz, ours.clone()], &ours),
        Decision::Holds
    );
}

#[test]
fn curator_read_write_readers_share_until_a_writer_is_ahead() {
    let (r1, w2, r3, r4) = (
        cur("__READ__", 1, 'a'),
        cur("__WRIT__", 2, 'b'),
        cur("__READ__", 3, 'c'),
        cur("__READ__", 4, 'd'),
    );
    let ch = vec![r4.clone(), r3.clone(), w2.clone(), r1.clone()];
    assert_eq!(curator(Kind::Read, &ch, &r1), Decision::Holds);
    assert_eq!(curator(Kind::Write, &ch, &w2), Decision::Wait(r1.clone()));
    // Readers behind a writer wait for the first writer, not their predecessor.
    assert_eq!(curator(Kind::Read, &ch, &r3), Decision::Wait(w2.clone()));
    assert_eq!(curator(Kind::Read, &ch, &r4), Decision::Wait(w2.clone()));
    let readers = vec![r1.clone(), r3.clone(), r4.clone()];
    for r in &readers {
        assert_eq!(curator(Kind::Read, &readers, r), Decision::Holds);
    }
    // A writer with the lowest sequence holds even with readers queued.
    let ch = vec![r3.clone(), w2.clone()];
    assert_eq!(curator(Kind::Write, &ch, &w2), Decision::Holds);
}

#[test]
fn curator_read_write_orders_by_sequence_not_by_prefix_or_kind() {
    // Uuids that sort the other way round must not matter.
    let w = cur("__WRIT__", 7, 'z');
    let r = cur("__READ__", 8, '0');
    assert_eq!(
        curator(Kind::Write, &[r.clone(), w.clone()], &w),
        Decision::Holds
    );
    assert_eq!(
        curator(Kind::Read, &[r.clone(), w.clone()], &r),
        Decision::Wait(w)
    );
}

#[test]
fn kazoo_contender_pattern_matches_kazoo_regex() {
    assert_eq!(
        kazoo_seq("ab__lock__0000000012", &[KAZOO_LOCK]),
        Some("0000000012")
    );
    assert_eq!(kazoo_seq("ab__lock__-000000012", &[KAZOO_LOCK]), None);
    assert_eq!(
        kazoo_seq("ab__lock__-0000000012", &[KAZOO_LOCK]),
        Some("-0000000012")
    );
    assert_eq!(kazoo_seq("ab__rlock__0000000012", &[KAZOO_LOCK]), None);
    assert_eq!(
        kazoo_seq("ab__rlock__0000000012", &[KAZOO_LOCK, KAZOO_READ]),
        Some("0000000012")
    );
    assert_eq!(kazoo_seq("_c_x-lock-0000000012", &[KAZOO_LOCK]), None);
    assert_eq!(kazoo_seq("0000000012", &[KAZOO_LOCK]), None);
    assert_eq!(kazoo_seq("é__lock__000000001é", &[KAZOO_LOCK]), None);
}

#[test]
fn kazoo_rules_lock_write_read() {
    let ch = kids(&[
        "x__lock__0000000001",
        "y__lock__0000000002",
        "z__rlock__0000000000",
    ]);
    let k = |kind, ours: &str, prefix: &str| kazoo(kind, &ch, ours, prefix);
    assert_eq!(
        k(Kind::Mutex, "x__lock__0000000001", "x__lock__"),
        Decision::Holds
    );
    assert_eq!(
        k(Kind::Mutex, "y__lock__0000000002", "y__lock__"),
        Decision::Wait("x__lock__0000000001".into())
    );
    // A writer counts readers: with only the reader ahead of it, x waits for the reader.
    assert_eq!(
        k(Kind::Write, "x__lock__0000000001", "x__lock__"),
        Decision::Wait("z__rlock__0000000000".into())
    );
    assert_eq!(
        k(Kind::Read, "z__rlock__0000000000", "z__rlock__"),
        Decision::Holds
    );
    let ch2 = kids(&[
        "x__lock__0000000001",
        "y__lock__0000000002",
        "z__rlock__0000000003",
    ]);
    assert_eq!(
        kazoo(Kind::Read, &ch2, "z__rlock__0000000003", "z__rlock__"),
        Decision::Wait("y__lock__0000000002".into())
    );
    assert_eq!(
        k(Kind::Mutex, "q__lock__0000000009", "q__lock__"),
        Decision::Gone
    );
}

#[test]
fn prefixes_are_unique_and_shaped_like_the_libraries() {
    let p = node_prefix(Naming::Curator, Kind::Mutex);
    assert!(p.starts_with("_c_") && p.ends_with("-lock-"), "{p}");
    let uuid = &p[3..39];
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4', "version 4: {uuid}");
    assert!(
        matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
        "{uuid}"
    );
    assert!(node_prefix(Naming::Curator, Kind::Read).ends_with("-__READ__"));
    assert!(node_prefix(Naming::Curator, Kind::Write).ends_with("-__WRIT__"));
    let k = node_prefix(Naming::Kazoo, Kind::Read);
    assert_eq!(k.len(), 32 + KAZOO_READ.len());
    assert!(node_prefix(Naming::Kazoo, Kind::Write).ends_with("__lock__"));
    let many: std::collections::HashSet<String> = (0..1000)
        .map(|_| node_prefix(Naming::Kazoo, Kind::Mutex))
        .collect();
    assert_eq!(many.len(), 1000);
}
