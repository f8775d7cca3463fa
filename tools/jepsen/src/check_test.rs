//! The checker on hand-made histories: it must accept the linearizable ones and reject the
//! others (a stale read, a lost write, a cas on a value never there).

use crate::check::{check, Event, Verdict};

fn ev(process: u64, kind: &str, f: &str, value: serde_json::Value) -> Event {
    Event {
        process,
        kind: kind.into(),
        f: f.into(),
        key: Some(0),
        value,
    }
}

use serde_json::json;

#[test]
fn sequential_history_is_linearizable() {
    let h = vec![
        ev(0, "invoke", "write", json!(1)),
        ev(0, "ok", "write", json!(1)),
        ev(1, "invoke", "cas", json!([1, 2])),
        ev(1, "ok", "cas", json!([1, 2])),
        ev(0, "invoke", "read", json!(null)),
        ev(0, "ok", "read", json!(2)),
    ];
    assert_eq!(check(&h).unwrap(), Verdict::Linearizable);
}

#[test]
fn a_stale_read_after_a_completed_write_is_caught() {
    let h = vec![
        ev(0, "invoke", "write", json!(1)),
        ev(0, "ok", "write", json!(1)),
        ev(0, "invoke", "write", json!(2)),
        ev(0, "ok", "write", json!(2)),
        ev(1, "invoke", "read", json!(null)),
        ev(1, "ok", "read", json!(1)),
    ];
    assert_eq!(check(&h).unwrap(), Verdict::NotLinearizable);
}

#[test]
fn concurrent_operations_may_take_either_order() {
    let h = vec![
        ev(0, "invoke", "write", json!(1)),
        ev(1, "invoke", "read", json!(null)),
        ev(1, "ok", "read", json!(1)),
        ev(0, "ok", "write", json!(1)),
        ev(2, "invoke", "read", json!(null)),
        ev(2, "ok", "read", json!(1)),
    ];
    assert_eq!(check(&h).unwrap(), Verdict::Linearizable);
}

#[test]
fn an_unknown_write_may_or_may_not_have_happened_but_a_failed_one_did_not() {
    let maybe = vec![
        ev(0, "invoke", "write", json!(3)),
        ev(0, "info", "write", json!(3)),
        ev(1, "invoke", "read", json!(null)),
        ev(1, "ok", "read", json!(3)),
        ev(1, "invoke", "read", json!(null)),
        ev(1, "ok", "read", json!(3)),
    ];
    assert_eq!(check(&maybe).unwrap(), Verdict::Linearizable);
    let failed = vec![
        ev(0, "invoke", "write", json!(3)),
        ev(0, "fail", "write", json!(3)),
        ev(1, "invoke", "read", json!(null)),
        ev(1, "ok", "read", json!(3)),
    ];
    assert_eq!(check(&failed).unwrap(), Verdict::NotLinearizable);
}

#[test]
fn a_cas_from_a_value_never_held_is_caught() {
    let h = vec![
        ev(0, "invoke", "write", json!(1)),
        ev(0, "ok", "write", json!(1)),
        ev(1, "invoke", "cas", json!([4, 2])),
        ev(1, "ok", "cas", json!([4, 2])),
    ];
    assert_eq!(check(&h).unwrap(), Verdict::NotLinearizable);
}
