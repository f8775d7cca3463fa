//! `invariants` passes over a real workload replayed from zxid 1 (every txn checked, a
//! digest record among them), and catches a doctored log written with the WAL writer: a
//! sequential create whose suffix repeats one handed out before (and whose parentCVersion
//! and suffix disagree with the parent's counter), and a falsified digest record — each
//! reported with its zxid, path and the values that contradict it.

mod support;

use palisade_inspect::{invariants, Base, DataDir};
use support::*;

#[test]
fn a_real_workload_keeps_every_invariant() {
    let tmp = temp_dir("inv-real");
    let mut server = Server::start_small(tmp.path(), "preAllocSize=1024\n");
    workload(server.port, 9, 300);
    server.kill9();
    let r = invariants(&DataDir::new(server.data())).unwrap();
    assert!(r.ok(), "{}", r.text());
    assert_eq!((r.base.clone(), r.checked_from), (Base::Empty, 1));
    assert!(r.txns > 300 && r.sequential > 100, "{}", r.text());
    assert!(r.digests_checked >= 1, "{}", r.text());
    let (text, code) = inspect(&["invariants", server.data().to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("verdict: OK\n"), "{text}");
}

#[test]
fn a_reused_suffix_and_a_false_digest_are_caught_with_evidence() {
    let tmp = temp_dir("inv-doctored");
    let data = tmp.path().join("data");
    let mut log = LogBuilder::new(&data);
    log.txn(create_body("/p", 1));
    log.txn(create_body("/p/s-0000000000", 1));
    log.txn(create_body("/p/s-0000000001", 2));
    log.digest(None);
    log.txn(delete_body("/p/s-0000000001"));
    // The parent's C is 2: a correct create would be s-0000000002 with parentCVersion 3.
    log.txn(create_body("/p/s-0000000001", 2));
    log.txn(create_body("/p/s-0000000002", 3));
    log.digest(Some(0xbad));
    log.sync();

    let r = invariants(&DataDir::new(&data)).unwrap();
    let got: Vec<(i64, &str, &str)> = r
        .violations
        .iter()
        .map(|v| (v.zxid, v.rule, v.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (5, "parent-cversion", "/p/s-0000000001"),
            (5, "sequential-suffix", "/p/s-0000000001"),
            (5, "suffix-reuse", "/p/s-0000000001"),
            (6, "digest", ""),
        ],
        "{}",
        r.text()
    );
    let reuse = &r.violations[2].detail;
    assert!(
        reuse.contains("handed out at 0x3 (/p/s-0000000001)"),
        "{reuse}"
    );
    assert!(
        r.violations[1].detail.contains("C before was 2"),
        "{}",
        r.violations[1].detail
    );
    assert!(
        r.violations[3].detail.contains("0x0000000000000bad"),
        "{}",
        r.violations[3].detail
    );
    assert_eq!(
        r.digests_checked, 1,
        "the true digest record after 0x3 is checked"
    );

    let (text, code) = inspect(&["invariants", data.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "VIOLATION at 0x5 suffix-reuse /p/s-0000000001: suffix 0000000001 after 0000000001"
        ),
        "{text}"
    );
    assert!(text.ends_with("verdict: FAILED (4 violations)\n"), "{text}");
}
