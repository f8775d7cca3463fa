//! Prep on its own: the txn it builds for each request, against the tree plus the overlay of
//! txns prepped but not yet applied.

use super::*;
use crate::state::State;

thread_local! {
    static SUPER: &'static [AuthId] = Box::leak(Box::new([AuthId {
        scheme: "super".into(),
        id: "".into(),
    }]));
}

fn super_auth() -> &'static [AuthId] {
    SUPER.with(|s| *s)
}

fn caller(session: i64) -> Caller<'static> {
    Caller {
        session,
        auth: super_auth(),
    }
}

fn create(path: &str, flags: i32) -> Request {
    Request::Create(crate::testkit::open_create(path, flags))
}

fn created_path(t: &Txn) -> Option<&str> {
    match &t.body {
        TxnBody::Create(c) | TxnBody::Create2(c) => c.path.as_str(),
        _ => None,
    }
}

fn pcv(t: &Txn) -> Option<i32> {
    match &t.body {
        TxnBody::Create(c) | TxnBody::Create2(c) => Some(c.parent_c_version),
        _ => None,
    }
}

fn err(t: &Txn) -> Option<i32> {
    match &t.body {
        TxnBody::Error(e) => Some(e.err),
        _ => None,
    }
}

#[test]
fn pending_sequential_creates_take_consecutive_suffixes_before_any_is_applied() {
    let mut s = State::new();
    let mut p = Prepper::new(0, true);
    let t1 = p.write(&s.tree, caller(1), 1, &create("/q", 0), 10);
    let t2 = p.write(&s.tree, caller(1), 2, &create("/q/n-", 2), 11);
    let t3 = p.write(&s.tree, caller(1), 3, &create("/q/n-", 2), 12);
    assert_eq!(created_path(&t2), Some("/q/n-0000000000"));
    assert_eq!(created_path(&t3), Some("/q/n-0000000001"));
    // parentCVersion: the parent's counter after the create, what replay raises it to.
    assert_eq!((pcv(&t2), pcv(&t3)), (Some(1), Some(2)));
    let zxids: Vec<i64> = [&t1, &t2, &t3].iter().map(|t| t.header.zxid).collect();
    assert_eq!(zxids, vec![1, 2, 3]);
    assert_eq!(
        (t2.header.client_id, t2.header.cxid, t2.header.time),
        (1, 2, 11)
    );
    for t in [&t1, &t2, &t3] {
        s.apply(t);
        p.applied(t.header.zxid);
    }
    assert!(p.settled());
    let t4 = p.write(&s.tree, caller(1), 4, &create("/q/n-", 2), 13);
    assert_eq!(created_path(&t4), Some("/q/n-0000000002"));
}

#[test]
fn a_failed_write_is_an_error_txn_that_consumes_a_zxid() {
    let s = State::new();
    let mut p = Prepper::new(41, true);
    let t = p.write(&s.tree, caller(1), 9, &create("/missing/child", 0), 0);
    assert_eq!(err(&t), Some(ErrorCode::NoNode.code()));
    assert_eq!(t.header.type_, OpCode::Error.code());
    assert_eq!(t.header.zxid, 42);
    assert!(p.settled(), "a failed write leaves nothing in the overlay");
    let t = p.write(
        &s.tree,
        caller(1),
        10,
        &Request::Reconfig(Default::default()),
        0,
    );
    assert_eq!(err(&t), Some(ErrorCode::ReconfigDisabled.code()));
}

#[test]
fn a_failed_multi_rolls_back_what_its_earlier_ops_recorded() {
    let s = State::new();
    let mut p = Prepper::new(0, true);
    let m = Request::Multi(MultiRequest::new(vec![
        create("/x", 0),
        create("/x/y", 0),
        create("/nope/z", 0),
        create("/w", 0),
    ]));
    let t = p.write(&s.tree, caller(1), 1, &m, 0);
    let TxnBody::Multi(subs) = &t.body else {
        panic!("a multi txn")
    };
    let errs: Vec<Option<i32>> = subs
        .iter()
        .map(|b| match b {
            TxnBody::Error(e) => Some(e.err),
            _ => None,
        })
        .collect();
    let ri = ErrorCode::RuntimeInconsistency.code();
    assert_eq!(
        errs,
        vec![Some(0), Some(0), Some(ErrorCode::NoNode.code()), Some(ri)]
    );
    // /x was rolled back: creating /x/y now fails, creating /x succeeds.
    assert!(p.settled());
    let t = p.write(&s.tree, caller(1), 2, &create("/x/y", 0), 0);
    assert_eq!(err(&t), Some(ErrorCode::NoNode.code()));
}

#[test]
fn close_session_lists_applied_and_pending_ephemerals_once() {
    let mut s = State::new();
    let mut p = Prepper::new(0, true);
    let open = p.create_session(7, 4000, 0);
    s.apply(&open);
    p.applied(open.header.zxid);
    let a = p.write(&s.tree, caller(7), 1, &create("/a", 1), 0);
    s.apply(&a);
    p.applied(a.header.zxid);
    let _pending = p.write(&s.tree, caller(7), 2, &create("/b", 1), 0);
    let other = p.write(&s.tree, caller(8), 3, &create("/c", 1), 0);
    let close = p.close_session(&s.tree, 7, 0, 0);
    let TxnBody::CloseSession(c) = &close.body else {
        panic!("a closeSession txn")
    };
    let paths: Vec<&str> = c
        .paths2_delete
        .iter()
        .flatten()
        .filter_map(|p| p.as_str())
        .collect();
    assert_eq!(paths, vec!["/a", "/b"]);
    assert_eq!(created_path(&other), Some("/c"));
}

#[test]
fn the_reaper_consumes_no_zxid_when_its_delete_no_longer_applies() {
    let s = State::new();
    let mut p = Prepper::new(5, true);
    assert!(p
        .delete_container(&s.tree, "/not-there", super_auth(), 0)
        .is_none());
    assert_eq!(p.last_zxid(), 5);
}

#[test]
fn a_sequential_create_at_the_end_of_the_counter_is_refused() {
    let mut s = State::new();
    let mut p = Prepper::new(0, true);
    let t = p.write(&s.tree, caller(1), 1, &create("/p", 0), 0);
    s.apply(&t);
    p.applied(1);
    // The parent's counter at 2^31 − 1 (a replay can carry it there).
    let filler = Txn {
        header: TxnHeader {
            zxid: 2,
            ..t.header.clone()
        },
        body: TxnBody::Create(CreateTxn {
            path: JStr::from("/p/filler"),
            data: None,
            acl: None,
            ephemeral: false,
            parent_c_version: i32::MAX,
        }),
    };
    s.apply(&filler);
    let mut p = Prepper::new(2, true);
    let t = p.write(&s.tree, caller(1), 2, &create("/p/s-", 2), 0);
    assert_eq!(err(&t), Some(ErrorCode::QuotaExceeded.code()));
}
