//! `diff` recovers two data dirs read-only and names what differs: a copy is equal to its
//! original; a copy on which a server was started again and a few writes were planted (a
//! setData, a new subtree, a delete) differs in exactly those nodes, the subtree reported
//! once at its top, plus the zxid and the new session.

mod support;

use palisade_inspect::damage;
use palisade_inspect::diff::{Difference, Side};
use palisade_inspect::{diff, DataDir};
use support::*;

#[test]
fn diff_finds_planted_differences_and_nothing_else() {
    let tmp = temp_dir("diff");
    let a_dir = tmp.path().join("a");
    std::fs::create_dir_all(&a_dir).unwrap();
    let mut a = Server::start_small(&a_dir, "");
    workload(a.port, 21, 150);
    let mut c = connect(a.port);
    c.create("/app/victim", b"same", PERSISTENT)
        .unwrap()
        .unwrap();
    c.create("/app/gone", b"", PERSISTENT).unwrap().unwrap();
    a.kill9();

    let same = tmp.path().join("same");
    damage::prepare(&a.data(), &same).unwrap();
    let (text, code) = inspect(&["diff", a.data().to_str().unwrap(), same.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("equal\n"), "{text}");

    let b_dir = tmp.path().join("b");
    damage::prepare(&a.data(), &b_dir.join("data")).unwrap();
    let mut b = Server::start_small(&b_dir, "");
    let mut c = connect(b.port);
    c.set_data("/app/victim", b"changed").unwrap().unwrap();
    c.create("/planted", b"", PERSISTENT).unwrap().unwrap();
    c.create("/planted/x", b"", PERSISTENT).unwrap().unwrap();
    c.create("/planted/y", b"", PERSISTENT).unwrap().unwrap();
    c.delete("/app/gone").unwrap().unwrap();
    let b_session = c.session;
    b.kill9();

    let r = diff(&DataDir::new(a.data()), &DataDir::new(b.data())).unwrap();
    let has = |want: &dyn Fn(&Difference) -> bool| r.differences.iter().any(want);
    assert!(
        has(&|d| matches!(d, Difference::Zxid { a, b } if a < b)),
        "{}",
        r.text()
    );
    assert!(
        has(&|d| matches!(d, Difference::Session { id, a: None, b: Some(_) } if *id == b_session)),
        "{}",
        r.text()
    );
    assert!(
        has(
            &|d| matches!(d, Difference::OnlyIn { side: Side::B, path, descendants: 2 } if path == "/planted")
        ),
        "{}",
        r.text()
    );
    assert!(
        has(
            &|d| matches!(d, Difference::OnlyIn { side: Side::A, path, descendants: 0 } if path == "/app/gone")
        ),
        "{}",
        r.text()
    );
    for field in ["data", "version", "mzxid", "mtime"] {
        assert!(
            has(
                &|d| matches!(d, Difference::Field { path, field: f, .. } if path == "/app/victim" && *f == field)
            ),
            "/app/victim {field}: {}",
            r.text()
        );
    }
    // Nothing else: only the touched nodes and their parents (counters, child lists) differ.
    for d in &r.differences {
        if let Difference::Field { path, .. } | Difference::OnlyIn { path, .. } = d {
            assert!(
                ["/", "/app", "/app/victim", "/app/gone", "/planted"].contains(&path.as_str()),
                "unexpected difference: {}",
                d.text()
            );
        }
    }
    let (text, code) = inspect(&[
        "diff",
        a.data().to_str().unwrap(),
        b.data().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("/app/victim: data A 4B \"same\" B 7B \"changed\""),
        "{text}"
    );
    assert!(
        text.contains("only in B: /planted (and 2 nodes below it) (missing in A)"),
        "{text}"
    );
}
